# Models of the two ring protocols, run on the CPU (no GPU needed): kernels/allgather.cu's
# weft_ag_ring and kernels/reduce.cu's weft_red_ring, several calls back to back, scheduled by
# protocol_sim.interleave. Checked: no block reads data that has not landed for this
# call (a stale read), no staging element is overwritten before it was read, and the results
# (the gathered chunks; the ReduceScatter owners' exact integer sums) are right.
#
# The counts of both kernels are per slice. Counted over all slices (one word per neighbour, as
# both first had), a slice's wait is met by other slices that ran ahead while it is itself a step
# behind: `--summed` runs that version and reports its stale reads (thousands of them
# in the AllGather ring at 3-8 ranks; the ReduceScatter ring at 2 ranks, 4 slices, 3 rounds).
#   python3 dev/collectives/ring_sim.py [--summed]
import random
import sys

from protocol_sim import interleave

UNITS = 64  # the summed version's units a step, split over the slices


def ag_ring(world, slices, calls, seed, summed):
    rng = random.Random(seed)
    count = [[0] * slices for _ in range(world)]  # [x][b]: slice b's steps landed at x
    ready = [0] * world
    have = {}  # (rank, chunk, slice) -> the call whose data is there
    stale = [0]

    def block(me, call, b, base):
        right, left = (me + 1) % world, (me - 1) % world
        if b == 0:
            ready[me] = call + 1
        have[(me, me, b)] = call
        while ready[right] < call + 1:
            yield
        for s in range(world - 1):
            q = (me - s) % world
            if s > 0:
                while (sum(count[me]) < (base + s) * UNITS if summed else count[me][b] < base + s):
                    yield
                stale[0] += have.get((me, q, b)) != call
            yield
            have[(right, q, b)] = call if s == 0 or have.get((me, q, b)) == call else -1
            yield
            count[right][b] += UNITS // slices if summed else 1
        while (sum(count[me]) < (base + world - 1) * UNITS if summed else count[me][b] < base + world - 1):
            yield

    assert interleave(rng, world, calls, lambda x, c: [block(x, c, b, c * (world - 1)) for b in range(slices)]), \
        "no progress: a wait that is never met"
    bad = sum(have.get((x, q, b)) != calls - 1 for x in range(world) for q in range(world) for b in range(slices))
    return stale[0] + bad


def rs_ring(world, n, slices, per, calls, seed, summed):
    rng = random.Random(seed)
    rnd = per * slices
    landed = [[0] * slices for _ in range(world)]  # [x][b]: slice b's sends of x's left landed at x
    freed = [[0] * slices for _ in range(world)]   # [x][b]: slice b's sends of x's left read by x
    ready, base = [0] * world, [0] * world
    stage = [[[None] * per for _ in range(2 * slices)] for _ in range(world)]
    send = {(c, x, j, i): rng.randint(-1000, 1000)
            for c in range(calls) for x in range(world) for j in range(world) for i in range(n)}
    result, errors = {}, [0]

    def wait_ge(counts, b, v):  # per slice, or the summed version's total
        return sum(counts) < v * UNITS if summed else counts[b] < v

    def block(me, call, b, b0, done):
        right, left = (me + 1) % world, (me - 1) % world
        if b == 0:
            ready[me] = call + 1
        while ready[right] < call + 1:
            yield
        for r in range((n + rnd - 1) // rnd):
            lo = r * rnd + b * per
            cnt = max(0, min(per, n - lo))
            for s in range(world):
                c, k = (me - s - 1) % world, b0 + r * (world - 1) + s
                while s > 0 and wait_ge(landed[me], b, k):
                    yield
                while s + 1 < world and k >= b0 + 2 and wait_ge(freed[right], b, k - 1):
                    yield
                yield
                for i in range(cnt):
                    acc = send[(call, me, c, lo + i)]
                    if s > 0:
                        slot = stage[me][((k - 1) & 1) * slices + b][i]
                        if slot is None or slot[:2] != [call, k - 1]:
                            errors[0] += 1
                            continue
                        acc += slot[2]
                        slot[3] = True
                    if s + 1 < world:
                        old = stage[right][(k & 1) * slices + b][i]
                        errors[0] += old is not None and not old[3]
                        stage[right][(k & 1) * slices + b][i] = [call, k, acc, False]
                    else:
                        result[(call, me, lo + i)] = acc
                yield
                if s > 0:
                    freed[me][b] += UNITS // slices if summed else 1
                if s + 1 < world:
                    landed[right][b] += UNITS // slices if summed else 1
        done[0] += 1
        if done[0] == slices:
            base[me] = b0 + ((n + rnd - 1) // rnd) * (world - 1)

    def make(x, call):
        done = [0]
        return [block(x, call, b, base[x], done) for b in range(slices)]

    assert interleave(rng, world, calls, make), "no progress: a wait that is never met"
    wrong = sum(result.get((c, j, i)) != sum(send[(c, x, j, i)] for x in range(world))
                for c in range(calls) for j in range(world) for i in range(n))
    return errors[0] + wrong


if __name__ == "__main__":
    summed = "--summed" in sys.argv
    ok = lambda sl: not summed or UNITS % sl == 0  # (the summed version's slices divide UNITS)
    ag = sum(ag_ring(w, sl, 3, sd * 100 + w * 10 + sl, summed)
             for w in (2, 3, 4, 8) for sl in (1, 2, 3, 8) if ok(sl) for sd in range(10))
    rs = sum(rs_ring(w, n, sl, per, 4, w * 1000 + n * 7 + sd, summed)
             for w in (1, 2, 3, 4, 8)
             for (n, sl, per) in ((1, 1, 4), (5, 2, 4), (37, 4, 4), (100, 2, 8), (64, 8, 4), (333, 4, 8),
                                  (50, 3, 4), (77, 7, 4), (9, 5, 4)) if ok(sl)
             for sd in range(3))
    print(f"allgather ring: {ag} stale or wrong; reduce_scatter ring: {rs} stale, overwritten or wrong")
    sys.exit(1 if (ag or rs) and not summed else 0)
