"""bench/tables.py (the main job's last step) on made-up weft-bench and torch JSON, without a
GPU: the tables and the target lines it must print, with their row counts, worst figures and
verdicts worked out by hand below, for rows with and without in-place columns and unchecked
rows (-c 0). Run by ctest (cpu_test_bench_tables): python3 tests/cpu/bench_tables.py <tables.py>"""
import json
import os
import subprocess
import sys
import tempfile

KB, MB = 1 << 10, 1 << 20


def coll(bytes_, weft, nccl, wrong=0, ip=None):
    r = {"bytes": bytes_, "weft_us": weft, "weft_busbw": 1.0 / weft, "nccl_us": nccl,
         "nccl_busbw": 1.0 / nccl, "speedup": nccl / weft, "wrong": wrong}
    if ip:
        r.update({"ip_weft_us": ip[0], "ip_nccl_us": ip[1], "ip_speedup": ip[1] / ip[0],
                  "ip_wrong": 0})
    return r


def ovl(m, n, k, gemm, comm, base, weft):
    return {"M": m, "N": n, "K": k, "gemm_ms": gemm, "comm_ms": comm, "baseline_ms": base,
            "weft_ms": weft, "exposed_ms": weft - gemm, "speedup": base / weft,
            "bound_share": max(gemm, comm) / weft, "wrong": 0}


files = {
    # AllReduce: 8 KB and 256 KB at 0.40x and 0.60x of NCCL's time (the second misses 0.5x);
    # 1 MB at 0.9x (holds 1.0x); in-place columns on every row
    "allreduce.json": {"suite": "allreduce", "ranks": 4, "rows": [
        coll(8 * KB, 4.0, 10.0, ip=(4.5, 10.0)), coll(256 * KB, 6.0, 10.0, ip=(6.0, 9.0)),
        coll(MB, 9.0, 10.0, ip=(9.0, 10.5))]},
    # AllGather without in-place columns (older files) and one unchecked row
    "allgather.json": {"suite": "allgather", "ranks": 4, "rows": [
        coll(64 * KB, 5.0, 12.5, wrong=-1), coll(128 * MB, 300.0, 360.0)]},
    "gemm_ar.json": {"suite": "gemm_ar", "ranks": 4, "rows": [
        ovl(8192, 4096, 14336, 0.30, 0.30, 0.60, 0.45), ovl(128, 16384, 53248, 0.11, 0.04, 0.16, 0.145)]},
    "ag_gemm.json": {"suite": "ag_gemm", "ranks": 4, "rows": [
        ovl(8192, 4096, 4096, 1.0, 0.5, 1.5, 1.2), ovl(8192, 8192, 8192, 2.0, 0.5, 2.5, 2.0)]},
    "torch.json": {"peer": "torch_async_tp", "ranks": 4, "rows": [
        {"suite": "ag_gemm", "M": 8192, "N": 4096, "K": 4096, "async_tp_ms": 1.5, "gemm_ms": 1.0}]},
}
want = [
    "### allreduce, 4 ranks (allreduce)",
    "in place: weft us | NCCL us | NCCL/weft | wrong |",
    "| 8 KB | 4.0 | 10.0 | 2.50x | 0.2 | 0.1 | 2.50x | 0 | 4.5 | 10.0 | 2.22x | 0 |",
    "- AllReduce 8 KB-256 KB at most 0.5x NCCL's time: 2 rows, worst 0.60x NCCL's time: MISSED",
    "- AllReduce >= 1 MB at least 1.0x NCCL (time): 1 rows, worst 0.90x NCCL's time: holds",
    "| 64 KB | 5.0 | 12.5 | 2.50x | 0.2 | 0.1 | 2.50x | N/A |",
    "- AllGather <= 64 KB at most 0.5x NCCL's time: 1 rows, worst 0.40x NCCL's time: holds",
    "- allgather 64-256 MB at least 1.15x NCCL's busbw: 1 rows, worst 1.20x NCCL's busbw: holds",
    "- GEMM+AR at least 1.2x cuBLAS+NCCL AllReduce: 2 rows, worst 1.103x: MISSED",
    "Geometric-mean speedup over cuBLAS+NCCL: 1.250x (2 shapes)",
    "- ag_gemm geometric mean at least 1.25x: 1.250x: holds",
    "- ag_gemm faster than torch async-TP: 1 rows, worst 1.25x torch's time: holds",
]
with tempfile.TemporaryDirectory() as d:
    for name, data in files.items():
        with open(os.path.join(d, name), "w") as f:
            json.dump(data, f)
    out = subprocess.run([sys.executable, sys.argv[1], d], capture_output=True, text=True)
fails = [w for w in want if w not in out.stdout]
for w in want:
    print(("FAIL  " if w in fails else "ok    ") + w)
if out.returncode or fails:
    print(f"tables.py exited {out.returncode}\n--- its output:\n{out.stdout}{out.stderr}")
sys.exit(1 if out.returncode or fails else 0)
