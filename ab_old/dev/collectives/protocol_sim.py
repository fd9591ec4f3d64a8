# The scheduler shared by the CPU protocol models (ring_sim.py, a2a_sim.py, ce_rs_sim.py,
# red_push_sim.py), and the staged-piece sum of the last two: every rank's calls
# run in order (stream order); the blocks of all ranks' current calls are generators that yield
# while a wait is unsatisfied, stepped a few steps at a time in a random interleaving.
# resident: only the first `resident` unfinished blocks of a rank's grid run (blocks start in
# index order); None: the whole grid.


def interleave(rng, world, calls, make_blocks, resident=None, rounds=10**6):
    """Runs the calls; True when every call ended, False when no block could progress."""
    pending = {x: list(range(calls)) for x in range(world)}
    active = {x: None for x in range(world)}
    for _ in range(rounds):
        alive = False
        for x in rng.sample(range(world), world):
            if active[x] is None and pending[x]:
                active[x] = make_blocks(x, pending[x].pop(0))
            if active[x] is None:
                continue
            alive = True
            window = active[x] if resident is None else active[x][:resident]
            finished = []
            for g in window:
                try:
                    for _ in range(rng.randint(1, 6)):
                        next(g)
                except StopIteration:
                    finished.append(g)
            active[x] = [g for g in active[x] if g not in finished] or None
        if not alive:
            return True
    return False


def take_slots(acc, slots, me, call, rnd, errors):
    """acc plus every other rank's staged piece (slots[p] = [call, round, value, read]), each checked
    to be this call's and round's (else counted in errors[0]) and marked read."""
    for p, slot in enumerate(slots):
        if p == me:
            continue
        if slot is None or slot[:2] != [call, rnd]:
            errors[0] += 1
            continue
        acc += slot[2]
        slot[3] = True
    return acc
