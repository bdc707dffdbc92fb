package serialization

import (
	"errors"
	"reflect"
	"testing"
)

// TestPlanScalars reads the metadata methods of a real exported llama
// (stories260K for QNN): constant Int outputs of plans without
// instructions, which must be the model's known shape.
func TestPlanScalars(t *testing.T) {
	p, _ := parseReal(t, "stories260k_qnn.pte")
	got := map[string]int64{}
	for i := range p.ExecutionPlans {
		ep := &p.ExecutionPlans[i]
		if v, ok := ep.Int(); ok {
			got[ep.Name] = v
		}
	}
	// stories260K: dim 64, 5 layers, 4 key/value heads of 8, vocabulary 512.
	for name, want := range map[string]int64{"get_dim": 64, "get_n_layers": 5, "get_n_kv_heads": 4, "get_head_dim": 8, "get_vocab_size": 512, "get_bos_id": 1} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %d (present %v), want %d", name, v, ok, want)
		}
	}
	if v, ok := got["get_max_seq_len"]; !ok || v <= 0 {
		t.Errorf("get_max_seq_len = %d (present %v)", v, ok)
	}
	// The forward methods return tensors: no scalars.
	for i := range p.ExecutionPlans {
		ep := &p.ExecutionPlans[i]
		if ep.Name == "kv_forward" && len(ep.Scalars) != 0 {
			t.Errorf("kv_forward has scalar outputs %+v", ep.Scalars)
		}
	}
	t.Logf("%v", got)
}

// TestPlanScalarMethod: a plan with no instructions returning an Int (a
// metadata method as export_llama writes one) has that value, and an Int
// output EValue without its Int table is a FormatError.
func TestPlanScalarMethod(t *testing.T) {
	p, err := ParseProgram(planPTE(handPlan{name: "get_max_seq_len", values: 1, outputs: []int32{0}}, handPlan{name: "empty"}))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := p.ExecutionPlans[0].Int(); !ok || v != 3 {
		t.Fatalf("get_max_seq_len: %d, %v; want 3", v, ok)
	}
	if _, ok := p.ExecutionPlans[1].Int(); ok {
		t.Fatal("a plan without outputs has an Int")
	}
	// A list (get_eos_ids) is one Int output per element.
	p, err = ParseProgram(planPTE(handPlan{name: "get_eos_ids", values: 2, outputs: []int32{1, 0}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []PlanScalar{{Output: 0, Kind: "Int", Int: 3}, {Output: 1, Kind: "Int", Int: 3}}; !reflect.DeepEqual(p.ExecutionPlans[0].Scalars, want) {
		t.Fatalf("two Int outputs: %+v", p.ExecutionPlans[0].Scalars)
	}
	_, err = ParseProgram(planPTE(handPlan{name: "m", values: 1, outputs: []int32{0}, bareValues: true}))
	var fe *FormatError
	if !errors.Is(err, ErrBadFlatbuffer) || !errors.As(err, &fe) {
		t.Fatalf("an Int output without its table: %v", err)
	}
	// Not an output: not read.
	if _, err := ParseProgram(planPTE(handPlan{name: "m", values: 1, bareValues: true})); err != nil {
		t.Fatalf("an unread bare Int value: %v", err)
	}
}
