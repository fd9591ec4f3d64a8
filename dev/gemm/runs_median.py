#!/usr/bin/env python3
"""Median over runs of weft-bench gemm's JSON tables (dev/gemm/tables.sh, hooks_runs.sh): a
run's 20-30 interleaved samples still move a ratio about 1% between runs (small decode shapes
5-15%), so each shape's median over the runs is printed beside every run's figure.

  runs_median.py plain  DIR RUNS   DIR/gemm{1..RUNS}.json: large-m ratios, lowest median per class
  runs_median.py decode DIR RUNS   DIR/gemm_graph{1..RUNS}.json: shapes at >= 0.9x, the lowest six
  runs_median.py hooks  DIR RUNS   DIR/hooks{1..RUNS}.json: each hook's % over the plain kernel"""
import json
import statistics
import sys

HOOKS = ["wait", "notify", "notify.gpu", "wait+notify"]


def per_shape(out, prefix, runs, value):
    """[(first run's row, [value(row) in each run])] for every shape, in the tables' order."""
    rows = [json.load(open(f"{out}/{prefix}{r}.json"))["rows"] for r in range(1, runs + 1)]
    return [(r0, [value(rs[i]) for rs in rows]) for i, r0 in enumerate(rows[0])]


def cell(v, fmt, median_fmt=None):
    """The median and every run's value: '1.0052 [1.0016 1.0052 1.0117]'."""
    return (f"{statistics.median(v):{median_fmt or fmt}} [" + " ".join(f"{x:{fmt}}" for x in v) +
            "]")


def plain(out, runs):
    print("# shape             ratio: median over runs [each run]   (cuBLAS time / weft time)")
    low = {}
    for r0, v in per_shape(out, "gemm", runs, lambda r: r["ratio"]):
        if r0["M"] > 128:
            print(f"{r0['name']:18s} {cell(v, '.4f')}")
        key = "large m" if r0["M"] > 128 else "small m"
        low[key] = min(low.get(key, (9, "")), (statistics.median(v), r0["name"]))
    print("# lowest median: " + ", ".join(f"{k} {v[0]:.4f} ({v[1]})" for k, v in low.items()))


def decode(out, runs):
    shapes = per_shape(out, "gemm_graph", runs, lambda r: r["ratio"])
    med = sorted((statistics.median(v), r0["name"], v) for r0, v in shapes)
    print(f"# decode graphs, cold: {sum(m >= 0.9 for m, _, _ in med)} of {len(med)} shapes at >= 0.9x "
          f"cuBLAS (median over {runs} runs); below or lowest:")
    for _, name, v in med[:6]:
        print(f"{name:18s} {cell(v, '.3f')}")


def hooks(out, runs):
    print("# shape             " + "".join(f"{h:>26s}" for h in HOOKS) +
          "   (median over runs [each run], % vs plain)")
    over = {h: 0 for h in HOOKS}
    columns = {h: per_shape(out, "hooks", runs, lambda r, h=h: 100 * (r[h] / r["weft_us"] - 1))
               for h in HOOKS}
    for i, (r0, _) in enumerate(columns[HOOKS[0]]):
        cells = []
        for h in HOOKS:
            v = columns[h][i][1]
            over[h] += statistics.median(v) > 2
            cells.append(cell(v, "+.1f", "+5.1f"))
        print(f"{r0['name']:18s} " + "".join(f"{c:>26s}" for c in cells))
    print("# shapes over +2% (median over runs): " + ", ".join(f"{h} {over[h]}" for h in HOOKS))


if __name__ == "__main__":
    {"plain": plain, "decode": decode, "hooks": hooks}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
