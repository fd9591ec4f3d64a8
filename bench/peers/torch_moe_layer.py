#!/usr/bin/env python3
"""
torch_moe_layer.py — PyTorch's one-GPU Mixture-of-Experts layer (route, gather, grouped GEMM with
W1, silu(gate) * up, grouped GEMM with W2, weighted top-k combine) on the shapes and routings of
`weft-bench moe_layer`, measured its way: per shape the same routing (the same xorshift draws
from the same seeds as bench/peers/torch_grouped_mm.py, so the same experts for every token),
samples of --batch layer calls between two CUDA events after -w warm-up samples, the median of
-n samples, us per layer call.

The timed layer is all of it, the routing included, and nothing in it waits for the GPU on the
host: the flattened ids sorted (stable), each expert's end offset by torch.searchsorted on the
sorted ids (the cumsum of the experts' counts; torch.bincount would read the ids' range back to
the host), the tokens' rows gathered in that order, torch._grouped_mm with W1 [E, 2I, H] (gate
rows first, then up rows) passed transposed, silu(gate) * up, torch._grouped_mm with W2
[E, H, I] passed transposed, then the top-k combine in one of two forms:
  index_add  each row scaled by its entry's weight, index_add_ into a zeroed [T, H] by token, in
             the layer's dtype (as most PyTorch MoE blocks combine)
  sum        the rows scattered back to entry order (index_copy_ by the sort's permutation),
             viewed [T, TOPK, H], times the weights, summed over the top-k in fp32, rounded once
Both forms are timed, interleaved (sample i of both before sample i + 1 of either); the faster is
PyTorch's layer, its time and form reported. The routing weights are a softmax of random logits
per token, drawn with torch (not weft-bench's values); x is uniform in [-1, 1), W1 and W2 uniform
in [-1, 1) / sqrt(fan in) (H for W1, I for W2), so that the activations stay of order one.

Each shape is checked once before timing, both combine forms: the layer's output against a
float64 reference over all tokens computed expert by expert (x, W1, W2 and the routing weights
upcast, each expert's tokens through both matrices and the activation, accumulated by token),
normalised error ||out - ref|| / ||ref|| <= --tol (err: the larger of the two forms'). The same
call runs under torch's CUDA sync debug mode; a layer that synchronised the host is marked SYNC
(host_sync in JSON). Its JSON rows carry weft-bench's keys (suite moe_layer, name TxHxIxExTOPK,
T, H, I, E, topk), torch_moe_layer_us (the faster form), combine (its name), index_add_us and
sum_us (each form), err and host_sync. TFLOP/s count the useful FLOPs, 6 * T * TOPK * H * I
(2 * T * TOPK * (H * 2I + I * H)). With --dtype fp16, torch._grouped_mm may take its per-expert
fallback, which reads the offsets on the host (marked SYNC then).

Default shapes: the MoE layers of TileLink, Table 4 at S = 8192 tokens (hidden H, expert
intermediate I, E experts, top-k), then the experts of open models at 4096 tokens (Mixtral-8x7B:
8 experts, top 2, hidden 4096, intermediate 14336; Qwen3-30B-A3B: 128, top 8, 2048, 768;
DeepSeek-V3: 256, top 8, 7168, 2048).

Launch:  python3 bench/peers/torch_moe_layer.py [--shapes T,H,I,E,TOPK ...] [--routing
             uniform|zipf] [-n iters] [-w warmup] [--batch calls] [--dtype bf16|fp16]
             [--tol err] [-J out.json]
Without a GPU:  python3 bench/peers/torch_moe_layer.py --dry-run (shapes, the routing's expert
loads and a hash of its ids, no torch needed: the lines `weft-bench moe_layer --dry-run` prints)
"""
import json
import os
import statistics
import sys
import warnings

from torch_grouped_mm import draw_ids, dry_run, moe_args, torch_grouped_mm_or_none  # (this folder)

# one GPU, but the same settings as every GPU script of the project (docs/architecture.md,
# section 7: NVLink multicast stays off)
for k, v in {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1",
             "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}.items():
    os.environ[k] = v

COMBINES = ("index_add", "sum")


def default_shapes():
    """weft-bench moe_layer's defaults, in its order: T, H, I, E, TOPK."""
    shapes = [(8192, 2048, 1536, 8, 2), (8192, 2048, 1536, 32, 2), (8192, 2048, 1536, 32, 5),
              (8192, 4096, 2048, 8, 2), (8192, 4096, 2048, 32, 2), (8192, 4096, 2048, 32, 5)]
    for e, k, h, i in ((8, 2, 4096, 14336), (128, 8, 2048, 768), (256, 8, 7168, 2048)):
        shapes.append((4096, h, i, e, k))
    return shapes


def moe_layer(x, topk_ids, topk_weights, w1, w2, experts, combine):
    """out [T, H] of x [T, H] routed by topk_ids [T, TOPK] (int32) with topk_weights [T, TOPK]
    through W1 [E, 2I, H] and W2 [E, H, I]; experts: arange(E) as int32 (a constant of the layer).
    Launches only: nothing here waits for the GPU. torch is imported where it is used, so that
    --dry-run runs without it."""
    import torch
    t, topk = topk_ids.shape
    inter = w2.shape[2]
    sorted_ids, order = torch.sort(topk_ids.reshape(-1), stable=True)
    offs = torch.searchsorted(sorted_ids, experts, right=True, out_int32=True)
    tok = order // topk
    xs = x.index_select(0, tok)
    gate_up = torch._grouped_mm(xs, w1.transpose(1, 2), offs=offs)  # [rows, 2I]
    h = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
    y = torch._grouped_mm(h, w2.transpose(1, 2), offs=offs)  # [rows, H]
    if combine == "index_add":
        y.mul_(topk_weights.reshape(-1).index_select(0, order)[:, None])
        return torch.zeros_like(x).index_add_(0, tok, y)
    ye = torch.empty_like(y).index_copy_(0, order, y).view(t, topk, -1)
    return (ye.float() * topk_weights.float()[..., None]).sum(1).to(x.dtype)


def reference(x, topk_ids, topk_weights, w1, w2):
    """The layer in float64, expert by expert, over all tokens: [T, H] float64."""
    import torch
    t, topk = topk_ids.shape
    inter = w2.shape[2]
    ids = topk_ids.reshape(-1).long()
    wts = topk_weights.reshape(-1).double()
    xd = x.double()
    ref = torch.zeros(x.shape, dtype=torch.float64, device=x.device)
    order = torch.argsort(ids, stable=True)
    start = 0
    for e, c in enumerate(torch.bincount(ids, minlength=w1.shape[0]).tolist()):
        if c:
            ent = order[start:start + c]
            tok = ent // topk
            gate_up = xd.index_select(0, tok) @ w1[e].double().t()
            h = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
            y = h @ w2[e].double().t()
            ref.index_add_(0, tok, y * wts.index_select(0, ent)[:, None])
        start += c
    return ref


def run_shape(a, si, shape, zipf, dev, dt):
    """One shape: its inputs, the check of both combine forms, their timing; the JSON row."""
    import torch
    t, hd, inter, e, topk = shape
    torch.manual_seed(0x5EED0000 + si)
    topk_ids = torch.tensor(draw_ids(t, topk, e, zipf, 0x5EED0000 + si), dtype=torch.int32,
                            device=dev).view(t, topk)
    topk_weights = torch.softmax(torch.randn(t, topk, device=dev), dim=1).to(dt)
    x = torch.empty(t, hd, device=dev, dtype=dt).uniform_(-1, 1)
    s1, s2 = hd ** -0.5, inter ** -0.5
    w1 = torch.empty(e, 2 * inter, hd, device=dev, dtype=dt).uniform_(-s1, s1)
    w2 = torch.empty(e, hd, inter, device=dev, dtype=dt).uniform_(-s2, s2)
    experts = torch.arange(e, dtype=torch.int32, device=dev)
    args = (x, topk_ids, topk_weights, w1, w2, experts)

    ref = reference(*args[:5])
    ref_norm = ref.norm().clamp_min(1e-30)
    errs, synced = [], False
    for form in COMBINES:
        moe_layer(*args, form)  # the first call: torch's lazy set-up, outside the sync check
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                out = moe_layer(*args, form)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        synced |= any("synchroniz" in str(w.message) for w in caught)
        errs.append(((out.double() - ref).norm() / ref_norm).item())
        del out
    del ref
    err = max(errs, key=lambda v: (v != v, v))  # the larger, NaN above all
    bad = not (err <= a.tol)

    times = {form: [] for form in COMBINES}
    for i in range(a.w + a.n):
        for form in COMBINES:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(a.batch):
                moe_layer(*args, form)
            e1.record()
            e1.synchronize()
            if i >= a.w:
                times[form].append(e0.elapsed_time(e1) * 1e3 / a.batch)
    us = {form: statistics.median(times[form]) for form in COMBINES}
    best = min(COMBINES, key=us.get)
    tf = 6.0 * t * topk * hd * inter / us[best] * 1e-6
    print(f" {t:6d} {hd:6d} {inter:6d} {e:4d} {topk:4d} {us[best]:10.1f} {tf:8.1f} {best:>9} "
          f"{err:9.2e}{' WRONG' if bad else ''}{' SYNC' if synced else ''}", flush=True)
    row = {"suite": "moe_layer", "name": f"{t}x{hd}x{inter}x{e}x{topk}", "T": t, "H": hd,
           "I": inter, "E": e, "topk": topk, "torch_moe_layer_us": us[best], "combine": best,
           "index_add_us": us["index_add"], "sum_us": us["sum"], "err": err,
           "host_sync": synced}
    return row, bad


def main():
    a, shapes, zipf = moe_args(__doc__, "T,H,I,E,TOPK ...", default_shapes(), 5, False)
    if a.dry_run:
        dry_run(shapes, zipf)
        return 0
    torch = torch_grouped_mm_or_none("torch_moe_layer.py")
    if torch is None:
        return 77
    dev = torch.device("cuda")
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    print(f"# torch {torch.__version__} {torch.cuda.get_device_name()}: MoE layer (sort, gather, "
          f"torch._grouped_mm, silu*up, torch._grouped_mm, top-k combine), {a.dtype}, "
          f"{a.routing} routing; us per layer call (median of {a.n} samples of {a.batch} calls), "
          f"the faster combine")
    print(f"#{'T':>6} {'H':>6} {'I':>6} {'E':>4} {'topk':>4} {'torch_us':>10} {'TFLOP/s':>8} "
          f"{'combine':>9} {'err':>9}")
    rows, wrong = [], 0
    for si, shape in enumerate(shapes):
        row, bad = run_shape(a, si, shape, zipf, dev, dt)
        rows.append(row)
        wrong += bad
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"suite": "moe_layer", "ranks": 1, "peer": "torch_moe_layer",
                       "rows": rows}, f, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
