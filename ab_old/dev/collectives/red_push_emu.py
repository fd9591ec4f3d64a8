# red_push.cu's index arithmetic, emulated on the CPU (round by round, every rank, sequentially):
# segments, rounds of slices x piece, the staging offsets a pusher writes at its owner and the
# reducer reads, the recv offsets (ReduceScatter: own; AllReduce: every rank's) — on random
# shapes at 2, 3, 4 and 8 ranks. Checked: every staged element is the intended sender's element
# of the intended place, every output element is written exactly once, with the exact sum.
# (The protocol itself, its waits and counts: red_push_sim.py.)
#   python3 dev/collectives/red_push_emu.py
import random


def seg_elems(total, per, q):
    lo = q * per
    return (total - lo if total - lo < per else per) if lo < total else 0


def run(W, S, piece, n, allreduce, rng):
    per = (n + W * 8 - 1) // (W * 8) * 8 if allreduce else n // W
    total = n
    rnd = S * piece
    rounds = (per + rnd - 1) // rnd
    send = [[rng.randint(-100, 100) for _ in range(n)] for _ in range(W)]
    stage = [[None] * (2 * W * S * piece) for _ in range(W)]
    out_len = n if allreduce else per
    recv = [[None] * out_len for _ in range(W)]
    writes = [[0] * out_len for _ in range(W)]
    b0 = rng.randint(0, 5)
    for r in range(rounds):
        k = b0 + r
        for me in range(W):
            for kk in range(1, W):
                q = (me + kk) % W
                for s in range(S):
                    ln = seg_elems(total, per, q)
                    lo = r * rnd + s * piece
                    cnt = (ln - lo if ln - lo < piece else piece) if lo < ln else 0
                    base = (((k & 1) * W + me) * S + s) * piece
                    for i in range(cnt):
                        assert base + i < len(stage[q])
                        stage[q][base + i] = (me, q * per + lo + i, send[me][q * per + lo + i])
        for me in range(W):
            ln = seg_elems(total, per, me)
            for s in range(S):
                lo = r * rnd + s * piece
                cnt = (ln - lo if ln - lo < piece else piece) if lo < ln else 0
                for i in range(cnt):
                    acc = 0
                    for p in range(W):
                        if p == me:
                            acc += send[me][me * per + lo + i]
                        else:
                            base = (((k & 1) * W + p) * S + s) * piece
                            src, idx, v = stage[me][base + i]
                            assert src == p and idx == me * per + lo + i, (src, p, idx)
                            acc += v
                    if allreduce:
                        for d in range(W):
                            recv[d][me * per + lo + i] = acc
                            writes[d][me * per + lo + i] += 1
                    else:
                        recv[me][lo + i] = acc
                        writes[me][lo + i] += 1
    for x in range(W):
        for j in range(out_len):
            g = j if allreduce else x * per + j
            assert writes[x][j] == 1, (x, j, writes[x][j])
            assert recv[x][j] == sum(send[p][g] for p in range(W)), (x, j)


if __name__ == "__main__":
    rng = random.Random(1)
    cases = 0
    for W in (2, 3, 4, 8):
        for S in (1, 2, 3, 64 // W):
            if S * W > 64: continue
            for piece in (8, 16, 40):
                for ar in (0, 1):
                    for _ in range(3):
                        n = rng.randint(1, 3000)
                        if not ar: n = n // W * W or W
                        run(W, S, piece, n, ar, rng)
                        cases += 1
    print(f"red_push index arithmetic: {cases} shapes, every element right")
