package reference

import "fmt"

// et_vk.apply_rotary_emb.default [xq, xk, freqs_cos, freqs_sin, ValueList[xq_out, xk_out]]
// et_vk.apply_rotary_emb_hf.default [xq, xk, freqs_cos, freqs_sin, start_pos, ValueList[xq_out, xk_out]]
// et_vk.apply_rotary_emb_interleaved.default [x, freqs_cis, out]
//
// Written from the Python definitions: llama rope multiplies the complex
// numbers (x[2j], x[2j+1]) by (cos, sin)[s, j]; the HF variant is
// x·cos + rotate_half(x)·sin over the first rd elements of each head with
// table rows start_pos+s; the interleaved variant multiplies x's complex
// pairs by freqs_cis's, both flattened to [N, C].
func init() {
	Register("et_vk.apply_rotary_emb.default", func(e *Env, a []int32) error { return ropeRef(e, a, false) })
	Register("et_vk.apply_rotary_emb_hf.default", func(e *Env, a []int32) error { return ropeRef(e, a, true) })
	Register("et_vk.apply_rotary_emb_interleaved.default", ropeInterleavedRef)
}

func ropeRef(e *Env, a []int32, hf bool) error {
	want := 5
	if hf {
		want = 6
	}
	if len(a) != want {
		return fmt.Errorf("rope: %d args", len(a))
	}
	fc, err := e.In(a[2])
	if err != nil {
		return err
	}
	fs, err := e.In(a[3])
	if err != nil {
		return err
	}
	start := int64(0)
	if hf {
		if start, err = e.Int(a[4]); err != nil {
			return err
		}
	}
	outs, err := e.ValueList(a[len(a)-1])
	if err != nil {
		return err
	}
	if len(outs) != 2 || len(fc.Shape) != 2 {
		return fmt.Errorf("rope: %d outputs, freqs %v", len(outs), fc.Shape)
	}
	for i := 0; i < 2; i++ {
		x, err := e.In(a[i])
		if err != nil {
			return err
		}
		if len(x.Shape) != 4 {
			return fmt.Errorf("rope: x shape %v", x.Shape)
		}
		bs, s, h, d := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		out, err := e.NewOut(outs[i], x.Shape)
		if err != nil {
			return err
		}
		w := fc.Shape[1]
		if (!hf && 2*w != d) || (hf && (w > d || start+s > fc.Shape[0])) {
			return fmt.Errorf("rope: x %v with freqs %v", x.Shape, fc.Shape)
		}
		for bi := int64(0); bi < bs; bi++ {
			for si := int64(0); si < s; si++ {
				t := si + start
				for hi := int64(0); hi < h; hi++ {
					row := ((bi*s+si)*h + hi) * d
					xr, o := x.V[row:row+d], out.V[row:row+d]
					if !hf {
						for j := int64(0); j < d/2; j++ {
							c, sn := fc.V[t*w+j], fs.V[t*w+j]
							re, im := xr[2*j], xr[2*j+1]
							o[2*j], o[2*j+1] = re*c-im*sn, re*sn+im*c
						}
						continue
					}
					half := w / 2
					for j := int64(0); j < d; j++ {
						switch {
						case j >= w:
							o[j] = xr[j]
						case j < half:
							o[j] = xr[j]*fc.V[t*w+j] - xr[j+half]*fs.V[t*w+j]
						default:
							o[j] = xr[j]*fc.V[t*w+j] + xr[j-half]*fs.V[t*w+j]
						}
					}
				}
			}
		}
		e.Set(outs[i], out)
	}
	return nil
}

func ropeInterleavedRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("rope_interleaved: %d args", len(a))
	}
	x, f, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	if len(x.Shape) != 3 || f.Numel() != x.Shape[1]*x.Shape[2] {
		return fmt.Errorf("rope_interleaved: x %v, freqs_cis %v", x.Shape, f.Shape)
	}
	bs, n, c := x.Shape[0], x.Shape[1], x.Shape[2]
	out, err := e.NewOut(a[2], x.Shape)
	if err != nil {
		return err
	}
	for bi := int64(0); bi < bs; bi++ {
		for ni := int64(0); ni < n; ni++ {
			for k := int64(0); k < c/2; k++ {
				xi := (bi*n+ni)*c + 2*k
				fi := ni*c + 2*k
				re, im := x.V[xi], x.V[xi+1]
				cs, sn := f.V[fi], f.V[fi+1]
				out.V[xi], out.V[xi+1] = re*cs-im*sn, re*sn+im*cs
			}
		}
	}
	e.Set(a[2], out)
	return nil
}
