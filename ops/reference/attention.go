package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// et_vk.sdpa.default [q, k, v, attn_mask, scale, out]
// aten.scaled_dot_product_attention.default [query, key, value, attn_mask, dropout_p, is_causal, scale, (enable_gqa,) out]
// sdpa_with_kv_cache.default [q, k, v, k_cache, v_cache, input_pos, seq_len, attn_mask, dropout_p, is_causal, scale, out]
// llama.custom_sdpa.default [q, k_cache, v_cache, input_pos, attn_mask, dropout_p, is_causal, scale, out]
// update_cache.default [value, cache, input_pos, out]
//
// Attention is computed the textbook way per query row in float64: all
// scores, their max, the exponentials, the normalized weighted sum of v.
// The [..., S, D] ops treat operands as [B, H, S, D] (missing leading dims
// are 1); a k/v batch or head dim of 1 broadcasts and a head count
// dividing q's maps query head h to kv head h/(Hq/Hk). The cache ops use
// [B, S, H, D] and update the cache tensor's value in place.
func init() {
	Register("et_vk.sdpa.default", func(e *Env, a []int32) error {
		if len(a) != 6 {
			return fmt.Errorf("sdpa: %d args", len(a))
		}
		return bhsdRef(e, a, a[3], a[4], false, a[5])
	})
	Register("aten.scaled_dot_product_attention.default", func(e *Env, a []int32) error {
		if len(a) != 8 && len(a) != 9 {
			return fmt.Errorf("scaled_dot_product_attention: %d args", len(a))
		}
		causal := false
		if !e.IsNull(a[5]) {
			var err error
			if causal, err = e.Bool(a[5]); err != nil {
				return err
			}
		}
		return bhsdRef(e, a, a[3], a[6], causal, a[len(a)-1])
	})
	Register("update_cache.default", updateCacheRef)
	Register("sdpa_with_kv_cache.default", sdpaKVRef)
	Register("llama.custom_sdpa.default", customSDPARef)
}

// attnView addresses a float tensor as [b][h][s][d] with given strides.
type attnView struct {
	v          []float64
	sb, sh, ss int64
}

func (a attnView) at(b, h, s, d int64) float64 { return a.v[b*a.sb+h*a.sh+s*a.ss+d] }

// attendRow computes one query row's output: softmax over keys 0..n-1 of
// scale·q·k_j + bias(j) (bias -Inf masks a key), times v.
func attendRow(qrow func(d int64) float64, key, val func(j, d int64) float64, bias func(j int64) float64,
	n, d, dv int64, scale float64, out []float64) {
	scores := make([]float64, n)
	mx := math.Inf(-1)
	for j := int64(0); j < n; j++ {
		s := 0.0
		for x := int64(0); x < d; x++ {
			s += qrow(x) * key(j, x)
		}
		s = s*scale + bias(j)
		scores[j] = s
		mx = math.Max(mx, s)
	}
	sum := 0.0
	for j := range scores {
		if math.IsInf(mx, -1) {
			scores[j] = math.NaN()
		} else {
			scores[j] = math.Exp(scores[j] - mx)
		}
		sum += scores[j]
	}
	for x := int64(0); x < dv; x++ {
		o := 0.0
		for j := int64(0); j < n; j++ {
			o += scores[j] * val(j, x)
		}
		if n == 0 {
			out[x] = 0 // softmax over no keys times an empty v
			continue
		}
		out[x] = o / sum
	}
}

func pad4(s []int64) [4]int64 {
	r := [4]int64{1, 1, 1, 1}
	copy(r[4-len(s):], s)
	return r
}

func bhsdRef(e *Env, a []int32, maskID, scaleID int32, causal bool, outID int32) error {
	q, err := e.In(a[0])
	if err != nil {
		return err
	}
	k, err := e.In(a[1])
	if err != nil {
		return err
	}
	v, err := e.In(a[2])
	if err != nil {
		return err
	}
	for _, t := range []*Tensor{q, k, v} {
		if len(t.Shape) < 2 || len(t.Shape) > 4 {
			return fmt.Errorf("sdpa: shape %v", t.Shape)
		}
	}
	qd, kd, vd := pad4(q.Shape), pad4(k.Shape), pad4(v.Shape)
	bsz, hq, sq, d := qd[0], qd[1], qd[2], qd[3]
	hk, skv, dv := kd[1], kd[2], vd[3]
	if kd[3] != d || vd[2] != skv || (hk != 1 && (hk == 0 || hq%hk != 0)) || (kd[0] != 1 && kd[0] != bsz) {
		return fmt.Errorf("sdpa: shapes %v %v %v", q.Shape, k.Shape, v.Shape)
	}
	scale := 1 / math.Sqrt(float64(d))
	if !e.IsNull(scaleID) {
		if scale, err = e.Float(scaleID); err != nil {
			return err
		}
	}
	var mask *Tensor
	var md [4]int64
	if !e.IsNull(maskID) {
		if mask, err = e.In(maskID); err != nil {
			return err
		}
		md = pad4(mask.Shape)
	}
	out, err := e.NewOut(outID, append(append([]int64(nil), q.Shape[:len(q.Shape)-1]...), dv))
	if err != nil {
		return err
	}
	qv := attnView{q.V, hq * sq * d, sq * d, d}
	kv := attnView{k.V, kd[1] * skv * d, skv * d, d}
	vv := attnView{v.V, vd[1] * skv * dv, skv * dv, dv}
	for b := int64(0); b < bsz; b++ {
		kb := b % kd[0]
		for h := int64(0); h < hq; h++ {
			kh := int64(0)
			if hk != 1 {
				kh = h / (hq / hk)
			}
			for i := int64(0); i < sq; i++ {
				bias := func(j int64) float64 {
					if causal && j > i {
						return math.Inf(-1)
					}
					if mask == nil {
						return 0
					}
					m := mask.V[(((b%md[0])*md[1]+h%md[1])*md[2]+i%md[2])*md[3]+j%md[3]]
					if mask.DType == serialization.Bool {
						if m == 0 {
							return math.Inf(-1)
						}
						return 0
					}
					return m
				}
				o := out.V[((b*hq+h)*sq+i)*dv : ((b*hq+h)*sq+i+1)*dv]
				attendRow(func(x int64) float64 { return qv.at(b, h, i, x) },
					func(j, x int64) float64 { return kv.at(kb, kh, j, x) },
					func(j, x int64) float64 { return vv.at(kb, kh, j, x) },
					bias, skv, d, dv, scale, o)
			}
		}
	}
	e.Set(outID, out)
	return nil
}

// writeCache copies value ([B, S, H, D]) into rows pos.. of cache ([B,
// maxS, H, D]) and stores the updated cache.
func writeCache(e *Env, valueID, cacheID int32, pos int64) error {
	val, err := e.In(valueID)
	if err != nil {
		return err
	}
	c, err := e.In(cacheID)
	if err != nil {
		return err
	}
	if len(val.Shape) != 4 || len(c.Shape) != 4 {
		return fmt.Errorf("update_cache: shapes %v, %v", val.Shape, c.Shape)
	}
	bsz, s, h, d := val.Shape[0], val.Shape[1], val.Shape[2], val.Shape[3]
	if c.Shape[0] != bsz || c.Shape[2] != h || c.Shape[3] != d || pos < 0 || pos+s > c.Shape[1] {
		return fmt.Errorf("update_cache: value %v into cache %v at %d", val.Shape, c.Shape, pos)
	}
	nc := &Tensor{DType: c.DType, Shape: c.Shape, V: append([]float64(nil), c.V...)}
	maxS := c.Shape[1]
	for b := int64(0); b < bsz; b++ {
		for t := int64(0); t < s; t++ {
			for x := int64(0); x < h*d; x++ {
				nc.V[(b*maxS+pos+t)*h*d+x] = val.V[(b*s+t)*h*d+x]
			}
		}
	}
	e.Set(cacheID, nc)
	return nil
}

func updateCacheRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("update_cache: %d args", len(a))
	}
	pos, err := e.Int(a[2])
	if err != nil {
		return err
	}
	if err := writeCache(e, a[0], a[1], pos); err != nil {
		return err
	}
	if e.Kind(a[3]) == serialization.KindTensor {
		out, err := e.NewOut(a[3], []int64{1})
		if err != nil {
			return err
		}
		e.Set(a[3], out)
	}
	return nil
}

// cacheAttend attends q ([B, S, Hq, D]) over cache rows [0, pos+S).
func cacheAttend(e *Env, qID, kcID, vcID int32, pos int64, causalID, scaleID, outID int32) error {
	q, err := e.In(qID)
	if err != nil {
		return err
	}
	kc, err := e.In(kcID)
	if err != nil {
		return err
	}
	vc, err := e.In(vcID)
	if err != nil {
		return err
	}
	if len(q.Shape) != 4 || len(kc.Shape) != 4 || len(vc.Shape) != 4 {
		return fmt.Errorf("sdpa: shapes %v %v %v", q.Shape, kc.Shape, vc.Shape)
	}
	bsz, sq, hq, d := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	maxS, hk, dv := kc.Shape[1], kc.Shape[2], vc.Shape[3]
	if hk == 0 || hq%hk != 0 || kc.Shape[3] != d || pos < 0 || pos+sq > maxS {
		return fmt.Errorf("sdpa: q %v over cache %v at %d", q.Shape, kc.Shape, pos)
	}
	causal := true
	if !e.IsNull(causalID) {
		if causal, err = e.Bool(causalID); err != nil {
			return err
		}
	}
	scale := 1 / math.Sqrt(float64(d))
	if !e.IsNull(scaleID) {
		if scale, err = e.Float(scaleID); err != nil {
			return err
		}
	}
	out, err := e.NewOut(outID, []int64{bsz, sq, hq, dv})
	if err != nil {
		return err
	}
	g := hq / hk
	cached := func(v float64) float64 { return v }
	if e.opts.HalfKVCache {
		cached = func(v float64) float64 { return Round(serialization.Float16, v) }
	}
	for b := int64(0); b < bsz; b++ {
		for i := int64(0); i < sq; i++ {
			for h := int64(0); h < hq; h++ {
				kh := h / g
				bias := func(j int64) float64 {
					if causal && j > pos+i {
						return math.Inf(-1)
					}
					return 0
				}
				o := out.V[((b*sq+i)*hq+h)*dv : ((b*sq+i)*hq+h+1)*dv]
				attendRow(func(x int64) float64 { return q.V[((b*sq+i)*hq+h)*d+x] },
					func(j, x int64) float64 { return cached(kc.V[((b*maxS+j)*hk+kh)*d+x]) },
					func(j, x int64) float64 { return cached(vc.V[((b*maxS+j)*hk+kh)*dv+x]) },
					bias, pos+sq, d, dv, scale, o)
			}
		}
	}
	e.Set(outID, out)
	return nil
}

func sdpaKVRef(e *Env, a []int32) error {
	if len(a) != 12 {
		return fmt.Errorf("sdpa_with_kv_cache: %d args", len(a))
	}
	pos, err := e.Int(a[5])
	if err != nil {
		return err
	}
	if err := writeCache(e, a[1], a[3], pos); err != nil {
		return err
	}
	if err := writeCache(e, a[2], a[4], pos); err != nil {
		return err
	}
	return cacheAttend(e, a[0], a[3], a[4], pos, a[9], a[10], a[11])
}

func customSDPARef(e *Env, a []int32) error {
	if len(a) != 9 {
		return fmt.Errorf("custom_sdpa: %d args", len(a))
	}
	pos, err := e.Int(a[3])
	if err != nil {
		return err
	}
	return cacheAttend(e, a[0], a[1], a[2], pos, a[6], a[7], a[8])
}
