"""Summary of a dev/gemm/ab_build.sh call: from its logs (old_1.log, new_1.log, old_2.log,
new_2.log) the shapes with the lowest ratio to cuBLAS in the new build, and those whose weft time
moved more than 3% between the builds; with --table, every shape: the medians of each build's
weft times and of cuBLAS's (both builds' runs), their ratios and new / old.
Usage: python3 dev/gemm/ab_summary.py <its $OUT> [--table]"""
import glob
import os
import sys

rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*_[0-9].log'))):
    build = os.path.basename(path).split('_')[0]
    for line in open(path):
        f = line.split()
        if len(f) >= 8 and f[0].isdigit() and f[7].endswith('x'):
            rows.setdefault('x'.join(f[:3]), {}).setdefault(build, []).append((float(f[4]), float(f[7][:-1]), float(f[3])))
print(len(rows), 'shapes; lowest ratio in the new build (weft us, ratio per run):')
for k, v in sorted(rows.items(), key=lambda kv: min(x[1] for x in kv[1]['new']))[:12]:
    print(' ', k, 'old', v['old'], 'new', v['new'])
print('weft time moved more than 3%:')
for k, v in rows.items():
    old, new = sum(x[0] for x in v['old']), sum(x[0] for x in v['new'])
    if abs(new / old - 1) > 0.03:
        print(' ', k, 'old', v['old'], 'new', v['new'])
if '--table' in sys.argv:
    import statistics
    print('| m x n x k | old us | new us | cuBLAS us | cuBLAS / old | cuBLAS / new | new / old |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for k in sorted(rows, key=lambda s: tuple(int(x) for x in s.split('x'))):
        v = rows[k]
        o = statistics.median(x[0] for x in v['old'])
        n = statistics.median(x[0] for x in v['new'])
        c = statistics.median(x[2] for x in v['old'] + v['new'])
        print('| %s | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f |' % (k, o, n, c, c / o, c / n, n / o))
