package wgdelegate_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// cloneModel is y = clone(x) for a float32 [4] x.
func cloneModel() *serialization.Builder { return cloneOf(serialization.Float32, 4) }

// cloneOf is y = clone(x) for an x of type dt and the given shape.
func cloneOf(dt serialization.DataType, shape ...int64) *serialization.Builder {
	b := serialization.NewBuilder()
	x := b.Tensor(dt, dims(shape...), -1)
	y := b.Tensor(dt, dims(shape...), -1)
	b.Op("aten.clone.default", x, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	return b
}

// TestClaimState: one claim at a time, naming its holder; Release frees
// it (once: a stale claim's Release does not free a newer one); a closed
// model is ErrClosed.
func TestClaimState(t *testing.T) {
	m, err := load(t, cloneModel())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, err := m.ClaimState("owner a")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.StateOwner(); got != "owner a" {
		t.Errorf("StateOwner %q, want owner a", got)
	}
	_, err = m.ClaimState("owner b")
	var se *wgdelegate.StateClaimedError
	if !errors.Is(err, wgdelegate.ErrStateClaimed) || !errors.As(err, &se) || se.Owner != "owner a" || se.Claimant != "owner b" {
		t.Fatalf("second claim: %v (%#v), want a *StateClaimedError naming owner a", err, se)
	}
	if !strings.Contains(err.Error(), "owner a holds") {
		t.Errorf("message %q does not name the holder", err)
	}
	a.Release()
	b, err := m.ClaimState("owner b")
	if err != nil {
		t.Fatalf("claim after Release: %v", err)
	}
	a.Release() // stale: must not free b's claim
	if _, err := m.ClaimState("owner c"); !errors.Is(err, wgdelegate.ErrStateClaimed) {
		t.Fatalf("a stale Release freed the current claim: %v", err)
	}
	b.Release()
	b.Release()
	var none *wgdelegate.StateClaim
	none.Release()
	if got := m.StateOwner(); got != "" {
		t.Errorf("StateOwner %q after Release, want none", got)
	}
	m.Close()
	if _, err := m.ClaimState("late"); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Fatalf("claim on a closed model: %v, want ErrClosed", err)
	}
}

// TestClaimStateConcurrent: of concurrent claims exactly one wins, every
// time (run with -race).
func TestClaimStateConcurrent(t *testing.T) {
	m, err := load(t, cloneModel())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 16
	for round := range 20 {
		var wg sync.WaitGroup
		claims := make([]*wgdelegate.StateClaim, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				claims[i], errs[i] = m.ClaimState("racer")
			}()
		}
		wg.Wait()
		won := 0
		for i := range n {
			if errs[i] == nil {
				won++
				claims[i].Release()
			} else if !errors.Is(errs[i], wgdelegate.ErrStateClaimed) {
				t.Fatalf("round %d: %v", round, errs[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d claims succeeded, want 1", round, won)
		}
	}
}

// TestDeviceCloseClosesModels: closing a Device closes the models still
// loaded on it; their calls then say so with an error matching ErrClosed,
// and a load on the closed device is ErrClosed too.
func TestDeviceCloseClosesModels(t *testing.T) {
	ctx := context.Background()
	d, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob := mustBlob(t, cloneModel())
	m, err := d.Load(ctx, blob)
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.Load(ctx, blob)
	if err != nil {
		t.Fatal(err)
	}
	other.Close() // closed before the device: fine either way
	in := wgdelegate.FromFloat32([]int64{4}, []float32{1, 2, 3, 4})
	if _, err := m.Execute(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = m.Execute(ctx, in)
	if !errors.Is(err, wgdelegate.ErrClosed) || !strings.Contains(err.Error(), "Device was closed") {
		t.Fatalf("Execute after Device.Close: %v, want ErrClosed saying the device was closed", err)
	}
	if _, _, err := m.InputInfo(0); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("InputInfo after Device.Close: %v", err)
	}
	if st := m.MemoryStats(); st != (wgdelegate.MemoryStats{}) {
		t.Errorf("MemoryStats after Device.Close: %+v, want zero", st)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Model.Close after Device.Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Device.Close: %v", err)
	}
	if _, err := d.Load(ctx, blob); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Fatalf("Load on a closed device: %v, want ErrClosed", err)
	}
}

// TestClosedModelInfo: InputInfo and OutputInfo after Close are
// ErrClosed, MemoryStats zero.
func TestClosedModelInfo(t *testing.T) {
	m, err := load(t, cloneModel())
	if err != nil {
		t.Fatal(err)
	}
	if st := m.MemoryStats(); st.TotalBytes() == 0 {
		t.Fatal("an open model reports no memory")
	}
	m.Close()
	if _, _, err := m.InputInfo(0); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("InputInfo after Close: %v", err)
	}
	if _, _, err := m.OutputInfo(0); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("OutputInfo after Close: %v", err)
	}
	if st := m.MemoryStats(); st != (wgdelegate.MemoryStats{}) {
		t.Errorf("MemoryStats after Close: %+v, want zero", st)
	}
}

// TestInputMessages: a wrong number of inputs says how many the model
// takes (not "input -1"), for one delegate and a chained plan; a negative
// dim says negative.
func TestInputMessages(t *testing.T) {
	requireOps(t, "aten.add.Tensor", "aten.relu.default")
	ctx := context.Background()
	single := mustLoad(t, cloneModel())
	chained := loadPTE(t, encodePlan(t, chainSpec(t)))
	for _, tc := range []struct {
		name string
		m    *wgdelegate.Model
		in   []wgdelegate.Tensor
		want string
	}{
		{"single, none", single, nil, "the model takes 1 input(s) (float32 [4]), got 0"},
		{"chained, none", chained, nil, "the model takes 2 input(s)"},
		{"chained, one", chained, []wgdelegate.Tensor{wgdelegate.FromFloat32([]int64{4}, make([]float32, 4))}, "got 1"},
		{"negative dim", single, []wgdelegate.Tensor{{DType: serialization.Float32, Shape: []int64{-1}}}, "negative size in dim 0"},
	} {
		_, err := tc.m.Execute(ctx, tc.in...)
		var ie *wgdelegate.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an *InputError saying %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "input -1") || strings.Contains(err.Error(), "larger") {
			t.Errorf("%s: %q", tc.name, err)
		}
	}
}

// mlpFiles is DefaultMLP with its weights in a .ptd, an input and the
// outputs of a clean load.
type mlpFiles struct {
	f     models.Files
	blobs []serialization.NamedBlob
	x     wgdelegate.Tensor
	want  []byte
}

func newMLPFiles(t *testing.T) mlpFiles {
	t.Helper()
	mlp := models.NewMLP(models.DefaultMLP)
	f, err := models.Encode(mlp.B, true)
	if err != nil {
		t.Fatal(err)
	}
	x := wgdelegate.FromFloat32([]int64{2, mlp.Cfg.In}, mlp.Input(2, 9))
	mf := mlpFiles{f: f, blobs: mlp.B.NamedBlobs(), x: x}
	out, err := mf.run(f.PTD, wgdelegate.WithVerifyData())
	if err != nil {
		t.Fatal(err)
	}
	mf.want = out
	return mf
}

// run loads the MLP with ptd and returns its output bytes.
func (mf mlpFiles) run(ptd []byte, opts ...wgdelegate.Option) ([]byte, error) {
	opts = append([]wgdelegate.Option{wgdelegate.WithDevice(dev), wgdelegate.WithData(ptd)}, opts...)
	m, err := wgdelegate.Load(context.Background(), mf.f.PTE, opts...)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	outs, err := m.Execute(context.Background(), mf.x)
	if err != nil {
		return nil, err
	}
	return outs[0].Data, nil
}

// TestVerifyData: a clean load with WithVerifyData verifies every named
// tensor once and counts them; without it nothing is counted; a flipped
// weight bit is a *DataMismatchError naming the key and the constant
// with it and loads as before without it.
func TestVerifyData(t *testing.T) {
	device(t)
	mf := newMLPFiles(t)
	ctx := context.Background()
	var total int64
	for _, b := range mf.blobs {
		total += int64(len(b.Data))
	}
	m, err := wgdelegate.Load(ctx, mf.f.PTE, wgdelegate.WithDevice(dev), wgdelegate.WithData(mf.f.PTD), wgdelegate.WithVerifyData())
	if err != nil {
		t.Fatal(err)
	}
	st := m.VerifyStats()
	m.Close()
	if st.Tensors != len(mf.blobs) || st.Bytes != total || st.Unverifiable != 0 {
		t.Errorf("VerifyStats %+v, want %d tensors, %d bytes", st, len(mf.blobs), total)
	}
	m, err = wgdelegate.Load(ctx, mf.f.PTE, wgdelegate.WithDevice(dev), wgdelegate.WithData(mf.f.PTD))
	if err != nil {
		t.Fatal(err)
	}
	if st := m.VerifyStats(); st.Tensors != 0 || st.Bytes != 0 {
		t.Errorf("VerifyStats without WithVerifyData: %+v", st)
	}
	m.Close()

	// The last byte of the second tensor.
	victim := mf.blobs[1]
	at := bytes.Index(mf.f.PTD, victim.Data) + len(victim.Data) - 1
	bad := bytes.Clone(mf.f.PTD)
	bad[at] ^= 0x10
	_, err = mf.run(bad, wgdelegate.WithVerifyData())
	var de *wgdelegate.DataMismatchError
	if !errors.Is(err, wgdelegate.ErrDataMismatch) || !errors.As(err, &de) {
		t.Fatalf("flipped weight: %v, want a *DataMismatchError", err)
	}
	if de.Key != victim.Key || de.Bytes != int64(len(victim.Data)) || de.ValueID < 0 || de.Sum == victim.Key {
		t.Errorf("DataMismatchError %+v, want key %s, %d bytes", de, victim.Key, len(victim.Data))
	}
	for _, w := range []string{victim.Key, "constant ", "value "} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
	// Off by default: the same file loads, and computes something else.
	out, err := mf.run(bad)
	if err != nil {
		t.Fatalf("without WithVerifyData: %v", err)
	}
	if bytes.Equal(out, mf.want) {
		t.Error("the flipped weight did not change the output: the test proves nothing")
	}
}

// TestVerifyDataUnverifiableKeys: a key that is not a SHA-256 cannot be
// checked: the load goes ahead, the tensor is counted as unverifiable (not
// verified) and logged at debug level.
func TestVerifyDataUnverifiableKeys(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	w := b.NamedConstKey(serialization.Float32, dims(4), "fc.weight", 16)
	hashed, _ := b.NamedConst(serialization.Float32, dims(4), f32bytes([]float32{1, 1, 1, 1}))
	s := b.Tensor(serialization.Float32, dims(4), -1)
	y := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("aten.add.Tensor", x, w, b.Double(1), s)
	b.Op("aten.add.Tensor", s, hashed, b.Double(1), y)
	b.Inputs(x)
	b.Outputs(y)
	named := append(b.NamedBlobs(), serialization.NamedBlob{Key: "fc.weight", Data: f32bytes([]float32{1, 2, 3, 4})})
	ptd, err := serialization.EncodePTD(named)
	if err != nil {
		t.Fatal(err)
	}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: mustBlob(t, b)}}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := wgdelegate.Load(context.Background(), pte, wgdelegate.WithDevice(device(t)), wgdelegate.WithData(ptd),
		wgdelegate.WithVerifyData(), wgdelegate.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.VerifyStats()
	if st.Tensors != 1 || st.Unverifiable != 1 || len(st.Keys) != 1 || st.Keys[0] != "fc.weight" {
		t.Errorf("VerifyStats %+v, want 1 verified and fc.weight unverifiable", st)
	}
	if !strings.Contains(logs.String(), "not a SHA-256") || !strings.Contains(logs.String(), "fc.weight") {
		t.Errorf("no debug record for the unverifiable key:\n%s", logs.String())
	}
	outs, err := m.Execute(context.Background(), wgdelegate.FromFloat32([]int64{4}, []float32{0, 0, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if got := f32(t, outs[0]); got[3] != 5 {
		t.Errorf("output %v, want [2 3 4 5]", got)
	}
}

// TestVerifyDataBitFlips flips one bit in every byte of the MLP's .ptd
// (the bit varies with the position). With WithVerifyData a flip inside a
// tensor's bytes is a *DataMismatchError, and any other flip is a typed
// load error or loads a model that computes exactly what the clean file
// does: never a successful load with other outputs.
func TestVerifyDataBitFlips(t *testing.T) {
	device(t)
	mf := newMLPFiles(t)
	inTensor := make([]bool, len(mf.f.PTD))
	for _, b := range mf.blobs {
		at := bytes.Index(mf.f.PTD, b.Data)
		if at < 0 {
			t.Fatalf("tensor %s not found in the .ptd", b.Key)
		}
		for i := range b.Data {
			inTensor[at+i] = true
		}
	}
	var mismatches, structural, same int
	for pos := range mf.f.PTD {
		bad := bytes.Clone(mf.f.PTD)
		bad[pos] ^= 1 << (pos % 8)
		out, err := mf.run(bad, wgdelegate.WithVerifyData())
		var fe *wgdelegate.FormatError
		switch {
		case inTensor[pos] && !errors.Is(err, wgdelegate.ErrDataMismatch):
			t.Fatalf("byte %d (tensor data): %v, want ErrDataMismatch", pos, err)
		case errors.Is(err, wgdelegate.ErrDataMismatch):
			mismatches++
		case err == nil:
			if !bytes.Equal(out, mf.want) {
				t.Fatalf("byte %d: loaded and computed other outputs", pos)
			}
			same++
		case errors.As(err, &fe), errors.Is(err, wgdelegate.ErrConstant), errors.Is(err, wgdelegate.ErrMissingKey):
			structural++
		default:
			t.Fatalf("byte %d: untyped error %v", pos, err)
		}
	}
	t.Logf("%d bytes: %d data mismatches, %d structural errors, %d flips that change nothing read", len(mf.f.PTD), mismatches, structural, same)
	if mismatches == 0 || structural == 0 {
		t.Error("the flips did not reach both the data and the structure")
	}
}

// TestDeviceCloseDuringLoad: a Device closed while a model is being built
// on it (here from the load's progress callback) fails the load with an
// error matching ErrClosed, and leaves no model behind to close.
func TestDeviceCloseDuringLoad(t *testing.T) {
	ctx := context.Background()
	d, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	closeAtBuild := wgdelegate.WithProgress(func(p wgdelegate.Progress) {
		if p.Phase == wgdelegate.PhaseBuild {
			d.Close()
		}
	})
	m, err := wgdelegate.Load(ctx, mustBlob(t, cloneModel()), wgdelegate.WithDevice(d), closeAtBuild)
	if !errors.Is(err, wgdelegate.ErrClosed) || m != nil {
		t.Fatalf("load on a device closed during the build: %v, %v; want ErrClosed", m, err)
	}
}
