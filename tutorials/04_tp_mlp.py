"""A tensor-parallel SwiGLU MLP block (Llama's) with weft's overlapped ops, from PyTorch.

Sequence-parallel layout, as Megatron-LM runs it: each rank holds S / world rows of the
activations and 1 / world of every weight. The up projections are column-parallel: AllGather of
the rows + GEMM (weft.Comm.ag_gemm, the gather hidden behind the GEMM); the down projection is
row-parallel: GEMM + ReduceScatter (weft.Comm.gemm_rs), which hands each rank its rows back.
No torch.distributed is needed: weft meets the other ranks itself.

    weftrun -n 2 python3 tutorials/04_tp_mlp.py        (or torchrun --nproc-per-node 2 ...)

with python/ on PYTHONPATH (or weft installed: pip install ./python). It checks its output
against the same block computed whole on one GPU in fp32, and exits 77 without torch.
"""
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch is not importable: skipped")
    sys.exit(77)
import weft

S, H, FF = 4096, 4096, 14336  # tokens, hidden size, MLP width (Llama-3 8B)

comm = weft.Comm()
torch.cuda.set_device(comm.device)
rank, world = comm.rank, comm.world_size
rows, cols = S // world, FF // world  # this rank's activation rows and MLP columns

# The same random weights and inputs on every rank (rank 0's seed, gathered through weft), so
# that each rank can also compute the whole block by itself for the check.
seeds = comm.empty((world,), torch.int64)
comm.all_gather(seeds, torch.tensor([time.time_ns() % (1 << 62)], device="cuda"))
comm.synchronize()
g = torch.Generator().manual_seed(int(seeds[0]))  # (on the CPU: the same numbers on any GPU)
comm.free(seeds)


def randn(*shape, scale=1.0):
    return (torch.randn(*shape, generator=g) * scale).bfloat16().cuda()


x = randn(S, H)                                   # all ranks' rows
w1, w3 = randn(FF, H, scale=H**-0.5), randn(FF, H, scale=H**-0.5)
w2 = randn(H, FF, scale=FF**-0.5)

# This rank's shards: its rows of x, its columns of the gate and up projections (stacked, so one
# AllGather + GEMM computes both), its rows of the down projection's reduction dimension.
my_x = x[rank * rows:(rank + 1) * rows].contiguous()
my_w13 = torch.cat([w1[rank * cols:(rank + 1) * cols], w3[rank * cols:(rank + 1) * cols]])
my_w2 = w2[:, rank * cols:(rank + 1) * cols].contiguous()                # [H, FF / world]


def mlp(x_rows):
    gate_up = comm.ag_gemm(x_rows, my_w13)           # [S, 2 FF / world]: every rank's rows
    gate, up = gate_up[:, :cols], gate_up[:, cols:]
    h = (F.silu(gate.float()) * up.float()).bfloat16()
    return comm.gemm_rs(h, my_w2)                    # [S / world, H]: summed over the ranks


out = mlp(my_x)
comm.synchronize()

ref = (F.silu(x.float() @ w1.float().t()) * (x.float() @ w3.float().t())) @ w2.float().t()
ref = ref[rank * rows:(rank + 1) * rows]
err = float((out.float() - ref).norm() / ref.norm())
print(f"[rank {rank}] TP={world} SwiGLU MLP, {S} tokens, H={H}, FF={FF}: output {tuple(out.shape)}, "
      f"error against one GPU in fp32 {err:.2e}", flush=True)
comm.destroy()
sys.exit(0 if err <= 1e-2 else 1)
