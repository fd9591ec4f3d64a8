/*
 * kernels/alltoall.cu — AllToAll and AllToAllv over the ranks of a node (src/ops/alltoall.c
 * launches; kernels/alltoall.h holds the plan, the slicing and the inbox layout): weft_a2a_sm, SM
 * push with signals (chunks below a threshold in LL lines), and weft_a2a_ll, LL push for every
 * chunk. Both serve both calls: weft_alltoall is the AllToAllv whose chunks are all `count`
 * elements long, at multiples of count.
 *
 * Buffers: recv lies in the symmetric heap (the SM senders store into it); send is any device
 * memory (only its own GPU reads it). A pushing sender needs to know where its chunk lands on
 * the receiver, which only the receiver's arguments say (its recvbuf and rdispls): every
 * receiver writes that, as a heap offset, into the sender's inbox at the start of the call. So
 * ranks may pass different recvbuf addresses, and the senders read nothing remote.
 *
 * Every call of either kernel runs under this rank's epoch e (WEFT_EPOCH_ALLTOALL: one more than
 * the last call's, from this rank's sync area; nothing is reset between calls, so calls may be
 * captured in a CUDA graph), and adds WEFT_A2A_UNITS per pair to the receivers' done counts, so
 * that the counts stay at e * WEFT_A2A_UNITS whatever the mix of SM and LL calls.
 *
 * LL areas and header lines: every rank has an LL area, [2 parities][world][slot] symmetric;
 * slot q of parity e & 1 receives rank q's chunk of call e: a header line (the chunk's bytes,
 * with WEFT_A2A_HEADER_SM set where the chunk comes by SM stores instead) and, for an LL chunk,
 * its payload lines (weft/ll.cuh: 8 payload bytes and the flag e twice in each 16-byte line).
 * Block 0 writes every peer's header line first thing, in every call of either kernel, so a
 * receiver learns how each chunk comes from its sender (the ranks need not agree on any
 * threshold), and a wait for a header needs only the sender's block 0. A sender reaches call e + 2
 * (the same parity) only after finishing call e + 1, which needed every peer's header line of
 * call e + 1, i.e. every peer to have started call e + 1 and so finished reading call e's lines.
 *
 * weft_a2a_sm, a call (ll_below: the chunks for peers of fewer bytes go in LL lines; 0: none):
 *   1. Block 0 writes the header lines, and announces, one thread per peer p: into p's inbox
 *      entry of this rank, the heap offset where p's chunk lands here and the bytes this rank
 *      expects from p; then this rank's ready flag on p := e (st.release: the entry before the
 *      flag). A rank in call e has finished all earlier work of its stream, so its recv may be
 *      written.
 *   2. Every block sends one slice of one pair (this rank -> p). An LL chunk: slice s of its
 *      lines into this rank's slot in p's area. Else thread 0 waits for p's ready flag >= e
 *      (acquire), reads p's entry in the local inbox and takes n = min(bytes this rank sends p,
 *      bytes p expects); the block stores bytes [lo, hi) of the chunk into p's recv through the
 *      peer mapping. The own chunk is a local copy.
 *   3. The same block then waits for p's header line in this rank's area and, for an LL chunk,
 *      unpacks slice s of min(p's bytes, the bytes this rank expects) into recv; then its thread
 *      0 adds the slice's units to p's done count of this rank: after a fence and with release
 *      where the block stored into p's recv, relaxed otherwise (only SM chunks' counts are
 *      waited for).
 *   4. The last block to finish (arrival count) waits until the done count here of every rank
 *      whose header said SM has reached e * WEFT_A2A_UNITS (its whole chunk has landed: the
 *      slices of a pair add WEFT_A2A_UNITS per call whatever their number), then publishes e.
 *
 * Why one inbox and no parity: rank r rewrites its entry on p in call e + 1 only after finishing
 * call e, which needed p's whole SM chunk for r counted, and every block of that chunk read the
 * entry before its release add (p's LL chunks read no entry). The done counts never run ahead
 * either: a sender's call e + 1 starts storing only after the receiver raised its ready flag to
 * e + 1, i.e. finished call e.
 * No block waits for another block of its own rank. Header lines and ready flags come from the
 * peers' blocks 0, first thing; done counts from blocks that wait for nothing else: a call whose
 * chunks are all stored cannot deadlock however few of its blocks are resident at once. LL
 * lines come from the peers' blocks of that pair, written before those wait for anything, but
 * they may wait (for their own LL chunks) before a later block of theirs has run: calls with LL
 * chunks progress once their whole grid is resident (the host keeps it within the SMs; beside a
 * kernel on another stream that holds SMs until this call is done, they wait until the timeout).
 *
 * Counts that disagree (weft_alltoallv, or weft_alltoall called with different counts): a sender
 * stores min(its count, the receiver's count) (an LL receiver unpacks the smaller count), so a
 * disagreement can neither write outside the receiver's region nor read outside the sender's;
 * slice 0 of the receiving side reports it (from the header line), and an SM sender too (from
 * the receiver's entry), in the device error record, without trapping
 * (WEFT_DEVICE_ERROR_MISMATCH); the call completes on every rank and the host returns
 * WEFT_STATUS_MISMATCH once.
 *
 * weft_a2a_ll: no handshake, no inbox: weft_a2a_sm with every chunk for a peer in LL lines and
 * no announcement (block 0 still writes the header lines), the call's end published by the last
 * block without waiting (nothing it receives comes by SM).
 */
#include <weft/device.cuh>
#include "kernels/alltoall.h"

#define A2A_SLOT WEFT_EPOCH_ALLTOALL

/* The 16 bytes at byte r = 4 q + sh / 8 of the 32 in a, b (a first; little-endian). */
static __device__ __forceinline__ uint4 a2a_funnel(uint4 a, uint4 b, unsigned q, unsigned sh) {
  unsigned w0, w1, w2, w3, w4;
  switch (q) {
  case 0: w0 = a.x, w1 = a.y, w2 = a.z, w3 = a.w, w4 = b.x; break;
  case 1: w0 = a.y, w1 = a.z, w2 = a.w, w3 = b.x, w4 = b.y; break;
  case 2: w0 = a.z, w1 = a.w, w2 = b.x, w3 = b.y, w4 = b.z; break;
  default: w0 = a.w, w1 = b.x, w2 = b.y, w3 = b.z, w4 = b.w; break;
  }
  return make_uint4(__funnelshift_r(w0, w1, sh), __funnelshift_r(w1, w2, sh),
                    __funnelshift_r(w2, w3, sh), __funnelshift_r(w3, w4, sh));
}

/* n bytes with the threads [lane, lane + stride) of a block. Chunks sit at arbitrary element
 * displacements, so dst and src are often misaligned relative to each other; the stores (over
 * NVLink for a peer's chunk) are what must stay 16 bytes wide: narrower remote stores move a
 * fraction of the bytes a block can push. So where the misalignment differs, dst is written in
 * aligned 16-byte vectors, each put together from the two aligned 16-byte source vectors it
 * straddles (WEFT_COPY_DEPTH pairs in flight a thread, as weft_copy_group), with a byte head and
 * tail; only source vectors inside [src, src + n) are read. */
static __device__ __forceinline__ void a2a_copy(char *dst, const char *src, weft_u64_t n,
                                                unsigned lane, unsigned stride) {
  if ((((weft_u64_t)dst ^ (weft_u64_t)src) & 15) == 0) {
    weft_copy_group(dst, src, n, lane, stride);
    return;
  }
  weft_u64 head, nv;
  unsigned r;
  weft_a2a_shift_plan((weft_u64)dst, (weft_u64)src, n, &head, &r, &nv);
  for (weft_u64_t b = lane; b < head; b += stride) dst[b] = src[b];
  const uint4 *s = (const uint4 *)(src + head - r);
  uint4 *d = (uint4 *)(dst + head);
  unsigned q = r >> 2, sh = 8 * (r & 3);
  const weft_u64_t step = WEFT_COPY_DEPTH * (weft_u64_t)stride;
  weft_u64_t v = lane;
  for (; v + step - stride < nv; v += step) {
    uint4 x[WEFT_COPY_DEPTH], y[WEFT_COPY_DEPTH];
#pragma unroll
    for (int u = 0; u < WEFT_COPY_DEPTH; u++) {
      x[u] = s[v + u * stride];
      y[u] = s[v + u * stride + 1];
    }
#pragma unroll
    for (int u = 0; u < WEFT_COPY_DEPTH; u++) d[v + u * stride] = a2a_funnel(x[u], y[u], q, sh);
  }
  for (; v < nv; v += stride) d[v] = a2a_funnel(s[v], s[v + 1], q, sh);
  for (weft_u64_t b = head + 16 * nv + lane; b < n; b += stride) dst[b] = src[b];
}

/* Records (first reporter wins, no trap) and prints a count disagreement with local rank p. */
static __device__ __noinline__ void a2a_mismatch(const char *op, int p, weft_u64_t mine,
                                                 weft_u64_t theirs, weft_u64_t elem) {
  int peer = weft_state.node_first_rank + p;
  weft_error_record(WEFT_DEVICE_ERROR_MISMATCH, op, peer, -1, ~0ull, mine / elem, theirs / elem);
  printf("weft: rank %d, %s: %llu elements here, rank %d has %llu\n", weft_state.rank, op,
         mine / elem, peer, theirs / elem);
}

/* The LL side of a pair, shared by both kernels. A chunk's header line (line 0 of the sender's
 * slot in the receiver's area) carries its bytes, with WEFT_A2A_HEADER_SM set where the chunk
 * travels by SM stores instead of LL lines (weft_a2a_sm's large pairs): the receiver learns the
 * sender's choice from it and never has to agree on a threshold. */
#define WEFT_A2A_HEADER_SM (1ull << 63)

/* Block 0, first thing: the header line of this rank's chunk for every peer p (its bytes, with
 * WEFT_A2A_HEADER_SM where it is stored instead: ll_below bytes or more) into this rank's slot
 * of p's area (parity area). Written before anything waits, by the block that starts first, so
 * that no wait for a header depends on which of the sender's other blocks are resident. */
static __device__ __forceinline__ void a2a_headers(unsigned char *area, weft_u64_t ll_slot,
                                                   const weft_a2a_plan_t *plan, weft_u64_t ll_below,
                                                   unsigned flag) {
  int world = weft_state.local_world, me = weft_state.local_rank;
  for (int p = (int)threadIdx.x; p < world; p += (int)blockDim.x) {
    if (p == me) continue;
    weft_u64_t n = plan->send_bytes[p], h = n < ll_below ? n : n | WEFT_A2A_HEADER_SM;
    weft_ll_store16(weft_remote_ptr(area + me * ll_slot, weft_state.node_first_rank + p), (unsigned)h,
                    (unsigned)(h >> 32), flag);
  }
}

/* Slice s of `slices` of the n bytes at src as LL lines into slot (a peer's, through the peer
 * mapping; its header line is block 0's); the block's threads. */
static __device__ __forceinline__ void a2a_ll_push(unsigned char *slot, const char *src, weft_u64_t n,
                                                   int s, int slices, unsigned flag) {
  unsigned t = threadIdx.x;
  weft_u64 lo, hi;
  weft_a2a_slice(n, s, slices, &lo, &hi);
  int aligned = ((weft_u64_t)src & 7) == 0;
  for (weft_u64_t l = lo / 8 + t; l < (hi + 7) / 8; l += blockDim.x) {
    weft_u64_t w = weft_ll_line_payload_(src, n, l, aligned);
    weft_ll_store16(slot + 16 + l * 16, (unsigned)w, (unsigned)(w >> 32), flag);
  }
}

/* Thread 0: waits for local peer p's header line in slot (this rank's area), reports (slice 0)
 * a disagreement with the bytes this rank expects, and returns the header (bytes and the SM
 * bit) with the bytes clamped to what this rank expects. */
static __device__ __forceinline__ weft_u64_t a2a_header_wait(const unsigned char *slot, int p,
                                                           weft_u64_t expects, int s, unsigned flag,
                                                           weft_u64_t elem, int v) {
  weft_u64_t h = weft_ll_load16(slot, flag, v ? "alltoallv(ll header)" : "alltoall(ll header)",
                                weft_state.node_first_rank + p);
  weft_u64_t sends = h & ~WEFT_A2A_HEADER_SM;
  if (s == 0 && sends != expects)
    a2a_mismatch(v ? "alltoallv: recvcount vs peer's sendcount" : "alltoall: count vs peer's", p,
                 expects, sends, elem);
  return (h & WEFT_A2A_HEADER_SM) | (sends < expects ? sends : expects);
}

/* Slice s of `slices` of the n bytes in slot's LL lines into out; the block's threads. */
static __device__ __forceinline__ void a2a_ll_unpack(char *out, const unsigned char *slot, weft_u64_t n,
                                                     int s, int slices, unsigned flag) {
  weft_u64 lo, hi;
  weft_a2a_slice(n, s, slices, &lo, &hi);
  int aligned = ((weft_u64_t)out & 7) == 0;
  for (weft_u64_t l = lo / 8 + threadIdx.x; l < (hi + 7) / 8; l += blockDim.x)
    weft_ll_line_unpack_(out, n, l, weft_ll_load16(slot + 16 + l * 16, flag), aligned);
}

/* send, recv: the call's buffers (recv symmetric; either may be NULL where its counts are all
 * 0). inbox: symmetric [WEFT_MAX_LOCAL_RANKS][WEFT_A2A_INBOX_WORDS]. ll, ll_slot: this rank's LL
 * area (symmetric, [2][world][ll_slot]). ll_below: chunks for peers of fewer bytes travel as LL
 * lines (0: none; at most WEFT_ALLTOALL_LL_MAX_BYTES + 1). elem: bytes per element (for the
 * reports). v: 1 for weft_alltoallv (names in the reports). */
extern "C" __global__ void weft_a2a_sm(const char *send, char *recv, weft_u64_t *inbox,
                                       unsigned char *ll, unsigned long long ll_slot,
                                       unsigned long long ll_below,
                                       const __grid_constant__ weft_a2a_plan_t plan,
                                       unsigned long long elem, int v) {
  __shared__ char *s_dst;
  __shared__ weft_u64_t s_n, s_in; /* what this block stores to p; p's header for this rank */
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = weft_epoch_begin(A2A_SLOT);
  unsigned flag = (unsigned)e;
  unsigned char *area = ll + (e & 1) * (weft_u64_t)world * ll_slot;
  if (blockIdx.x == 0) {
    a2a_headers(area, ll_slot, &plan, ll_below, flag);
    /* the announcements by the block's last threads, beside the headers' first ones */
    for (int p = (int)(blockDim.x - 1 - t); p < world; p += (int)blockDim.x) {
      if (p == me) continue;
      weft_u64_t *entry = (weft_u64_t *)weft_remote_ptr(inbox + me * WEFT_A2A_INBOX_WORDS, first + p);
      entry[WEFT_A2A_INBOX_DST] = (weft_u64_t)recv + plan.recv_off[p] - weft_state.my_heap;
      entry[WEFT_A2A_INBOX_RECV_BYTES] = plan.recv_bytes[p];
      weft_u64_t *ready = weft_op_flags(WEFT_FLAGS_A2A_READY) + me;
      weft_st_release((weft_u64_t *)weft_remote_ptr(ready, first + p), e);
    }
  }

  int k, s, slices;
  weft_a2a_block(&plan, world, blockIdx.x, &k, &s, &slices);
  int p = weft_a2a_peer(k, me, world);
  weft_u64_t n = plan.send_bytes[p];
  unsigned char *peer_slot = (unsigned char *)weft_remote_ptr(area + me * ll_slot, first + p);
  if (p != me && n < ll_below) {
    a2a_ll_push(peer_slot, send + plan.send_off[p], n, s, slices, flag);
  } else {
    if (t == 0) {
      char *dst = recv + plan.recv_off[me]; /* the own chunk: sendcounts[me] == recvcounts[me] */
      if (p != me) {
        weft_op_wait(WEFT_FLAGS_A2A_READY, p, e, v ? "alltoallv(ready)" : "alltoall(ready)");
        const weft_u64_t *entry = inbox + p * WEFT_A2A_INBOX_WORDS;
        weft_u64_t expects = entry[WEFT_A2A_INBOX_RECV_BYTES];
        const char *lands = (const char *)weft_state.my_heap + entry[WEFT_A2A_INBOX_DST];
        dst = (char *)weft_remote_ptr(lands, first + p);
        if (s == 0 && n != expects)
          a2a_mismatch(v ? "alltoallv: sendcount vs peer's recvcount" : "alltoall: count vs peer's",
                       p, n, expects, elem);
        if (expects < n) n = expects;
      }
      s_dst = dst;
      s_n = n;
    }
    __syncthreads();
    weft_u64 lo, hi;
    weft_a2a_slice(s_n, s, slices, &lo, &hi);
    a2a_copy(s_dst + lo, send + plan.send_off[p] + lo, hi - lo, t, blockDim.x);
  }
  if (p != me) { /* p's chunk for this rank: LL lines to unpack, or SM stores counted below */
    const unsigned char *in = area + p * ll_slot;
    if (t == 0) s_in = a2a_header_wait(in, p, plan.recv_bytes[p], s, flag, elem, v);
    __syncthreads();
    if (!(s_in & WEFT_A2A_HEADER_SM)) a2a_ll_unpack(recv + plan.recv_off[p], in, s_in, s, slices, flag);
  }
  __syncthreads();
  if (t == 0) {
    weft_u64_t *done = (weft_u64_t *)weft_remote_ptr(weft_op_flags(WEFT_FLAGS_A2A_DONE) + me, first + p);
    if (p != me && plan.send_bytes[p] >= ll_below) { /* (n is clamped in thread 0) */
      weft_fence(); /* the block's stores (seen through the barrier) before the count */
      weft_red_release(done, weft_a2a_units(s, slices));
    } else {
      weft_red_relaxed(done, weft_a2a_units(s, slices)); /* LL lines and the own copy: no data behind it */
    }
    /* The last block waits for the chunks stored here by SM (their headers, all seen by this
     * call's blocks, say which), then publishes e; it needs no other block's accesses. */
    if (weft_epoch_arrive(A2A_SLOT)) {
      for (int q = 0; q < world; q++)
        if (q != me && weft_ll_load16(area + q * ll_slot, flag, "alltoall(ll header)",
                                      weft_state.node_first_rank + q) & WEFT_A2A_HEADER_SM)
          weft_op_wait(WEFT_FLAGS_A2A_DONE, q, e * WEFT_A2A_UNITS, v ? "alltoallv(done)" : "alltoall(done)");
      weft_epoch_publish(A2A_SLOT, e);
    }
  }
}

/* ll: this rank's LL area (symmetric, [2][world][ll_slot]); other arguments as weft_a2a_sm's.
 * Every pair in LL lines, the own chunk a local copy. */
extern "C" __global__ void weft_a2a_ll(const char *send, char *recv, unsigned char *ll,
                                       unsigned long long ll_slot,
                                       const __grid_constant__ weft_a2a_plan_t plan,
                                       unsigned long long elem, int v) {
  weft_pdl_begin(); /* launched programmatic (src/ops) */
  __shared__ weft_u64_t s_n;
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = weft_epoch_begin(A2A_SLOT);
  unsigned flag = (unsigned)e;
  unsigned char *area = ll + (e & 1) * (weft_u64_t)world * ll_slot;
  if (blockIdx.x == 0) a2a_headers(area, ll_slot, &plan, ~0ull, flag);
  int k, s, slices;
  weft_a2a_block(&plan, world, blockIdx.x, &k, &s, &slices);
  int p = weft_a2a_peer(k, me, world);
  if (p == me) { /* the own chunk: a local copy */
    weft_u64 lo, hi;
    weft_a2a_slice(plan.send_bytes[me], s, slices, &lo, &hi);
    a2a_copy(recv + plan.recv_off[me] + lo, send + plan.send_off[me] + lo, hi - lo, t, blockDim.x);
  } else {
    weft_u64_t n = plan.send_bytes[p];
    a2a_ll_push((unsigned char *)weft_remote_ptr(area + me * ll_slot, first + p), send + plan.send_off[p],
                n, s, slices, flag);
    const unsigned char *in = area + p * ll_slot;
    if (t == 0) s_n = a2a_header_wait(in, p, plan.recv_bytes[p], s, flag, elem, v);
    __syncthreads();
    a2a_ll_unpack(recv + plan.recv_off[p], in, s_n, s, slices, flag);
  }
  __syncthreads();
  if (t == 0) {
    weft_u64_t *done = weft_op_flags(WEFT_FLAGS_A2A_DONE) + me;
    weft_red_relaxed((weft_u64_t *)weft_remote_ptr(done, first + p), weft_a2a_units(s, slices));
    weft_epoch_finish(A2A_SLOT, e);
  }
}
