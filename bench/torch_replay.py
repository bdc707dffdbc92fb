"""Replay a wgdelegate benchmark model (bench/emit's graph.json) in PyTorch.

usage: torch_replay.py MODEL_DIR ITERATIONS

Runs the delegate graph op by op with torch.ops.aten on the CPU (the op
names and argument lists of a VkGraph are aten's schemas with defaults
materialized, the output last), checks the outputs against wgdelegate's
(out_<i>.npy), times ITERATIONS forward passes after 3 warm-up passes under
torch.inference_mode with all CPU threads, and prints one JSON object:
median, min, max (ms), max_abs_diff, threads. Exits 3 when the graph uses
an op this replay cannot run (custom et_vk / llama ops).
"""
import json
import os
import sys
import time

import numpy as np
import torch

d, iters = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(os.cpu_count())
g = json.load(open(os.path.join(d, "graph.json")))
vals = g["values"]

consts = {}
for i, v in enumerate(vals):
    if v["k"] == "tensor" and v.get("const"):
        consts[i] = torch.from_numpy(np.load(os.path.join(d, v["const"])))
inputs = []
for i in range(len(g["inputs"])):
    inputs.append(torch.from_numpy(np.load(os.path.join(d, "input_%d.npy" % i))))


def resolve(name):
    parts = name.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return None
    _, op, overload = parts
    pkt = getattr(torch.ops.aten, op, None)
    return getattr(pkt, overload, None) if pkt is not None else None


for op in g["chain"]:
    if op["op"] not in ("sym_size.int", "aten._native_batch_norm_legit_no_training.default") and resolve(op["op"]) is None:
        print(json.dumps({"unsupported": op["op"]}))
        sys.exit(3)


def run(xs):
    env = dict(consts)
    for i, x in zip(g["inputs"], xs):
        env[i] = x

    def val(i):
        v = vals[i]
        k = v["k"]
        if k == "tensor":
            return env[i]
        if k == "sym":
            return env.get(i, v.get("v", 0))
        if k == "list":
            return [val(j) for j in v["v"]]
        if k == "null":
            return None
        return v.get("v", 0 if k in ("int", "double") else False if k == "bool" else "")

    for op in g["chain"]:
        name, args = op["op"], op["args"]
        ins, out = [val(a) for a in args[:-1]], args[-1]
        if name == "sym_size.int":
            res = ins[0].size(ins[1])
        elif name == "aten._native_batch_norm_legit_no_training.default":
            x, w, b, mean, var, momentum, eps = ins
            y = torch.nn.functional.batch_norm(x, mean, var, w, b, False, momentum, eps)
            res = (y, torch.empty(0), torch.empty(0))
        else:
            fn = resolve(name)
            pos, kw = [], {}
            for a, x in zip(fn._schema.arguments, ins):
                if a.kwarg_only:
                    kw[a.name] = x
                else:
                    pos.append(x)
            res = fn(*pos, **kw)
        if vals[out]["k"] == "list":
            for j, r in zip(vals[out]["v"], res):
                env[j] = r
        else:
            env[out] = res
    return [env[o] for o in g["outputs"]]


with torch.inference_mode():
    outs = run(inputs)
    diff = 0.0
    for i, o in enumerate(outs):
        ref = np.load(os.path.join(d, "out_%d.npy" % i))
        if ref.size:
            diff = max(diff, float(np.max(np.abs(o.numpy().astype(np.float64) - ref.astype(np.float64)))))
    for _ in range(3):
        run(inputs)
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        run(inputs)
        ts.append((time.perf_counter() - t) * 1e3)
ts.sort()
print(json.dumps({"median": ts[len(ts) // 2], "min": ts[0], "max": ts[-1], "max_abs_diff": diff,
                  "threads": torch.get_num_threads()}))
