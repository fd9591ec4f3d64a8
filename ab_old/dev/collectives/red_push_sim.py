# A model of dev/collectives/red_push.cu's protocol (ReduceScatter, and AllReduce two-shot, by SM
# pushes into the owners' staging), run on the CPU: several calls back to back with different
# numbers of rounds, every rank's pusher blocks (one a peer and slice) and reducer blocks (one a
# slice) as generators scheduled by protocol_sim.interleave. Checked: no push overwrites a
# staging slot its owner has not reduced, no reduction reads a slot holding another call's or
# round's piece, the sums are exact, and (AllReduce) every segment's sums have landed in a rank's
# recv when its call ends. The calls mix the two ops, as red_push_dev's do (the counts are
# cumulative over both). `--loose` waits for one round fewer before a push: the model must then
# report overwrites.
#   python3 dev/collectives/red_push_sim.py [--loose]
import random
import sys

from protocol_sim import interleave, take_slots


def red_push(world, slices, rounds_per_call, allreduce_per_call, seed, slack=1):
    rng = random.Random(seed)
    calls = len(rounds_per_call)
    W, S = world, slices
    ready = [[0] * W for _ in range(W)]                          # [x][p]: p's ready epoch, at x
    arr = [[[0] * S for _ in range(W)] for _ in range(W)]       # [x][p][s]: p's pieces landed at x
    freed = [[[0] * S for _ in range(W)] for _ in range(W)]     # [x][q][s]: q reduced x's pieces
                                                                 # (AllReduce: and its sums landed at x)
    base = [0] * W                                               # rounds of the earlier calls
    stage = [[[[None] * S for _ in range(W)] for _ in range(2)] for _ in range(W)]
    recv = {}                                                    # (x, q, r, s) -> (call, sum)
    val = {(c, r, x, q, s): rng.randint(-1000, 1000) for c in range(calls) for r in range(rounds_per_call[c])
           for x in range(W) for q in range(W) for s in range(S)}  # x's piece of segment q
    want = lambda c, r, q, s: sum(val[(c, r, p, q, s)] for p in range(W))
    errors = [0]

    def pusher(x, c, q, s, b0, first):
        e = c + 1
        if first:  # block 0: ready e to every rank
            for p in range(W):
                ready[p][x] = e
                yield
        while ready[x][q] < e:
            yield
        for r in range(rounds_per_call[c]):
            k = b0 + r
            while k >= 2 and freed[x][q][s] < k - slack:
                yield
            old = stage[q][k & 1][x][s]
            errors[0] += old is not None and not old[3]
            stage[q][k & 1][x][s] = [c, r, val[(c, r, x, q, s)], False]
            yield
            arr[q][x][s] += 1
            yield

    def reducer(x, c, s, b0):
        n, allreduce = rounds_per_call[c], allreduce_per_call[c]
        for r in range(n):
            k = b0 + r
            for p in range(W):
                while p != x and arr[x][p][s] < k + 1:
                    yield
            acc = take_slots(val[(c, r, x, x, s)], [stage[x][k & 1][p][s] for p in range(W)], x, c, r, errors)
            yield
            if allreduce:
                for p in rng.sample(range(W), W):
                    recv[(p, x, r, s)] = (c, acc)
                    yield
            else:
                recv[(x, x, r, s)] = (c, acc)
            for p in range(W):
                if p != x:
                    freed[p][x][s] += 1
                    yield
        if allreduce:
            for q in range(W):
                while q != x and freed[x][q][s] < b0 + n:
                    yield
        for q in (range(W) if allreduce else (x,)):
            for r in range(n):
                errors[0] += recv.get((x, q, r, s)) != (c, want(c, r, q, s))

    def make(x, c):
        b0 = base[x]
        base[x] += rounds_per_call[c]  # (the kernel's last block; read again only by the next call)
        blocks = [pusher(x, c, (x + k) % W, s, b0, k == 1 and s == 0) for k in range(1, W) for s in range(S)]
        return blocks + [reducer(x, c, s, b0) for s in range(S)]

    assert interleave(rng, W, calls, make), "no progress: a wait that is never met"
    return errors[0]


if __name__ == "__main__":
    loose, bad = "--loose" in sys.argv, 0
    for world in (2, 3, 4, 8):
        for slices in (1, 2, 3):
            for ar in (0, 1, None):  # None: each call ReduceScatter or AllReduce at random
                for sd in range(12):
                    rng = random.Random(sd * 1000 + world * 10 + slices)
                    rounds = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
                    modes = [rng.randint(0, 1) if ar is None else ar for _ in rounds]
                    bad += red_push(world, slices, rounds, modes, sd * 100 + world, 2 if loose else 1)
    print(f"push reduce_scatter / allreduce{' (--loose)' if loose else ''}: {bad} overwritten, stale, "
          f"wrong or missing")
    sys.exit(1 if bad and not loose else 0)
