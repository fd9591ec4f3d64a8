"""weft for Python: a thin ctypes layer over libweft's C ABI (include/weft.h) for PyTorch users.

One process per GPU, started by torchrun or weftrun (weft meets the other ranks at MASTER_ADDR,
port MASTER_PORT + 1, or at WEFT_BOOTSTRAP_ADDR; include/weft.h lists the variables). Tensors are
torch tensors; every op runs on the caller's current CUDA stream (or the `stream` given) and is
capturable in a CUDA graph, as the C calls are, but for one thing: ag_gemm (without `gathered`),
gemm_rs and gemm_ar keep a symmetric buffer that their first call, or one with a larger shape,
allocates collectively, which a capture cannot hold (weft.Error there): call them once before
capturing, or size that buffer with `Comm.reserve`. Usage, under `torchrun --nproc-per-node 4`:

    import torch, weft
    comm = weft.Comm()                                 # collective; binds GPU = local rank
    torch.cuda.set_device(comm.device)
    x = comm.empty((1 << 20,), torch.bfloat16)         # symmetric: the same offset on every rank
    x.normal_()
    comm.all_reduce(x)                                 # in place, summed in fp32
    a = torch.randn(8192 // comm.world_size, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(14336 // comm.world_size, 4096, device="cuda", dtype=torch.bfloat16)
    c = comm.ag_gemm(a, w)                             # [8192, 14336 / world] = gather(a) w^T
    comm.free(x)                                       # collective, like the allocation
    comm.destroy()                                     # collective

Memory that peers read or write must come from the symmetric heap (`Comm.empty`): where the
form chosen stores into or reads from the peers' buffers, AllGather's and AllToAll's outputs,
AllReduce's output (and input for the largest sizes), ReduceScatter's input (largest sizes);
always GEMM + AllReduce's output. The LL forms, which AUTO takes for small sizes (AllReduce up
to 4 MiB by default), take any tensor. Each call's docstring says which; the C library checks
and raises weft.Error where a tensor must be symmetric and is not.
Symmetric tensors do not own their memory: `Comm.free` (collective: every rank frees the same
tensors in the same order) or `Comm.destroy` returns it, and a tensor must not be used after.

The collectives that only move data (all_gather, all_to_all, all_to_all_v) take tensors of any
dtype (one weft has not travels as its bytes); the reductions and GEMMs take the dtypes their C
calls list.

Errors raise weft.Error (status, status_name, and the library's last-error text).
"""

from ._capi import (ALGOS, DTYPES, INVALID_USAGE, LAYOUTS, LIBRARY_PATH, RED_OPS, CommConfig,
                    Error, MoeRouting, call, lib)

import ctypes
import os

try:
    import torch
except ImportError:  # the C ABI without tensors: version, jit_compile, Comm's host calls
    torch = None

__all__ = ["Comm", "Error", "MoePlan", "jit_compile", "version", "LIBRARY_PATH"]


def version():
    """The loaded library's version as (major, minor, patch)."""
    v = lib.weft_get_version()
    return v // 10000, v // 100 % 100, v % 100


__version__ = "%d.%d.%d" % version()


def jit_compile(source, name="kernel.cu", options=()):
    """Compiles CUDA C `source` (which may include <weft/device.cuh>) with NVRTC to an sm_90a
    cubin, through weft's disk cache; returns its bytes. Needs no GPU. Raises weft.Error with
    NVRTC's log on a compile error."""
    opts = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
    cubin, size, log = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_char_p()
    st = lib.weft_jit_compile(source.encode(), name.encode(), opts, len(options),
                              ctypes.byref(cubin), ctypes.byref(size), ctypes.byref(log))
    try:
        if st != 0:
            raise Error("weft_jit_compile", st, (lib.weft_get_last_error() or b"").decode()
                        + ("\n" + log.value.decode(errors="replace") if log.value else ""))
        return ctypes.string_at(cubin, size.value)
    finally:
        lib.weft_jit_free(cubin)
        lib.weft_jit_free(ctypes.cast(log, ctypes.c_void_p))


def _enum(table, value, what):
    try:
        return table[value]
    except KeyError:
        raise ValueError(f"{what} must be one of {', '.join(table)}, not {value!r}") from None


def _dtype(t):
    name = str(t).replace("torch.", "")
    if name not in DTYPES:
        raise TypeError(f"weft takes {', '.join(DTYPES)} tensors, not {t}")
    return DTYPES[name]


def _moved(tensor):
    """(weft dtype, elements per tensor element) for the ops that move bits without arithmetic:
    a dtype weft has not (int64, int8, ...) travels as its bytes."""
    name = str(tensor.dtype).replace("torch.", "")
    return (DTYPES[name], 1) if name in DTYPES else (DTYPES["uint8"], tensor.element_size())


def _group_env(group):
    """The WEFT_* variables that make weft_comm_init span torch.distributed group `group`: its
    rank and size, this host's ranks among them, and a rendezvous address that the group's rank
    0 picks (a free port on its host; 127.0.0.1 where the whole group is on one host) and
    broadcasts over the group."""
    import socket

    import torch.distributed as dist

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    hosts = [None] * world
    dist.all_gather_object(hosts, socket.gethostname(), group=group)
    here = [r for r in range(world) if hosts[r] == hosts[rank]]
    addr = [None]
    if rank == 0:
        ip = "127.0.0.1" if len(set(hosts)) == 1 else socket.gethostbyname(hosts[0])
        with socket.socket() as sock:
            sock.bind((ip, 0))
            addr[0] = f"{ip}:{sock.getsockname()[1]}"
    dist.broadcast_object_list(addr, src=dist.get_global_rank(group, 0), group=group)
    return {"WEFT_RANK": str(rank), "WEFT_WORLD_SIZE": str(world),
            "WEFT_LOCAL_RANK": str(here.index(rank)), "WEFT_LOCAL_WORLD_SIZE": str(len(here)),
            "WEFT_BOOTSTRAP_ADDR": addr[0]}


class Comm:
    """This process's weft communicator (weft_comm_init): one per process, over every rank of
    the job. heap_size: symmetric heap bytes per rank (0: WEFT_HEAP_SIZE, else 1 GiB; weft takes
    about 200 MiB of it for the collectives); timeout_ms: every wait's deadline (0:
    WEFT_TIMEOUT_MS, else 60 s); device: the CUDA device (-1: the local rank, or with a group
    torch's current device).
    group: a torch.distributed process group whose ranks the communicator spans, for programs
    that start torch.distributed themselves (any launcher, any init_method): rank, world and the
    ranks on this host come from the group (a host's ranks consecutive in it, as launchers
    number them), and weft meets at an address its rank 0 picks and broadcasts over it. Without
    a group, weft reads the launcher's environment (weftrun, torchrun, Open MPI, Slurm:
    include/weft.h)."""

    def __init__(self, heap_size=0, timeout_ms=0, device=-1, group=None):
        env = {}
        if group is not None:
            env = _group_env(group)
            if device < 0:
                device = torch.cuda.current_device()
        cfg = CommConfig(heap_size, timeout_ms, device)
        h = ctypes.c_void_p()
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # weft_comm_init reads WEFT_* first
        try:
            call("weft_comm_init", ctypes.byref(h), ctypes.byref(cfg))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k)
                else:
                    os.environ[k] = v
        self._h = h
        self._allocs = set()  # base addresses of the live tensors of empty()
        self._scratch = {}     # name -> the ops' symmetric uint8 buffer (numel: its bytes)
        self.rank, self.world_size, self.local_rank, self.local_size, self.device = (
            self._int(f) for f in ("weft_comm_rank", "weft_comm_size", "weft_comm_local_rank",
                                   "weft_comm_local_size", "weft_comm_device"))

    # -- lifetime and host calls ------------------------------------------------------------

    def _handle(self):
        if self._h is None:
            raise Error("weft", INVALID_USAGE, "the communicator was destroyed")
        return self._h

    def _call(self, name, *args):
        call(name, self._handle(), *args, comm=self._h)

    def _int(self, name):
        v = ctypes.c_int()
        self._call(name, ctypes.byref(v))
        return v.value

    def destroy(self):
        """Collective teardown (weft_comm_destroy): waits for this GPU's work and for every
        rank, then frees the heap; every symmetric tensor dies with it."""
        if self._h is not None:
            h, self._h = self._h, None
            self._allocs.clear()
            self._scratch.clear()
            call("weft_comm_destroy", h, comm=None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def abort(self):
        """Ends every wait of this communicator now, on the host and in running kernels; safe from
        another thread. Afterwards only destroy() is valid."""
        self._call("weft_comm_abort")

    def barrier(self):
        """Host barrier of all ranks (no GPU work), bounded by the timeout."""
        self._call("weft_comm_barrier")

    def set_autotune(self, on=True):
        """The distributed autotuner of the overlapped ops (weft_comm_set_autotune); collective."""
        self._call("weft_comm_set_autotune", int(bool(on)))

    def check(self):
        """Raises the error a running kernel reported (timeout, abort, AllToAllv count mismatch),
        if any; does not block."""
        self._call("weft_comm_get_async_error")

    def synchronize(self, stream=None):
        """Waits on the host for the stream (default: the current one), bounded by the timeout,
        and raises what its kernels reported (a timeout names what the GPU waited for)."""
        self._call("weft_stream_synchronize", self._stream(stream))

    def stream_barrier(self, stream=None):
        """Barrier of all ranks on the stream: later work of every rank's stream starts after all
        earlier work of every rank's stream (capturable)."""
        self._call("weft_stream_barrier", self._stream(stream))

    # -- symmetric memory ---------------------------------------------------------------------

    def empty(self, shape, dtype):
        """A contiguous tensor in the symmetric heap (weft_malloc: collective, every rank asks
        for the same shape and dtype in the same order; zero-filled). Free it with free()."""
        from . import _dlpack
        if not _dlpack.supported(dtype):
            raise TypeError(f"Comm.empty: no DLPack code for {dtype}")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        p = ctypes.c_void_p()
        self._call("weft_malloc", max(nbytes, 1), ctypes.byref(p))
        self._allocs.add(p.value)
        return _dlpack.as_tensor(p.value, shape, dtype, self.device)

    def free(self, tensor):
        """Returns a tensor of empty() to the heap (weft_free: collective, every rank frees the
        same tensors in the same order). Views of it must not be used after."""
        base = tensor.untyped_storage().data_ptr()
        if base not in self._allocs:
            raise ValueError("Comm.free: not a live tensor of this communicator's empty()")
        self._call("weft_free", ctypes.c_void_p(base))
        self._allocs.discard(base)

    def peer(self, tensor, rank):
        """A tensor over local peer `rank`'s copy of symmetric `tensor` (same shape and dtype),
        for kernels that read or write it over NVLink. It owns nothing."""
        from . import _dlpack
        p = ctypes.c_void_p()
        self._call("weft_peer_ptr", ctypes.c_void_p(self._ptr(tensor, "tensor")), rank,
                   ctypes.byref(p))
        return _dlpack.as_tensor(p.value, tensor.shape, tensor.dtype, self.device)

    def _scratch_buffer(self, name, nbytes):
        """A symmetric byte buffer of at least nbytes kept for the ops' internal use. It grows
        collectively: the ops that use it are collective with equal shapes on every rank, so every
        rank grows it at the same call. Not inside a CUDA graph capture (a collective allocation,
        and the old buffer freed under work the graph holds): make the call once before."""
        t = self._scratch.get(name)
        if t is not None and t.numel() >= nbytes:
            return t
        if torch.cuda.is_current_stream_capturing():
            raise Error("Comm", INVALID_USAGE,
                        f"invalid usage: the ops' {name} buffer must grow to {nbytes} bytes, a "
                        "collective allocation that a CUDA graph capture cannot hold: make this "
                        "call once before the capture, or Comm.reserve it")
        if t is not None:
            torch.cuda.synchronize(self.device)  # earlier calls on any stream may still use it
            del self._scratch[name]
            self.free(t)
        t = self._scratch[name] = self.empty((nbytes,), torch.uint8)
        return t

    # -- arguments -----------------------------------------------------------------------------

    def _stream(self, stream):
        if stream is None:
            return ctypes.c_void_p(torch.cuda.current_stream(self.device).cuda_stream
                                   if torch is not None else 0)
        return ctypes.c_void_p(getattr(stream, "cuda_stream", stream))

    def _ptr(self, t, what, contiguous=True):
        if torch is None or not isinstance(t, torch.Tensor):
            raise TypeError(f"{what} must be a torch tensor")
        if t.device.type != "cuda" or t.device.index != self.device:
            raise ValueError(f"{what} is on {t.device}, the communicator on cuda:{self.device}")
        if contiguous and not t.is_contiguous():
            raise ValueError(f"{what} must be contiguous")
        return t.data_ptr()

    def _matrix(self, t, what):
        """(pointer, row stride) of a 2-D tensor with unit column stride."""
        if t.dim() != 2 or t.stride(1) != 1:
            raise ValueError(f"{what} must be 2-D with contiguous rows, not shape {tuple(t.shape)}"
                             f" strides {t.stride()}")
        return self._ptr(t, what, contiguous=False), t.stride(0)

    @staticmethod
    def _same(t, other, what):
        if t.dtype != other.dtype:
            raise TypeError(f"{what}: dtypes differ ({t.dtype} and {other.dtype})")

    @staticmethod
    def _numel(t, n, what):
        if t.numel() != n:
            raise ValueError(f"{what} has {t.numel()} elements, the call needs {n}")

    # -- collectives (torch.distributed's argument order: output first) ------------------------

    def all_gather(self, out, inp, algo="auto", stream=None):
        """out[r * n:(r + 1) * n] = rank r's inp (n = inp.numel()) on every rank. out: world * n
        elements, symmetric (any tensor under algo="ll", and where AUTO takes LL); inp: any
        device memory, or out's own slice (in place)."""
        self._same(out, inp, "all_gather")
        self._numel(out, self.world_size * inp.numel(), "all_gather's out")
        dt, per = _moved(inp)
        self._call("weft_allgather", ctypes.c_void_p(self._ptr(inp, "inp")),
                   ctypes.c_void_p(self._ptr(out, "out")), inp.numel() * per, dt,
                   _enum(ALGOS, algo, "algo"), self._stream(stream))
        return out

    def reduce_scatter(self, out, inp, op="sum", algo="auto", stream=None):
        """out = op over ranks of their inp[rank * n:(rank + 1) * n] (n = out.numel()), in fp32,
        rounded once; op: sum, prod, max, min or avg. inp: world * n elements, symmetric where
        the peers read it (the SM form above its pushes' limit, WEFT_ALLREDUCE_PUSH_BYTES /
        world a segment, which AUTO takes there), else any tensor; out: any device memory."""
        self._same(out, inp, "reduce_scatter")
        self._numel(inp, self.world_size * out.numel(), "reduce_scatter's inp")
        self._call("weft_reduce_scatter", ctypes.c_void_p(self._ptr(inp, "inp")),
                   ctypes.c_void_p(self._ptr(out, "out")), out.numel(), _dtype(out.dtype),
                   _enum(RED_OPS, op, "op"), _enum(ALGOS, algo, "algo"), self._stream(stream))
        return out

    def all_reduce(self, tensor, out=None, op="sum", algo="auto", stream=None):
        """out = op over ranks of their tensor (sum, prod, max, min or avg), in fp32 in rank
        order, rounded once (every rank gets the same bits). In place when out is None. Any
        tensors under LL and the two-shot up to WEFT_ALLREDUCE_LL128_BYTES (AUTO's forms up to
        4 MiB by default); above it out must be symmetric, and tensor too above
        WEFT_ALLREDUCE_PUSH_BYTES; algo="sm" (one-shot) needs a symmetric tensor."""
        out = tensor if out is None else out
        self._same(out, tensor, "all_reduce")
        self._numel(out, tensor.numel(), "all_reduce's out")
        self._call("weft_allreduce", ctypes.c_void_p(self._ptr(tensor, "tensor")),
                   ctypes.c_void_p(self._ptr(out, "out")), tensor.numel(), _dtype(tensor.dtype),
                   _enum(RED_OPS, op, "op"), _enum(ALGOS, algo, "algo"), self._stream(stream))
        return out

    def all_to_all(self, out, inp, algo="auto", stream=None):
        """Rank r's inp[p * n:(p + 1) * n] lands in rank p's out[r * n:(r + 1) * n] (n =
        inp.numel() / world). out: symmetric (any tensor under algo="ll", and where AUTO takes
        LL), not overlapping inp."""
        self._same(out, inp, "all_to_all")
        self._numel(out, inp.numel(), "all_to_all's out")
        if inp.numel() % self.world_size:
            raise ValueError(f"all_to_all: {inp.numel()} elements do not split over "
                             f"{self.world_size} ranks")
        dt, per = _moved(inp)
        self._call("weft_alltoall", ctypes.c_void_p(self._ptr(inp, "inp")),
                   ctypes.c_void_p(self._ptr(out, "out")), inp.numel() // self.world_size * per,
                   dt, _enum(ALGOS, algo, "algo"), self._stream(stream))
        return out

    def all_to_all_v(self, out, out_counts, inp, in_counts, out_displs=None, in_displs=None,
                     algo="auto", stream=None):
        """MPI_Alltoallv: rank r's in_counts[p] elements from inp[in_displs[p]:] land in rank p's
        out[out_displs[r]:], where p's out_counts[r] equals that count. Counts and
        displacements are host sequences of world entries, in elements (displacements default to
        the running sums of the counts). out: symmetric (any tensor under algo="ll")."""
        self._same(out, inp, "all_to_all_v")
        w = self.world_size
        dt, per = _moved(inp)

        def arr(v, what):
            if len(v) != w:
                raise ValueError(f"all_to_all_v: {what} has {len(v)} entries, not {w}")
            return (ctypes.c_size_t * w)(*[int(x) * per for x in v])

        def running(c):
            return [sum(c[:i]) for i in range(w)]

        in_displs = running(in_counts) if in_displs is None else in_displs
        out_displs = running(out_counts) if out_displs is None else out_displs
        self._call("weft_alltoallv", ctypes.c_void_p(self._ptr(inp, "inp")),
                   arr(in_counts, "in_counts"), arr(in_displs, "in_displs"),
                   ctypes.c_void_p(self._ptr(out, "out")), arr(out_counts, "out_counts"),
                   arr(out_displs, "out_displs"), dt, _enum(ALGOS, algo, "algo"),
                   self._stream(stream))
        return out

    # -- GEMM and the overlapped ops --------------------------------------------------------

    def _gemm_args(self, a, b, layout, out_dtype, out=None):
        """m, k, n, (b, ldb), the weft dtypes in and out, the layout code, out's torch dtype
        (out_dtype, else out's, else a's)."""
        if b.dim() != 2:
            raise ValueError(f"b must be 2-D, not shape {tuple(b.shape)}")
        lay = _enum(LAYOUTS, layout, "layout")
        n, kb = (b.shape[0], b.shape[1]) if layout == "nk" else (b.shape[1], b.shape[0])
        m, k = a.shape
        if kb != k:
            raise ValueError(f"a is [{m}, {k}] but b ({layout}) is {tuple(b.shape)}: k differs")
        self._same(a, b, "a and b")
        if out_dtype is None:
            out_dtype = a.dtype if out is None else out.dtype
        return m, k, n, self._matrix(b, "b"), _dtype(a.dtype), _dtype(out_dtype), lay, out_dtype

    def _out(self, out, shape, dtype, what):
        if out is None:
            return torch.empty(shape, dtype=dtype, device=f"cuda:{self.device}")
        if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
            raise ValueError(f"{what} must be {tuple(shape)} {dtype}, not {tuple(out.shape)} "
                             f"{out.dtype}")
        return out

    def gemm(self, a, b, out=None, layout="nk", out_dtype=None, stream=None):
        """out[m, n] = a[m, k] b^T (layout "nk": b is [n, k], as torch.nn.Linear keeps weights)
        or a b (layout "kn": b is [k, n]), fp32 accumulation; this GPU only. bf16 or fp16 in;
        out_dtype bf16, fp16 or fp32 (default: out's, else a's). Rows contiguous, k a multiple of 8."""
        m, k, n, (pb, ldb), din, dout, lay, odt = self._gemm_args(a, b, layout, out_dtype, out)
        pa, lda = self._matrix(a, "a")
        out = self._out(out, (m, n), odt, "gemm's out")
        pc, ldc = self._matrix(out, "out")
        self._call("weft_gemm", ctypes.c_void_p(pa), lda, ctypes.c_void_p(pb), ldb,
                   ctypes.c_void_p(pc), ldc, m, n, k, din, dout, lay, self._stream(stream))
        return out

    def ag_gemm(self, a, b, out=None, gathered=None, layout="nk", algo="auto", out_dtype=None,
                stream=None):
        """AllGather + GEMM: out[world * m, n] = gather(a)[world * m, k] b^T (or b), the gathered
        rows in rank order, the gather hidden behind the GEMM where it can be. a: this rank's
        [m, k] rows (contiguous); b: this rank's columns of the weights. gathered: a symmetric
        [world * m, k] tensor that receives the gathered a (default: a buffer kept by the
        communicator)."""
        m, k, n, (pb, ldb), din, dout, lay, odt = self._gemm_args(a, b, layout, out_dtype, out)
        rows = self.world_size * m
        if gathered is None:
            gathered = self._scratch_buffer("ag_gemm", self._gathered_bytes(m, k, a.element_size()))
        else:
            self._same(gathered, a, "ag_gemm's gathered")
            self._numel(gathered, rows * k, "ag_gemm's gathered")
        out = self._out(out, (rows, n), odt, "ag_gemm's out")
        pc, ldc = self._matrix(out, "out")
        self._call("weft_ag_gemm", ctypes.c_void_p(self._ptr(a, "a")),
                   ctypes.c_void_p(self._ptr(gathered, "gathered")), ctypes.c_void_p(pb), ldb,
                   ctypes.c_void_p(pc), ldc, m, n, k, din, dout, lay, _enum(ALGOS, algo, "algo"),
                   self._stream(stream))
        return out

    def _gathered_bytes(self, m, k, elem):
        return self.world_size * m * k * elem

    def _workspace_bytes(self, m, n, dout):
        size = ctypes.c_size_t()
        self._call("weft_gemm_rs_workspace_size", m, n, dout, ctypes.byref(size))
        return size.value

    def reserve(self, op, m, n, k, dtype=None):
        """Sizes the buffer that op keeps ("ag_gemm" without `gathered`, "gemm_rs" or "gemm_ar")
        for calls up to this shape now, so that a CUDA graph capture can hold the op's first
        call. m, n, k as the op's: a is [m, k] (ag_gemm: this rank's rows, k the whole
        reduction dimension; gemm_rs / gemm_ar: k this rank's share), n the output's columns.
        dtype: ag_gemm's a, gemm_rs's and gemm_ar's output (default torch.bfloat16). Collective:
        every rank, the same arguments, outside a capture."""
        dtype = torch.bfloat16 if dtype is None else dtype
        if op == "ag_gemm":
            nbytes = self._gathered_bytes(m, k, torch.empty((), dtype=dtype).element_size())
        elif op in ("gemm_rs", "gemm_ar"):
            nbytes = self._workspace_bytes(m, n, _dtype(dtype))
        else:
            raise ValueError(f"reserve takes ag_gemm, gemm_rs or gemm_ar, not {op!r}")
        self._scratch_buffer("ag_gemm" if op == "ag_gemm" else "gemm_rs", nbytes)

    def _gemm_reduced(self, op, a, b, out, rows, layout, algo, out_dtype, stream):
        """weft_gemm_rs or weft_gemm_ar (one C signature): out [rows, n] made where None, the
        workspace kept by the communicator."""
        m, k, n, (pb, ldb), din, dout, lay, odt = self._gemm_args(a, b, layout, out_dtype, out)
        pa, lda = self._matrix(a, "a")
        out = self._out(out, (rows, n), odt, f"{op}'s out")
        ws = self._ptr(self._scratch_buffer("gemm_rs", self._workspace_bytes(m, n, dout)),
                       "workspace")
        self._call("weft_" + op, ctypes.c_void_p(pa), lda, ctypes.c_void_p(pb), ldb,
                   ctypes.c_void_p(self._ptr(out, "out")), ctypes.c_void_p(ws), m, n, k, din,
                   dout, lay, _enum(ALGOS, algo, "algo"), self._stream(stream))
        return out

    def gemm_rs(self, a, b, out=None, layout="nk", algo="auto", out_dtype=None, stream=None):
        """GEMM + ReduceScatter: out[m / world, n] = the sum over ranks of rows
        [rank * m / world, (rank + 1) * m / world) of their a[m, k] b^T (or b), k this rank's
        share of the reduction dimension; m a multiple of world. Partials are rounded to
        out_dtype, summed in fp32 in rank order, rounded once. out: any device memory."""
        m = a.shape[0]
        if m % self.world_size:
            raise ValueError(f"gemm_rs: m = {m} is not a multiple of {self.world_size} ranks")
        return self._gemm_reduced("gemm_rs", a, b, out, m // self.world_size, layout, algo,
                                  out_dtype, stream)

    def gemm_ar(self, a, b, out, layout="nk", algo="auto", stream=None):
        """GEMM + AllReduce: out[m, n] = the sum over ranks of their a[m, k] b^T (or b), on every
        rank; k this rank's share of the reduction dimension. out: symmetric (empty()), [m, n];
        its dtype is the partials' and the result's."""
        return self._gemm_reduced("gemm_ar", a, b, out, a.shape[0], layout, algo, None, stream)

    # -- mixture of experts (this GPU) -----------------------------------------------------------

    def moe_route(self, topk_ids, experts, tile_rows=128, stream=None):
        """The routing plan of topk_ids (int32 [tokens, topk], contiguous, on this GPU) over
        `experts` experts, built on the GPU with no host sync (capturable): every expert's rows
        contiguous and padded to a multiple of tile_rows (a multiple of 16 up to 256; the grouped
        GEMM takes multiples of 64). Returns a MoePlan, whose tensors (counts, offsets, row_entry,
        entry_row, tile_expert, tiles) are views of the workspace it holds. An id outside
        [0, experts) empties the plan and makes the next synchronize() raise weft.Error."""
        if topk_ids.dtype != torch.int32 or topk_ids.dim() != 2:
            raise TypeError("topk_ids must be an int32 tensor [tokens, topk]")
        tokens, topk = topk_ids.shape
        nbytes, max_rows = ctypes.c_size_t(), ctypes.c_longlong()
        call("weft_moe_routing_size", tokens, topk, experts, tile_rows, ctypes.byref(nbytes),
             ctypes.byref(max_rows))
        ws = torch.empty(max(nbytes.value, 1), dtype=torch.uint8, device=f"cuda:{self.device}")
        r = MoeRouting()
        self._call("weft_moe_route", ctypes.c_void_p(self._ptr(topk_ids, "topk_ids")), tokens,
                   topk, experts, tile_rows, ctypes.c_void_p(ws.data_ptr()), nbytes.value,
                   ctypes.c_void_p(ctypes.addressof(r)), self._stream(stream))
        return MoePlan(r, ws)

    def moe_gather(self, plan, x, out=None, stream=None):
        """The grouped GEMM's A in the plan's row order: out[plan.max_rows, hidden] row r = the
        token row of plan.row_entry[r] // topk of x [tokens, hidden] (contiguous), zeros in
        padding rows, rows past the plan's rows in use not written. hidden * its size a multiple
        of 16 bytes."""
        if x.dim() != 2 or x.shape[0] != plan.tokens:
            raise ValueError(f"x must be [{plan.tokens}, hidden], not {tuple(x.shape)}")
        out = self._out(out, (plan.max_rows, x.shape[1]), x.dtype, "moe_gather's out")
        self._call("weft_moe_gather", plan.pointer(), ctypes.c_void_p(self._ptr(x, "x")),
                   x.shape[1], _dtype(x.dtype), ctypes.c_void_p(self._ptr(out, "out")),
                   self._stream(stream))
        return out

    def _grouped(self, fn, plan, a, w, layout, out, out_shape, odt, *extra, a_rows=None,
                 stream=None):
        """The grouped GEMMs' shared checks and call: w [experts, n, k] ("nk") or [experts, k,
        n] ("kn") with contiguous rows, a [a_rows (default plan.max_rows), k]; out [out_shape] of
        odt, made where None; extra: the C arguments between B's and C's (the combine's
        weights)."""
        if w.dim() != 3 or w.shape[0] != plan.experts:
            raise ValueError(f"w must be [{plan.experts}, ., .], not {tuple(w.shape)}")
        n, k = (w.shape[1], w.shape[2]) if layout == "nk" else (w.shape[2], w.shape[1])
        a_rows = plan.max_rows if a_rows is None else a_rows
        if a.dim() != 2 or tuple(a.shape) != (a_rows, k):
            raise ValueError(f"a must be [{a_rows}, {k}], not {tuple(a.shape)}")
        self._same(a, w, "a and w")
        if w.stride(2) != 1:
            raise ValueError("w's rows must be contiguous")
        out = self._out(out, out_shape(n), odt, f"{fn}'s out")
        pa, lda = self._matrix(a, "a")
        pc, ldc = self._matrix(out, "out")
        self._call("weft_" + fn, plan.pointer(), ctypes.c_void_p(pa), lda,
                   ctypes.c_void_p(self._ptr(w, "w", contiguous=False)), w.stride(1),
                   ctypes.c_longlong(w.stride(0)), *extra, ctypes.c_void_p(pc), ldc,
                   out_shape(n)[1], k, _dtype(a.dtype), _dtype(odt),
                   _enum(LAYOUTS, layout, "layout"), self._stream(stream))
        return out

    def grouped_gemm(self, plan, a, w, out=None, layout="nk", out_dtype=None, stream=None):
        """out[plan.max_rows, n] row r = a[r] w[e]^T (layout "nk": w is [experts, n, k]) or
        a[r] w[e] ("kn": [experts, k, n]), e the expert of r's tile row; a [plan.max_rows, k]
        (moe_gather's output). The rows in use come from the plan on the GPU; rows past them are
        not written, padding rows get zeros. bf16 or fp16 in; out_dtype bf16, fp16 or fp32."""
        odt = out_dtype or (out.dtype if out is not None else a.dtype)
        return self._grouped("grouped_gemm", plan, a, w, layout, out,
                             lambda n: (plan.max_rows, n), odt, stream=stream)

    def grouped_gemm_silu_mul(self, plan, x, w, out=None, layout="nk", out_dtype=None,
                              stream=None):
        """An MoE layer's first grouped GEMM, straight from the tokens x [tokens, k] (its loads
        gather each row's token), with its gated activation fused: out[plan.max_rows, inter] row
        r = silu(x[t] g^T) * (x[t] u^T), t = plan.row_entry[r] // topk, where expert e's w[e] is
        [2 * inter, k] ("nk": gate rows, then up rows) or [k, 2 * inter] ("kn": gate columns
        first); the same as moe_silu_mul(grouped_gemm(moe_gather(x))) without the rounding
        between."""
        odt = out_dtype or (out.dtype if out is not None else x.dtype)
        wide = w.shape[1] if layout == "nk" else w.shape[2]
        if w.dim() != 3 or wide % 2:
            raise ValueError(f"w's gate and up halves: an even width, not {tuple(w.shape)}")
        return self._grouped("grouped_gemm_silu_mul", plan, x, w, layout, out,
                             lambda n: (plan.max_rows, n // 2), odt, a_rows=plan.tokens,
                             stream=stream)

    def grouped_gemm_combine(self, plan, a, w, weights, out=None, layout="nk", out_dtype=None,
                             stream=None):
        """An MoE layer's last grouped GEMM with the top-k combine fused: out[tokens, n] row t =
        the sum over t's slots j of weights[t, j] * a[plan.entry_row[t * topk + j]] w[e]^T (or
        w[e]), added with atomics (bf16 and fp16 out can differ from run to run in the last
        bits; moe_combine after grouped_gemm is the deterministic form). weights [tokens, topk]
        contiguous, bf16, fp16 or fp32; n a multiple of 8."""
        if tuple(weights.shape) != (plan.tokens, plan.topk):
            raise ValueError(f"weights must be [{plan.tokens}, {plan.topk}], not "
                             f"{tuple(weights.shape)}")
        odt = out_dtype or (out.dtype if out is not None else a.dtype)
        return self._grouped("grouped_gemm_combine", plan, a, w, layout, out,
                             lambda n: (plan.tokens, n), odt,
                             ctypes.c_void_p(self._ptr(weights, "weights")),
                             _dtype(weights.dtype), stream=stream)

    def ag_moe(self, plan, x, w, out=None, gathered=None, layout="nk", algo="auto",
               out_dtype=None, stream=None):
        """AllGather + MoE, a tensor-parallel MoE layer's first half: every rank's tokens x
        [m, k] gathered in rank order while the gated grouped GEMM over them runs (the
        activation of grouped_gemm_silu_mul with this rank's w [experts, 2 * inter, k] or
        [experts, k, 2 * inter]); plan: moe_route of every rank's ids gathered in rank order
        (world * m tokens). out: [plan.max_rows, inter]. gathered: a symmetric [world * m, k]
        tensor that receives the tokens (default: a buffer kept by the communicator)."""
        m, k = x.shape
        if plan.tokens != self.world_size * m:
            raise ValueError(f"ag_moe: the plan routes {plan.tokens} tokens, not {self.world_size}"
                             f" x {m}")
        if gathered is None:
            gathered = self._scratch_buffer("ag_gemm", self._gathered_bytes(m, k, x.element_size()))
        else:
            self._same(gathered, x, "ag_moe's gathered")
            self._numel(gathered, self.world_size * m * k, "ag_moe's gathered")
        if w.dim() != 3 or w.shape[0] != plan.experts or w.stride(2) != 1:
            raise ValueError(f"w must be [{plan.experts}, ., .] with contiguous rows, not "
                             f"{tuple(w.shape)}")
        wide = w.shape[1] if layout == "nk" else w.shape[2]
        if wide % 2:
            raise ValueError(f"w's gate and up halves: an even width, not {tuple(w.shape)}")
        self._same(x, w, "x and w")
        odt = out_dtype or (out.dtype if out is not None else x.dtype)
        out = self._out(out, (plan.max_rows, wide // 2), odt, "ag_moe's out")
        pc, ldc = self._matrix(out, "out")
        self._call("weft_ag_moe", plan.pointer(), ctypes.c_void_p(self._ptr(x, "x")),
                   ctypes.c_void_p(self._ptr(gathered, "gathered")),
                   ctypes.c_void_p(self._ptr(w, "w", contiguous=False)), w.stride(1),
                   ctypes.c_longlong(w.stride(0)), ctypes.c_void_p(pc), ldc, m, wide // 2, k,
                   _dtype(x.dtype), _dtype(odt), _enum(LAYOUTS, layout, "layout"),
                   _enum(ALGOS, algo, "algo"), self._stream(stream))
        return out

    def _moe_reduced(self, fn, plan, act, w, weights, out, rows, layout, out_dtype, stream):
        """moe_rs or moe_ar (one C signature): out [rows, n] made where None (symmetric for
        moe_ar), the partials' workspace kept by the communicator."""
        if w.dim() != 3 or w.shape[0] != plan.experts or w.stride(2) != 1:
            raise ValueError(f"w must be [{plan.experts}, ., .] with contiguous rows, not "
                             f"{tuple(w.shape)}")
        n, k = (w.shape[1], w.shape[2]) if layout == "nk" else (w.shape[2], w.shape[1])
        if act.dim() != 2 or tuple(act.shape) != (plan.max_rows, k):
            raise ValueError(f"act must be [{plan.max_rows}, {k}], not {tuple(act.shape)}")
        if tuple(weights.shape) != (plan.tokens, plan.topk):
            raise ValueError(f"weights must be [{plan.tokens}, {plan.topk}], not "
                             f"{tuple(weights.shape)}")
        self._same(act, w, "act and w")
        odt = out_dtype or (out.dtype if out is not None else act.dtype)
        if out is None and fn == "moe_ar":
            out = self.empty((rows, n), odt)
        out = self._out(out, (rows, n), odt, f"{fn}'s out")
        size = ctypes.c_size_t()
        self._call("weft_moe_reduce_workspace_size", plan.tokens, n, _dtype(odt),
                   ctypes.byref(size))
        ws = self._ptr(self._scratch_buffer("moe_reduce", size.value), "workspace")
        pa, lda = self._matrix(act, "act")
        self._call("weft_" + fn, plan.pointer(), ctypes.c_void_p(pa), lda,
                   ctypes.c_void_p(self._ptr(w, "w", contiguous=False)), w.stride(1),
                   ctypes.c_longlong(w.stride(0)),
                   ctypes.c_void_p(self._ptr(weights, "weights")), _dtype(weights.dtype),
                   ctypes.c_void_p(self._ptr(out, "out")), ctypes.c_void_p(ws), n, k,
                   _dtype(act.dtype), _dtype(odt), _enum(LAYOUTS, layout, "layout"),
                   _enum(ALGOS, "auto", "algo"), self._stream(stream))
        return out

    def moe_rs(self, plan, act, w, weights, out=None, layout="nk", out_dtype=None, stream=None):
        """MoE + ReduceScatter, a tensor-parallel MoE layer's second half: out [tokens / world,
        n], this rank's tokens, = the sum over ranks of the weighted top-k combine of act
        (ag_moe's, [plan.max_rows, k]) times each expert's w [experts, n, k] ("nk") or [experts,
        k, n]; weights [tokens, topk]."""
        if plan.tokens % self.world_size:
            raise ValueError(f"moe_rs: {plan.tokens} tokens over {self.world_size} ranks")
        return self._moe_reduced("moe_rs", plan, act, w, weights, out,
                                 plan.tokens // self.world_size, layout, out_dtype, stream)

    def moe_ar(self, plan, act, w, weights, out=None, layout="nk", out_dtype=None, stream=None):
        """MoE + AllReduce: as moe_rs, every token's rows on every rank (out [tokens, n],
        symmetric: made with empty() where None)."""
        return self._moe_reduced("moe_ar", plan, act, w, weights, out, plan.tokens, layout,
                                 out_dtype, stream)

    def moe_tp(self, x, topk_ids, topk_weights, w1, w2, out=None, stream=None):
        """One tensor-parallel MoE layer's experts (weft_moe_tp): x [m, hidden] this rank's
        tokens, topk_ids [m, topk] (int32) and topk_weights [m, topk] their router's choices,
        w1 [experts, 2 * inter, hidden] (gate rows, then up rows) and w2 [experts, hidden,
        inter] this rank's shares; returns out [m, hidden], every rank's share summed. The
        workspace is kept by the communicator."""
        m, hidden = x.shape
        experts, inter = w1.shape[0], w1.shape[1] // 2
        topk = topk_ids.shape[1]
        if topk_ids.dtype != torch.int32 or tuple(topk_ids.shape) != (m, topk):
            raise TypeError("topk_ids must be an int32 tensor [m, topk]")
        if tuple(topk_weights.shape) != (m, topk):
            raise ValueError(f"topk_weights must be [{m}, {topk}], not {tuple(topk_weights.shape)}")
        if tuple(w1.shape) != (experts, 2 * inter, hidden) or tuple(w2.shape) != (experts, hidden,
                                                                                 inter):
            raise ValueError(f"w1 [E, 2 * inter, hidden] and w2 [E, hidden, inter], not "
                             f"{tuple(w1.shape)} and {tuple(w2.shape)}")
        self._same(x, w1, "x and w1")
        self._same(x, w2, "x and w2")
        out = self._out(out, (m, hidden), x.dtype, "moe_tp's out")
        size = ctypes.c_size_t()
        self._call("weft_moe_tp_workspace_size", m, topk, experts, hidden, inter,
                   _dtype(topk_weights.dtype), _dtype(x.dtype), ctypes.byref(size))
        ws = self._scratch_buffer("moe_tp", size.value)
        self._call("weft_moe_tp", ctypes.c_void_p(self._ptr(x, "x")),
                   ctypes.c_void_p(self._ptr(topk_ids, "topk_ids")),
                   ctypes.c_void_p(self._ptr(topk_weights, "topk_weights")),
                   _dtype(topk_weights.dtype), m, topk, experts, hidden,
                   ctypes.c_void_p(self._ptr(w1, "w1")), ctypes.c_void_p(self._ptr(w2, "w2")),
                   inter, ctypes.c_void_p(self._ptr(out, "out")), ctypes.c_void_p(ws.data_ptr()),
                   ctypes.c_size_t(size.value), _dtype(x.dtype), self._stream(stream))
        return out

    def moe_silu_mul(self, plan, gate_up, out=None, stream=None):
        """out[plan.max_rows, inter] = silu(gate_up[:, :inter]) * gate_up[:, inter:] for the plan's
        rows in use (gate columns first), in fp32, rounded once; bf16, fp16 or fp32."""
        if gate_up.dim() != 2 or gate_up.shape[0] != plan.max_rows or gate_up.shape[1] % 2:
            raise ValueError(f"gate_up must be [{plan.max_rows}, 2 * inter], not "
                             f"{tuple(gate_up.shape)}")
        inter = gate_up.shape[1] // 2
        out = self._out(out, (plan.max_rows, inter), gate_up.dtype, "moe_silu_mul's out")
        self._call("weft_moe_silu_mul", plan.pointer(),
                   ctypes.c_void_p(self._ptr(gate_up, "gate_up")), inter, _dtype(gate_up.dtype),
                   ctypes.c_void_p(self._ptr(out, "out")), self._stream(stream))
        return out

    def moe_combine(self, plan, y, weights, out=None, stream=None):
        """out[tokens, hidden] = the sum over each token's slots j, in order, of weights[t, j] *
        y[plan.entry_row[t * topk + j]] (y [plan.max_rows, hidden], weights [tokens, topk]), in
        fp32, rounded once to y's dtype."""
        if y.dim() != 2 or y.shape[0] != plan.max_rows:
            raise ValueError(f"y must be [{plan.max_rows}, hidden], not {tuple(y.shape)}")
        if tuple(weights.shape) != (plan.tokens, plan.topk):
            raise ValueError(f"weights must be [{plan.tokens}, {plan.topk}], not "
                             f"{tuple(weights.shape)}")
        out = self._out(out, (plan.tokens, y.shape[1]), y.dtype, "moe_combine's out")
        self._call("weft_moe_combine", plan.pointer(), ctypes.c_void_p(self._ptr(y, "y")),
                   ctypes.c_void_p(self._ptr(weights, "weights")), _dtype(weights.dtype),
                   y.shape[1], _dtype(y.dtype), ctypes.c_void_p(self._ptr(out, "out")),
                   self._stream(stream))
        return out


class MoePlan:
    """An MoE routing plan (Comm.moe_route): its sizes and, as int32 tensors over the workspace it
    keeps alive, counts [experts], offsets [experts + 1], row_entry [max_rows], entry_row
    [tokens * topk], tile_expert [max_rows // tile_rows] and tiles [1] (see weft_moe_routing_t)."""

    def __init__(self, c, workspace):
        self.c, self.workspace = c, workspace
        self.tokens, self.topk, self.experts = c.tokens, c.topk, c.experts
        self.tile_rows, self.max_rows = c.tile_rows, c.max_rows
        base = workspace.data_ptr()

        def view(ptr, n):
            off = ptr - base
            return workspace[off:off + 4 * n].view(torch.int32)

        self.counts = view(c.counts, c.experts)
        self.offsets = view(c.offsets, c.experts + 1)
        self.row_entry = view(c.row_entry, c.max_rows)
        self.entry_row = view(c.entry_row, c.tokens * c.topk)
        self.tile_expert = view(c.tile_expert, c.max_rows // c.tile_rows)
        self.tiles = view(c.tiles, 1)

    def pointer(self):
        """The C struct's address, for the calls that read the plan."""
        return ctypes.c_void_p(ctypes.addressof(self.c))

