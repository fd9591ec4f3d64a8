#!/usr/bin/env python3
"""
torch_async_tp.py — the PyTorch async-TP peer column for weft's overlap benchmarks.

Runs PyTorch's own overlapped tensor-parallel ops (symmetric-memory "async-TP":
torch.ops.symm_mem.fused_all_gather_matmul and fused_matmul_reduce_scatter) beside cuBLAS + NCCL
through torch, on the shapes of `weft-bench ag_gemm` / `gemm_rs`, with the same method: per
shape, in one run, interleaved (sample i of every variant before sample i + 1 of any), each
sample a batch of calls between two CUDA events after a host barrier, medians after warm-up, the
slowest rank's median (max across ranks). Times are ms per call.

  ag_gemm (M, N, K of the whole layer): A shard [M/ws, K], B [K, N/ws] (--layout nk: stored
          [N/ws, K], passed transposed), C [M, N/ws]. Baseline: all_gather_into_tensor(A), then
          torch.matmul on the gathered A.
  gemm_rs: A [M, K/ws], B [K/ws, N] (nk: stored [N, K/ws]), output [M/ws, N]. Baseline:
          torch.matmul into an [M, N] partial, then reduce_scatter_tensor (sum).

Each shape is checked once before timing: async-TP's output against the baseline's (normalised
error ||a - b|| / ||b|| <= --tol, non-finite values wrong); any wrong shape makes the exit status 1.
A shape where async-TP fails is reported as unavailable with the exception text, and its other
columns are still measured.

Launch:  torchrun --nproc-per-node N bench/peers/torch_async_tp.py [--op ag_gemm|gemm_rs|all]
             [--shapes M,N,K ...] [-n iters] [-w warmup] [--dtype bf16|fp16] [-J out.json]
Without GPUs:  python3 bench/peers/torch_async_tp.py --dry-run [--ranks N]
See bench/peers/README.md for the columns and the JSON rows.

NVLink multicast stays off (docs/architecture.md, section 7): the three variables below are set before torch is
imported, the run is refused if one of them was set to anything else, and async-TP is refused if
torch still reports multicast support for the device.
"""
import argparse
import gc
import json
import math
import os
import random
import socket
import statistics
import sys
import time
import types
import warnings

MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",                 # NCCL's NVLS (multicast) algorithms
    "NVSHMEM_DISABLE_NVLS": "1",             # NVSHMEM, if torch's symmetric memory uses it
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",  # torch's CUDA symmetric memory (rendezvous)
}

# DITRON, Appendix C, Table 1 (weft-bench's defaults): M, N, K of the whole layer.
DEFAULT_SHAPES = {
    "ag_gemm": [(8192, 11008, 4096), (8192, 14336, 4096), (8192, 28672, 8192),
                (8192, 53248, 16384), (8192, 29568, 8192)],
    "gemm_rs": [(8192, 4096, 11008), (8192, 4096, 14336), (8192, 8192, 28672),
                (8192, 16384, 53248), (8192, 8192, 29568)],
}
ELT_BYTES = 2  # bf16 and fp16


def die(msg, code=2):
    print(f"torch_async_tp: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def force_multicast_off():
    """Sets the three variables, refusing (exit 2) where someone set one of them otherwise."""
    bad = [f"{k}={os.environ[k]!r}" for k, v in MULTICAST_OFF.items()
           if k in os.environ and os.environ[k] != v]
    if bad:
        die("refusing to run: NVLink multicast must stay off on these machines "
            f"(docs/architecture.md, section 7), but {', '.join(bad)}; expected "
            + " ".join(f"{k}={v}" for k, v in MULTICAST_OFF.items()))
    os.environ.update(MULTICAST_OFF)


def parse_shape(s):
    try:
        m, n, k = (int(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape '{s}' is not M,N,K")
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"shape '{s}' has a non-positive size")
    return (m, n, k)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="PyTorch async-TP (symmetric-memory fused AllGather+GEMM and GEMM+"
        "ReduceScatter) beside cuBLAS + NCCL: the peer column of weft's overlap benchmarks. "
        "Launch with torchrun, one process per GPU.")
    p.add_argument("--op", choices=["ag_gemm", "gemm_rs", "all"], default="all")
    p.add_argument("--shapes", nargs="+", type=parse_shape, metavar="M,N,K",
                   help="M,N,K of the whole layer (default: DITRON, Appendix C, Table 1, per op)")
    p.add_argument("-n", "--iters", type=int, default=20, help="timed samples per variant")
    p.add_argument("-w", "--warmup", type=int, default=5, help="warm-up samples per variant")
    p.add_argument("--batch", type=int, default=10,
                   help="calls back to back per sample (weft-bench: BENCH_BATCH = 10)")
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    p.add_argument("--layout", choices=["kn", "nk"], default="kn",
                   help="B stored [K, N] (kn) or [N, K] and passed transposed (nk)")
    p.add_argument("--tol", type=float, default=1e-2, help="largest normalised error")
    p.add_argument("--seed", type=int, default=None, help="data seed (default: from the clock)")
    p.add_argument("-J", "--json", metavar="FILE", help="write the rows as JSON (rank 0)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: print the shapes and per-rank sizes that a run would use")
    p.add_argument("--ranks", type=int, default=None,
                   help="world size for --dry-run (default: $WORLD_SIZE, else 8)")
    a = p.parse_args(argv)
    if a.iters < 1 or a.warmup < 0 or a.batch < 1 or not a.tol > 0:
        p.error("need -n >= 1, -w >= 0, --batch >= 1, --tol > 0")
    if a.ranks is not None and not a.dry_run:
        p.error("--ranks is for --dry-run; a real run takes its world size from torchrun")
    return a


# ---- shapes: one plan per op and shape, used by the dry run and the real run alike ----------

def plan(op, M, N, K, ws, layout):
    """Per-rank tensors of one shape, or a string saying why it does not split over ws ranks."""
    if op == "ag_gemm":
        if M % ws or N % ws:
            return f"M ({M}) and N ({N}) must be multiples of the world size ({ws})"
        m, n = M // ws, N // ws
        return {"a": (m, K), "b": (K, n) if layout == "kn" else (n, K), "gathered": (M, K),
                "out": (M, n), "gemm": (M, n, K), "comm": "all_gather_into_tensor",
                "comm_bytes": M * K * ELT_BYTES,      # the whole gathered array
                "workspace": m * K * ELT_BYTES}       # torch's symmetric buffer: the A shard
    if M % ws or K % ws:
        return f"M ({M}) and K ({K}) must be multiples of the world size ({ws})"
    k = K // ws
    return {"a": (M, k), "b": (k, N) if layout == "kn" else (N, k), "partial": (M, N),
            "out": (M // ws, N), "gemm": (M, N, k), "comm": "reduce_scatter_tensor",
            "comm_bytes": M * N * ELT_BYTES,          # the whole [M, N] partial
            "workspace": 2 * (M // ws) * N * ELT_BYTES}  # two chunk buffers


def numel(shape):
    return math.prod(shape)


def peak_bytes(p):
    """Rough per-rank peak: inputs, the baseline's buffers, async-TP's outputs and internals, the
    symmetric workspace, and the fp32 copies of one row chunk at a time for the check."""
    base = numel(p["a"]) + numel(p["b"]) + 2 * numel(p["out"])
    if "gathered" in p:
        base += 2 * numel(p["gathered"])        # baseline's gathered A; async-TP's returned A
    else:
        base += 2 * numel(p["partial"])         # baseline's partial; async-TP's stacked partials
    return base * ELT_BYTES + p["workspace"]


def selected_ops(args):
    return ["ag_gemm", "gemm_rs"] if args.op == "all" else [args.op]


def shapes_for(op, args):
    return args.shapes if args.shapes else DEFAULT_SHAPES[op]


def xs(shape):
    return "x".join(str(d) for d in shape)


def mib(b):
    return f"{b / 2**20:.0f} MiB"


# ---- what this torch offers -----------------------------------------------------------------

def fmt_nccl(v):
    if isinstance(v, tuple):
        return ".".join(str(x) for x in v)
    if isinstance(v, int):  # 2.x codes: major*10000 + minor*100 + patch
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else str(v)
    return str(v)


def schema_fits(op, types):
    """The call forms this script makes, against the op's schema: the leading positional
    arguments must have these types, any further ones defaults."""
    want = {"ag_gemm": ["Tensor", "List[Tensor]", "int", "str"],
            "gemm_rs": ["Tensor", "Tensor", "str", "int", "str"]}[op]
    norm = [t.replace("Tensor[]", "List[Tensor]") for t in types]
    return norm[:len(want)] == want


def find_async_tp(torch):
    """Imports torch's symmetric memory and finds the two fused ops. Returns (symm module or None,
    {op: {"fn": overload or None, "form": text, "why": reason when unavailable}}). Needs no GPU."""
    forms = {}
    try:
        # The ops are defined (torch.library) when this module is imported, in every version
        # that has them (2.5 ... 2.15 checked): import it before looking them up.
        import torch.distributed._symmetric_memory as symm
    except Exception as e:  # noqa: BLE001 - any failure means "unavailable", with its text
        why = f"torch.distributed._symmetric_memory not importable: {type(e).__name__}: {e}"
        return None, {op: {"fn": None, "form": None, "why": why} for op in DEFAULT_SHAPES}
    names = {"ag_gemm": "fused_all_gather_matmul", "gemm_rs": "fused_matmul_reduce_scatter"}
    calls = {"ag_gemm": "(A_shard, [B], gather_dim=0, group_name)",
             "gemm_rs": '(A, B, "sum", scatter_dim=0, group_name)'}
    for op, name in names.items():
        try:
            overload = getattr(torch.ops.symm_mem, name).default
            schema = overload._schema
        except Exception as e:  # noqa: BLE001
            forms[op] = {"fn": None, "form": None,
                         "why": f"torch.ops.symm_mem.{name} not found: {type(e).__name__}: {e}"}
            continue
        args = list(schema.arguments)
        types = [str(a.type) for a in args]
        npos = 4 if op == "ag_gemm" else 5
        # Only the leading arguments are passed: later ones must have defaults. In particular
        # return_A (2.7+) stays True, which keeps 2.7+ off its multimem AG+GEMM path (taken only
        # with return_A=False, and only where torch sees multicast support).
        extra_ok = all(a.has_default_value() if hasattr(a, "has_default_value")
                       else a.default_value is not None for a in args[npos:])
        form = f"torch.ops.symm_mem.{name}{calls[op]}; schema {schema}"
        if not schema_fits(op, types) or not extra_ok:
            forms[op] = {"fn": None, "form": form,
                         "why": f"unexpected schema, not called: {schema}"}
        else:
            forms[op] = {"fn": overload, "form": form, "why": None}
    return symm, forms


# ---- host-side collectives (gloo: a TCP barrier like weft-bench's, away from NCCL's stream) --

class Host:
    def __init__(self, dist, torch, group):
        self.dist, self.torch, self.group = dist, torch, group

    def agree(self, ok):
        """Barrier that also tells every rank whether all of them are fine."""
        t = self.torch.tensor([1 if ok else 0], dtype=self.torch.int32)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN, group=self.group)
        return bool(t.item())

    def max(self, values):
        # NaN does not order: count it as +inf so the slowest / worst rank still wins.
        t = self.torch.tensor([v if v == v else math.inf for v in values], dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX, group=self.group)
        return t.tolist()

    def gather(self, obj):
        """Every rank's JSON-able obj, in rank order. Not all_gather_object: that one needs
        numpy, which torch does not require."""
        torch, dist = self.torch, self.dist
        data = json.dumps(obj).encode()
        size = torch.tensor([len(data)], dtype=torch.int64)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
        dist.all_gather(sizes, size, group=self.group)
        longest = max(int(n.item()) for n in sizes)
        buf = torch.zeros(longest, dtype=torch.uint8)
        if data:
            buf[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        bufs = [torch.empty(longest, dtype=torch.uint8) for _ in sizes]
        dist.all_gather(bufs, buf, group=self.group)
        return [json.loads(bytes(b[:int(n.item())].tolist())) for b, n in zip(bufs, sizes)]

    def bcast(self, obj):
        return self.gather(obj)[0]  # rank 0's


def exc_text(e, limit=2000):
    s = f"{type(e).__name__}: {e}".strip()
    return s if len(s) <= limit else s[:limit] + " ..."


def first_failure(texts):
    for r, t in enumerate(texts):
        if t is not None:
            return f"rank {r}: {t}"
    return "failed on some rank"


# ---- the dry run: no GPU, no torch needed ----------------------------------------------------

def dry_run(args):
    ws = args.ranks or int(os.environ.get("WORLD_SIZE", "8"))
    if ws < 1:
        die("--ranks must be >= 1")
    src = "--ranks" if args.ranks else ("$WORLD_SIZE" if "WORLD_SIZE" in os.environ else "default")
    print(f"# torch_async_tp --dry-run: world size {ws} ({src}), {args.dtype}, B layout "
          f"{args.layout}; -n {args.iters} -w {args.warmup}, {args.batch} calls per sample; "
          "nothing runs on a GPU")
    print("# multicast off: " + " ".join(f"{k}={os.environ[k]}" for k in MULTICAST_OFF))
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print(f"# torch not importable here ({type(e).__name__}: {e}): async-TP forms not checked")
    else:
        _, forms = find_async_tp(torch)
        print(f"# torch {torch.__version__} here; async-TP forms this torch offers:")
        for op, f in forms.items():
            print(f"#   {op}: " + (f["form"] if f["fn"] else f"unavailable: {f['why']}"))
    bad = 0
    for op in selected_ops(args):
        kn = args.layout == "kn"
        layout = {"ag_gemm": "B [K, N/ws]" if kn else "B [N/ws, K] passed transposed",
                  "gemm_rs": "B [K/ws, N]" if kn else "B [N, K/ws] passed transposed"}[op]
        first = "A shard" if op == "ag_gemm" else "A"
        mid = "gathered A" if op == "ag_gemm" else "partial"
        print(f"# {op}: per rank {first}, {layout}, out; local GEMM m x n x k; NCCL "
              f"{'all_gather_into_tensor' if op == 'ag_gemm' else 'reduce_scatter_tensor'} "
              "bytes; torch's symmetric workspace; rough peak")
        print(f"#{'M':>6} {'N':>6} {'K':>6} | {first:>12} {'B':>12} {mid:>12} {'out':>12} | "
              f"{'GEMM m x n x k':>18} | {'comm':>9} {'workspace':>9} {'peak':>9}")
        for (M, N, K) in shapes_for(op, args):
            p = plan(op, M, N, K, ws, args.layout)
            if isinstance(p, str):
                print(f" {M:6d} {N:6d} {K:6d} | does not split: {p}")
                bad += 1
                continue
            print(f" {M:6d} {N:6d} {K:6d} | {xs(p['a']):>12} {xs(p['b']):>12} "
                  f"{xs(p.get('gathered') or p.get('partial')):>12} {xs(p['out']):>12} | "
                  f"{xs(p['gemm']):>18} | {mib(p['comm_bytes']):>9} {mib(p['workspace']):>9} "
                  f"{mib(peak_bytes(p)):>9}")
    return 2 if bad else 0


# ---- the real run ----------------------------------------------------------------------------

def prepare_async_tp(torch, host, group_name, local_rank, dev):
    """Finds the fused ops, makes sure torch's symmetric memory would create no multicast object,
    enables the group where this version needs it, and makes every rank agree. Returns
    ({op: {"fn", "form", "why"}}, notes for the header). Allocates no symmetric memory."""
    symm, forms = find_async_tp(torch)
    notes, global_why = [], None
    if symm is not None:
        try:
            from torch._C._autograd import DeviceType
            from torch._C._distributed_c10d import _SymmetricMemory
            mc = _SymmetricMemory.has_multicast_support(DeviceType.CUDA, local_rank)
        except Exception as e:  # noqa: BLE001
            mc, global_why = None, f"cannot ask torch whether it would use multicast: {exc_text(e)}"
        if mc:
            global_why = ("torch reports NVLink multicast support for this device even with "
                          "TORCH_SYMM_MEM_DISABLE_MULTICAST=1, so its symmetric memory would "
                          "create multicast objects: refused (docs/architecture.md, section 7)")
        notes.append(f"has_multicast_support: {mc}")
        try:
            notes.append(f"symmetric-memory backend: {symm.get_backend(dev)}")
        except Exception:  # noqa: BLE001 - older versions have one backend and no query
            pass
    if global_why is None and symm is not None and any(f["fn"] for f in forms.values()):
        # 2.5 ... 2.11 need the group enabled first (2.11 already deprecates the call with a
        # FutureWarning, but its check still reads the call's registry); 2.15 says every group
        # is enabled. So: call it only where is_symm_mem_enabled_for_group says no.
        is_enabled = getattr(symm, "is_symm_mem_enabled_for_group", None)
        enabled, text = False, None
        try:
            enabled = bool(is_enabled and is_enabled(group_name))
        except Exception:  # noqa: BLE001 - then try to enable it
            pass
        if enabled:
            notes.append("group already enabled for symmetric memory")
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    symm.enable_symm_mem_for_group(group_name)
                notes.append("enable_symm_mem_for_group called")
            except Exception as e:  # noqa: BLE001
                text = exc_text(e)
            try:
                enabled = text is None if is_enabled is None else bool(is_enabled(group_name))
            except Exception as e:  # noqa: BLE001
                text = text or exc_text(e)
            if not enabled:
                global_why = ("symmetric memory not enabled for the group: "
                              f"{text or 'no reason given'}")
    if os.environ.get("TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP") is not None:
        notes.append("TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP set (2.15: native AG+GEMM where "
                     "2048 < M <= 4096)")
    # Every rank takes the same path, or the collective ops would pair wrongly and hang.
    texts = host.gather(global_why)
    if any(t is not None for t in texts):
        global_why = first_failure(texts)
    for f in forms.values():
        if global_why is not None and f["fn"] is not None:
            f["fn"], f["why"] = None, global_why
    avail = host.gather({op: f["fn"] is not None for op, f in forms.items()})
    for op, f in forms.items():
        if f["fn"] is not None and not all(a[op] for a in avail):
            f["fn"], f["why"] = None, "unavailable on some rank"
    return forms, notes


def main_gpu(args):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        if k not in os.environ:
            die(f"${k} is not set: launch with torchrun --nproc-per-node N {sys.argv[0]} ... "
                "(or use --dry-run on a machine without GPUs)")
    import torch
    import torch.distributed as dist

    rank, ws = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    for op in selected_ops(args):  # every shape must split before any GPU work
        for (M, N, K) in shapes_for(op, args):
            p = plan(op, M, N, K, ws, args.layout)
            if isinstance(p, str):
                die(f"{op} shape {M},{N},{K} does not split over {ws} ranks: {p}")
    if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
        die(f"rank {rank}: no CUDA device {local_rank} (torch sees {torch.cuda.device_count()})")
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl")
    host = Host(dist, torch, dist.new_group(backend="gloo"))
    group_name = dist.group.WORLD.group_name
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16

    forms, notes = prepare_async_tp(torch, host, group_name, local_rank, dev)

    # -- header (nccl-tests style: versions, then one line per rank) --
    seed = host.bcast(args.seed if args.seed is not None else int(time.time()))
    props = torch.cuda.get_device_properties(dev)
    bus = "?"
    if isinstance(getattr(props, "pci_bus_id", None), int):  # torch 2.5 has no PCI fields
        bus = (f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:"
               f"{getattr(props, 'pci_device_id', 0):02x}.0")
    line = (f"#  rank {rank:2d} pid {os.getpid():7d} on {socket.gethostname()} device "
            f"{local_rank:2d} [{bus}] {props.name}")
    lines = host.gather(line)
    devices = host.gather(props.name)
    try:
        nccl = fmt_nccl(torch.cuda.nccl.version())
    except Exception:  # noqa: BLE001
        nccl = "?"
    meta = {"peer": "torch_async_tp", "ranks": ws, "dtype": args.dtype, "layout": args.layout,
            "iters": args.iters, "warmup": args.warmup, "batch": args.batch, "seed": seed,
            "tol": args.tol, "torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl,
            "python": sys.version.split()[0], "devices": devices,
            "multicast_off": {k: os.environ[k] for k in MULTICAST_OFF}, "notes": notes,
            "async_tp": {op: {"available": f["fn"] is not None, "form": f["form"], "why": f["why"]}
                         for op, f in forms.items()}}
    if rank == 0:
        print("# torch_async_tp: PyTorch async-TP beside cuBLAS + NCCL (the peer column of "
              "weft-bench ag_gemm / gemm_rs)")
        print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, NCCL {nccl} (torch's), "
              f"Python {meta['python']}; {ws} ranks; {args.dtype}; seed {seed}; -n {args.iters} "
              f"-w {args.warmup}, {args.batch} calls per sample")
        print("# multicast off: " + " ".join(f"{k}={os.environ[k]}" for k in MULTICAST_OFF)
              + ("; " + "; ".join(notes) if notes else ""))
        for op in selected_ops(args):
            f = forms[op]
            print(f"# async-TP {op}: " + (f["form"] if f["fn"] else f"UNAVAILABLE: {f['why']}"))
        for ln in lines:
            print(ln)
        sys.stdout.flush()

    run = types.SimpleNamespace(torch=torch, dist=dist, host=host, args=args, group_name=group_name,
                                dev=dev, dt=dt, ws=ws, rank=rank, seed=seed, meta=meta, rows=[],
                                wrong=0, unavailable=0)
    # One non-blocking stream for everything, like weft-bench; torch's NCCL and async-TP side
    # streams are ordered against it (the current stream) on entry and exit of each call.
    with torch.cuda.stream(torch.cuda.Stream(dev)):
        for oi, op in enumerate(selected_ops(args)):
            run_op(run, op, oi, forms[op]["fn"], forms[op]["why"])
    if rank == 0:
        print(f"# async-TP unavailable on {run.unavailable} of {len(run.rows)} shapes")
        print(f"# wrong shapes : {run.wrong} {'FAILED' if run.wrong else 'OK'}")
    host.agree(True)  # nobody tears NCCL down while a peer still uses it
    dist.destroy_process_group()
    return 1 if run.wrong else 0


def write_json(args, meta, rows):
    if not args.json:
        return
    tmp = args.json + ".tmp"
    with open(tmp, "w") as f:  # rewritten after every row: a crash keeps what was measured
        json.dump({**meta, "rows": rows}, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.json)


def compare(torch, out, ref):
    """||out - ref|| / ||ref|| in float64 sums, one row chunk at a time (no full fp64 copies)."""
    num = den = 0.0
    rows_out, rows_ref = out.reshape(-1, out.shape[-1]), ref.reshape(-1, ref.shape[-1])
    for o, r in zip(rows_out.split(1024), rows_ref.split(1024)):
        rf = r.float()
        num += torch.linalg.vector_norm(o.float() - rf, dtype=torch.float64).item() ** 2
        den += torch.linalg.vector_norm(rf, dtype=torch.float64).item() ** 2
    if den > 0:
        return math.sqrt(num / den)
    return 0.0 if num == 0 else math.inf


def time_variants(torch, host, args, variants):
    """variants: [(name, fn, fallible)]. Interleaved samples, each `batch` calls between two
    events after a host barrier, each sample in a fresh random order (the same on every rank: a
    fixed seed), as weft-bench (tools/bench.h: in a fixed order a long GEMM's time depends on what
    ran before it); returns ({name: median ms per call, max across ranks}, failure text or None).
    A fallible variant (async-TP) that raises stops the timing on every rank (the next barrier
    carries the news); the caller then times the others again without it."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = {name: [] for name, _, _ in variants}
    failed = None
    order = list(variants)
    rng = random.Random(12345)
    torch.cuda.synchronize()
    for i in range(-args.warmup, args.iters):
        rng.shuffle(order)
        for name, fn, fallible in order:
            if not host.agree(failed is None):
                break
            try:
                e0.record()
                for _ in range(args.batch):
                    fn()
                e1.record()
                e1.synchronize()
            except Exception as e:  # noqa: BLE001
                if not fallible:
                    raise
                failed = exc_text(e)
                continue
            if i >= 0:
                samples[name].append(e0.elapsed_time(e1) / args.batch)
        else:
            continue
        break
    if not host.agree(failed is None):
        return None, first_failure(host.gather(failed))
    names = [name for name, _, _ in variants]
    med = host.max([statistics.median(samples[n]) for n in names])
    return dict(zip(names, med)), None


def run_op(run, op, oi, fused, why):
    """One op's table: a heading, then one row per shape, then the geometric-mean speedup."""
    args = run.args
    if run.rank == 0:
        blay = {("ag_gemm", "kn"): "[K, N/ws]", ("ag_gemm", "nk"): "[N/ws, K] transposed",
                ("gemm_rs", "kn"): "[K/ws, N]", ("gemm_rs", "nk"): "[N, K/ws] transposed"}
        comm = "all_gather_into_tensor" if op == "ag_gemm" else "reduce_scatter_tensor"
        print(f"# {op}, {args.dtype}, B {blay[(op, args.layout)]}; ms per call (median of "
              f"{args.iters} samples of {args.batch} calls, slowest rank); GEMM = torch.matmul "
              f"alone, comm = NCCL {comm} alone, cuBLAS+NCCL = the two in sequence; speedup = "
              "cuBLAS+NCCL / async-TP; exposed = async-TP - GEMM; bound = max(GEMM, comm) / "
              "async-TP")
        print(f"#{'M':>6} {'N':>6} {'K':>6} | {'GEMM':>8} {'comm':>8} {'cuBLAS+NCCL':>11} "
              f"{'async-TP':>8} | {'speedup':>8} {'exposed':>8} {'bound':>7} | {'err':>8}")
        sys.stdout.flush()
    speedups = []
    for si, (M, N, K) in enumerate(shapes_for(op, args)):
        row = run_shape(run, op, oi, si, M, N, K, fused, why)
        run.rows.append(row)
        run.wrong += row["wrong"]
        run.unavailable += not row["async_tp_available"]
        if row["speedup"]:
            speedups.append(row["speedup"])
        if run.rank == 0:
            print_row(row)
            write_json(args, run.meta, run.rows)
        # this shape's buffers are gone: give their memory back before the next, larger shape
        # (torch's symmetric workspace stays, grown to the largest shape so far)
        run.torch.cuda.synchronize()
        gc.collect()
        run.torch.cuda.empty_cache()
    if run.rank == 0 and speedups:
        gmean = math.exp(sum(math.log(x) for x in speedups) / len(speedups))
        print(f"# geometric-mean async-TP speedup over cuBLAS+NCCL: {gmean:.3f}x "
              f"({len(speedups)} shapes)")
        sys.stdout.flush()


def run_shape(run, op, oi, si, M, N, K, fused, why):
    """One shape: fresh data, the check, the timed variants; returns its row."""
    torch, dist, host, args = run.torch, run.dist, run.host, run.args
    dev, dt, group_name = run.dev, run.dt, run.group_name
    ag = op == "ag_gemm"
    p = plan(op, M, N, K, run.ws, args.layout)
    gen = torch.Generator(device=dev)

    def randn(shape, salt):
        # fresh per run (seed), different per rank, op, shape and tensor
        gen.manual_seed((run.seed * 1000003 + (oi * 64 + si) * 8191 + run.rank * 131 + salt)
                        % 2**63)
        return torch.randn(shape, generator=gen, device=dev, dtype=dt)

    a = randn(p["a"], 1)
    b = randn(p["b"], 2)
    bop = b if args.layout == "kn" else b.t()  # nk: a column-major view, as weights are held
    out = torch.empty(p["out"], device=dev, dtype=dt)  # the baseline's output
    if ag:
        gathered = torch.empty(p["gathered"], device=dev, dtype=dt)

        def gemm():
            torch.matmul(gathered, bop, out=out)

        def comm():
            dist.all_gather_into_tensor(gathered, a)

        def baseline():
            comm()
            gemm()

        def fused_call():
            return fused(a, [bop], 0, group_name)[1][0]
    else:
        partial = torch.empty(p["partial"], device=dev, dtype=dt)

        def gemm():
            torch.matmul(a, bop, out=partial)

        def comm():
            dist.reduce_scatter_tensor(out, partial)

        def baseline():
            gemm()
            comm()

        def fused_call():
            return fused(a, bop, "sum", 0, group_name)

    # -- check once: the baseline (its buffers NaN-filled first) is the reference --
    out.fill_(float("nan"))
    (gathered if ag else partial).fill_(float("nan"))
    baseline()
    err, wrong, fail = None, 0, why
    if fused is not None:
        text = None
        try:
            # async-TP allocates its output itself: fill a block of that size with NaN and free
            # it at once; torch's caching allocator usually hands that block to the op's output
            # (best effort: where it does, a region the op never writes reads as NaN: wrong).
            torch.full(p["out"], float("nan"), device=dev, dtype=dt)
            res = fused_call()
            torch.cuda.synchronize()
            if tuple(res.shape) != tuple(p["out"]):
                raise RuntimeError(f"output shape {tuple(res.shape)}, expected {p['out']}")
            err = compare(torch, res, out)
            del res
        except Exception as e:  # noqa: BLE001 - reported in the row, with its text
            text = exc_text(e)
        if host.agree(text is None):
            err = host.max([err])[0]
            wrong = int(not err <= args.tol)
        else:
            fail, err = first_failure(host.gather(text)), None  # no half-checked error

    # -- time: every variant interleaved; a failure of async-TP drops only it --
    variants = [("gemm", gemm, False), ("comm", comm, False), ("baseline", baseline, False)]
    if fail is None:
        variants.append(("async_tp", fused_call, True))
    ms, text = time_variants(torch, host, args, variants)
    if text is not None:
        fail, err, wrong = f"while timed: {text}", None, 0
        ms, _ = time_variants(torch, host, args, variants[:3])
    t = ms.get("async_tp") if fail is None else None
    return {"suite": op, "name": "shape", "ranks": run.ws, "dtype": args.dtype,
            "layout": args.layout, "M": M, "N": N, "K": K, "gemm_ms": ms["gemm"],
            "comm_ms": ms["comm"], "baseline_ms": ms["baseline"], "async_tp_ms": t,
            "speedup": ms["baseline"] / t if t else None,
            "exposed_ms": t - ms["gemm"] if t else None,
            "bound_share": max(ms["gemm"], ms["comm"]) / t if t else None,
            "err": None if err is None or not math.isfinite(err) else err, "wrong": wrong,
            "async_tp_available": fail is None, "async_tp_error": fail}


def print_row(r):
    def f(v, w, spec, suffix=""):
        return f"{v:{w}{spec}}{suffix}" if v is not None else f"{'n/a':>{w + len(suffix)}}"

    bound = r["bound_share"] and 100 * r["bound_share"]
    # the JSON's err is null both where async-TP is unavailable and where it was not finite
    err = r["err"] if r["err"] is not None or r["async_tp_error"] else math.inf
    print(f" {r['M']:6d} {r['N']:6d} {r['K']:6d} | {r['gemm_ms']:8.3f} {r['comm_ms']:8.3f} "
          f"{r['baseline_ms']:11.3f} {f(r['async_tp_ms'], 8, '.3f')} | "
          f"{f(r['speedup'], 7, '.3f', 'x')} {f(r['exposed_ms'], 8, '.3f')} "
          f"{f(bound, 6, '.1f', '%')} | {f(err, 8, '.2e')}{' WRONG' if r['wrong'] else ''}"
          f"{' UNAVAILABLE' if r['async_tp_error'] else ''}")
    if r["async_tp_error"]:
        short = " ".join(r["async_tp_error"].split())  # one line here; the JSON has it whole
        short = short if len(short) <= 300 else short[:300] + " ..."
        print(f"#   async-TP unavailable on {r['M']},{r['N']},{r['K']}: {short}")
    sys.stdout.flush()


def main(argv):
    args = parse_args(argv)
    force_multicast_off()  # before torch is imported, in the dry run too
    if args.dry_run:
        return dry_run(args)
    return main_gpu(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
