// Package numguard is the numerics guard over the rendered WGSL kernels:
// it fails a kernel that computes a float operation WGSL lets an adapter
// get wrong, written bare instead of through the shared helpers of
// shaders/common.tmpl (style habit 11):
//
//   - min, max, clamp, saturate on floats: WGSL leaves their result with a
//     NaN operand undefined (naga emits FMin/FMax/FClamp; NVIDIA returns
//     the other operand), while PyTorch propagates NaN;
//   - float / and % (and /=, %=): WGSL allows 2.5 ulp, PyTorch divides
//     correctly rounded;
//   - sin, cos, tan: WGSL bounds their error only on [-pi, pi].
//
// Integer and index arithmetic stays allowed, so the guard types every
// expression: a small type inference over the WGSL our kernels use
// (declared types of bindings, struct fields, let/var/const, function
// parameters and returns, literals, constructors and builtins). An
// operation it cannot type is a finding too, so nothing slips through
// untyped. The shared helpers are exempt by name, but only with the exact
// text the templates render for them. Operations whose result the
// conformance suite compares with a tolerance that absorbs the adapter's
// error may stay bare through an allow-list entry that gives the reason
// (Allowed).
//
// ops/opstest runs the guard over every kernel the conformance cases
// build (TestNumericsGuard), with no GPU needed beyond the adapter the
// suite already uses to build pipelines.
package numguard
