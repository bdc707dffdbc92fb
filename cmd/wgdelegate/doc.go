// Command wgdelegate runs, inspects and draws ExecuTorch Vulkan-delegate
// models on WebGPU.
//
//	wgdelegate run --input x.npy --output-dir out model.pte
//	wgdelegate run --data weights.ptd --input a.npy --input b.npy --output-dir out model.pte
//	wgdelegate inspect model.pte
//	wgdelegate inspect --json model.pte
//	wgdelegate graph -o model.svg model.pte
//	wgdelegate import llama2c --tokenizer tokenizer.bin stories15M.bin -o stories15M
//
// run opens a .pte program (every VulkanBackend delegate its plan calls,
// chained through the plan's values) or a raw VH00 delegate blob on the
// default adapter, feeds it .npy inputs in input order (or, without any,
// inputs it generates in the model's shapes) and writes output_0.npy,
// output_1.npy, ... in output order. inspect decodes a model without
// touching a GPU and prints its header, values, ops, constants (and which
// are deferred), inputs, outputs, memory plan and the buffers over the
// device limits, as a table or, with --json, as JSON. graph writes the op
// graph as Graphviz DOT, or SVG, PNG or PDF (by the -o name) when dot is
// installed. import llama2c writes a llama2.c checkpoint as the .pte,
// .ptd and tokenizer.bin of an ExecuTorch Llama export, which generate
// runs. run, bench, profile and generate take --verify, which checks
// every weight against its SHA-256 key before anything runs.
//
// Every failure exits with status 1 and exactly one line on stderr,
// "wgdelegate: <message>" (with --verbose, debug logs and the progress
// lines of a load slower than a second may come before it; without it,
// progress shows only on a terminal, as a bar erased on failure); Ctrl-C
// exits with status 130 (generate prints its statistics so far first); no
// arguments, -h, --help and help --help print usage and exit 0. Flag
// errors name the flag as it was typed.
package main
