# torch.matmul alone on one GPU, for a weft-bench gemm figure to stand beside (is torch's cuBLAS
# faster than weft-bench's on the AG+GEMM shapes?). bf16, torch.randn inputs,
# B [K, N] ("kn") and the transposed view of an [N, K] tensor ("nk"); 5 warm-up calls, then the
# median of 20 samples of 10 calls timed by CUDA events.
#   python3 dev/gemm/torch_matmul.py [M,N,K ...]
import sys

import torch

shapes = [tuple(map(int, a.split(","))) for a in sys.argv[1:]] or [
    (8192, 7168, 8192), (8192, 7392, 8192), (8192, 2752, 4096)]
for (m, n, k) in shapes:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    bt = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    for name, bb in (("kn", b), ("nk", bt)):
        for _ in range(5):
            torch.matmul(a, bb)
        ts = []
        for _ in range(20):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                torch.matmul(a, bb)
            e1.record()
            torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1) / 10 * 1e3)
        ts.sort()
        print(f"torch.matmul {name} {m}x{n}x{k}: {ts[len(ts) // 2]:.1f} us")
