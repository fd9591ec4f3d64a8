#!/usr/bin/env python3
"""
torch_moe_tp.py — PyTorch's tensor-parallel MoE ops (torch._grouped_mm and NCCL through
torch.distributed, one process per GPU) on the shapes and routings of `weft-bench ag_moe`,
`moe_rs` and `moe_ar`, measured their way: per shape the same routing of all the tokens on every
rank (the same xorshift draws from the same seeds as bench/peers/torch_grouped_mm.py), a
barrier of the ranks before each sample, samples of --batch calls between two CUDA events after
-w warm-up samples, the median of -n samples, then the slowest rank's median, us per call.

A shape is M,H,I,E,TOPK: M tokens a rank for ag_moe and moe_rs (T = W * M tokens in all, W the
world size; rank r holds tokens [r * M, (r + 1) * M)), M tokens on every rank for moe_ar
(T = M); hidden size H; expert intermediate size I in all, I / W of it on each rank (a shape
whose I does not split into multiples of 8 over the ranks is skipped); E experts, top TOPK.
  ag_moe  AllGather + MoE (column-parallel experts): x_r [M, H], W1_r [E, 2I/W, H] (each
          expert's gate rows of this rank's share, then its up rows). Timed:
          all_gather_into_tensor of x into [T, H], the flattened ids sorted (stable), each
          expert's end offset by torch.searchsorted (no host sync), the tokens' rows gathered in
          that order, torch._grouped_mm with W1_r passed transposed, silu(gate) * up: act
          [T * TOPK, I/W] in sorted order. The routing is inside every timed call.
  moe_rs  MoE + ReduceScatter (row-parallel experts): act [T * TOPK, I/W] in sorted order and the
          sort itself made before (as weft-bench's plan), W2_r [E, H, I/W]. Timed:
          torch._grouped_mm with W2_r passed transposed -> [T * TOPK, H], the weighted top-k
          combine into token order [T, H] (this rank's partial), reduce_scatter_tensor (sum) to
          this rank's [M, H].
  moe_ar  MoE + AllReduce: as moe_rs, then all_reduce (sum) of the [T, H] partial.
The combine takes the two forms of bench/peers/torch_moe_layer.py, both timed, interleaved
(sample i of both before sample i + 1 of either), the faster reported as PyTorch's:
  index_add  each row scaled by its entry's weight, index_add_ into a zeroed [T, H] by token, in
             the layer's dtype
  sum        the rows scattered back to entry order (index_copy_), viewed [T, TOPK, H], times the
             weights, summed over the top-k in fp32, rounded once
The routing weights are a softmax of random logits per token (positive, summing to 1; fp32, as
weft-bench's), drawn on the host from a fixed seed, the same on every rank. x and act are uniform
in [-1, 1), W1 and W2 uniform in [-1, 1) / sqrt(fan in) (H for W1, I for W2).

Each shape is checked once before timing, against a float64 reference that every rank computes
from every rank's inputs: each tensor is drawn on the GPU from a seed of (shape, rank, tensor,
expert), so that rank r draws rank q's tensors again (GPUs of one kind draw the same numbers).
ag_moe: this rank's act rows against silu(x_t G_e^T) * (x_t U_e^T) of their (token, expert)
entries; moe_rs / moe_ar: the output against the sum over ranks of each rank's combine (for
moe_rs this rank's tokens only); both expert by expert, each expert's rows in one float64 matmul.
The error is ||out - ref|| / ||ref||, the largest over ranks and (moe_rs, moe_ar) both combine
forms, <= --tol; a wrong shape is marked WRONG and makes the exit status 1.

Default shapes: ag_moe, Triton-distributed, Table 4 (AllGather + MoE: tokens a rank, in hidden H,
out hidden I, experts, topk); moe_rs, Triton-distributed, Table 5 (MoE + ReduceScatter: 1024
tokens a rank; its in hidden is I here, its out hidden H); moe_ar, Ditron, Table 3 at 8192 tokens
(num tokens, hidden dim, intermediate size, experts, topk), then decode sizes of its first two
models. TFLOP/s count a rank's grouped GEMM: 2 * T * TOPK * H * 2I/W (ag_moe) or
2 * T * TOPK * I/W * H (moe_rs, moe_ar). JSON rows (written by rank 0) carry weft-bench's keys
(suite, name MxHxIxExTOPK, M, H, I, E, topk), ranks, torch_us and err; moe_rs and moe_ar rows also
combine (the faster form's name), index_add_us and sum_us.

Launch:  python3 -m torch.distributed.run --standalone --nproc-per-node N
             bench/peers/torch_moe_tp.py [--suite ag_moe|moe_rs|moe_ar|all] [--shapes
             M,H,I,E,TOPK ...] [--routing uniform|zipf] [-n iters] [-w warmup] [--batch calls]
             [--dtype bf16|fp16] [--tol err] [-J out.json]
Without a GPU:  python3 bench/peers/torch_moe_tp.py --dry-run [--world N] (every suite's shapes,
the routing's expert loads and a hash of its ids at N ranks, default 2, no torch needed: the
lines `weft-bench ag_moe`, `moe_rs` and `moe_ar` print with --dry-run)
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import sys

from torch_grouped_mm import draw_ids, moe_args, torch_grouped_mm_or_none  # (this folder)

# the same settings as every GPU script of the project (docs/architecture.md, section 7: NVLink
# multicast stays off), before torch is imported
for k, v in {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1",
             "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}.items():
    os.environ[k] = v

SUITES = ("ag_moe", "moe_rs", "moe_ar")
COMBINES = ("index_add", "sum")
ROUTING_SEED = 0x5EED0000  # + the shape's index: weft-bench's routing seeds
DATA_SEED = 0x7E57DA7A
X, W1, ACT, W2, WEIGHTS = range(5)  # the tensors a seed is drawn for


def ag_moe_shapes():
    """Triton-distributed, Table 4 (AllGather + MoE): M tokens a rank, H its in hidden, I its out
    hidden, E experts, TOPK."""
    shapes = []
    for h, i, e, topk, ms in ((2048, 1408, 60, 4, (256, 512, 1024, 2048)),
                              (14336, 4096, 8, 2, (256, 512, 1024, 2048)),
                              (16384, 6144, 8, 2, (256, 512, 1024, 2048)),
                              (1408, 2048, 64, 6, (512, 1024, 2048))):
        shapes += [(m, h, i, e, topk) for m in ms]
    return shapes


def moe_rs_shapes():
    """Triton-distributed, Table 5 (MoE + ReduceScatter): 1024 tokens a rank; H is the table's
    out hidden, I its in hidden."""
    return [(1024, h, i, e, topk) for h, i in ((2048, 1536), (4096, 2048))
            for e, topk in ((8, 2), (32, 2), (64, 2), (32, 5), (64, 5))]


def moe_ar_shapes():
    """Ditron, Table 3 at 8192 tokens (on every rank), then decode sizes of its first two
    models."""
    return [(8192, 2048, 1408, 60, 4), (8192, 14336, 4096, 8, 2), (8192, 16384, 6144, 8, 2),
            (8192, 1408, 2048, 64, 6), (16, 2048, 1408, 60, 4), (64, 2048, 1408, 60, 4),
            (128, 14336, 4096, 8, 2)]


DEFAULT_SHAPES = {"ag_moe": ag_moe_shapes, "moe_rs": moe_rs_shapes, "moe_ar": moe_ar_shapes}


def tokens(suite, m, world):
    """T: every rank's M tokens (ag_moe, moe_rs), or the M that every rank holds (moe_ar)."""
    return m if suite == "moe_ar" else world * m


def parse_args():
    """(args, suites, {suite: shapes}, zipf, dry-run world): torch_grouped_mm.py's MoE command
    line, with --suite and --world taken off it first."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False, usage="%(prog)s [--suite "
                                  "ag_moe|moe_rs|moe_ar|all] [--world N] [options: see -h]")
    pre.add_argument("--suite", choices=SUITES + ("all",), default="all")
    pre.add_argument("--world", type=int, default=None)
    p, rest = pre.parse_known_args()
    sys.argv[1:] = rest
    doc = (__doc__.split("\n\n")[0] + " Besides the options below: --suite ag_moe|moe_rs|moe_ar|"
           "all (default all); --world N, the world size of --dry-run (default 2).")
    a, shapes, zipf = moe_args(doc, "M,H,I,E,TOPK ...", None, 5, False)
    if p.world is not None and (not a.dry_run or p.world < 1):
        pre.error("--world N (N >= 1) is for --dry-run; a run takes its world size from "
                  "torch.distributed.run")
    if a.n < 1 or a.w < 0 or a.batch < 1 or not a.tol > 0:
        pre.error("needs -n >= 1, -w >= 0, --batch >= 1, --tol > 0")
    for s in shapes or ():
        if len(s) != 5 or s[0] < 1 or s[1] < 8 or s[1] % 8 or s[2] < 8 or s[2] % 8 or s[3] < 1 \
                or not 1 <= s[4] <= s[3]:
            pre.error(f"shape {','.join(map(str, s))}: needs M,H,I,E,TOPK with M >= 1, H and I "
                      "multiples of 8, 1 <= TOPK <= E")
    suites = SUITES if p.suite == "all" else (p.suite,)
    return a, suites, {s: shapes or DEFAULT_SHAPES[s]() for s in suites}, zipf, p.world or 2


def dry_run(suites, shapes, zipf, world):
    """The routing of every suite's shapes at `world` ranks as `weft-bench <suite> --dry-run`
    prints it: rows, the experts' smallest and largest loads, the empty ones, a hash of the ids
    (torch_grouped_mm.py's, over all T tokens)."""
    for suite in suites:
        for si, (m, h, i, e, topk) in enumerate(shapes[suite]):
            t = tokens(suite, m, world)
            loads, hsh = [0] * e, 0
            for x in draw_ids(t, topk, e, zipf, ROUTING_SEED + si):
                loads[x] += 1
                hsh = (hsh * 31 + x) & 0xFFFFFFFF
            print(f"{suite} {m}x{h}x{i}x{e}x{topk}: {t * topk} rows, expert loads min "
                  f"{min(loads)} max {max(loads)}, empty {loads.count(0)}, ids hash {hsh:08x}")


class Run:
    """What every shape needs: torch, the process group, this rank's device, the options."""

    def __init__(self, torch, dist, a, zipf, rank, world, local, dt):
        self.torch, self.dist, self.a, self.zipf = torch, dist, a, zipf
        self.rank, self.world, self.local, self.dt = rank, world, local, dt
        self.dev = torch.device("cuda", local)
        self.gen = torch.Generator(device=self.dev)

    def seed(self, suite, si, q, what, e=0):
        """The seed of one of rank q's tensors (what; e: the expert) of shape si of a suite."""
        s = DATA_SEED
        for v in (SUITES.index(suite), si, q, what, e):
            s = (s * 1000003 + v) % 2**63
        return s

    def draw(self, shape, seed, scale):
        """A fresh [shape] tensor of the run's dtype, uniform in [-scale, scale), on the GPU: the
        same numbers for the same seed and shape on every rank (GPUs of one kind)."""
        self.gen.manual_seed(seed)
        t = self.torch.empty(shape, device=self.dev, dtype=self.dt)
        return t.uniform_(-scale, scale, generator=self.gen)

    def experts_tensor(self, shape, suite, si, q, what, scale):
        """[E, rows, cols]: each expert's share drawn alone, so that any rank draws one expert's
        share of rank q again (self.draw with the same seed)."""
        w = self.torch.empty(shape, device=self.dev, dtype=self.dt)
        for e in range(shape[0]):
            w[e].copy_(self.draw(shape[1:], self.seed(suite, si, q, what, e), scale))
        return w

    def routing(self, suite, si, t, e, topk):
        """ids [T * TOPK] (int32, entry order) and weights [T, TOPK] (fp32), on the GPU."""
        torch = self.torch
        ids = torch.tensor(draw_ids(t, topk, e, self.zipf, ROUTING_SEED + si), dtype=torch.int32,
                           device=self.dev)
        g = torch.Generator().manual_seed(self.seed(suite, si, 0, WEIGHTS))
        wts = torch.softmax(torch.randn(t, topk, generator=g), dim=1).to(self.dev)
        return ids, wts

    def barrier(self):
        self.dist.barrier(device_ids=[self.local])

    def rank_max(self, values):
        """Every value's largest over ranks (NaN counts as +inf: the worst rank still wins)."""
        t = self.torch.tensor([v if v == v else math.inf for v in values],
                              dtype=self.torch.float64, device=self.dev)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.tolist()

    def time_calls(self, calls):
        """{name: us per call}: interleaved samples, each a barrier, then --batch calls between
        two events; the median of -n samples after -w warm-up ones, the slowest rank's."""
        torch, a = self.torch, self.a
        samples = {name: [] for name in calls}
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(a.w + a.n):
            for name, fn in calls.items():
                self.barrier()
                e0.record()
                for _ in range(a.batch):
                    fn()
                e1.record()
                e1.synchronize()
                if i >= a.w:
                    samples[name].append(e0.elapsed_time(e1) * 1e3 / a.batch)
        return dict(zip(calls, self.rank_max([statistics.median(samples[n]) for n in calls])))


def rel_err(num, den):
    """sqrt(num / den) of float64 GPU scalars (squared norms): the normalised error."""
    num, den = num.item(), den.item()
    if den > 0:
        return math.sqrt(num / den)
    return 0.0 if num == 0 else math.inf


def sorted_entries(torch, ids, e):
    """The stable sort of the flattened ids: (entries in sorted order, each expert's count)."""
    idl = ids.long()
    return torch.argsort(idl, stable=True), torch.bincount(idl, minlength=e).tolist()


def ag_moe_check(run, si, shape, ids, act):
    """||act - ref|| / ||ref|| on this rank: every (token, expert) entry's silu(x G^T) * (x U^T) in
    float64, x every rank's tokens drawn again, G and U this rank's share of the expert."""
    torch = run.torch
    m, h, i, e, topk = shape
    iw = i // run.world
    x_all = torch.cat([run.draw((m, h), run.seed("ag_moe", si, q, X), 1.0)
                       for q in range(run.world)])
    order, counts = sorted_entries(torch, ids, e)
    num = torch.zeros((), dtype=torch.float64, device=run.dev)
    den = torch.zeros((), dtype=torch.float64, device=run.dev)
    start = 0
    for ex, c in enumerate(counts):
        if c:
            xd = x_all.index_select(0, order[start:start + c] // topk).double()
            w = run.draw((2 * iw, h), run.seed("ag_moe", si, run.rank, W1, ex), h ** -0.5)
            gu = xd @ w.double().t()
            ref = torch.nn.functional.silu(gu[:, :iw]) * gu[:, iw:]
            num += (act[start:start + c].double() - ref).square().sum()
            den += ref.square().sum()
        start += c
    return rel_err(num, den)


def ag_moe_case(run, si, shape):
    """One AllGather + MoE shape: its inputs, the check, the timing; (us, err, extra JSON)."""
    torch, dist = run.torch, run.dist
    m, h, i, e, topk = shape
    iw, t = i // run.world, run.world * m
    ids, _ = run.routing("ag_moe", si, t, e, topk)
    experts = torch.arange(e, dtype=torch.int32, device=run.dev)
    x = run.draw((m, h), run.seed("ag_moe", si, run.rank, X), 1.0)
    w1t = run.experts_tensor((e, 2 * iw, h), "ag_moe", si, run.rank, W1, h ** -0.5).transpose(1, 2)
    xg = torch.empty(t, h, device=run.dev, dtype=run.dt)

    def call():
        dist.all_gather_into_tensor(xg, x)
        sorted_ids, order = torch.sort(ids, stable=True)
        offs = torch.searchsorted(sorted_ids, experts, right=True, out_int32=True)
        gu = torch._grouped_mm(xg.index_select(0, order // topk), w1t, offs=offs)  # [rows, 2I/W]
        return torch.nn.functional.silu(gu[:, :iw]) * gu[:, iw:]

    xg.fill_(float("nan"))
    act = call()
    err = ag_moe_check(run, si, shape, ids, act)
    del act
    us = run.time_calls({"ag_moe": call})["ag_moe"]
    return us, err, {}


def combine(torch, y, order, tok, wts, t, form):
    """y [T * TOPK, H] in sorted order -> [T, H] in y's dtype: each token's rows weighted and
    summed (bench/peers/torch_moe_layer.py's two forms); order: each sorted row's entry."""
    if form == "index_add":
        y.mul_(wts.reshape(-1).index_select(0, order)[:, None])
        return torch.zeros((t, y.shape[1]), device=y.device, dtype=y.dtype).index_add_(0, tok, y)
    ye = torch.empty_like(y).index_copy_(0, order, y).view(t, -1, y.shape[1])
    return (ye.float() * wts.float()[..., None]).sum(1).to(y.dtype)


def reduce_reference(run, suite, si, shape, ids, wts):
    """float64 [N, H]: the sum over ranks q of rank q's combine (its act and W2 share drawn again),
    for this rank's M tokens (moe_rs) or all T (moe_ar)."""
    torch = run.torch
    m, h, i, e, topk = shape
    iw, t = i // run.world, tokens(suite, m, run.world)
    lo = run.rank * m if suite == "moe_rs" else 0
    order, counts = sorted_entries(torch, ids, e)
    tok = order // topk
    w_sorted = wts.reshape(-1).double().index_select(0, order)
    mine = (tok >= lo) & (tok < lo + m)
    ref = torch.zeros(m, h, dtype=torch.float64, device=run.dev)
    for q in range(run.world):
        act_q = run.draw((t * topk, iw), run.seed(suite, si, q, ACT), 1.0)
        start = 0
        for ex, c in enumerate(counts):
            rows = torch.arange(start, start + c, device=run.dev)[mine[start:start + c]]
            start += c
            if rows.numel():
                w = run.draw((h, iw), run.seed(suite, si, q, W2, ex), i ** -0.5).double()
                y = act_q.index_select(0, rows).double() @ w.t()
                ref.index_add_(0, tok.index_select(0, rows) - lo,
                               y * w_sorted.index_select(0, rows)[:, None])
    return ref


def reduce_case(run, suite, si, shape):
    """One MoE + ReduceScatter / AllReduce shape: its inputs, the check of both combine forms,
    their timing; (the faster's us, err, extra JSON)."""
    torch, dist = run.torch, run.dist
    m, h, i, e, topk = shape
    iw, t = i // run.world, tokens(suite, m, run.world)
    ids, wts = run.routing(suite, si, t, e, topk)
    # the plan, made before the timed calls: each sorted row's entry and token, each expert's end
    sorted_ids, order = torch.sort(ids, stable=True)
    offs = torch.searchsorted(sorted_ids, torch.arange(e, dtype=torch.int32, device=run.dev),
                              right=True, out_int32=True)
    tok = order // topk
    act = run.draw((t * topk, iw), run.seed(suite, si, run.rank, ACT), 1.0)
    w2t = run.experts_tensor((e, h, iw), suite, si, run.rank, W2, i ** -0.5).transpose(1, 2)
    rs = suite == "moe_rs"
    out = torch.empty(m, h, device=run.dev, dtype=run.dt) if rs else None  # this rank's tokens

    def call(form):
        part = combine(torch, torch._grouped_mm(act, w2t, offs=offs), order, tok, wts, t, form)
        if rs:
            dist.reduce_scatter_tensor(out, part)
            return out
        dist.all_reduce(part)
        return part

    ref = reduce_reference(run, suite, si, shape, ids, wts)
    ref_norm = ref.square().sum()
    errs = []
    for form in COMBINES:
        if rs:
            out.fill_(float("nan"))
        res = call(form)
        errs.append(rel_err((res.double() - ref).square().sum(), ref_norm))
        del res
    del ref
    err = max(errs, key=lambda v: (v != v, v))  # the larger, NaN above all
    us = run.time_calls({form: (lambda f=form: call(f)) for form in COMBINES})
    best = min(COMBINES, key=us.get)
    return us[best], err, {"combine": best, "index_add_us": us["index_add"],
                           "sum_us": us["sum"]}


def heading(suite, a, world):
    what = {"ag_moe": "AllGather + MoE: all_gather_into_tensor of x, the routing (stable sort, "
                      "searchsorted), the gather, torch._grouped_mm with W1 [E, 2I/W, H], "
                      "silu(gate) * up",
            "moe_rs": "MoE + ReduceScatter: torch._grouped_mm with W2 [E, H, I/W], the top-k "
                      "combine (the faster form), reduce_scatter_tensor",
            "moe_ar": "MoE + AllReduce: torch._grouped_mm with W2 [E, H, I/W], the top-k combine "
                      "(the faster form), all_reduce"}[suite]
    print(f"# {suite} at {world} ranks, {a.dtype}, {a.routing} routing ({what}); us per call "
          f"(median of {a.n} samples of {a.batch} calls, the slowest rank); TFLOP/s: a rank's "
          "grouped GEMM")
    print(f"#{'M':>6} {'H':>6} {'I':>6} {'E':>4} {'topk':>4} {'torch_us':>10} {'TFLOP/s':>8} "
          + (f"{'combine':>9} " if suite != "ag_moe" else "") + f"{'err':>9}", flush=True)


def run_suite(run, suite, shapes):
    """One suite's shapes, a row each; (JSON rows, wrong shapes)."""
    torch, a, world = run.torch, run.a, run.world
    if run.rank == 0:
        heading(suite, a, world)
    rows, wrong = [], 0
    for si, shape in enumerate(shapes):
        m, h, i, e, topk = shape
        name = f"{m}x{h}x{i}x{e}x{topk}"
        if i % world or (i // world) % 8:
            if run.rank == 0:
                print(f"# {suite} {name}: I {i} does not split into multiples of 8 over {world} "
                      "ranks, skipped", flush=True)
            continue
        if suite == "ag_moe":
            us, err, extra = ag_moe_case(run, si, shape)
        else:
            us, err, extra = reduce_case(run, suite, si, shape)
        err = run.rank_max([err])[0]
        bad = not err <= a.tol
        wrong += bad
        t = tokens(suite, m, world)
        gemm_n = 2 * (i // world) if suite == "ag_moe" else h
        gemm_k = h if suite == "ag_moe" else i // world
        tf = 2.0 * t * topk * gemm_n * gemm_k / us * 1e-6
        if run.rank == 0:
            form = f"{extra['combine']:>9} " if extra else ""
            print(f" {m:6d} {h:6d} {i:6d} {e:4d} {topk:4d} {us:10.1f} {tf:8.1f} {form}{err:9.2e}"
                  f"{' WRONG' if bad else ''}", flush=True)
        rows.append({"suite": suite, "name": name, "M": m, "H": h, "I": i, "E": e, "topk": topk,
                     "ranks": world, "torch_us": us, "err": err if math.isfinite(err) else None,
                     **extra})
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # this shape's buffers, before the next (larger) one's
    return rows, wrong


def nccl_version(torch):
    try:
        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - only the header's text
        return "?"
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def main():
    a, suites, shapes, zipf, world = parse_args()
    if a.dry_run:
        dry_run(suites, shapes, zipf, world)
        return 0
    if importlib.util.find_spec("torch") is None:
        print("torch_moe_tp.py: needs torch", file=sys.stderr)
        return 77
    torch = torch_grouped_mm_or_none("torch_moe_tp.py")
    if torch is None:
        return 77
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        print("torch_moe_tp.py: needs torch.distributed with NCCL", file=sys.stderr)
        return 77
    if any(k not in os.environ for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        print("torch_moe_tp.py: launch with python3 -m torch.distributed.run --standalone "
              "--nproc-per-node N bench/peers/torch_moe_tp.py ... (or use --dry-run)",
              file=sys.stderr)
        return 2
    rank, ws = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    if torch.cuda.device_count() <= local:
        print(f"torch_moe_tp.py: rank {rank}: no CUDA device {local} (torch sees "
              f"{torch.cuda.device_count()})", file=sys.stderr)
        return 77
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    run = Run(torch, dist, a, zipf, rank, ws, local, dt)
    if rank == 0:
        print(f"# torch {torch.__version__}, NCCL {nccl_version(torch)}, {ws} ranks, "
              f"{torch.cuda.get_device_name()}: the tensor-parallel MoE ops on torch._grouped_mm "
              "and torch.distributed", flush=True)
    rows, wrong = [], 0
    for suite in suites:
        r, w = run_suite(run, suite, shapes[suite])
        rows += r
        wrong += w
    if rank == 0:
        print(f"# wrong shapes: {wrong} {'FAILED' if wrong else 'OK'}", flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"suite": suites[0] if len(suites) == 1 else "moe_tp", "ranks": ws,
                           "peer": "torch_moe_tp", "routing": a.routing, "rows": rows}, f,
                          indent=1)
    run.barrier()  # nobody tears NCCL down while a peer still uses it
    dist.destroy_process_group()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
