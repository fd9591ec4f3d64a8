# dev/gemm/emulate_tile.py — a CPU emulation of kernels/gemm/gemm.cu's index math (python3 + numpy, no
# GPU): TMA 128B-swizzled loads (incl. the cluster's multicast halves of B and the [K,N] boxes),
# wgmma operand fetch through the same descriptors the kernel builds (K-major and N-major B),
# the m64nNk16 accumulator fragment, the stmatrix (16-bit) / st.shared.v2 (fp32) epilogue into
# swizzled staging boxes, and the TMA stores; checks C == A*op(B) exactly on integer data for
# several tile configs, layouts, output sizes and ragged M/N/K. It checks the kernel's
# arithmetic against *our reading* of the PTX semantics (swizzle = address bits 4-6 ^= 7-9;
# descriptors: K-major SW128 rows at SBO per 8, MN-major SW128 64-element groups at LBO and
# 8-row K groups at SBO); only the GPU run (gemm_dev) checks that reading.
# Usage: python3 dev/gemm/emulate_tile.py  (prints ALL OK; mutating any offset makes it fail)
import numpy as np, itertools, sys
rng = np.random.default_rng(1)

def swz(addr):  # 128B swizzle on absolute smem byte addresses (bits 4-6 ^= bits 7-9)
    return addr ^ (((addr >> 7) & 7) << 4)

class Smem:
    def __init__(s, n): s.v = {}  # addr(element-aligned) -> value
    def st(s, addr, val): s.v[addr] = val
    def ld(s, addr): return s.v.get(addr, np.nan)

def tma_load(sm, dst, g, c0, c1, box0, box1, esize):
    # g: [outer, inner]; box0 along inner (bytes box0*esize == 128), box1 along outer
    assert box0 * esize == 128 and dst % 1024 == 0
    O, I = g.shape
    for r in range(box1):
        for c in range(box0):
            gr, gc = c1 + r, c0 + c
            val = g[gr, gc] if (gr < O and gc < I) else 0.0
            sm.st(swz(dst + r * 128 + c * esize), val)

def tma_store(sm, src, g, c0, c1, box0, box1, esize):
    O, I = g.shape
    for r in range(box1):
        for c in range(box0):
            gr, gc = c1 + r, c0 + c
            if gr < O and gc < I:
                g[gr, gc] = sm.ld(swz(src + r * 128 + c * esize))

def desc(addr, lbo, sbo): return (addr, lbo, sbo)

def wgmma(d, da, db, scale_d, WG_N, trans_b):
    # d: [64, WG_N] accumulator (logical); A K-major 64x16; B K-major (N x 16) or N-major
    (sa, _, sbo_a) = da
    A = np.zeros((64, 16)); B = np.zeros((WG_N, 16))
    for m in range(64):
        for k in range(16):
            A[m, k] = SM.ld(swz(sa + (m // 8) * sbo_a + (m % 8) * 128 + k * 2))
    (sb, lbo_b, sbo_b) = db
    for n in range(WG_N):
        for k in range(16):
            if not trans_b:
                B[n, k] = SM.ld(swz(sb + (n // 8) * sbo_b + (n % 8) * 128 + k * 2))
            else:
                B[n, k] = SM.ld(swz(sb + (n // 64) * lbo_b + (k // 8) * sbo_b + (k % 8) * 128 + (n % 64) * 2))
    r = A @ B.T
    return r if not scale_d else d + r

def run(BM, BN, bkmajor, cluster, out_size, M, N, K, EPI_BUFS=2, stages=2):
    global SM
    BK = 64
    WG_N = BN if BM == 128 else BN // 2
    A_BYTES, B_BYTES = BM * BK * 2, BN * BK * 2
    Ag = rng.integers(-3, 4, size=(M, K)).astype(np.float64)
    Bnk = rng.integers(-3, 4, size=(N, K)).astype(np.float64)
    Bg = Bnk if bkmajor else Bnk.T.copy()  # [N,K] or [K,N]
    C = np.full((M, N), np.nan)
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    EPI_BOXES = -(-WG_N * out_size // 128)
    EPI_BUFS = min(EPI_BUFS, EPI_BOXES)
    assert EPI_BOXES % EPI_BUFS == 0
    BOX_COLS = 128 // out_size
    def box_col(box):  # WEFT_GEMM_BOX_COL: the last box ends at the warpgroup's last column
        return min(box * BOX_COLS, WG_N - BOX_COLS)
    for tm0 in range(0, tiles_m, cluster):
        for tn in range(tiles_n):
            # both CTAs of a cluster share smem contents for B; emulate each CTA separately
            for rank in range(cluster):
                tm = tm0 + rank
                m0, n0 = tm * BM, tn * BN
                SM = Smem(0)
                sA = 0; sB = stages * A_BYTES; sC = sB + stages * B_BYTES
                dacc = [np.zeros((64, WG_N)), np.zeros((64, WG_N))]
                nkb = -(-K // BK)
                for kb in range(nkb):
                    stage = kb % stages
                    k0 = kb * BK
                    if m0 < M or cluster == 1:
                        tma_load(SM, sA + stage * A_BYTES, Ag, k0, m0, 64, BM, 2)
                    bdst = sB + stage * B_BYTES
                    for r in range(cluster):  # every CTA's multicast lands in every CTA
                        if bkmajor:
                            if cluster > 1:
                                tma_load(SM, bdst + r * (B_BYTES // 2), Bg, k0, n0 + r * (BN // 2), 64, BN // cluster, 2)
                            else:
                                tma_load(SM, bdst, Bg, k0, n0, 64, BN, 2)
                        else:
                            per = BN // 64 // cluster
                            for j in range(per):
                                jj = r * per + j
                                tma_load(SM, bdst + jj * 8192, Bg, n0 + jj * 64, k0, 64, 64, 2)
                    for cw in range(2):
                        row_off = cw * 64 if BM == 128 else 0
                        col_off = 0 if BM == 128 else cw * WG_N
                        a_base = sA + stage * A_BYTES + row_off * 128
                        b_stage = sB + stage * B_BYTES
                        for kk in range(4):
                            da = desc(a_base + kk * 32, 16, 1024)
                            if bkmajor:
                                db = desc(b_stage + col_off * 128 + kk * 32, 16, 1024)
                            else:
                                db = desc(b_stage + (col_off // 64) * 8192 + kk * 2048, 8192, 1024)
                            dacc[cw] = wgmma(dacc[cw], da, db, kb > 0 or kk > 0, WG_N, not bkmajor)
                # epilogue
                for cw in range(2):
                    row_off = cw * 64 if BM == 128 else 0
                    col_off = 0 if BM == 128 else cw * WG_N
                    if not (m0 + row_off < M and n0 + col_off < N): continue
                    D = dacc[cw]
                    # registers of each thread
                    def dreg(wtid, i):
                        warp, lane = wtid // 32, wtid % 32
                        row = 16 * warp + lane // 4 + 8 * ((i >> 1) & 1)
                        col = 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)
                        return D[row, col]
                    stg = sC + cw * (EPI_BUFS * 8192)
                    for rnd in range(EPI_BOXES // EPI_BUFS):
                        SM2 = SM
                        for bi in range(EPI_BUFS):
                            box = rnd * EPI_BUFS + bi
                            bbase = stg + bi * 8192
                            if out_size == 4:
                                for wtid in range(128):
                                    warp, lane = wtid // 32, wtid % 32
                                    r_lo = 16 * warp + lane // 4
                                    for jq in range(4):
                                        j = box_col(box) // 8 + jq
                                        for h in range(2):
                                            row = r_lo + 8 * h
                                            colb = 8 * jq + 2 * (lane & 3)
                                            addr = bbase + row * 128 + (((colb >> 2) ^ (row & 7)) << 4) + (colb & 3) * 4
                                            SM.st(addr, dreg(wtid, 4 * j + 2 * h))
                                            SM.st(addr + 4, dreg(wtid, 4 * j + 2 * h + 1))
                            else:
                                for warp in range(4):
                                    for jq in range(4):
                                        jj = box_col(box) // 16 + jq
                                        addrs = []
                                        for lane in range(32):
                                            mi = lane >> 3
                                            row = 16 * warp + (mi & 1) * 8 + (lane & 7)
                                            chunk = 2 * jq + (mi >> 1)
                                            addrs.append(bbase + row * 128 + ((chunk ^ (row & 7)) << 4))
                                        # stmatrix x4: matrix mi row r at addrs[8mi+r]; element c from
                                        # lane r*4 + c//2, register mi (= d[8jj+2mi], d[8jj+2mi+1]), half c%2
                                        for mi in range(4):
                                            for r in range(8):
                                                for cc in range(8):
                                                    ln = r * 4 + cc // 2
                                                    val = dreg(warp * 32 + ln, 8 * jj + 2 * mi + (cc % 2))
                                                    SM.st(addrs[8 * mi + r] + cc * 2, val)
                        for bi in range(EPI_BUFS):
                            box = rnd * EPI_BUFS + bi
                            tma_store(SM, stg + bi * 8192, C, n0 + col_off + box_col(box), m0 + row_off, BOX_COLS, 64, out_size)
    ref = Ag @ Bnk.T
    ok = np.array_equal(C, ref)
    bad = np.sum(~(C == ref))
    print(f"BM={BM} BN={BN} {'B[N,K]' if bkmajor else 'B[K,N]'} cluster={cluster} out={out_size}B M={M} N={N} K={K}: {'ok' if ok else 'MISMATCH %d' % bad}")
    return ok

allok = True
for args in [
    (128, 256, 1, 1, 2, 130, 264, 72),
    (128, 256, 1, 2, 2, 300, 256, 128),
    (128, 256, 0, 2, 2, 200, 264, 64),
    (128, 256, 0, 1, 4, 128, 256, 64),
    (128, 128, 1, 1, 4, 128, 128, 64),
    (64, 128, 1, 1, 2, 50, 136, 64),
    (64, 128, 0, 1, 2, 64, 128, 128),
    (64, 256, 0, 1, 4, 64, 256, 64),
    # widths between the multiples of 64: the last staging box overlaps the one before it
    (128, 240, 1, 2, 2, 260, 500, 64),
    (128, 176, 1, 2, 2, 130, 360, 64, 3),
    (128, 208, 1, 1, 4, 128, 420, 64, 1),
    (128, 176, 1, 1, 4, 128, 200, 64),
]:
    allok &= run(*args)
print("ALL OK" if allok else "FAILED")
