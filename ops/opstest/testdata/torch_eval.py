#!/usr/bin/env python3
"""Evaluates a VkGraph, described as JSON on stdin, with PyTorch.

Every OperatorCall named "aten.<op>.<overload>" (or "<op>.<overload>" for
the few non-namespaced aten ops) is called as torch.ops.aten.<op>.<overload>
with its arguments in schema order; the trailing output id receives the
result (a ValueList receives a tuple). Tensors keep the graph's dtypes
(int64 values were downcast to int32 by the exporter; torch computes in
int32 here too). Reads one JSON graph per line and writes one line per graph:
{"outputs": [...]} or {"skip": reason}.
"""
import json
import math
import sys

import torch

DT = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool,
      "uint8": torch.uint8, "int8": torch.int8, "int64": torch.int64, "float64": torch.float64}


def num(x):
    if isinstance(x, str):
        return float(x)
    return x


def enc(x):
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    return x


def main():
    # One graph per input line, one result per output line.
    for line in sys.stdin:
        try:
            res = evaluate(json.loads(line))
        except Exception as e:  # noqa: BLE001 - report, keep serving
            res = {"skip": "error: %s" % str(e).splitlines()[0][:200]}
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()


def evaluate(g):
    vals = {}
    for i, v in enumerate(g["values"]):
        k = v["kind"]
        if k == "tensor" and "data" in v:
            t = torch.tensor([num(x) for x in v["data"]], dtype=torch.float64).reshape(v["shape"])
            vals[i] = t.to(DT[v["dtype"]])
        elif k == "double":
            vals[i] = num(v["value"])
        elif k in ("int", "bool", "string", "intlist", "doublelist", "boollist"):
            vals[i] = v["value"]
        elif k == "null":
            vals[i] = None
        elif k == "symint":
            vals[i] = v["value"]
    def arg(i):
        v = g["values"][i]
        if v["kind"] == "valuelist":
            return [arg(j) for j in v["ids"]]
        return vals.get(i)
    for op in g["chain"]:
        name = op["name"]
        parts = name.split(".")
        if parts[0] == "aten":
            parts = parts[1:]
        if len(parts) != 2:
            return {"skip": "op " + name}
        try:
            fn = getattr(getattr(torch.ops.aten, parts[0]), parts[1])
        except (AttributeError, RuntimeError):
            return {"skip": "no torch op for " + name}
        vals_in = [arg(a) for a in op["args"][:-1]]
        # The graph holds every schema argument in order, keyword-only ones
        # included; torch.dtype/layout/device/memory_format became Null, so
        # a Null dtype is taken from the output tensor.
        out_v = g["values"][op["args"][-1]]
        args, kwargs = [], {}
        for a, v in zip(fn._schema.arguments, vals_in):
            if a.name == "dtype" and v is None and out_v["kind"] == "tensor":
                v = DT[out_v["dtype"]]
            if a.name in ("layout", "device", "pin_memory", "memory_format") and v is None:
                continue
            if v is None and a.has_default_value() and not isinstance(a.type, torch.OptionalType):
                v = a.default_value  # a Null where None is not allowed: the schema default
            if a.name in ("index", "indices"):
                # The exporter downcast int64 indices to int32.
                v = [x.long() if isinstance(x, torch.Tensor) and x.dtype == torch.int32 else x for x in v] \
                    if isinstance(v, list) else (v.long() if isinstance(v, torch.Tensor) and v.dtype == torch.int32 else v)
            if a.name == "correction" and isinstance(v, float) and v == int(v):
                v = int(v)
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
        try:
            res = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - report any torch refusal
            return {"skip": "torch refused %s: %s" % (name, str(e).splitlines()[0][:200])}
        out = op["args"][-1]
        ov = g["values"][out]
        if ov["kind"] == "valuelist":
            for j, r in zip(ov["ids"], res):
                vals[j] = r
        else:
            vals[out] = res
    outs = []
    for o in g["outputs"]:
        t = vals[o]
        if not isinstance(t, torch.Tensor):
            t = torch.tensor(t)
        t = t.detach()
        data = t.to(torch.float64).reshape(-1).tolist()
        outs.append({"shape": list(t.shape), "data": [enc(x) for x in data]})
    return {"outputs": outs}


if __name__ == "__main__":
    main()
