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


def gg(name, weft, cublas_ratio, dense_ratio, min_load):
    return {"name": name, "T": 8192, "N": 2048, "K": 1536, "E": 8, "topk": 2, "weft_us": weft,
            "min_load": min_load, "ratio": cublas_ratio, "dense_ratio": dense_ratio, "err": 1e-3}


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
    # grouped GEMM, Zipf routing: torch / weft 1.2x and 0.8x (geomean 0.980x: missed; the second
    # below 0.9x); dense 0.95x on the shape whose experts all hold >= 256 tokens
    "grouped_gemm-zipf.json": {"suite": "grouped_gemm", "ranks": 1, "rows": [
        gg("a", 100.0, 1.10, 0.95, 300), gg("b", 50.0, 0.90, 0.50, 10)]},
    "torch_grouped_mm-zipf.json": {"peer": "torch_grouped_mm", "ranks": 1, "rows": [
        {"suite": "grouped_gemm", "name": "a", "torch_grouped_mm_us": 120.0},
        {"suite": "grouped_gemm", "name": "b", "torch_grouped_mm_us": 40.0}]},
    # the layer, uniform: the PyTorch layer 1.5x weft's time
    "moe_layer.json": {"suite": "moe_layer", "ranks": 1, "rows": [
        {"name": "c", "T": 4096, "H": 2048, "I": 768, "E": 128, "topk": 8, "weft_us": 200.0,
         "weft_unfused_us": 260.0, "err": 1e-3}]},
    "torch_moe_layer.json": {"peer": "torch_moe_layer", "ranks": 1, "rows": [
        {"suite": "moe_layer", "name": "c", "torch_moe_layer_us": 300.0}]},
    # AllGather + MoE at 4 ranks: NCCL + unfused 1.25x weft's time, PyTorch 2x
    "ag_moe-np4.json": {"suite": "ag_moe", "ranks": 4, "rows": [
        {"name": "d", "M": 1024, "H": 2048, "I": 1408, "E": 60, "topk": 4, "weft_us": 400.0,
         "baseline_us": 500.0, "ratio": 1.25, "err": 2e-3}]},
    "torch_moe_tp-np4.json": {"peer": "torch_moe_tp", "ranks": 4, "routing": "uniform", "rows": [
        {"suite": "ag_moe", "name": "d", "torch_us": 800.0}]},
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
    "### grouped_gemm, one GPU, zipf routing (grouped_gemm-zipf); us",
    "- grouped_gemm (zipf) geometric mean at least 1.0x torch._grouped_mm: 0.980x: MISSED",
    "- grouped_gemm (zipf) at least 0.9x torch._grouped_mm on every shape: 2 rows, worst 0.800x: "
    "MISSED",
    "- grouped_gemm (zipf) at least 0.9x dense cuBLAS where every expert has >= 256 tokens: 1 rows, "
    "worst 0.950x: holds",
    "| 4096, 2048, 768, 128, 8 | 200.0 | 260.0 | 1.300x | 1546 | 300.0 | 1.500x | 1.0e-03 |",
    "- moe_layer (uniform) at least 1.2x the PyTorch layer: 1 rows, worst 1.500x: holds",
    "### ag_moe, 4 ranks, uniform routing (ag_moe-np4); us",
    "| 1024, 2048, 1408, 60, 4 | 400.0 | 500.0 | 1.250x | 800.0 | 2.000x | 2.0e-03 |",
    "Geometric mean, NCCL + unfused time / weft's: 1.250x (1 shapes)",
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
