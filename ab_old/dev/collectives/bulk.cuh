/*
 * bulk.cuh — copies by the TMA unit through shared memory (cp.async.bulk global -> shared, then
 * shared -> global: there is no global -> global form), one thread a block, for the dev
 * programs that measure NVLink (nvlink_sm.cu, bidir.cu). Needs typedef u64 before it and
 * BULK_NBUF * BULK_CHUNK bytes of dynamic shared memory.
 */
#ifndef WEFT_DEV_BULK_CUH
#define WEFT_DEV_BULK_CUH

#define BULK_CHUNK (32u << 10) /* bytes a chunk */
#define BULK_NBUF 6            /* chunks in flight (6 x 32 KiB of shared memory) */

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ u64 gtimer(void) {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/* Bounded (2 s of %globaltimer): on expiry the block prints what it waited for and traps. */
__device__ void mbar_wait(unsigned bar, unsigned parity, u64 chunk) {
  u64 start = gtimer();
  for (;;) {
    unsigned ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
    if (gtimer() - start > 2000000000ull) {
      printf("bulk: block %d timed out waiting for chunk %llu's bulk load (parity %u)\n",
             blockIdx.x, chunk, parity);
      asm volatile("trap;");
    }
  }
}

/* Block blk of nblk copies its share of [0, bytes) from src to dst, BULK_NBUF loads ahead of the
 * stores; one thread (the caller's). buf: the dynamic shared memory; the barriers are set up and
 * torn down here, so that a block may call it several times. */
__device__ void bulk_share(char *dst, const char *src, u64 bytes, u64 blk, u64 nblk, char *buf) {
  __shared__ __align__(8) u64 bars[BULK_NBUF];
  u64 per = (bytes / nblk + BULK_CHUNK - 1) / BULK_CHUNK * BULK_CHUNK, lo = per * blk;
  u64 hi = lo + per < bytes ? lo + per : bytes;
  if (lo >= hi) return;
  u64 n = (hi - lo + BULK_CHUNK - 1) / BULK_CHUNK;
  for (int b = 0; b < BULK_NBUF; b++)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bars[b])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  for (u64 i = 0; i < n + BULK_NBUF; i++) {
    if (i >= BULK_NBUF) { /* store chunk j = i - BULK_NBUF once loaded */
      u64 j = i - BULK_NBUF;
      int b = (int)(j % BULK_NBUF);
      unsigned len = (unsigned)(hi - lo - j * BULK_CHUNK < BULK_CHUNK ? hi - lo - j * BULK_CHUNK : BULK_CHUNK);
      mbar_wait(smem_addr(&bars[b]), (unsigned)(j / BULK_NBUF) & 1, j);
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                   ::"l"(dst + lo + j * BULK_CHUNK), "r"(smem_addr(buf + b * BULK_CHUNK)), "r"(len) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); /* buffer b free again */
    }
    if (i < n) { /* load chunk i into buffer i % BULK_NBUF */
      int b = (int)(i % BULK_NBUF);
      unsigned len = (unsigned)(hi - lo - i * BULK_CHUNK < BULK_CHUNK ? hi - lo - i * BULK_CHUNK : BULK_CHUNK);
      unsigned bar = smem_addr(&bars[b]);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(len) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(smem_addr(buf + b * BULK_CHUNK)), "l"(src + lo + i * BULK_CHUNK), "r"(len), "r"(bar) : "memory");
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  for (int b = 0; b < BULK_NBUF; b++)
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_addr(&bars[b])) : "memory");
}

/* One thread a block: the block's share of bytes. */
__global__ void bulk_copy(char *dst, const char *src, u64 bytes) {
  extern __shared__ __align__(128) char buf[];
  if (threadIdx.x == 0) bulk_share(dst, src, bytes, blockIdx.x, gridDim.x, buf);
}

#endif
