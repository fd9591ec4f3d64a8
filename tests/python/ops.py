"""The Python package on GPUs: every collective, the GEMM, the three overlapped ops, the MoE
routing, grouped GEMMs and a tensor-parallel MoE layer (AllGather + MoE, MoE + ReduceScatter,
MoE + AllReduce) through weft's bindings, against float64 references (reductions, GEMMs)
or bit for bit (data movement);
a CUDA graph replay; argument errors. Inputs are fresh every run (a seed rank 0 draws), outputs
poisoned before each call, every element checked. Each rank draws every rank's inputs from the
shared seed, so references need no other library. Run by ctest through weftrun at 2, 3 and 4
ranks (shared GPUs where there are fewer) and at 8:
    weftrun -n 4 python3 tests/python/ops.py
Exits 77 (skipped) where torch with CUDA is missing."""

import random
import sys
import time

from needs import torch_with_cuda

torch = torch_with_cuda()
import weft  # noqa: E402 (after the skip)

comm = weft.Comm()
torch.cuda.set_device(comm.device)
R, W, DEV = comm.rank, comm.world_size, f"cuda:{comm.device}"
failures = []


def check(cond, what):
    if not cond or R == 0:
        print(f"[rank {R}] {'ok  ' if cond else 'FAIL'} {what}", flush=True)
    if not cond:
        failures.append(what)


# One seed for every rank: rank 0's, gathered through weft (a bit-exact op checked below too).
seeds = comm.empty((W,), torch.int64)
comm.all_gather(seeds, torch.tensor([time.time_ns() % (1 << 62)], device=DEV))
comm.synchronize()
SEED = int(seeds[0])
comm.free(seeds)
if R == 0:
    print(f"seed {SEED}, {W} ranks, weft {weft.__version__} from {weft.LIBRARY_PATH}")
_tags = {}


def rand(rank, shape, dtype, tag):
    """Rank `rank`'s input `tag`: the same values on every rank (normal, never all zeros)."""
    key = _tags.setdefault(tag, len(_tags))
    g = torch.Generator().manual_seed((SEED * 1000003 + key * 1009 + rank) % (1 << 63))
    if not dtype.is_floating_point:
        return torch.randint(0, 255, shape, generator=g, dtype=dtype).to(DEV)
    return torch.randn(shape, generator=g).to(dtype).to(DEV)


def poison(t):
    t.fill_(float("nan") if t.is_floating_point() else 0x5A)
    return t


def same_bits(a, b):
    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.uint8),
                                              b.contiguous().view(torch.uint8))


def nerr(out, ref):
    """||out - ref|| / ||ref|| in float64 (NaN where out holds poison)."""
    d = out.double() - ref
    return float(d.norm() / ref.norm())


TOL = {torch.bfloat16: 1e-2, torch.float16: 1e-3, torch.float32: 1e-6}
GEMM_TOL = {torch.bfloat16: 5e-3, torch.float16: 5e-3, torch.float32: 1e-4}

# -- collectives ------------------------------------------------------------------------------

for dtype in (torch.bfloat16, torch.float32, torch.uint8):
    for n, algo in ((1, "auto"), (1001, "ll"), (65541, "auto"), (300007, "sm"),
                    (1 << 21 | 3, "copy_engine")):
        tag = f"ag{n}{dtype}"
        out = poison(comm.empty((W * n,), dtype))
        comm.all_gather(out, rand(R, (n,), dtype, tag), algo=algo)
        comm.synchronize()
        want = torch.cat([rand(r, (n,), dtype, tag) for r in range(W)])
        check(same_bits(out, want), f"all_gather {dtype} n={n} {algo}: bit for bit")
        poison(out)
        out[R * n:(R + 1) * n].copy_(rand(R, (n,), dtype, tag))
        comm.all_gather(out, out[R * n:(R + 1) * n], algo=algo)
        comm.synchronize()
        check(same_bits(out, want), f"all_gather {dtype} n={n}: in place")
        comm.free(out)

for dtype in (torch.bfloat16, torch.float16, torch.float32):
    for n, algo in ((1, "auto"), (4099, "ll"), (262147, "auto"), (1 << 20, "two_shot"),
                    (5 << 20 | 1, "auto")):
        tag = f"ar{n}{dtype}"
        ref = sum(rand(r, (n,), dtype, tag).double() for r in range(W))
        x = comm.empty((n,), dtype)
        x.copy_(rand(R, (n,), dtype, tag))
        out = poison(comm.empty((n,), dtype))
        comm.all_reduce(x, out, algo=algo)
        comm.synchronize()
        e = nerr(out, ref)
        check(e <= TOL[dtype], f"all_reduce {dtype} n={n} {algo}: error {e:.2e}")
        comm.all_reduce(x, algo=algo)  # in place
        comm.synchronize()
        check(same_bits(x, out), f"all_reduce {dtype} n={n} {algo}: in place gives the same bits")
        if n == 262147:  # every rank holds the same bits
            every = poison(comm.empty((W * n,), dtype))
            comm.all_gather(every, out)
            comm.synchronize()
            check(all(same_bits(every[r * n:(r + 1) * n], out) for r in range(W)),
                  f"all_reduce {dtype} n={n}: the same bits on every rank")
            comm.free(every)
        comm.free(out)
        comm.free(x)

# Plain torch tensors (the caching allocator's memory, not the heap): the LL forms and the LL128
# two-shot take any device memory, so a decode-sized all_reduce or all_gather needs no copy.
for n, algo in ((4099, "auto"), (300001, "two_shot"), (1 << 20, "auto")):
    tag = f"plain{n}"
    ref = sum(rand(r, (n,), torch.bfloat16, tag).double() for r in range(W))
    x = rand(R, (n,), torch.bfloat16, tag)
    out = poison(torch.empty(n, dtype=torch.bfloat16, device=DEV))
    comm.all_reduce(x, out, algo=algo)
    comm.synchronize()
    e = nerr(out, ref)
    comm.all_reduce(x, algo=algo)  # in place
    comm.synchronize()
    check(e <= TOL[torch.bfloat16] and same_bits(x, out),
          f"all_reduce of plain tensors n={n} {algo}: error {e:.2e}, in place the same bits")
n = 3001
out = poison(torch.empty(W * n, dtype=torch.float32, device=DEV))
comm.all_gather(out, rand(R, (n,), torch.float32, "plainag"), algo="ll")
comm.synchronize()
check(same_bits(out, torch.cat([rand(r, (n,), torch.float32, "plainag") for r in range(W)])),
      f"all_gather into a plain tensor n={n} ll: bit for bit")
poison(out)
comm.all_to_all(out, rand(R, (W * n,), torch.float32, "plaina2a"), algo="ll")
comm.synchronize()
want = torch.cat([rand(r, (W * n,), torch.float32, "plaina2a")[R * n:(R + 1) * n] for r in range(W)])
check(same_bits(out, want), f"all_to_all into a plain tensor n={n} ll: bit for bit")

for op, dtype in (("max", torch.bfloat16), ("min", torch.float16), ("prod", torch.float32),
                  ("avg", torch.bfloat16)):
    n, tag = 70001, f"op{op}"
    xs = torch.stack([rand(r, (n,), dtype, tag).double() for r in range(W)])
    ref = {"max": lambda: xs.max(0).values, "min": lambda: xs.min(0).values,
           "prod": lambda: xs.prod(0), "avg": lambda: xs.mean(0)}[op]()
    x = comm.empty((n,), dtype)
    x.copy_(rand(R, (n,), dtype, tag))
    out = poison(comm.empty((n,), dtype))
    comm.all_reduce(x, out, op=op)
    comm.synchronize()
    if op in ("max", "min"):
        check(same_bits(out, ref.to(dtype)), f"all_reduce {op} {dtype}: bit for bit")
    else:
        e = nerr(out, ref)
        check(e <= TOL[dtype], f"all_reduce {op} {dtype}: error {e:.2e}")
    comm.free(out)
    comm.free(x)

for dtype in (torch.bfloat16, torch.float32):
    for n, algo in ((3, "auto"), (70001, "ll"), (1 << 20, "auto"), (1 << 20, "copy_engine")):
        tag = f"rs{n}{dtype}"
        ref = sum(rand(r, (W * n,), dtype, tag).double()[R * n:(R + 1) * n] for r in range(W))
        x = comm.empty((W * n,), dtype)
        x.copy_(rand(R, (W * n,), dtype, tag))
        out = poison(torch.empty(n, dtype=dtype, device=DEV))
        comm.reduce_scatter(out, x, algo=algo)
        comm.synchronize()
        e = nerr(out, ref)
        check(e <= TOL[dtype], f"reduce_scatter {dtype} n={n} {algo}: error {e:.2e}")
        comm.free(x)

for dtype in (torch.bfloat16, torch.uint8, torch.int64):  # int64 travels as bytes
    for n, algo in ((5, "auto"), (4097, "ll"), (200003, "sm")):
        tag = f"a2a{n}{dtype}"
        out = poison(comm.empty((W * n,), dtype))
        comm.all_to_all(out, rand(R, (W * n,), dtype, tag), algo=algo)
        comm.synchronize()
        want = torch.cat([rand(r, (W * n,), dtype, tag)[R * n:(R + 1) * n] for r in range(W)])
        check(same_bits(out, want), f"all_to_all {dtype} n={n} {algo}: bit for bit")
        comm.free(out)

rng = random.Random(SEED)
for big in (False, True):
    counts = [[rng.randrange(0, 300000 if big else 3000) for _ in range(W)] for _ in range(W)]
    tag = f"a2av{big}"
    inp = rand(R, (sum(counts[R]),), torch.bfloat16, tag)
    most = max(sum(counts[r][p] for r in range(W)) for p in range(W))  # equal on every rank
    out = poison(comm.empty((max(most, 1),), torch.bfloat16))
    comm.all_to_all_v(out, [counts[r][R] for r in range(W)], inp, counts[R])
    comm.synchronize()
    parts = []
    for r in range(W):
        src = rand(r, (sum(counts[r]),), torch.bfloat16, tag)
        off = sum(counts[r][:R])
        parts.append(src[off:off + counts[r][R]])
    want = torch.cat(parts)
    check(same_bits(out[:want.numel()], want), f"all_to_all_v {'large' if big else 'small'} "
          f"random counts: bit for bit")
    comm.free(out)

# -- GEMM and the overlapped ops ------------------------------------------------------------


def weights(rank, n, k, layout, dtype, tag):
    b = rand(rank, (n, k), dtype, tag) * 0.05
    return b if layout == "nk" else b.t().contiguous()


def ref_mm(a, b, layout):
    return a.double() @ (b.double().t() if layout == "nk" else b.double())


for (m, n, k) in ((300, 520, 256), (128, 4096, 1024), (1, 1000, 64)):
    for layout in ("nk", "kn"):
        for din, dout in ((torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32)):
            tag = f"g{m}{n}{k}{layout}{din}"
            a = rand(R, (m, k), din, tag + "a")
            b = weights(R, n, k, layout, din, tag + "b")
            out = poison(torch.empty(m, n, dtype=dout, device=DEV))
            comm.gemm(a, b, out, layout=layout)
            comm.synchronize()
            e = nerr(out, ref_mm(a, b, layout))
            check(e <= GEMM_TOL[dout], f"gemm {m}x{n}x{k} {layout} {din}->{dout}: error {e:.2e}")
# a strided A (a view of every other row) and the default out
a = rand(R, (512, 256), torch.bfloat16, "gs")[::2]
b = weights(R, 384, 256, "nk", torch.bfloat16, "gsb")
e = nerr(comm.gemm(a, b), ref_mm(a, b, "nk"))
check(e <= 5e-3, f"gemm with A's row stride {a.stride(0)}: error {e:.2e}")

for (m, n, k) in ((300, 512, 256), (1024, 1024, 512)):  # rows a rank; the second overlaps
    for algo in ("auto", "sequential", "copy_engine"):
        for layout in ("nk", "kn"):
            tag = f"ag{m}{n}{k}{layout}"
            b = weights(R, n, k, layout, torch.bfloat16, tag + "b")
            a_all = torch.cat([rand(r, (m, k), torch.bfloat16, tag + "a") for r in range(W)])
            gathered = poison(comm.empty((W * m, k), torch.bfloat16))
            out = comm.ag_gemm(rand(R, (m, k), torch.bfloat16, tag + "a"), b, gathered=gathered,
                               layout=layout, algo=algo)
            comm.synchronize()
            e = nerr(out, ref_mm(a_all, b, layout))
            check(e <= 5e-3 and same_bits(gathered, a_all),
                  f"ag_gemm {m}x{n}x{k}/rank {layout} {algo}: error {e:.2e}, gathered A exact")
            comm.free(gathered)

for (m, n, k) in ((W * 64, 512, 256), (W * 1024, 1024, 512), (W * 1024, 768, 1024)):
    for algo in ("auto", "sequential", "copy_engine", "sm"):
        tag = f"rs{m}{n}{k}"
        a = [rand(r, (m, k), torch.bfloat16, tag + "a") for r in range(W)]
        b = [weights(r, n, k, "nk", torch.bfloat16, tag + "b") for r in range(W)]
        rows = slice(R * m // W, (R + 1) * m // W)
        ref = sum(ref_mm(a[r], b[r], "nk")[rows] for r in range(W))
        out = poison(torch.empty(m // W, n, dtype=torch.bfloat16, device=DEV))
        comm.gemm_rs(a[R], b[R], out, algo=algo)
        comm.synchronize()
        e = nerr(out, ref)
        check(e <= 1e-2, f"gemm_rs {m}x{n}x{k} {algo}: error {e:.2e}")

for (m, n, k) in ((128, 4096, 512), (W * 1024, 1024, 512), (37, 640, 256)):
    for algo in ("auto", "sequential", "copy_engine", "sm", "ll"):
        if algo == "copy_engine" and m % W:
            continue
        tag = f"ar{m}{n}{k}"
        a = [rand(r, (m, k), torch.bfloat16, tag + "a") for r in range(W)]
        b = [weights(r, n, k, "kn", torch.bfloat16, tag + "b") for r in range(W)]
        ref = sum(ref_mm(a[r], b[r], "kn") for r in range(W))
        out = poison(comm.empty((m, n), torch.bfloat16))
        comm.gemm_ar(a[R], b[R], out, layout="kn", algo=algo)
        comm.synchronize()
        e = nerr(out, ref)
        check(e <= 1e-2, f"gemm_ar {m}x{n}x{k} {algo}: error {e:.2e}")
        comm.free(out)

# -- mixture of experts on this GPU: the routing plan, the gather, the grouped GEMM -------------

for (tokens, topk, experts, n, k, layout) in ((300, 2, 8, 512, 256, "nk"),
                                              (77, 4, 16, 384, 128, "kn")):
    tag = f"moe{tokens}{topk}{experts}{layout}"
    g = torch.Generator().manual_seed((SEED + tokens) % (1 << 63))
    ids = torch.stack([torch.randperm(experts, generator=g)[:topk] for _ in range(tokens)])
    ids = ids.to(torch.int32).to(DEV)
    x = rand(R, (tokens, k), torch.bfloat16, tag + "x")
    w = torch.stack([weights(R, n, k, layout, torch.bfloat16, tag + f"w{e}")
                     for e in range(experts)])
    plan = comm.moe_route(ids, experts, tile_rows=128)
    a = comm.moe_gather(plan, x)
    out = poison(torch.empty(plan.max_rows, n, dtype=torch.bfloat16, device=DEV))
    comm.grouped_gemm(plan, a, w, out, layout=layout)
    comm.synchronize()
    counts = torch.bincount(ids.flatten().long(), minlength=experts).to(torch.int32)
    check(torch.equal(plan.counts, counts), f"moe_route {tag}: per-expert counts")
    rows = int(plan.tiles.item()) * plan.tile_rows
    entry = plan.row_entry[:rows].long()
    used = entry >= 0
    ref = torch.zeros(rows, n, dtype=torch.float64, device=DEV)
    flat = ids.flatten().long()
    for r in torch.nonzero(used).flatten().tolist():
        ent = int(entry[r])
        ref[r] = ref_mm(x[ent // topk].unsqueeze(0), w[int(flat[ent])], layout)[0]
    e = nerr(out[:rows], ref)
    check(e <= GEMM_TOL[torch.bfloat16], f"grouped_gemm {tag} ({rows} rows in use): error {e:.2e}")
    check(bool(torch.isnan(out[rows:]).all()), f"grouped_gemm {tag}: rows past the plan untouched")
    # the rest of a layer: the gated activation and the top-k combine
    w2 = torch.cat([w, w], 1 if layout == "nk" else 2)  # gate and up: the same weights
    gu = comm.grouped_gemm(plan, a, w2, layout=layout)
    act = comm.moe_silu_mul(plan, gu)
    wts = torch.rand(tokens, topk, generator=g).to(DEV)
    comb = comm.moe_combine(plan, act, wts)
    comm.synchronize()
    half = out[:rows].double()
    act_ref = half * torch.sigmoid(half) * half
    comb_ref = torch.zeros(tokens, n, dtype=torch.float64, device=DEV)
    er = plan.entry_row.long()
    for t in range(tokens):
        for j in range(topk):
            comb_ref[t] += float(wts[t, j]) * act_ref[int(er[t * topk + j])]
    e = nerr(comb, comb_ref)
    check(e <= 2e-2, f"moe_silu_mul + moe_combine {tag}: error {e:.2e}")
    # the fused forms: the activation in the first GEMM's epilogue (against the float64 product,
    # not the rounded one), the combine in the second's (fp32 out)
    fused = poison(torch.empty(plan.max_rows, n, dtype=torch.bfloat16, device=DEV))
    comm.grouped_gemm_silu_mul(plan, x, w2, fused, layout=layout)
    fcomb = comm.grouped_gemm_combine(plan, a, w, wts, layout=layout, out_dtype=torch.float32)
    comm.synchronize()
    act64 = ref * torch.sigmoid(ref) * ref
    e = nerr(fused[:rows], act64)
    check(e <= 2e-2, f"grouped_gemm_silu_mul {tag}: error {e:.2e}")
    check(bool(torch.isnan(fused[rows:]).all()), f"grouped_gemm_silu_mul {tag}: rows past untouched")
    fcomb_ref = torch.zeros(tokens, n, dtype=torch.float64, device=DEV)
    for t in range(tokens):
        for j in range(topk):
            fcomb_ref[t] += float(wts[t, j]) * ref[int(er[t * topk + j])]
    e = nerr(fcomb, fcomb_ref)
    check(e <= 1e-4, f"grouped_gemm_combine {tag} (fp32 out): error {e:.2e}")

# -- AllGather + MoE: every rank's tokens gathered while the gated grouped GEMM runs --------------

for (m, topk, experts, inter, k, algo) in ((300, 2, 8, 128, 256, "auto"),
                                           (1100, 2, 4, 64, 128, "auto"),
                                           (45, 3, 6, 64, 64, "sequential")):
    tag = f"agmoe{m}{topk}{experts}"
    g = torch.Generator().manual_seed((SEED + m) % (1 << 63))
    ids = torch.stack([torch.randperm(experts, generator=g)[:topk] for _ in range(W * m)])
    ids = ids.to(torch.int32).to(DEV)  # every rank's, in rank order: the same on every rank
    xs = torch.cat([rand(q, (m, k), torch.bfloat16, tag + "x") for q in range(W)])
    w = torch.stack([weights(R, 2 * inter, k, "nk", torch.bfloat16, tag + f"w{e}")
                     for e in range(experts)])
    plan = comm.moe_route(ids, experts, tile_rows=128)
    gathered = poison(comm.empty((W * m, k), torch.bfloat16))
    act = poison(torch.empty(plan.max_rows, inter, dtype=torch.bfloat16, device=DEV))
    torch.cuda.synchronize()
    comm.barrier()  # no peer writes into gathered before it is poisoned
    comm.ag_moe(plan, xs[R * m:(R + 1) * m].contiguous(), w, act, gathered=gathered, algo=algo)
    comm.synchronize()
    check(same_bits(gathered, xs), f"ag_moe {tag}: every rank's tokens gathered")
    rows = int(plan.tiles.item()) * plan.tile_rows
    entry = plan.row_entry[:rows].long()
    ref = torch.zeros(rows, inter, dtype=torch.float64, device=DEV)
    flat = ids.flatten().long()
    for r in torch.nonzero(entry >= 0).flatten().tolist():
        ent = int(entry[r])
        gu = ref_mm(xs[ent // topk].unsqueeze(0), w[int(flat[ent])], "nk")[0]
        ref[r] = gu[:inter] * torch.sigmoid(gu[:inter]) * gu[inter:]
    e = nerr(act[:rows], ref)
    check(e <= 2e-2, f"ag_moe {tag} ({algo}, {rows} rows in use): error {e:.2e}")
    check(bool(torch.isnan(act[rows:]).all()), f"ag_moe {tag}: rows past the plan untouched")
    # the layer's second half: every rank's share of W2 [E, k, inter] (row-parallel), MoE +
    # ReduceScatter (this rank's tokens) and MoE + AllReduce (all of them), against the sum of
    # every rank's share through both matrices in float64
    w2s = [torch.stack([weights(q, k, inter, "nk", torch.bfloat16, tag + f"v{e}")
                        for e in range(experts)]) for q in range(W)]
    w1s = [torch.stack([weights(q, 2 * inter, k, "nk", torch.bfloat16, tag + f"w{e}")
                        for e in range(experts)]) for q in range(W)]
    wts = rand(0, (W * m, topk), torch.float32, tag + "wts").abs()
    layer = torch.zeros(W * m, k, dtype=torch.float64, device=DEV)
    for q in range(W):
        for e in range(experts):  # every token through expert e, weighted by its choice of e
            gu = ref_mm(xs, w1s[q][e], "nk")
            y = (gu[:, :inter] * torch.sigmoid(gu[:, :inter]) * gu[:, inter:]) @ \
                w2s[q][e].double().t()
            layer += ((ids.long() == e).double() * wts.double()).sum(1, keepdim=True) * y
    rs = comm.moe_rs(plan, act, w2s[R], wts)
    ar = comm.moe_ar(plan, act, w2s[R], wts)
    comm.synchronize()
    e = nerr(rs, layer[R * m:(R + 1) * m])
    check(e <= 2e-2, f"ag_moe + moe_rs {tag}: this rank's tokens, error {e:.2e}")
    e = nerr(ar, layer)
    check(e <= 2e-2, f"ag_moe + moe_ar {tag}: every token, error {e:.2e}")
    tp = comm.moe_tp(xs[R * m:(R + 1) * m].contiguous(), ids[R * m:(R + 1) * m].contiguous(),
                     wts[R * m:(R + 1) * m].contiguous(), w1s[R], w2s[R])
    comm.synchronize()
    e = nerr(tp, layer[R * m:(R + 1) * m])
    check(e <= 2e-2, f"moe_tp {tag}: the layer in one call, error {e:.2e}")
    comm.barrier()
    comm.free(ar)
    comm.free(gathered)

# -- a CUDA graph of an AllReduce and a GEMM + AllReduce, replayed on fresh inputs ------------

n, (m, gn, gk) = 1 << 18, (128, 2048, 512)
x = comm.empty((n,), torch.bfloat16)
c = comm.empty((m, gn), torch.bfloat16)
a = torch.empty(m, gk, dtype=torch.bfloat16, device=DEV)
b = torch.empty(gk, gn, dtype=torch.bfloat16, device=DEV)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    comm.reserve("gemm_ar", m, gn, gk)  # its workspace (a collective weft_malloc) sized
                                         # outside the capture: the first call is captured
    comm.synchronize(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        comm.all_reduce(x, stream=side)
        comm.gemm_ar(a, b, c, layout="kn", stream=side)
for replay in range(3):
    tag = f"graph{replay}"
    x.copy_(rand(R, (n,), torch.bfloat16, tag + "x"))
    a.copy_(rand(R, (m, gk), torch.bfloat16, tag + "a"))
    b.copy_(weights(R, gn, gk, "kn", torch.bfloat16, tag + "b"))
    poison(c)
    torch.cuda.synchronize()
    graph.replay()
    comm.synchronize()
    ex = nerr(x, sum(rand(r, (n,), torch.bfloat16, tag + "x").double() for r in range(W)))
    ec = nerr(c, sum(ref_mm(rand(r, (m, gk), torch.bfloat16, tag + "a"),
                            weights(r, gn, gk, "kn", torch.bfloat16, tag + "b"), "kn")
                     for r in range(W)))
    check(ex <= 1e-2 and ec <= 1e-2, f"graph replay {replay}: all_reduce error {ex:.2e}, "
          f"gemm_ar error {ec:.2e}")
del graph
# The ops' own buffers are collective allocations: one that must be made inside a capture is
# refused before anything is enqueued, and the capture ends whole.
try:
    with torch.cuda.stream(side):
        with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=side):
            comm.ag_gemm(a, b, layout="kn", stream=side)
    check(False, "ag_gemm whose buffer must be made inside a capture raises")
except weft.Error as e:
    check(e.status_name == "INVALID_USAGE" and "capture" in e.text,
          f"ag_gemm's first buffer inside a capture: {e}")
# ... and one reserved ahead is not: a captured first ag_gemm, replayed
comm.reserve("ag_gemm", m, gn, gk)
out = torch.empty(W * m, gn, dtype=torch.bfloat16, device=DEV)
with torch.cuda.stream(side):
    comm.synchronize(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        comm.ag_gemm(a, b, out=out, layout="kn", stream=side)
a.copy_(rand(R, (m, gk), torch.bfloat16, "reserve a"))
b.copy_(weights(R, gn, gk, "kn", torch.bfloat16, "reserve b"))
poison(out)
torch.cuda.synchronize()
graph.replay()
comm.synchronize()
e = nerr(out, ref_mm(torch.cat([rand(r, (m, gk), torch.bfloat16, "reserve a") for r in range(W)]),
                    b, "kn"))
check(e <= 5e-3, f"ag_gemm captured after Comm.reserve, replayed: error {e:.2e}")
del graph
try:
    comm.reserve("gemm", m, gn, gk)
    check(False, "reserve of an op that keeps no buffer raises")
except ValueError:
    pass
comm.free(c)
comm.free(x)

# -- argument errors: raised before anything is enqueued; the communicator stays usable ------

plain = torch.ones(1024, dtype=torch.bfloat16, device=DEV)
try:
    comm.all_reduce(plain, torch.empty_like(plain), algo="sm")  # one-shot: peers read the input
    check(False, "all_reduce one-shot of a tensor outside the heap raises")
except weft.Error as e:
    check(e.status_name == "INVALID_ARGUMENT" and "symmetric heap" in e.text,
          f"all_reduce one-shot of a tensor outside the heap: {e.status_name}")
for what, f in (("a gemm whose k differs",
                 lambda: comm.gemm(plain.view(8, 128), plain.view(16, 64))),
                ("an unknown algo", lambda: comm.all_reduce(plain, algo="fast")),
                ("a dtype weft has not", lambda: comm.all_reduce(plain.to(torch.int64)))):
    try:
        f()
        check(False, f"{what} raises")
    except (ValueError, TypeError) as e:
        check(True, f"{what}: {type(e).__name__}: {e}")
comm.barrier()
comm.destroy()
try:
    comm.barrier()
    check(False, "a call after destroy raises")
except weft.Error as e:
    check(e.status_name == "INVALID_USAGE", f"a call after destroy: {e}")

print(f"[rank {R}] {len(failures)} failed" if failures else f"[rank {R}] all passed", flush=True)
sys.exit(1 if failures else 0)
