#!/usr/bin/env python3
"""bench/tables.py — markdown tables from weft-bench's -J files (and bench/peers' torch JSON),
with the targets of the collectives and overlap issues checked row by row.

    python3 bench/tables.py <dir or files...> [--ranks N]

Reads every *.json given (or found in a directory: dev/device/test_and_bench.sh's $OUT, make bench's
build/bench-logs), groups the rows by suite and world size, and prints one table per group:
  collectives (allgather, reduce_scatter, allreduce, alltoall, alltoallv): size (total bytes, as
    weft-bench and nccl-tests count it), weft and NCCL time, their ratio, both busbw and theirs;
    in place too where the rows have it;
  overlapped ops (ag_gemm, gemm_rs, gemm_ar): per shape GEMM alone, communication alone,
    cuBLAS+NCCL, weft, exposed, speedup, share of the overlap bound, and the torch async-TP
    column where a torch_async_tp JSON of the same world size is given; the geometric mean;
  MoE (grouped_gemm, moe_layer; one GPU): per shape weft, cuBLAS's grouped GEMM and the dense
    GEMM of equal FLOPs (grouped_gemm), weft unfused (moe_layer), and PyTorch's time
    (torch_grouped_mm, torch_moe_layer JSON of the same shape and routing) with the ratios;
  tensor-parallel MoE (ag_moe, moe_rs, moe_ar): weft, NCCL + the unfused steps, PyTorch
    (torch_moe_tp JSON of the same world size and routing).
Then the targets (docs/benchmarks.md, stated for 4 ranks; shown for every world size): each line
says the rows it covers, the worst figure among them and whether it holds. Nothing is measured
here: the figures are the JSON's, which weft-bench took in one run, interleaved.
"""
import json
import math
import os
import sys

COLLECTIVES = ["allgather", "reduce_scatter", "allreduce", "alltoall", "alltoallv"]
MOE = {"grouped_gemm": "torch_grouped_mm", "moe_layer": "torch_moe_layer"}
MOE_TP = ["ag_moe", "moe_rs", "moe_ar"]
OVERLAP = ["ag_gemm", "gemm_rs", "gemm_ar"]
KB, MB = 1 << 10, 1 << 20


def load(paths):
    """(suite, ranks, algorithm label, rows) for weft-bench files; torch's (async-TP ms, its own
    GEMM-alone ms) by (suite, ranks, M, N, K)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        else:
            files.append(p)
    groups, peers = [], {}
    for f in files:
        try:
            d = json.load(open(f))
        except (OSError, ValueError) as e:
            print(f"<!-- {f}: not read ({e}) -->")
            continue
        if not isinstance(d, dict) or "rows" not in d:
            continue
        if d.get("peer") == "torch_moe_tp":  # by (suite, ranks, routing, shape name)
            for r in d["rows"]:
                peers[(r["suite"], d["ranks"], d.get("routing", "uniform"), r["name"])] = \
                    r["torch_us"]
            continue
        if d.get("peer") in MOE.values():  # by (suite, routing, shape name)
            routing = "zipf" if "zipf" in os.path.basename(f) else "uniform"
            for r in d["rows"]:
                peers[(r["suite"], routing, r["name"])] = r[d["peer"] + "_us"]
            continue
        if d.get("peer") == "torch_async_tp":
            for r in d["rows"]:
                if "async_tp_ms" in r:
                    peers[(r["suite"], d["ranks"], r["M"], r["N"], r["K"])] = (r["async_tp_ms"],
                                                                               r.get("gemm_ms"))
            continue
        label = os.path.splitext(os.path.basename(f))[0]
        groups.append((d.get("suite", "?"), d.get("ranks", 0), label, d["rows"]))
    return groups, peers


def size(b):
    # files written before 2026-11-25 held sizes to 6 significant digits: snap those to the power
    # of two they round
    p2 = 2 ** round(math.log2(b)) if b > 0 else 0
    b = int(p2) if p2 and abs(b - p2) <= 5e-6 * b else int(round(b))
    return f"{b // MB} MB" if b >= MB and b % MB == 0 else f"{b // KB} KB" if b >= KB and b % KB == 0 else f"{b} B"


def collective_table(suite, ranks, label, rows):
    ip = any("ip_weft_us" in r for r in rows)  # in-place columns (weft-bench since 2026-11-26)
    print(f"\n### {suite}, {ranks} ranks ({label})\n")
    print("| size | weft us | NCCL us | NCCL/weft time | weft busbw GB/s | NCCL busbw GB/s | busbw ratio | wrong |"
          + (" in place: weft us | NCCL us | NCCL/weft | wrong |" if ip else ""))
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: | ---: | ---: |" if ip else ""))
    for r in rows:
        bw = r["weft_busbw"] / r["nccl_busbw"] if r.get("nccl_busbw") else float("nan")
        line = (f"| {size(r['bytes'])} | {r['weft_us']:.1f} | {r['nccl_us']:.1f} | {r['nccl_us'] / r['weft_us']:.2f}x "
                f"| {r['weft_busbw']:.1f} | {r['nccl_busbw']:.1f} | {bw:.2f}x | {wrong(r)} |")
        if ip and "ip_weft_us" in r:
            line += (f" {r['ip_weft_us']:.1f} | {r['ip_nccl_us']:.1f} | {r['ip_speedup']:.2f}x "
                     f"| {wrong(r, 'ip_wrong')} |")
        elif ip:
            line += " — | — | — | — |"
        print(line)


def wrong(r, key="wrong"):
    """The row's wrong count; weft-bench -c 0 writes -1 (not checked)."""
    w = r.get(key, 0)
    return "N/A" if w < 0 else f"{w:g}"


def check(what, rows, figure, holds, fmt):
    """One target line: the rows it covers, the worst figure and whether every row holds."""
    if not rows:
        print(f"- {what}: no rows in range")
        return
    vals = [figure(r) for r in rows]
    ok = all(holds(v) for v in vals)
    worst = max(vals) if holds(0.0) and not holds(1e9) else min(vals)
    print(f"- {what}: {len(rows)} rows, worst {fmt(worst)}: {'holds' if ok else 'MISSED'}")


def collective_targets(suite, rows):
    time_ratio = lambda r: r["weft_us"] / r["nccl_us"]  # weft's time as a share of NCCL's
    bw_ratio = lambda r: r["weft_busbw"] / r["nccl_busbw"]
    share = lambda v: f"{v:.2f}x NCCL's time"
    times = lambda v: f"{v:.2f}x NCCL's busbw"
    if suite == "allreduce":
        check("AllReduce 8 KB-256 KB at most 0.5x NCCL's time",
              [r for r in rows if 8 * KB <= r["bytes"] <= 256 * KB], time_ratio, lambda v: v <= 0.5, share)
        check("AllReduce >= 1 MB at least 1.0x NCCL (time)",
              [r for r in rows if r["bytes"] >= MB], time_ratio, lambda v: v <= 1.0, share)
    if suite == "allgather":
        check("AllGather <= 64 KB at most 0.5x NCCL's time",
              [r for r in rows if r["bytes"] <= 64 * KB], time_ratio, lambda v: v <= 0.5, share)
    if suite in ("allgather", "reduce_scatter"):
        check(f"{suite} 64-256 MB at least 1.15x NCCL's busbw",
              [r for r in rows if 64 * MB <= r["bytes"] <= 256 * MB], bw_ratio, lambda v: v >= 1.15, times)


def overlap_table(suite, ranks, label, rows, peers):
    print(f"\n### {suite}, {ranks} ranks ({label}); ms\n")
    # torch GEMM: torch.matmul alone in the torch processes over weft-bench's cuBLAS alone in its
    # own: the same GEMM in two processes of one job, the spread that the weft-vs-torch column carries
    print("| M, N, K | GEMM | comm | cuBLAS+NCCL | weft | exposed | speedup | bound % | torch async-TP "
          "| weft vs torch | torch GEMM / GEMM | wrong |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        t, tg = peers.get((suite, ranks, r["M"], r["N"], r["K"]), (None, None))
        tt = f"{t:.3f} | {t / r['weft_ms']:.2f}x" if t else "— | —"
        tt += f" | {tg / r['gemm_ms']:.3f}" if t and tg else " | —"
        print(f"| {r['M']}, {r['N']}, {r['K']} | {r['gemm_ms']:.3f} | {r['comm_ms']:.3f} | {r['baseline_ms']:.3f} "
              f"| {r['weft_ms']:.3f} | {r['exposed_ms']:.3f} | {r['speedup']:.3f}x | {100 * r['bound_share']:.1f} "
              f"| {tt} | {wrong(r)} |")
    g = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows)) if rows else float("nan")
    print(f"\nGeometric-mean speedup over cuBLAS+NCCL: {g:.3f}x ({len(rows)} shapes)")
    return g


def overlap_targets(suite, rows, peers, ranks, g):
    sp = lambda r: r["speedup"]
    speed = lambda v: f"{v:.3f}x"
    if suite == "gemm_ar":
        check("GEMM+AR at least 1.2x cuBLAS+NCCL AllReduce", rows, sp, lambda v: v >= 1.2, speed)
        return
    check(f"{suite} at least 1.0x cuBLAS+NCCL on every shape", rows, sp, lambda v: v >= 1.0, speed)
    print(f"- {suite} geometric mean at least 1.25x: {g:.3f}x: {'holds' if g >= 1.25 else 'MISSED'}")
    big = sorted(rows, key=lambda r: 2.0 * r["M"] * r["N"] * r["K"], reverse=True)[:3]
    check(f"{suite} at least 90% of the overlap bound on the three largest shapes", big,
          lambda r: r["bound_share"], lambda v: v >= 0.9, lambda v: f"{100 * v:.1f}%")
    torch_rows = [r for r in rows if (suite, ranks, r["M"], r["N"], r["K"]) in peers]
    check(f"{suite} faster than torch async-TP", torch_rows,
          lambda r: peers[(suite, ranks, r["M"], r["N"], r["K"])][0] / r["weft_ms"], lambda v: v > 1.0,
          lambda v: f"{v:.2f}x torch's time")


def geomean(vals):
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")


def moe_table(suite, label, rows, peers):
    """One MoE suite's file (the routing from its name, as the torch JSON's): us per call."""
    routing = "zipf" if "zipf" in label else "uniform"
    print(f"\n### {suite}, one GPU, {routing} routing ({label}); us\n")
    torch = lambda r: peers.get((suite, routing, r["name"]))
    if suite == "grouped_gemm":
        print("| T, N, K, E, topk | weft | weft TFLOP/s | torch._grouped_mm | torch / weft | cuBLAS "
              "grouped / weft | dense cuBLAS / weft | smallest expert | err |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            t = torch(r)
            tf = 2.0 * r["T"] * r["topk"] * r["N"] * r["K"] / r["weft_us"] * 1e-6
            tt = f"{t:.1f} | {t / r['weft_us']:.3f}x" if t else "— | —"
            print(f"| {r['T']}, {r['N']}, {r['K']}, {r['E']}, {r['topk']} | {r['weft_us']:.1f} "
                  f"| {tf:.0f} | {tt} | {r['ratio']:.3f}x | {r['dense_ratio']:.3f}x "
                  f"| {r.get('min_load', float('nan')):g} | {r['err']:.1e} |")
    else:
        print("| T, H, I, E, topk | weft | weft unfused | unfused / weft | weft TFLOP/s | "
              "PyTorch layer | PyTorch / weft | err |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            t = torch(r)
            tf = 6.0 * r["T"] * r["topk"] * r["H"] * r["I"] / r["weft_us"] * 1e-6
            tt = f"{t:.1f} | {t / r['weft_us']:.3f}x" if t else "— | —"
            print(f"| {r['T']}, {r['H']}, {r['I']}, {r['E']}, {r['topk']} | {r['weft_us']:.1f} "
                  f"| {r['weft_unfused_us']:.1f} | {r['weft_unfused_us'] / r['weft_us']:.3f}x "
                  f"| {tf:.0f} | {tt} | {r['err']:.1e} |")
    with_torch = [r for r in rows if torch(r)]
    g = geomean([torch(r) / r["weft_us"] for r in with_torch])
    print(f"\nGeometric mean, PyTorch's time / weft's: {g:.3f}x ({len(with_torch)} shapes)")
    return routing, with_torch, g


def moe_targets(suite, routing, rows, peers, g):
    vs = lambda r: peers[(suite, routing, r["name"])] / r["weft_us"]
    times = lambda v: f"{v:.3f}x"
    if suite == "grouped_gemm":
        print(f"- grouped_gemm ({routing}) geometric mean at least 1.0x torch._grouped_mm: "
              f"{g:.3f}x: {'holds' if g >= 1.0 else 'MISSED'}")
        check(f"grouped_gemm ({routing}) at least 0.9x torch._grouped_mm on every shape", rows, vs,
              lambda v: v >= 0.9, times)
        check(f"grouped_gemm ({routing}) at least 0.9x dense cuBLAS where every expert has >= 256 "
              "tokens", [r for r in rows if r.get("min_load", 0) >= 256],
              lambda r: r["dense_ratio"], lambda v: v >= 0.9, times)
    else:
        check(f"moe_layer ({routing}) at least 1.2x the PyTorch layer", rows, vs,
              lambda v: v >= 1.2, times)


def moe_tp_table(suite, ranks, label, rows, peers):
    """A tensor-parallel MoE suite's file: weft, NCCL + unfused and PyTorch (torch_moe_tp), us."""
    routing = "zipf" if "zipf" in label else "uniform"
    print(f"\n### {suite}, {ranks} ranks, {routing} routing ({label}); us\n")
    print("| M, H, I, E, topk | weft | NCCL + unfused | NCCL + unfused / weft | PyTorch | "
          "PyTorch / weft | err |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        t = peers.get((suite, ranks, routing, r["name"]))
        tt = f"{t:.1f} | {t / r['weft_us']:.3f}x" if t else "— | —"
        print(f"| {r['M']}, {r['H']}, {r['I']}, {r['E']}, {r['topk']} | {r['weft_us']:.1f} "
              f"| {r['baseline_us']:.1f} | {r['ratio']:.3f}x | {tt} | {r['err']:.1e} |")
    g = geomean([r["ratio"] for r in rows])
    print(f"\nGeometric mean, NCCL + unfused time / weft's: {g:.3f}x ({len(rows)} shapes)")


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    if not paths:
        print(__doc__)
        return 2
    groups, peers = load(paths)
    for suite, ranks, label, rows in sorted(groups, key=lambda g: (g[1], g[0], g[2])):
        rows = [r for r in rows if r.get("name") != "summary"]
        if suite in COLLECTIVES:
            collective_table(suite, ranks, label, rows)
            print()
            collective_targets(suite, rows)
        elif suite in OVERLAP:
            g = overlap_table(suite, ranks, label, rows, peers)
            print()
            overlap_targets(suite, rows, peers, ranks, g)
        elif suite in MOE:
            routing, with_torch, g = moe_table(suite, label, rows, peers)
            print()
            moe_targets(suite, routing, with_torch, peers, g)
        elif suite in MOE_TP:
            moe_tp_table(suite, ranks, label, rows, peers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
