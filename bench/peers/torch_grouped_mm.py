#!/usr/bin/env python3
"""
torch_grouped_mm.py — PyTorch's grouped GEMM (torch._grouped_mm) on the shapes and routings of
`weft-bench grouped_gemm`, measured its way: one GPU, per shape the same routing (the same
xorshift draws from the same seeds, so the same experts for every token), each expert's rows of
the tokens sorted by expert (no padding: the rows torch multiplies are the useful ones), the
weights [E, N, K] (--layout nk, passed transposed) or [E, K, N]; samples of --batch calls between
two CUDA events after -w warm-up samples, the median of -n samples, us per call. The sort (the
gather) is outside the timed calls, as weft_moe_gather is outside weft-bench's.

Each shape is checked once before timing: torch._grouped_mm's output against a per-expert
torch.matmul loop (normalised error <= --tol). Its JSON rows carry weft-bench's keys (suite
grouped_gemm, name TxNxKxExTOPK, T, N, K, E, topk) and torch_grouped_mm_us.

Launch:  python3 bench/peers/torch_grouped_mm.py [--shapes T,N,K,E,TOPK ...] [--routing
             uniform|zipf] [--layout nk|kn] [-n iters] [-w warmup] [--dtype bf16|fp16] [-J out.json]
Without a GPU:  python3 bench/peers/torch_grouped_mm.py --dry-run (shapes, the routing's expert
loads and a hash of its ids, no torch needed: the lines `weft-bench grouped_gemm --dry-run`
prints, which tests/cpu/bench_routing.sh compares)
"""
import argparse
import json
import os
import statistics
import sys

# one GPU, but the same settings as every GPU script of the project (docs/architecture.md,
# section 7: NVLink multicast stays off)
for k, v in {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1",
             "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}.items():
    os.environ[k] = v

MASK = (1 << 64) - 1


def xorshift(s):
    s ^= (s << 13) & MASK
    s ^= s >> 7
    s ^= (s << 17) & MASK
    return s


def draw_ids(tokens, topk, experts, zipf, seed):
    """tools/bench_grouped_gemm.c's draw_ids, draw for draw."""
    weights = [1.0 / (e + 1) if zipf else 1.0 for e in range(experts)]
    total = 0.0
    for w in weights:
        total += w
    ids = []
    for _ in range(tokens):
        row = []
        for j in range(topk):
            seed = xorshift(seed)
            u = (seed >> 11) / 9007199254740992.0 * total
            acc, e = 0.0, 0
            while e < experts - 1:
                acc += weights[e]
                if u < acc:
                    break
                e += 1
            while e in row:
                e = (e + 1) % experts
            row.append(e)
        ids.extend(row)
    return ids


def dry_run(shapes, zipf):
    """The routing of each shape (T, _, _, E, TOPK) as weft-bench's MoE suites print it with
    --dry-run: rows, the experts' smallest and largest loads, the empty ones, a hash of the ids."""
    for si, (t, n, k, e, topk) in enumerate(shapes):
        ids = draw_ids(t, topk, e, zipf, 0x5EED0000 + si)
        loads = [0] * e
        h = 0
        for x in ids:
            loads[x] += 1
            h = (h * 31 + x) & 0xFFFFFFFF
        print(f"{t}x{n}x{k}x{e}x{topk}: {t * topk} rows, expert loads min {min(loads)} "
              f"max {max(loads)}, empty {loads.count(0)}, ids hash {h:08x}")


def default_shapes():
    """weft-bench grouped_gemm's defaults, in its order."""
    shapes = []
    for s, h, i, e, k in ((8192, 2048, 1536, 8, 2), (8192, 2048, 1536, 32, 2),
                          (8192, 2048, 1536, 32, 5), (8192, 4096, 2048, 8, 2),
                          (8192, 4096, 2048, 32, 2), (8192, 4096, 2048, 32, 5)):
        shapes += [(s, i, h, e, k), (s, h, i, e, k)]
    shapes += [(2048, 1408, 2048, 60, 4), (2048, 4096, 14336, 8, 2), (2048, 6144, 16384, 8, 2),
               (2048, 2048, 1408, 64, 6), (1024, 2048, 1536, 32, 5), (1024, 4096, 2048, 64, 5)]
    for e, k, h, i in ((8, 2, 4096, 14336), (128, 8, 2048, 768), (256, 8, 7168, 2048)):
        shapes += [(4096, 2 * i, h, e, k), (4096, h, i, e, k)]
    return shapes


def moe_args(doc, shape_help, shapes, batch, layout):
    """The MoE peers' command line (this script's and torch_moe_layer.py's): (args, shapes, zipf),
    shapes from --shapes or the given defaults; layout: whether --layout is an option."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--shapes", nargs="*", default=None, help=shape_help)
    ap.add_argument("--routing", choices=("uniform", "zipf"), default="uniform")
    if layout:
        ap.add_argument("--layout", choices=("nk", "kn"), default="nk")
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("-J", dest="json", default=None)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.shapes:
        shapes = [tuple(int(x) for x in s.split(",")) for s in a.shapes]
    return a, shapes, a.routing == "zipf"


def torch_grouped_mm_or_none(script):
    """torch, or None (and why on stderr) where it has no CUDA or no torch._grouped_mm."""
    import torch
    if not torch.cuda.is_available() or not hasattr(torch, "_grouped_mm"):
        print(f"{script}: needs CUDA and torch._grouped_mm", file=sys.stderr)
        return None
    return torch


def main():
    a, shapes, zipf = moe_args(__doc__, "T,N,K,E,TOPK ...", default_shapes(), 10, True)
    if a.dry_run:
        dry_run(shapes, zipf)
        return 0
    torch = torch_grouped_mm_or_none("torch_grouped_mm.py")
    if torch is None:
        return 77
    dev = torch.device("cuda")
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    print(f"# torch {torch.__version__} {torch.cuda.get_device_name()}: torch._grouped_mm, "
          f"{a.dtype}, weights {'[E,N,K]' if a.layout == 'nk' else '[E,K,N]'}, {a.routing} routing; "
          f"us per call (median of {a.n} samples of {a.batch} calls)")
    print(f"#{'T':>6} {'N':>6} {'K':>6} {'E':>4} {'topk':>4} {'torch_us':>10} {'TF':>8} {'err':>9}")
    rows, wrong = [], 0
    for si, (t, n, k, e, topk) in enumerate(shapes):
        ids = torch.tensor(draw_ids(t, topk, e, zipf, 0x5EED0000 + si), device=dev)
        x = torch.rand(t, k, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)
        w = torch.rand(e, n, k, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)
        if a.layout == "kn":
            w = w.transpose(1, 2).contiguous()  # [E, K, N]
        wt = w.transpose(1, 2) if a.layout == "nk" else w  # [E, K, N] views
        order = torch.argsort(ids, stable=True)
        a_sorted = x[order // topk].contiguous()
        counts = torch.bincount(ids, minlength=e)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        out = torch._grouped_mm(a_sorted, wt, offs=offs)
        ref = torch.empty_like(out)
        start = 0
        for ex, c in enumerate(counts.tolist()):
            if c:
                ref[start:start + c] = a_sorted[start:start + c] @ wt[ex]
            start += c
        err = ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()
        bad = not (err <= a.tol)
        wrong += bad
        times = []
        for i in range(a.w + a.n):
            s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s0.record()
            for _ in range(a.batch):
                torch._grouped_mm(a_sorted, wt, offs=offs)
            s1.record()
            s1.synchronize()
            if i >= a.w:
                times.append(s0.elapsed_time(s1) * 1e3 / a.batch)
        us = statistics.median(times)
        tf = 2.0 * t * topk * n * k / us * 1e-6
        print(f" {t:6d} {n:6d} {k:6d} {e:4d} {topk:4d} {us:10.1f} {tf:8.1f} {err:9.2e}"
              f"{' WRONG' if bad else ''}", flush=True)
        rows.append({"suite": "grouped_gemm", "name": f"{t}x{n}x{k}x{e}x{topk}", "T": t, "N": n,
                     "K": k, "E": e, "topk": topk, "torch_grouped_mm_us": us, "err": err})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"suite": "grouped_gemm", "ranks": 1, "peer": "torch_grouped_mm",
                       "rows": rows}, f, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
