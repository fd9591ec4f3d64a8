"""weft.Comm(group=...): a program that starts torch.distributed itself (here gloo over a
FileStore, with no launcher variables left for weft to read) gets a communicator over the
group's ranks; an AllReduce through it matches gloo's on the same fresh inputs. Run by ctest
through weftrun (for the processes only: its WEFT_* variables are removed first) at 2 and 4
ranks: weftrun -n 4 python3 tests/python/group.py. Exits 77 without torch or a GPU."""

import os
import sys
import time

from needs import torch_with_cuda

torch = torch_with_cuda()
import torch.distributed as dist  # noqa: E402 (after the skip)
import weft  # noqa: E402

rank, world = int(os.environ["WEFT_RANK"]), int(os.environ["WEFT_WORLD_SIZE"])
job = os.environ["WEFT_BOOTSTRAP_ADDR"].rsplit(":", 1)[1]  # unique to this weftrun job
for var in ("WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_WORLD_SIZE",
            "WEFT_BOOTSTRAP_ADDR", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    os.environ.pop(var, None)
store = dist.FileStore(f"/tmp/weft-group-test-{job}", world)
dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
torch.cuda.set_device(rank)

comm = weft.Comm(group=dist.group.WORLD)
failures = []
if (comm.rank, comm.world_size, comm.device) != (rank, world, rank):
    failures.append(f"Comm(group) is rank {comm.rank} of {comm.world_size} on cuda:{comm.device}, "
                    f"torch.distributed says {rank} of {world} on cuda:{rank}")
if any(v in os.environ for v in ("WEFT_RANK", "WEFT_BOOTSTRAP_ADDR")):
    failures.append("Comm(group) left WEFT_* variables in the environment")

# Fresh inputs: rank 0's seed through gloo (not weft, which is under test).
seed = torch.tensor([time.time_ns() % (1 << 62)])
dist.broadcast(seed, 0)
g = torch.Generator().manual_seed(int(seed) + rank)
mine = torch.randn(1 << 20, generator=g)
x = comm.empty(mine.shape, torch.float32)
x.copy_(mine)
comm.all_reduce(x)
comm.synchronize()
ref = mine.clone()
dist.all_reduce(ref)  # gloo, on the CPU
err = float((x.cpu().double() - ref.double()).norm() / ref.double().norm())
if not err <= 1e-6:
    failures.append(f"weft's AllReduce over the group is {err:.2e} off gloo's")
comm.free(x)
comm.destroy()
dist.destroy_process_group()
for f in failures:
    print(f"[rank {rank}] FAIL {f}")
print(f"[rank {rank}] {'FAILED' if failures else 'ok'}: rank {rank} of {world}, AllReduce "
      f"against gloo {err:.2e}", flush=True)
sys.exit(1 if failures else 0)
