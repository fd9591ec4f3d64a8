#!/usr/bin/env python3
# dev/gemm/summarize.py — compact table from gemm_dev's --json files: one line per shape (best
# weft config vs cuBLAS), every variant for the ladder, the hook costs. Usage: summarize.py *.json
import json, sys
rows = []
for f in sys.argv[1:]:
    try:
        lines = open(f).read().splitlines()
    except OSError:
        continue
    for l in lines:
        try:
            rows.append(json.loads(l))
        except ValueError:  # a line cut short by a time limit
            pass
shapes = {}
for r in rows:
    if r["tag"] == "hooks":
        print(f"hooks {r['M']}x{r['N']}x{r['K']}: weft {r['us']:.1f} us, +wait+notify "
              f"{(r['us_hooks']/r['us']-1)*100:+.2f}%, deferred {(r['us_hooks_deferred']/r['us']-1)*100:+.2f}%,"
              f" cublas {r['us_cublas']:.1f} us")
        continue
    key = (r["tag"], r["M"], r["N"], r["K"], r["din"], r["dout"], r["b"])
    shapes.setdefault(key, []).append(r)
print(f"{'tag':6} {'M':>5} {'N':>6} {'K':>6} {'in>out':10} {'B':2} {'weft TF':>8} {'cuBLAS TF':>9} {'ratio':>6}  best config")
worst = {}
for key, rs in shapes.items():
    cb = [r for r in rs if r["impl"] == "cublas"]
    ws = [r for r in rs if r["impl"] != "cublas"]
    if not cb or not ws:
        continue
    show = ws if key[0] == "ladder" else [max(ws, key=lambda r: r["tflops"])]
    for w in show:
        print(f"{key[0]:6} {key[1]:5d} {key[2]:6d} {key[3]:6d} {key[4]+'>'+key[5]:10} {key[6]:2} "
              f"{w['tflops']:8.1f} {cb[0]['tflops']:9.1f} {w['ratio_vs_cublas']:6.3f}  {w['impl']}")
    b = max(ws, key=lambda r: r["tflops"])["ratio_vs_cublas"]
    worst[key[0]] = min(worst.get(key[0], 9), b)
for t, v in worst.items():
    print(f"min best ratio [{t}]: {v:.3f}")
