"""Summary of a dev/gemm/ab_build.sh call: from its logs (old_1.log, new_1.log, old_2.log,
new_2.log) the shapes with the lowest ratio to cuBLAS in the new build, and those whose weft time
moved more than 3% between the builds. Usage: python3 dev/gemm/ab_summary.py <its $OUT>"""
import glob
import os
import sys

rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*_[0-9].log'))):
    build = os.path.basename(path).split('_')[0]
    for line in open(path):
        f = line.split()
        if len(f) >= 8 and f[0].isdigit() and f[7].endswith('x'):
            rows.setdefault('x'.join(f[:3]), {}).setdefault(build, []).append((float(f[4]), float(f[7][:-1])))
print(len(rows), 'shapes; lowest ratio in the new build (weft us, ratio per run):')
for k, v in sorted(rows.items(), key=lambda kv: min(x[1] for x in kv[1]['new']))[:12]:
    print(' ', k, 'old', v['old'], 'new', v['new'])
print('weft time moved more than 3%:')
for k, v in rows.items():
    old, new = sum(x[0] for x in v['old']), sum(x[0] for x in v['new'])
    if abs(new / old - 1) > 0.03:
        print(' ', k, 'old', v['old'], 'new', v['new'])
