package wgdelegate

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// ErrDataMismatch: with WithVerifyData, a named tensor's bytes do not hash
// to its key; the error is a *DataMismatchError.
var ErrDataMismatch = errors.New("named data does not match its SHA-256 key")

// DataMismatchError reports a named tensor whose bytes' SHA-256 is not its
// key (WithVerifyData): the file holding it is corrupt or was edited.
type DataMismatchError struct {
	// Key is the named-data key: the SHA-256 the exporter computed.
	Key string
	// Sum is the SHA-256 of the Bytes bytes the load found.
	Sum   string
	Bytes int64
	// Delegate is the delegate (its index in the program) whose constant
	// ConstantID, read by tensor value ValueID, refers to Key.
	Delegate   int
	ValueID    int32
	ConstantID int32
}

func (e *DataMismatchError) Error() string {
	return fmt.Sprintf("wgdelegate: named data %q (constant %d, value %d of delegate %d): %v: its %d bytes hash to %s",
		e.Key, e.ConstantID, e.ValueID, e.Delegate, ErrDataMismatch, e.Bytes, e.Sum)
}

// Unwrap returns ErrDataMismatch.
func (e *DataMismatchError) Unwrap() error { return ErrDataMismatch }

// VerifyStats says what WithVerifyData checked during a load; it is zero
// for a load without it.
type VerifyStats struct {
	// Tensors and Bytes count the distinct named tensors whose bytes
	// matched their SHA-256 key, and those bytes.
	Tensors int
	Bytes   int64
	// Unverifiable counts the distinct named tensors whose key is not a
	// SHA-256 (64 hex digits), so that there was nothing to check them
	// against: they were loaded unchecked. Keys has the first few.
	Unverifiable int
	Keys         []string
	// Elapsed is the time spent hashing.
	Elapsed time.Duration
}

// maxUnverifiableKeys caps VerifyStats.Keys.
const maxUnverifiableKeys = 4

// VerifyStats reports what WithVerifyData checked when the model was
// loaded (zero without it).
func (m *Model) VerifyStats() VerifyStats {
	s := m.verified
	s.Keys = append([]string(nil), s.Keys...)
	return s
}

// verifier checks named constants against their keys, each distinct
// (key, length) once per load.
type verifier struct {
	named serialization.NamedData
	log   *slog.Logger
	seen  map[verifiedKey]bool
	stats VerifyStats
}

type verifiedKey struct {
	key string
	n   int
}

// verifyJob is one named tensor to hash: its bytes as the load reads
// them, its key decoded, and the first constant that reads it.
type verifyJob struct {
	key        string
	want       []byte
	data       []byte
	valueID    int32
	constantID int32
	sum        [sha256.Size]byte
}

func newVerifier(named serialization.NamedData, log *slog.Logger) *verifier {
	return &verifier{named: named, log: log, seen: map[verifiedKey]bool{}}
}

// blob checks every named constant of delegate's blob, hashing distinct
// tensors on up to GOMAXPROCS goroutines; a mismatch is reported for the
// first such tensor in value order. A constant whose bytes cannot be
// resolved is left to the graph build, which reports it. ctx is checked
// between tensors.
func (v *verifier) blob(ctx context.Context, delegate int, b *serialization.Blob) error {
	start := time.Now()
	defer func() { v.stats.Elapsed += time.Since(start) }()
	g := b.Graph
	var jobs []*verifyJob
	for i := range g.Values {
		val := &g.Values[i]
		if val.Kind != serialization.KindTensor || val.Tensor == nil || !val.Tensor.IsConstant() {
			continue
		}
		cid := val.Tensor.ConstantID
		if int(cid) >= len(g.Constants) || !g.Constants[cid].IsNamed() {
			continue
		}
		key := g.Constants[cid].NamedKey
		data, err := b.ResolveConstant(val.Tensor, v.named)
		if err != nil {
			continue
		}
		k := verifiedKey{key, len(data)}
		if v.seen[k] {
			continue
		}
		v.seen[k] = true
		want, ok := sha256Key(key)
		if !ok {
			v.stats.Unverifiable++
			if len(v.stats.Keys) < maxUnverifiableKeys {
				v.stats.Keys = append(v.stats.Keys, key)
			}
			v.log.Debug("wgdelegate: named data key is not a SHA-256: not verified", "key", key, "delegate", delegate, "constant", cid, "bytes", len(data))
			continue
		}
		jobs = append(jobs, &verifyJob{key: key, want: want, data: data, valueID: int32(i), constantID: cid})
	}
	if err := hashAll(ctx, jobs); err != nil {
		return err
	}
	for _, j := range jobs {
		if !bytes.Equal(j.sum[:], j.want) {
			// The key may cover an entry longer than the tensor reads
			// (the load uses its first bytes): then its bytes are good.
			full, _ := v.named.Get(j.key)
			if len(full) <= len(j.data) || !matches(full, j.want) {
				return &DataMismatchError{Key: j.key, Sum: hex.EncodeToString(j.sum[:]), Bytes: int64(len(j.data)),
					Delegate: delegate, ValueID: j.valueID, ConstantID: j.constantID}
			}
		}
		v.stats.Tensors++
		v.stats.Bytes += int64(len(j.data))
	}
	return nil
}

// hashAll sets every job's sum, on up to GOMAXPROCS goroutines, largest
// tensors first so that the workers finish together.
func hashAll(ctx context.Context, jobs []*verifyJob) error {
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b *verifyJob) int { return cmp.Compare(len(b.data), len(a.data)) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if k >= int64(len(order)) || ctx.Err() != nil {
					return
				}
				order[k].sum = sha256.Sum256(order[k].data)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// sha256Key decodes a key that is a SHA-256 in hex (64 digits, either
// case); ok is false for any other key.
func sha256Key(key string) ([]byte, bool) {
	if len(key) != 2*sha256.Size {
		return nil, false
	}
	b, err := hex.DecodeString(key)
	return b, err == nil
}

func matches(data, want []byte) bool {
	sum := sha256.Sum256(data)
	return bytes.Equal(sum[:], want)
}
