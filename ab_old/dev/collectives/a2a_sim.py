# A model of kernels/alltoall.cu's protocol (weft_a2a_sm with its per-pair LL choice, and
# weft_a2a_ll), run on the CPU (no GPU needed). Every rank's blocks (one per pair and slice, the
# own chunk last) run under protocol_sim.interleave; each call picks a form for all ranks (stored, per pair, all LL) and random
# per-pair sizes (some over the LL threshold), several calls back to back. Checked: a header or
# LL line is read only when it is this call's, no header or line slot is overwritten before it was
# read, an SM sender reads only this call's inbox entry of its receiver, every chunk has landed
# when the receiver's call ends, and the calls end (no wait that is never met).
# With --resident R only the first R unfinished blocks of a rank's grid run (blocks start in
# index order): a call whose chunks are all stored must still end; calls with LL chunks need the
# whole grid resident (kernels/alltoall.cu says so), so they are only run with R = the grid.
#   python3 dev/collectives/a2a_sim.py [--resident R]
import random
import sys

from protocol_sim import interleave

SM, HYBRID, LL = "stored", "per pair", "all LL"


def run(world, slices, calls, seed, resident):
    rng = random.Random(seed)
    forms = [rng.choice([SM, HYBRID, LL]) if resident is None else SM for _ in range(calls)]
    below = 100  # the per-pair threshold of the hybrid form
    sizes = [[[rng.choice([0, 5, 60, 99, 100, 150]) for _ in range(world)] for _ in range(world)]
             for _ in range(calls)]  # sizes[c][x][p]: bytes x sends p in call c (both agree)
    header = {}   # (receiver, parity, sender) -> [call, sm, read]
    lines = {}    # (receiver, parity, sender, slice) -> [call, read]
    inbox = {}    # (sender's rank, receiver) -> call of the receiver's announcement
    ready = {}    # (at rank, from rank) -> epoch
    done = {}     # (at rank, from rank) -> count of pieces (slices add 1 / slices each: kept as fractions)
    landed = {}   # (receiver, sender) -> call whose chunk landed
    errors = []
    epoch = [0] * world

    def err(*a):
        errors.append(a)

    def block(me, c, k, s, is_last):
        e = c + 1
        form = forms[c]
        par = e & 1
        p = (me + 1 + k) % world
        if k == 0 and s == 0:  # block 0: every header line first, then the announcements
            for q in range(world):
                if q == me:
                    continue
                key = (q, par, me)
                old = header.get(key)
                if old is not None and not old[2]:
                    err("header overwritten before read", me, q, c, old)
                n = sizes[c][me][q]
                sm = form == SM or (form == HYBRID and n >= below)
                header[key] = [c, sm, False]
            if form != LL:
                for q in range(world):
                    if q != me:
                        inbox[(q, me)] = c
                        ready[(q, me)] = e
            yield
        n = sizes[c][me][p]
        if p != me:
            if form == LL or (form == HYBRID and n < below):
                key = (p, par, me, s)
                old = lines.get(key)
                if old is not None and not old[1] and old[0] != c:
                    err("lines overwritten before read", me, p, c, old)
                lines[key] = [c, False]
                yield
            else:
                while ready.get((me, p), 0) < e:
                    yield
                if inbox.get((me, p)) != c:
                    err("stale inbox entry", me, p, c, inbox.get((me, p)))
                yield
                landed[(p, me, s)] = c
            # the receive side: p's header here, then its lines if LL
            while header.get((me, par, p), [None])[0] != c:
                yield
            h = header[(me, par, p)]
            if not h[1]:
                while lines.get((me, par, p, s), [None])[0] != c:
                    yield
                lines[(me, par, p, s)][1] = True
                landed[(me, p, s)] = c
            if s == 0:
                h[2] = True
        yield
        done[(p, me)] = done.get((p, me), 0) + 1  # (slices count 1 each; a pair adds `slices`)
        if is_last():
            for q in range(world):
                if q == me:
                    continue
                if form != LL and header[(me, par, q)][1]:
                    while done.get((me, q), 0) < e * slices:
                        yield
            for q in range(world):
                for t in range(slices):
                    if q != me and landed.get((me, q, t)) != c:
                        err("chunk not landed at the end", me, q, t, c, landed.get((me, q, t)))
            epoch[me] = e

    def make(x, c):
        finished = [0]
        grid = world * slices

        def last():
            finished[0] += 1
            return finished[0] == grid
        return [block(x, c, k, s, last) for k in range(world) for s in range(slices)]

    if interleave(rng, world, calls, make, resident, 200000):
        return errors
    return errors + [("no progress", forms)]

if __name__ == "__main__":
    resident = int(sys.argv[sys.argv.index("--resident") + 1]) if "--resident" in sys.argv else None
    bad = 0
    for world in (2, 3, 4, 8):
        for slices in (1, 2):
            for seed in range(40):
                errs = run(world, slices, 6, seed * 10 + world, resident)
                if errs:
                    bad += 1
                    if bad <= 5:
                        print(world, slices, seed, errs[:3])
    print(f"{bad} runs with errors")
    sys.exit(1 if bad else 0)
