# A model of the pipelined copy-engine ReduceScatter (kernels/reduce.cu weft_red_ce_*, src/ops/
# reduce.c rs_copy_engine), run on the CPU: several calls back to back with different numbers of
# rounds, each rank's caller stream (enter, then per round: wait for arrivals, reduce, freed
# counts) and side stream (per round: step kernel, then the copies to every peer in rotation;
# a last step) as two generators scheduled by protocol_sim.interleave. Checked: no copy
# overwrites a staging slot before its owner reduced it, no reduction reads a slot that holds
# another call's or round's piece, and every owner's sums are exact. `--loose` waits for one
# round fewer before a copy (freed >= c - 2): the model must then report overwrites.
#   python3 dev/collectives/ce_rs_sim.py [--loose]
import random
import sys

from protocol_sim import interleave, take_slots


def ce_rs(world, rounds_per_call, seed, slack=1):
    rng = random.Random(seed)
    calls = len(rounds_per_call)
    ready = [[0] * world for _ in range(world)]    # [x][p]: p's ready epoch, at x
    arrived = [[0] * world for _ in range(world)]  # [x][p]: rounds of p's pieces landed at x
    freed = [[0] * world for _ in range(world)]    # [x][q]: rounds owner q reduced, at x
    sent = [0] * world                             # x's rounds sent (its side stream's word)
    reduced = [0] * world                          # x's WEFT_EPOCH_RS_CE: rounds reduced
    stage = [[[None] * world for _ in range(2)] for _ in range(world)]  # [x][parity][sender]
    piece = {(c, r, x, q): rng.randint(-1000, 1000)
             for c in range(calls) for r in range(rounds_per_call[c]) for x in range(world) for q in range(world)}
    errors, result = [0], {}

    def caller(x, c, side_done):
        e = c + 1
        for p in range(world):  # enter: ready e to every rank, wait for all
            ready[p][x] = e
            yield
        for p in range(world):
            while ready[x][p] < e:
                yield
        for r in range(rounds_per_call[c]):
            k = reduced[x] + 1  # this round's count
            for p in range(world):
                while p != x and arrived[x][p] < k:
                    yield
            result[(c, r, x)] = take_slots(piece[(c, r, x, x)], stage[x][r & 1], x, c, r, errors)
            yield
            for p in range(world):
                if p != x:
                    freed[p][x] += 1
                    yield
            reduced[x] = k
        while not side_done[0]:
            yield

    def side(x, c, side_done):
        def step(s, nxt):
            k = sent[x] + s
            for p in rng.sample(range(world), world):  # the kernel's threads, any order
                if p == x:
                    continue
                if s:
                    arrived[p][x] += 1
                    yield
                while nxt and k >= 2 and freed[x][p] < k - slack:
                    yield
            if s:
                sent[x] = k
        while any(ready[x][p] < c + 1 for p in range(world)):  # forked after enter
            yield
        for r in range(rounds_per_call[c]):
            yield from step(r > 0, 1)
            for kk in range(1, world):
                q = (x + kk) % world
                old = stage[q][r & 1][x]
                errors[0] += old is not None and not old[3]
                stage[q][r & 1][x] = [c, r, piece[(c, r, q, x)], False]
                yield
        yield from step(1, 0)
        side_done[0] = True

    def make(x, c):
        done = [False]
        return [caller(x, c, done), side(x, c, done)]

    assert interleave(rng, world, calls, make), "no progress: a wait that is never met"
    wrong = sum(result.get((c, r, x)) != sum(piece[(c, r, x, p)] for p in range(world))
                for c in range(calls) for r in range(rounds_per_call[c]) for x in range(world))
    return errors[0] + wrong


if __name__ == "__main__":
    loose, bad = "--loose" in sys.argv, 0
    for world in (2, 3, 4, 8):
        for sd in range(40):
            rng = random.Random(sd * 10 + world)
            bad += ce_rs(world, [rng.randint(1, 5) for _ in range(rng.randint(1, 5))], sd * 100 + world,
                         2 if loose else 1)
    print(f"copy-engine reduce_scatter{' (--loose)' if loose else ''}: {bad} overwritten, stale or wrong")
    sys.exit(1 if bad and not loose else 0)
