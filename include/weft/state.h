/*
 * weft/state.h — the per-module device state block and the device error record.
 *
 * Compiles as host C11 and as NVRTC device code (no includes under NVRTC). The runtime fills
 * `weft_state` (a __constant__ of this type, declared by weft/device.cuh) in every module it
 * loads, the way NVSHMEM's module init does, so kernels reach peers without extra arguments.
 *
 * Heap layout: local peer r's heap is mapped at heap_base + r * heap_stride in this process;
 * a symmetric address p of this rank corresponds to p - my_heap + heap_base + r * heap_stride.
 */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#if !defined(__CUDACC_RTC__)
#include <stdint.h>
typedef uint64_t weft_u64;
typedef uint32_t weft_u32;
#else
typedef unsigned long long weft_u64;
typedef unsigned int weft_u32;
#endif

/* The most GPUs of one node whose heaps one process maps (a node, not the world: the world has
 * no limit). */
#define WEFT_MAX_LOCAL_RANKS 64

/* Layout of the runtime's sync area at the start of every rank's heap, in 64-bit words. */
#define WEFT_SYNC_BARRIER_FLAGS 0                                /* [WEFT_MAX_LOCAL_RANKS] */
#define WEFT_SYNC_EPOCHS (WEFT_SYNC_BARRIER_FLAGS + WEFT_MAX_LOCAL_RANKS) /* [WEFT_SYNC_NUM_EPOCHS] */
#define WEFT_SYNC_NUM_EPOCHS 64
#define WEFT_SYNC_ARRIVE (WEFT_SYNC_EPOCHS + WEFT_SYNC_NUM_EPOCHS) /* [WEFT_SYNC_NUM_EPOCHS] */
/* Flag arrays of the ops: slot s is [WEFT_MAX_LOCAL_RANKS] words at WEFT_SYNC_FLAGS(s). */
#define WEFT_SYNC_FLAGS(slot) (WEFT_SYNC_ARRIVE + WEFT_SYNC_NUM_EPOCHS + (slot) * WEFT_MAX_LOCAL_RANKS)
#define WEFT_SYNC_NUM_FLAG_SLOTS 32
#define WEFT_SYNC_WORDS WEFT_SYNC_FLAGS(WEFT_SYNC_NUM_FLAG_SLOTS)
#define WEFT_SYNC_BYTES 65536 /* reserved; WEFT_SYNC_WORDS * 8 fits */

/* Epoch slots (per rank, in its own sync area; each with an arrival counter beside it at
 * WEFT_SYNC_ARRIVE + slot, for multi-block kernels whose last block raises the epoch). */
#define WEFT_EPOCH_BARRIER 0   /* barrier_all */
#define WEFT_EPOCH_ALLGATHER 1 /* weft_allgather (every algorithm) */
#define WEFT_EPOCH_AG_SM 2     /* weft_allgather's SM calls only (their done counts) */
#define WEFT_EPOCH_REDUCE 3    /* weft_reduce_scatter and weft_allreduce (every algorithm, every
                                  copy-engine round) */
#define WEFT_EPOCH_RS_CE 4     /* weft_reduce_scatter's copy-engine rounds only (arrival counts) */
#define WEFT_EPOCH_ALLTOALL 5  /* weft_alltoall and weft_alltoallv */
#define WEFT_EPOCH_AG_RING 6   /* weft_allgather's ring calls only (their arrival counts) */
#define WEFT_EPOCH_GEMM_AR 7   /* weft_gemm_ar's SM form */
#define WEFT_EPOCH_RS_RING 8   /* weft_reduce_scatter's ring calls only: the steps sent so far (a
                                  count, not an epoch: it grows by a call's steps) */
#define WEFT_EPOCH_RS_CE_SENT 9 /* weft_reduce_scatter's copy-engine rounds this rank has sent (a
                                   count, kept by its side stream alone) */
#define WEFT_EPOCH_USER0 10    /* first slot free for ops */

/* Flag slots of the ops. */
#define WEFT_FLAGS_AG_READY 0
#define WEFT_FLAGS_AG_DONE 1    /* copy-engine calls: set to the epoch */
#define WEFT_FLAGS_AG_SM_DONE 2 /* SM calls: slices counted, WEFT_AG_SM_UNITS per call */
/* What each sender adds to a receiver's WEFT_FLAGS_AG_SM_DONE in one SM AllGather call, however
 * many blocks it used for it (at most this many, each adding its share, at least 1: the host's
 * grid, src/ops/ops.h weft_ops_ag_sm_grid), so the flag is c * WEFT_AG_SM_UNITS after the c-th SM
 * call even when calls of different sizes use different grids. */
#define WEFT_AG_SM_UNITS 128
#define WEFT_FLAGS_RED_READY 3  /* reductions: set to the epoch when a call starts */
#define WEFT_FLAGS_RED_DONE 4   /* reductions that read peers' buffers: set to the epoch at the end */
#define WEFT_FLAGS_RED_ARRIVED 5 /* copy-engine ReduceScatter: +1 per round when a piece landed */
#define WEFT_FLAGS_A2A_READY 6  /* AllToAll(v): set to the epoch once the sender's inbox entry is written */
#define WEFT_FLAGS_A2A_DONE 7   /* AllToAll(v): pieces counted, WEFT_A2A_UNITS per call and sender */
#define WEFT_FLAGS_AG_RING 8    /* ring AllGather: word b counts slice b's steps landed here from
                                   the left neighbour */
#define WEFT_FLAGS_GEMM_AR_READY 9 /* GEMM+AR SM form: set to the epoch once the counters are reset */
#define WEFT_FLAGS_GEMM_AR_DONE 10 /* GEMM+AR SM form: set to the epoch after the last store */
#define WEFT_FLAGS_RED_RING 11  /* ring ReduceScatter: word b counts slice b's partials the left
                                   neighbour wrote here */
#define WEFT_FLAGS_RED_RING_FREE 12 /* ring ReduceScatter: word b counts slice b's steps the right
                                       neighbour has read of what this rank wrote it */
#define WEFT_FLAGS_RED_FREED 13 /* copy-engine ReduceScatter: +1 per round once the owner has
                                   reduced it (its staging may be written again) */
/* AllReduce two-shot by pushes (kernels/reduce.cu weft_red_push2): word block * local world +
 * sender, set to the epoch; each spans WEFT_RED_PUSH2_FLAG_SLOTS slots (blocks x local world at
 * most WEFT_RED_PUSH2_FLAG_SLOTS * WEFT_MAX_LOCAL_RANKS words) */
#define WEFT_RED_PUSH2_FLAG_SLOTS 4
#define WEFT_FLAGS_RED_PUSHED 14 /* a sender's slice of this rank's segment landed here */
#define WEFT_FLAGS_RED_SUMS 18   /* an owner's slice of sums landed in this rank's recvbuf */

/* What a GPU wait writes (host-mapped memory) before it traps, so that the host can say which
 * rank waited for what. status is 0 while nothing was reported. */
typedef struct weft_device_error {
  weft_u32 status;     /* 0, or WEFT_DEVICE_ERROR_* (WEFT_DEVICE_ERROR_BUSY while being written) */
  int rank;            /* world rank that waited */
  int peer;            /* rank it waited on, -1 if unknown */
  int cmp;             /* the wait's comparison (weft_cmp_t), -1 if unknown (>=) */
  weft_u64 signal_index; /* word index of the signal in the heap, or ~0 */
  weft_u64 expected;
  weft_u64 observed;
  char op[48];         /* what waited ("barrier_all", "signal_wait_until", a user's op) */
} weft_device_error_t;

#define WEFT_DEVICE_ERROR_TIMEOUT 1u
#define WEFT_DEVICE_ERROR_ABORTED 2u
/* Ranks passed counts that disagree (weft_alltoallv): reported without a trap, the call completes
 * with the smaller count, and the host clears the record once it has read it. */
#define WEFT_DEVICE_ERROR_MISMATCH 3u
/* A kernel found input it cannot use (an MoE expert id outside [0, experts)): reported without a
 * trap (signal_index: where, expected: the bound, observed: the value), the input left out, and
 * the host clears the record once it has read it. */
#define WEFT_DEVICE_ERROR_INVALID 4u
#define WEFT_DEVICE_ERROR_BUSY 0xffffffffu /* claimed; the other fields not yet written */

typedef struct weft_device_state {
  int rank;             /* world rank */
  int world;            /* world size */
  int local_rank;       /* index among this node's ranks */
  int local_world;      /* ranks on this node */
  int node_first_rank;  /* world rank of local rank 0 (a node's ranks are consecutive) */
  int multicast_enabled;
  float inv_local_world; /* 1 / local_world rounded to nearest (AVG reductions: no divide) */
  weft_u64 heap_base;   /* address of local rank 0's heap in this process */
  weft_u64 heap_stride; /* distance between consecutive local ranks' heaps */
  weft_u64 heap_size;   /* usable bytes of each rank's heap */
  weft_u64 my_heap;     /* heap_base + local_rank * heap_stride */
  weft_u64 timeout_ns;  /* deadline of every wait */
  weft_u64 abort_flag;  /* device address of a host-mapped u32: nonzero = abort */
  weft_u64 error;       /* device address of a host-mapped weft_device_error_t */
  weft_u64 multicast_base; /* 0 unless multicast is enabled (never on the lent machines) */
} weft_device_state_t;

#endif /* WEFT_STATE_H */
