/*
 * weft.h — public host API of weft: a C library and JIT compiler for compute–communication
 * overlapping kernels on multi-GPU machines.
 *
 * One process per GPU (device = local rank), started by weftrun, torchrun, mpirun or srun.
 * Every call returns a weft_status_t; weft_get_error_string() names the code and
 * weft_comm_get_last_error() gives the text of the last failure on a communicator.
 *
 * Usage (error checks shortened to CHECK):
 *
 *     #include <weft.h>
 *
 *     static const char *src =
 *         "#include <weft/device.cuh>\n"
 *         "extern \"C\" __global__ void ring(unsigned long long *sig, int *buf) {\n"
 *         "  int next = (weft_my_pe() + 1) % weft_n_pes();\n"
 *         "  weft_int_p(buf, weft_my_pe(), next);                // put my rank into next's buf\n"
 *         "  weft_signal_op(sig, 1, WEFT_SIGNAL_ADD, next);     // then signal it (release)\n"
 *         "  weft_signal_wait_until(sig, WEFT_CMP_GE, 1);         // wait for my predecessor\n"
 *         "}\n";
 *
 *     weft_comm_t *comm;
 *     CHECK(weft_comm_init(&comm, NULL));            // reads WEFT_* / torchrun / MPI / Slurm env
 *     unsigned long long *sig; int *buf;
 *     CHECK(weft_malloc(comm, sizeof *sig, (void **)&sig));   // collective, symmetric
 *     CHECK(weft_malloc(comm, sizeof *buf, (void **)&buf));
 *     weft_module_t *mod; weft_kernel_t *k;
 *     CHECK(weft_module_load(comm, src, "ring.cu", NULL, 0, &mod));  // NVRTC, disk-cached
 *     CHECK(weft_module_get_kernel(mod, "ring", &k));
 *     weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;       // 1 block of 1 thread
 *     void *args[] = {&sig, &buf};
 *     weft_stream_t stream = NULL;                            // default stream, or a cudaStream_t
 *     CHECK(weft_kernel_launch(k, &cfg, args, stream));
 *     CHECK(weft_stream_synchronize(comm, stream));             // bounded by WEFT_TIMEOUT_MS
 *     weft_module_unload(mod); weft_free(comm, buf); weft_free(comm, sig);
 *     weft_comm_destroy(comm);
 *
 * Environment: WEFT_DEBUG=WARN|INFO|TRACE, WEFT_DEBUG_FILE (%h host, %p pid), WEFT_TIMEOUT_MS,
 * WEFT_HEAP_SIZE (bytes, K/M/G suffixes), WEFT_CACHE_DIR, WEFT_BOOTSTRAP_ADDR (host:port),
 * WEFT_BOOTSTRAP_TIMEOUT_MS, WEFT_RANK / WEFT_WORLD_SIZE / WEFT_LOCAL_RANK / WEFT_LOCAL_WORLD_SIZE,
 * WEFT_AUTOTUNE=1 (weft_comm_set_autotune), WEFT_COMM_SMS (weft_gemm_ar),
 * WEFT_SHARE_GPUS=1 (ranks beyond the GPU count share GPUs round-robin: for correctness tests on
 * small machines; their kernels take turns, so timings mean nothing), WEFT_ENABLE_MULTICAST (see
 * docs/architecture.md, "NVLink multicast is off": refused when NCCL_NVLS_ENABLE=0,
 * NVSHMEM_DISABLE_NVLS=1 or TORCH_SYMM_MEM_DISABLE_MULTICAST=1 is set).
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(WEFT_BUILDING_LIBRARY)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_CODE (WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH)

/* Runtime version as WEFT_VERSION_CODE of the library actually loaded (compare with the macro). */
WEFT_API int weft_get_version(void);

typedef enum weft_status {
  WEFT_STATUS_SUCCESS = 0,
  WEFT_STATUS_INVALID_ARGUMENT,   /* a null pointer, size, rank or pointer out of range */
  WEFT_STATUS_INVALID_USAGE,      /* a call out of order: second init, use after destroy */
  WEFT_STATUS_NO_DEVICE,          /* no CUDA driver or no GPU for this local rank */
  WEFT_STATUS_CUDA_ERROR,         /* a CUDA driver call failed; the last-error text names it */
  WEFT_STATUS_COMPILE_ERROR,      /* NVRTC rejected a program; the last-error text holds its log */
  WEFT_STATUS_SYSTEM_ERROR,       /* a socket, file or process call failed */
  WEFT_STATUS_OUT_OF_MEMORY,      /* host memory, device memory or the symmetric heap ran out */
  WEFT_STATUS_TIMEOUT,            /* a wait passed its deadline (WEFT_TIMEOUT_MS) */
  WEFT_STATUS_MISMATCH,           /* ranks disagreed in a collective call (size, order, count) */
  WEFT_STATUS_REMOTE_ERROR,       /* another rank failed or left */
  WEFT_STATUS_ABORTED,            /* weft_comm_abort was called */
  WEFT_STATUS_NOT_SUPPORTED,      /* a feature this machine or build cannot provide */
  WEFT_STATUS_INTERNAL_ERROR,
  WEFT_STATUS_COUNT
} weft_status_t;

/* A static string naming the status ("invalid argument", ...). Never NULL. */
WEFT_API const char *weft_get_error_string(weft_status_t status);

/* The text of the last failure of a call made on this thread without a communicator (or before
 * one existed). Never NULL; "" when there was none. */
WEFT_API const char *weft_get_last_error(void);

/* CUDA streams: the same object as cudaStream_t and CUstream; NULL is the legacy default stream. */
typedef struct CUstream_st *weft_stream_t;

/* ------------------------------------------------------------------------------------------ */
/* Communicator                                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef struct weft_comm weft_comm_t;

/* heap_size: weft_comm_init takes about 200 MiB of it for the collectives' scratch (the LL areas
 * of AllReduce / ReduceScatter and of AllGather, 16 MiB each; ReduceScatter's copy-engine
 * staging, WEFT_REDUCE_STAGING_BYTES, default 64 MiB; the push staging of AllReduce and
 * ReduceScatter, twice WEFT_ALLREDUCE_PUSH_BYTES, default 64 MiB; AllReduce's LL128 area, about
 * 4.3 times WEFT_ALLREDUCE_LL128_BYTES, default 17 MiB; AllToAll's LL area; GEMM + AllReduce's
 * two-shot staging, 16 MiB); the rest is the caller's weft_malloc. */
typedef struct weft_comm_config {
  size_t heap_size;  /* symmetric heap bytes per rank; 0: WEFT_HEAP_SIZE, else 1 GiB */
  int timeout_ms;    /* deadline of every wait; 0: WEFT_TIMEOUT_MS, else 60000 */
  int device;        /* CUDA device ordinal; -1: the local rank */
} weft_comm_config_t;

#define WEFT_COMM_CONFIG_INIT {0, 0, -1}

/* Creates the communicator of this process: reads rank and world from the environment
 * (WEFT_*, else torchrun, else Open MPI, else Slurm), meets the other ranks at the bootstrap
 * address, binds the GPU, maps the symmetric heap of every local peer and loads the runtime
 * kernels. Collective over all ranks. config may be NULL. A second init in one process returns
 * WEFT_STATUS_INVALID_USAGE. */
WEFT_API weft_status_t weft_comm_init(weft_comm_t **comm, const weft_comm_config_t *config);

/* Collective teardown: waits for this process's GPU work, then for all ranks, unmaps the heap and
 * frees everything. Bounded: when the GPU work has not finished within WEFT_TIMEOUT_MS + 5 s
 * (a kernel that never ends), weft's kernels are aborted and WEFT_STATUS_TIMEOUT returned; if
 * the work still runs 5 s later, the communicator is left allocated (nothing may be unmapped
 * under a running kernel) and the process should exit. After weft_comm_abort it waits only
 * those 5 s, and not for the other ranks. */
WEFT_API weft_status_t weft_comm_destroy(weft_comm_t *comm);

/* Ends every wait of this communicator now, on the host and in running kernels (which poll an
 * abort flag), on this rank and on every other rank of its node: the flag is one word
 * the node's ranks share, which a rank's watchdog also raises when one of its kernels times out
 * or its context fails, so that no rank waits on for a peer that has failed. Each rank then says
 * once (a WARN line, whether or not it calls weft again) what failed: the op, rank, peer, signal
 * and values, or which rank's failure stopped it. A kernel stopped by an abort ends with its
 * results void and leaves the CUDA context usable; one whose own wait timed out traps, which
 * leaves it unusable (so do the own-segment waits inside weft_gemm_ar's GEMM, which read no abort
 * word and end at their deadline). Safe from another thread. After it, only weft_comm_destroy is
 * valid. */
WEFT_API weft_status_t weft_comm_abort(weft_comm_t *comm);

/* The text of the last failure on this communicator; "" when none. Never NULL. */
WEFT_API const char *weft_comm_get_last_error(const weft_comm_t *comm);

/* WEFT_STATUS_SUCCESS, or the error a running kernel reported (timeout, abort) once its stream
 * failed; the last-error text then names op, rank, peer, signal and values. Does not block.
 * WEFT_STATUS_MISMATCH: counts of weft_alltoallv that disagreed between two ranks; no kernel
 * failed, so it is returned once and the communicator stays usable. */
WEFT_API weft_status_t weft_comm_get_async_error(weft_comm_t *comm);

/* The autotuner (on: 1, off: 0; at init WEFT_AUTOTUNE=1 turns it on). With it on, an
 * overlapped op called with WEFT_ALGO_AUTO (weft_ag_gemm, weft_gemm_rs, weft_gemm_ar) decides
 * its plan (algorithm, GEMM tile width, the SMs of an SM-side consumer) by timing each candidate
 * plan on the call's own buffers the first time a shape is seen: every candidate runs the whole
 * op a few times, the slowest rank's median decides, every rank takes the same winner. The
 * decision is kept for the communicator's life and on disk (WEFT_CACHE_DIR/autotune, keyed by
 * op, shapes, world size, GPU model and weft's version), so later runs agree without timing.
 * The first call of a shape takes longer (tens of calls) and the op's output is written by each
 * trial, then by the winner. Inside a CUDA graph capture no trial can run: a shape not decided
 * before takes the heuristic's plan. Collective: set it the same on every rank. */
WEFT_API weft_status_t weft_comm_set_autotune(weft_comm_t *comm, int on);

WEFT_API weft_status_t weft_comm_rank(const weft_comm_t *comm, int *rank);
WEFT_API weft_status_t weft_comm_size(const weft_comm_t *comm, int *size);
WEFT_API weft_status_t weft_comm_local_rank(const weft_comm_t *comm, int *local_rank);
WEFT_API weft_status_t weft_comm_local_size(const weft_comm_t *comm, int *local_size);
WEFT_API weft_status_t weft_comm_device(const weft_comm_t *comm, int *device);

/* Host barrier over the bootstrap network (no GPU work), bounded by the timeout. */
WEFT_API weft_status_t weft_comm_barrier(weft_comm_t *comm);

/* ------------------------------------------------------------------------------------------ */
/* Symmetric heap                                                                              */
/* ------------------------------------------------------------------------------------------ */

/* Collective: every rank asks for the same size in the same order; the result lies at the same
 * heap offset on every rank, zero-filled, 1024-byte aligned. A rank that asks for a different size
 * makes the call fail with WEFT_STATUS_MISMATCH on every rank, with nothing allocated. */
WEFT_API weft_status_t weft_malloc(weft_comm_t *comm, size_t size, void **ptr);

/* Collective: every rank frees the same allocation in the same order. */
WEFT_API weft_status_t weft_free(weft_comm_t *comm, void *ptr);

/* The address, valid on this GPU, of local peer `rank`'s copy of symmetric address ptr (ptr may
 * point inside an allocation). rank is a world rank on this node. */
WEFT_API weft_status_t weft_peer_ptr(const weft_comm_t *comm, const void *ptr, int rank,
                                     void **peer_ptr);

/* ------------------------------------------------------------------------------------------ */
/* Stream operations (on the caller's stream; none blocks the host)                            */
/* ------------------------------------------------------------------------------------------ */

typedef enum weft_cmp {
  WEFT_CMP_EQ = 0,
  WEFT_CMP_NE,
  WEFT_CMP_GT,
  WEFT_CMP_GE,
  WEFT_CMP_LT,
  WEFT_CMP_LE
} weft_cmp_t;
#define WEFT_CMP_DEFINED /* weft/sync.cuh then skips its macro spellings of these names */

/* Copy-engine put: bytes from local device memory src to symmetric address dst on rank. */
WEFT_API weft_status_t weft_stream_put(weft_comm_t *comm, void *dst, const void *src, size_t bytes,
                                       int rank, weft_stream_t stream);

/* Copy-engine get: bytes from symmetric address src on rank to local device memory dst. */
WEFT_API weft_status_t weft_stream_get(weft_comm_t *comm, void *dst, const void *src, size_t bytes,
                                       int rank, weft_stream_t stream);

/* Writes value into the 64-bit signal sig (symmetric) on rank after all earlier work of the
 * stream, with release semantics. */
WEFT_API weft_status_t weft_stream_signal_set(weft_comm_t *comm, uint64_t *sig, uint64_t value,
                                              int rank, weft_stream_t stream);

/* Adds value to the signal sig (symmetric) on rank, atomically, with release semantics. */
WEFT_API weft_status_t weft_stream_signal_add(weft_comm_t *comm, uint64_t *sig, uint64_t value,
                                              int rank, weft_stream_t stream);

/* Put, then signal_set(sig, value) on the same rank: the signal is seen only after the data. */
WEFT_API weft_status_t weft_stream_put_signal(weft_comm_t *comm, void *dst, const void *src,
                                              size_t bytes, uint64_t *sig, uint64_t value, int rank,
                                              weft_stream_t stream);

/* Holds the stream until the local signal sig compares true against value (acquire: data
 * written before the matching signal is visible to later work). Bounded by the timeout: on
 * expiry the stream fails and weft_comm_get_async_error reports the signal and values. */
WEFT_API weft_status_t weft_stream_signal_wait(weft_comm_t *comm, uint64_t *sig, weft_cmp_t cmp,
                                               uint64_t value, weft_stream_t stream);

/* Barrier of all ranks on the stream: later work of every rank's stream starts only after all
 * earlier work of every rank's stream is done. Uses epochs in device memory: capturable in a
 * CUDA graph and replayable. */
WEFT_API weft_status_t weft_stream_barrier(weft_comm_t *comm, weft_stream_t stream);

/* Waits on the host for the stream, bounded by the timeout; checks the device error record.
 * Returns WEFT_STATUS_TIMEOUT (naming what the GPU waited for, where it reported it),
 * WEFT_STATUS_ABORTED, or WEFT_STATUS_CUDA_ERROR. */
WEFT_API weft_status_t weft_stream_synchronize(weft_comm_t *comm, weft_stream_t stream);

/* ------------------------------------------------------------------------------------------ */
/* Collectives (over the ranks of a node; on the caller's stream; no host synchronisation, no   */
/* allocation and no reset inside a call, so each is capturable in a CUDA graph)               */
/* ------------------------------------------------------------------------------------------ */

/* The collectives and the overlapped ops of one communicator share its epochs, flags and scratch:
 * every rank issues them in the same order, one at a time (stream-ordered: one stream, or
 * streams joined by events), as NCCL asks of one communicator's operations. Work that must run at
 * the same time on different streams needs a communicator each (weft_comm_init again). */

typedef enum weft_dtype {
  WEFT_DTYPE_UINT8 = 0,
  WEFT_DTYPE_INT32,
  WEFT_DTYPE_FP16,
  WEFT_DTYPE_BF16,
  WEFT_DTYPE_FP32,
  WEFT_DTYPE_FP64,
  WEFT_DTYPE_COUNT
} weft_dtype_t;

/* Bytes per element, 0 for an invalid dtype. */
WEFT_API size_t weft_dtype_size(weft_dtype_t dtype);

/* How a collective moves data. AUTO picks by size (and is what the other values override). */
typedef enum weft_algo {
  WEFT_ALGO_AUTO = 0,
  WEFT_ALGO_COPY_ENGINE, /* cudaMemcpy-style pushes by the copy engines; no SMs */
  WEFT_ALGO_SM,          /* one kernel, SM loads/stores over NVLink (AllReduce: one-shot) */
  WEFT_ALGO_LL,          /* low latency: data and flag in one store; small messages only */
  WEFT_ALGO_TWO_SHOT,    /* AllReduce as ReduceScatter then AllGather, in one kernel */
  WEFT_ALGO_RING,        /* neighbour to neighbour only: GPUs without full-mesh links */
  WEFT_ALGO_SEQUENTIAL   /* overlapped ops: the GEMM and the collective one after the other */
} weft_algo_t;

/* The largest per-rank chunk (bytes) WEFT_ALGO_LL takes on a node of `world` ranks (2 MiB at 2
 * ranks, 1 MiB at 4, 512 KiB at 8). Its LL area, 16 MiB of every rank's heap, is taken at
 * weft_comm_init. */
#define WEFT_ALLGATHER_LL_MAX_BYTES(world) ((size_t)(4u << 20) / (size_t)(world))

/* AllGather: recvbuf[r * count + i] = rank r's sendbuf[i] on every rank. recvbuf holds world *
 * count elements and must come from weft_malloc (symmetric) for every form but WEFT_ALGO_LL
 * (whose lines land in an internal symmetric area and are unpacked by the receiver: any device
 * memory there, also where AUTO takes LL); sendbuf is any device memory, possibly recvbuf + rank
 * * count (in place). Any count, any alignment.
 * Algorithms: WEFT_ALGO_LL (at most WEFT_ALLGATHER_LL_MAX_BYTES(world) per rank), WEFT_ALGO_SM
 * (every rank's kernel stores its chunk into every peer), WEFT_ALGO_COPY_ENGINE (push, or pull
 * when in place), WEFT_ALGO_RING (each rank forwards chunks to its right neighbour only: for GPUs
 * without a full-bandwidth link to every peer). AUTO: LL while each rank pushes at most 1 MiB,
 * (world - 1) * count * element size; above it the ring where the node's GPU pairs differ in
 * CUDA's P2P performance rank (WEFT_TOPOLOGY=ring|mesh overrides; equal on every rank), else
 * SM, or the copy engines from 128 MiB gathered (world * count * element size; they copy to one
 * peer at a time, rank + 1 first). Every rank must pass the same algo and count. */
WEFT_API weft_status_t weft_allgather(weft_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype, weft_algo_t algo,
                                      weft_stream_t stream);

/* Reduction operators (NCCL's, in ncclRedOp_t's order). Every one combines in fp32 and rounds
 * once: PROD multiplies, MAX and MIN keep the larger or smaller (fmaxf / fminf: a NaN loses to a
 * number), AVG sums and scales the sum by 1 / world before the rounding. */
typedef enum weft_red_op {
  WEFT_RED_OP_SUM = 0,
  WEFT_RED_OP_PROD,
  WEFT_RED_OP_MAX,
  WEFT_RED_OP_MIN,
  WEFT_RED_OP_AVG,
  WEFT_RED_OP_COUNT
} weft_red_op_t;

/* The largest array (bytes) WEFT_ALGO_LL takes on a node of `world` ranks: weft_allreduce's
 * count * element size, weft_reduce_scatter's recvcount * element size (2 MiB at 2 ranks, 1 MiB
 * at 4, 512 KiB at 8). Its LL area, 16 MiB of every rank's heap, is taken at weft_comm_init. */
#define WEFT_ALLREDUCE_LL_MAX_BYTES(world) ((size_t)(4u << 20) / (size_t)(world))

/* Reductions (weft_reduce_scatter, weft_allreduce): fp16, bf16 and fp32 elements, combined by
 * op in fp32 in rank order 0, 1, ..., world - 1 (ReduceScatter's ring: in ring order) and rounded
 * once to the element type (round to nearest even), so every rank gets bit-identical AllReduce
 * results and repeated calls give identical results. Each operator is a specialisation of the
 * kernels: SUM's are loaded at weft_comm_init, another operator's at its first call (compiled
 * once, then from the disk cache), which may come inside a CUDA graph capture. Buffers must be
 * aligned to the element size; any count and any offset otherwise.
 *
 * ReduceScatter: recvbuf[i] = op over ranks r of rank r's sendbuf[rank * recvcount + i].
 * sendbuf ([world * recvcount] elements) must come from weft_malloc (symmetric) where peers read
 * it (WEFT_ALGO_SM above the pushes' limit); every other form pushes it from this rank (the copy
 * engines, or this rank's kernel: WEFT_ALGO_LL, WEFT_ALGO_SM up to that limit, WEFT_ALGO_RING),
 * so any device memory there. recvbuf ([recvcount]) is any device memory; in place when
 * recvbuf == sendbuf + rank * recvcount, else it must not overlap sendbuf.
 * Algorithms: WEFT_ALGO_SM, one kernel: while recvcount * element size is at most
 * WEFT_ALLREDUCE_PUSH_BYTES / world, every rank pushes each segment into its owner's part of
 * AllReduce's push staging (no handshake) and reduces its own; above, every rank pulls its
 * segment from every rank and reduces it; WEFT_ALGO_COPY_ENGINE, the copy engines push every
 * segment into its owner's symmetric staging area (a side stream, one peer at a time) while
 * kernels on the caller's stream reduce what arrived (Triton-distributed, §3.3, Algorithm 3), in
 * rounds (a quarter of the segment but at least 4 MiB, at most
 * WEFT_REDUCE_STAGING_BYTES / (2 * world) bytes: environment, default 64 MiB, read at
 * weft_comm_init, equal on every rank), one round's reduction under the next round's copies;
 * WEFT_ALGO_LL, every rank pushes each segment to its owner in LL lines (as AllReduce's LL),
 * at most WEFT_ALLREDUCE_LL_MAX_BYTES(world) per segment, no handshake; WEFT_ALGO_RING, for GPUs
 * without a full-bandwidth link to every peer: each rank adds its part to a partial sum from its
 * left neighbour and passes it on to its right one (through the staging area above), so that
 * every segment's sum reaches its owner after world - 1 steps; the partials travel in fp32 and
 * are rounded once, but in the ring's order from the owner's right neighbour on, not in rank
 * order (its sums may differ from the other forms' in the last bit).
 * AUTO: LL while each rank pushes at most 768 KiB, (world - 1) * recvcount * element size, where
 * the SM form pushes (2 MiB where it pulls), SM above (the ring only when asked for: not yet
 * measured). Every rank must pass the same algo and recvcount. */
WEFT_API weft_status_t weft_reduce_scatter(weft_comm_t *comm, const void *sendbuf, void *recvbuf,
                                           size_t recvcount, weft_dtype_t dtype, weft_red_op_t op,
                                           weft_algo_t algo, weft_stream_t stream);

/* AllReduce: recvbuf[i] = op over ranks r of rank r's sendbuf[i], on every rank. sendbuf and
 * recvbuf hold [count] elements each; in place when recvbuf == sendbuf, else they must not
 * overlap. Where they must come from weft_malloc (symmetric) depends on the form, because some
 * forms reach them from the peers: WEFT_ALGO_LL and the two-shot up to
 * WEFT_ALLREDUCE_LL128_BYTES (AUTO's forms up to 4 MiB by default) take any device memory for
 * both (their lines travel through internal symmetric areas); the two-shot's pushes above it
 * store the sums into every rank's recvbuf (symmetric recvbuf), its pulls above
 * WEFT_ALLREDUCE_PUSH_BYTES also read every sendbuf (both symmetric), and WEFT_ALGO_SM reads
 * every sendbuf (symmetric sendbuf).
 * Algorithms: WEFT_ALGO_LL, in LL lines through an internal symmetric buffer, at most
 * WEFT_ALLREDUCE_LL_MAX_BYTES(world), no handshake: one-shot, or at 3 ranks or more from 256 KiB
 * two-shot (each rank's segment summed from LL lines, the sums pushed to every rank in LL lines:
 * half of one-shot's bytes pushed at 4 ranks, for one more NVLink hop; WEFT_AR_LL=one|two
 * overrides); WEFT_ALGO_SM, one-shot: every rank reads every
 * rank's sendbuf whole (not in place: peers still read a rank's sendbuf while it writes its
 * recvbuf); WEFT_ALGO_TWO_SHOT, one kernel in which every rank reduces 1/world of the array and
 * stores the result into every rank's recvbuf (ReduceScatter and AllGather fused): up to
 * WEFT_ALLREDUCE_LL128_BYTES (environment, K/M/G suffixes, default 4 MiB, equal on every rank; 0:
 * never; its area, about 4.3 times that, is taken from every rank's heap at weft_comm_init) the
 * parts and the sums travel in LL128 lines (120 bytes and a flag a 128-byte line: NVLink only),
 * no handshake; then up to WEFT_ALLREDUCE_PUSH_BYTES (the same rules, default 32 MiB) each rank
 * pushes the other ranks' parts of its sendbuf into their staging areas, no handshake; above,
 * every rank reads its part from all sendbufs after a handshake. AUTO: LL below 512 KiB, the
 * LL128 two-shot from there up to its limit, two-shot above. Where the LL128 form is off: at 2
 * ranks LL while each rank pushes at most 2 MiB, (world - 1) * count * element size, at more
 * ranks LL up to its limit, two-shot above. Never one-shot SM, whose in-place restriction would
 * let ranks that differ in in-place-ness choose differently.
 * Every rank must pass the same algo and count. */
WEFT_API weft_status_t weft_allreduce(weft_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype, weft_red_op_t op,
                                      weft_algo_t algo, weft_stream_t stream);

/* The largest chunk (bytes, from one rank to one rank) WEFT_ALGO_LL takes in weft_alltoall(v).
 * Its LL area, 2 (world) MiB of every rank's heap, is taken at weft_comm_init. */
#define WEFT_ALLTOALL_LL_MAX_BYTES (512u << 10)

/* AllToAll: rank r's sendbuf[p * count + i] lands in rank p's recvbuf[r * count + i], for every
 * pair of ranks (r's own chunk included), i < count. recvbuf ([world * count] elements) must come
 * from weft_malloc (symmetric) where the senders store into it (WEFT_ALGO_SM, AUTO above LL's
 * sizes); ranks may pass different addresses in the heap. Under WEFT_ALGO_LL (also where AUTO
 * takes it) the chunks land in an internal symmetric area and the receiver unpacks them: any
 * device memory. sendbuf ([world * count]) is any device memory and must not overlap recvbuf (no
 * in-place form: a rank's chunks for its peers would be overwritten by theirs before they left).
 * Any dtype, any count, any alignment of both buffers (data moves bit for bit). Every rank must
 * pass the same count and algo; a count of 0 returns at once. Nonzero counts that differ between
 * ranks are caught as weft_alltoallv's are (below), unless they make AUTO choose different
 * algorithms on different ranks: then the ranks wait for each other until the timeout reports
 * it.
 * Algorithms: WEFT_ALGO_SM: one kernel in which each rank, once a receiver has said that it
 * entered the call, stores its chunk into the receiver's recvbuf over NVLink and counts it in the
 * receiver's signal; the call ends on a rank when every chunk for it has landed. WEFT_ALGO_LL,
 * chunks of at most WEFT_ALLTOALL_LL_MAX_BYTES: each chunk travels in LL lines (data and flag
 * in one store) into an internal symmetric buffer of its receiver, which unpacks it; no
 * handshake. AUTO: LL while each rank pushes at most 512 KiB, (world - 1) * count * element
 * size, SM above (2 H200: LL 5.5-9.5 us up to 1 MiB a rank, the SM form's floor 10 us).
 * A call with LL chunks (one block per SM at most) progresses once all of its blocks run at
 * once: beside a kernel on another stream that holds SMs until this call is done, it waits until
 * the timeout; a call whose chunks are all stored (SM) has no such need. */
WEFT_API weft_status_t weft_alltoall(weft_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t count, weft_dtype_t dtype, weft_algo_t algo,
                                     weft_stream_t stream);

/* AllToAllv, with MPI_Alltoallv's meaning: rank r's sendcounts[p] elements at
 * sendbuf + sdispls[p] land at rank p's recvbuf + rdispls[r], where rank p passes
 * recvcounts[r] equal to that count. The four arrays are host arrays of world entries, in
 * elements, read during the call (a CUDA graph replays the values it captured). Buffers as for
 * weft_alltoall: recvbuf symmetric (under WEFT_ALGO_LL any device memory; AUTO stores larger
 * chunks, so symmetric there), sendbuf any device memory, either NULL where its counts are
 * all 0; the receive regions must not overlap each other, and no send region may overlap a
 * receive region. Every rank must call it, with the same dtype and algo, even when all its
 * counts are 0 (its peers wait for it). Each receiver tells each sender where its chunk lands,
 * so a sender needs none of the other ranks' arrays.
 * Counts: sendcounts[rank] must equal recvcounts[rank] (checked here); every other pair is
 * checked on the GPU: where rank r sends a different count from the one rank p expects, the
 * smaller count moves (nothing is written outside p's region nor read outside r's), both ranks
 * record the disagreement, every rank completes the call, and the next weft_stream_synchronize
 * (or weft_comm_get_async_error) on r and on p returns WEFT_STATUS_MISMATCH with the counts,
 * once; the communicator stays usable. Where the sender's chunk goes in LL lines (WEFT_ALGO_LL,
 * and AUTO's small chunks) only the receiving rank of such a pair sees both counts, and only it
 * reports.
 * Algorithms as for weft_alltoall, except AUTO, which chooses per pair of ranks: each chunk of at
 * most 512 KiB / (world - 1) travels in LL lines and each larger one is stored as under SM,
 * in one kernel; the sender decides from its count and tells the receiver in the chunk's header,
 * so the ranks never need to agree on a choice (a count disagreement across the limit is caught
 * and reported like any other). WEFT_ALGO_LL must be asked for by every rank, and every count,
 * sent and received, must fit WEFT_ALLTOALL_LL_MAX_BYTES. */
WEFT_API weft_status_t weft_alltoallv(weft_comm_t *comm, const void *sendbuf,
                                      const size_t *sendcounts, const size_t *sdispls,
                                      void *recvbuf, const size_t *recvcounts,
                                      const size_t *rdispls, weft_dtype_t dtype, weft_algo_t algo,
                                      weft_stream_t stream);

/* ------------------------------------------------------------------------------------------ */
/* Mixture of experts: the routing plan                                                        */
/* ------------------------------------------------------------------------------------------ */

/* The most experts a routing plan takes. */
#define WEFT_MOE_MAX_EXPERTS 4096

/* An MoE layer's routing, laid out as a grouped GEMM reads it (the dynamic tile mapping of
 * TileLink, §4.1). The router's topk_ids [tokens, topk] name, for entry e = token * topk + slot,
 * the expert that entry goes to. The plan puts every expert's entries in rows of one matrix,
 * experts in order, each expert's rows contiguous and padded with empty rows to a multiple of
 * tile_rows, so that each tile row of tile_rows rows belongs to one expert: expert x's entries
 * are rows [offsets[x], offsets[x] + counts[x]), its padding up to offsets[x + 1]. Within an
 * expert the entries are in entry order (the same ids give the same plan every time). All arrays
 * are device memory, in the workspace weft_moe_route was given, and stay valid while it does. */
typedef struct weft_moe_routing {
  int tokens, topk, experts, tile_rows;
  long long max_rows; /* rows the arrays are sized for, whatever the routing (weft_moe_route) */
  int *counts;        /* [experts]: entries each expert received */
  int *offsets;       /* [experts + 1]: each expert's first row; offsets[experts]: rows in use */
  int *row_entry;     /* [max_rows]: the entry each row holds; -1 in padding and past the end */
  int *entry_row;     /* [tokens * topk]: the row each entry went to; -1 for an invalid id */
  int *tile_expert;   /* [max_rows / tile_rows]: each tile row's expert; -1 past the end */
  int *tiles;         /* [1]: tile rows in use (0 after an invalid id: nothing to compute) */
} weft_moe_routing_t;

/* Bytes of device workspace weft_moe_route needs for a plan of these sizes (tokens >= 0,
 * topk >= 1, 1 <= experts <= WEFT_MOE_MAX_EXPERTS, tile_rows a multiple of 16 from 16 to 256),
 * and the rows it is sized for: tokens * topk + min(experts, tokens * topk) * (tile_rows - 1),
 * every expert's padding at its largest. */
WEFT_API weft_status_t weft_moe_routing_size(int tokens, int topk, int experts, int tile_rows,
                                             size_t *workspace_bytes, long long *max_rows);

/* Builds the routing plan of topk_ids ([tokens, topk] int32, device memory) on stream, in
 * workspace (device memory of at least weft_moe_routing_size's bytes, 256-byte aligned), and fills
 * *routing with its arrays. On the GPU, with no host synchronisation: a CUDA graph captures it,
 * and the plan's sizes (counts, offsets, tiles) stay on the device. An id outside [0, experts)
 * leaves that entry out (entry_row -1) and makes the plan empty (tiles 0), so that the grouped
 * GEMMs that read it compute and write nothing; the next weft_stream_synchronize (or
 * weft_comm_get_async_error) returns WEFT_STATUS_INVALID_ARGUMENT naming the entry, once. Local
 * to this GPU (no other rank takes part). */
WEFT_API weft_status_t weft_moe_route(weft_comm_t *comm, const int32_t *topk_ids, int tokens,
                                      int topk, int experts, int tile_rows, void *workspace,
                                      size_t workspace_bytes, weft_moe_routing_t *routing,
                                      weft_stream_t stream);

/* The grouped GEMM's A in the plan's row order: row r of out ([routing->max_rows, hidden]) is
 * token row_entry[r] / topk of x ([tokens, hidden]), zeros in padding rows; rows past the ones in
 * use are not written. Any dtype (moved bit for bit); hidden * its size a multiple of 16 bytes,
 * x and out 16-byte aligned and not overlapping. */
WEFT_API weft_status_t weft_moe_gather(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                       const void *x, int hidden, weft_dtype_t dtype, void *out,
                                       weft_stream_t stream);

/* The gated activation between an MoE layer's grouped GEMMs: out[r, c] = silu(gate_up[r, c]) *
 * gate_up[r, inter + c] for the plan's rows in use (gate_up [max_rows, 2 * inter], gate columns
 * first; out [max_rows, inter], both contiguous), in fp32, rounded once; rows past the ones in
 * use are not written. bf16, fp16 or fp32, the same for both. */
WEFT_API weft_status_t weft_moe_silu_mul(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                         const void *gate_up, int inter, weft_dtype_t dtype,
                                         void *out, weft_stream_t stream);

/* The top-k combine after an MoE layer's last grouped GEMM: out[t, c] = the sum over slots j, in
 * order, of weights[t, j] * y[routing->entry_row[t * topk + j], c] (y [max_rows, hidden] in the
 * plan's rows, out [tokens, hidden], both contiguous, of dtype: bf16, fp16 or fp32; weights
 * [tokens, topk] contiguous, of wdtype: bf16, fp16 or fp32), in fp32, rounded once. An entry the
 * plan left out (an invalid id) adds nothing. */
WEFT_API weft_status_t weft_moe_combine(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                        const void *y, const void *weights, weft_dtype_t wdtype,
                                        int hidden, weft_dtype_t dtype, void *out,
                                        weft_stream_t stream);

/* ------------------------------------------------------------------------------------------ */
/* GEMM (local to this GPU; the building block of the overlapped ops)                          */
/* ------------------------------------------------------------------------------------------ */

/* How B is stored. */
typedef enum weft_gemm_layout {
  WEFT_GEMM_LAYOUT_NK = 0, /* B is [n, k] row-major (weights as torch.nn.Linear keeps them): C = A B^T */
  WEFT_GEMM_LAYOUT_KN      /* B is [k, n] row-major: C = A B */
} weft_gemm_layout_t;

/* C[m, n] = A[m, k] B^T (LAYOUT_NK) or A B (LAYOUT_KN), on the caller's stream, accumulated in
 * fp32. A, B and C are row-major with row strides lda, ldb, ldc (elements). in is WEFT_DTYPE_BF16
 * or WEFT_DTYPE_FP16 (A and B alike); out is BF16, FP16 or FP32. Any m and n, k a multiple of 8
 * (k = 0 writes zeros); A, B and C 16-byte aligned; lda and ldb multiples of 8 (TMA reads
 * 16-byte rows: contiguous [k, n] B needs n % 8 == 0); ldc any >= n.
 * Hopper (sm_90) only. The first call with a new shape class compiles and loads its kernel
 * (cached on disk under WEFT_CACHE_DIR), also inside a CUDA graph capture; later calls only
 * launch. Every call is capturable.
 * Decode shapes (m <= 128) may split k over the SMs; so may shapes between decode and large
 * (128 < m <= 512), which it may compute as C^T = op(B)^T A^T so that the tiles cover m in steps
 * of 16 rows rather than 128 (C is still written as C). The splits of a tile reduce inside one
 * thread-block cluster, through shared memory, when they are 2, 4 or 8 and the GPU holds all
 * the clusters at once; otherwise through a workspace of the communicator. Large shapes may
 * split the tiles of their last, partly filled wave of thread blocks along k too, through the
 * same workspace. So GEMMs of one communicator must not run at the same time (on different
 * streams); give each concurrent stream its own communicator, as with a cuBLAS handle.
 * Small GEMMs (A and B of at most 24 MiB) launch for programmatic dependent launch: after a
 * kernel that lets its dependents start early (weft's GEMMs and small collectives do), their
 * thread blocks may take SMs before it ends, and wait there for it to complete before they read
 * or write memory; stream order is kept (a captured graph holds a programmatic edge). */
WEFT_API weft_status_t weft_gemm(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb,
                                 void *c, int ldc, int m, int n, int k, weft_dtype_t in,
                                 weft_dtype_t out, weft_gemm_layout_t layout,
                                 weft_stream_t stream);

/* The grouped GEMM of an MoE layer over a routing plan (weft_moe_route): row r of C
 * ([routing->max_rows, n], row stride ldc) = row r of A ([routing->max_rows, k], row stride lda:
 * weft_moe_gather's output) times op(B_x), x the expert of r's tile row (routing->tile_expert).
 * B holds routing->experts matrices, expert x's at b + x * b_stride elements, each [n, k]
 * (WEFT_GEMM_LAYOUT_NK, as weights are stored: C = A B_x^T) or [k, n] (KN), row stride ldb.
 * bf16 or fp16 A and B, bf16, fp16 or fp32 C, fp32 accumulation. The rows in use, and so the
 * work, come from the plan on the device (a CUDA graph captures the call); rows past them are not
 * written, padding rows get zeros (their A rows are zeros), and an empty plan writes nothing. The
 * plan's tile_rows must be a multiple of 64 (the GEMM's tiles take 128 rows where it divides
 * them, else 64). k a multiple of 8 and at least 8; lda, ldb and b_stride multiples of 8
 * elements; A, B and C 16-byte aligned. Local to this GPU. */
WEFT_API weft_status_t weft_grouped_gemm(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                         const void *a, int lda, const void *b, int ldb,
                                         long long b_stride, void *c, int ldc, int n, int k,
                                         weft_dtype_t in, weft_dtype_t out,
                                         weft_gemm_layout_t layout, weft_stream_t stream);

/* An MoE layer's first grouped GEMM, straight from the tokens, with its gated activation in
 * the epilogue (neither the gathered tokens nor a gate_up matrix in memory): row r of C
 * ([routing->max_rows, inter], row stride ldc) = silu(x_t G_x^T) * (x_t U_x^T) from the fp32
 * accumulators, rounded once, where t = routing->row_entry[r] / topk is the row's token (x
 * [tokens, k], row stride ldx: the GEMM's loads gather its rows) and expert x's B (at b + x *
 * b_stride) holds its gate weights G_x then its up weights U_x: [2 * inter, k] (LAYOUT_NK: gate
 * rows first, as torch keeps a fused gate_up projection) or [k, 2 * inter] (KN: gate columns
 * first). The same as weft_moe_gather, weft_grouped_gemm ([max_rows, 2 * inter]) and
 * weft_moe_silu_mul, without the rounding in between. Otherwise as weft_grouped_gemm (padding
 * rows get zeros; ldx as lda). */
WEFT_API weft_status_t weft_grouped_gemm_silu_mul(weft_comm_t *comm,
                                                  const weft_moe_routing_t *routing, const void *x,
                                                  int ldx, const void *b, int ldb,
                                                  long long b_stride, void *c, int ldc, int inter,
                                                  int k, weft_dtype_t in, weft_dtype_t out,
                                                  weft_gemm_layout_t layout, weft_stream_t stream);

/* An MoE layer's last grouped GEMM with the top-k combine in the epilogue (no [max_rows, n]
 * matrix in memory): out[t, c] ([routing->tokens, n], row stride ldo) = the sum over t's slots j
 * of weights[t, j] * (A_r B_x^T)[c], r = routing->entry_row[t * topk + j] and x its expert; a
 * slot the plan left out adds nothing. out is zeroed on the stream first, then every row's
 * product, scaled in fp32 and rounded to out's dtype, is added with atomic vector additions:
 * the order of a token's topk additions varies, so bf16 and fp16 out can differ from run to run
 * in the last bits (fp32 out far less; weft_grouped_gemm then weft_moe_combine is the
 * deterministic form). weights [tokens, topk] contiguous, of wdtype (bf16, fp16 or fp32); n
 * and ldo multiples of 8, out 16-byte aligned. Otherwise as weft_grouped_gemm. */
WEFT_API weft_status_t weft_grouped_gemm_combine(weft_comm_t *comm,
                                                 const weft_moe_routing_t *routing, const void *a,
                                                 int lda, const void *b, int ldb,
                                                 long long b_stride, const void *weights,
                                                 weft_dtype_t wdtype, void *out, int ldo, int n,
                                                 int k, weft_dtype_t in, weft_dtype_t out_dtype,
                                                 weft_gemm_layout_t layout, weft_stream_t stream);

/* ------------------------------------------------------------------------------------------ */
/* Overlapped tensor-parallel ops: a GEMM whose communication runs while it computes            */
/* ------------------------------------------------------------------------------------------ */

/* The overlapped ops share weft_gemm's rules for dtypes, layouts, strides and alignment, run
 * over the ranks of one node, on the caller's stream (capturable in a CUDA graph), and are
 * collective: every rank calls them in the same order with the same m, n, k, dtypes, layout and
 * algo, one at a time (see Collectives). algo: WEFT_ALGO_AUTO overlaps where overlap can win and
 * runs the GEMM and the collective one after the other where it cannot (small m:
 * WEFT_OVERLAP_MIN_ROWS); both can be forced with WEFT_ALGO_COPY_ENGINE (overlapped: the copy
 * engines move the data while every SM computes) and WEFT_ALGO_SEQUENTIAL (weft_gemm_rs and
 * weft_gemm_ar have an SM form as well, and weft_gemm_ar LL and two-shot forms: see each). Each
 * copy-engine call starts with a barrier of the ranks on the stream (no rank may overwrite a
 * buffer a peer still reads from the previous call). Ranks that share a GPU (WEFT_SHARE_GPUS)
 * have no copy-engine form (copies and stream signals between processes on one GPU do not
 * progress beside a kernel that waits for them): there AUTO takes the other forms and
 * WEFT_ALGO_COPY_ENGINE returns WEFT_STATUS_NOT_SUPPORTED. */
/* AUTO overlaps from this many rows of C a rank (C's rows over the ranks: the rows a rank
 * contributes to the gathered A, or owns of the reduced C). Measured on 2 and 4 H200s, m = 128 to
 * 8192 on a short and a long layer of each op (bench/results/2026-11-27-tp-overlap-h200x4.md,
 * "Where overlap starts to win: WEFT_OVERLAP_MIN_ROWS"):
 * below it the sequential form was the faster on most shapes (by up to 1.5x), from it the
 * overlapped one on all but one (up to 1.55x; the exception 7% slower). */
#define WEFT_OVERLAP_MIN_ROWS 1024

/* AllGather + GEMM: C[world * m, n] = gather(A)[world * m, k] op(B) on every rank, the gathered
 * rows in rank order. a: this rank's rows, [m, k] contiguous (any device memory, or
 * a_gathered + rank * m * k: in place). a_gathered: [world * m, k] contiguous, from weft_malloc
 * (symmetric); after the call it holds the gathered A. b: this rank's columns of the weights,
 * [n, k] (LAYOUT_NK) or [k, n] (LAYOUT_KN), row stride ldb. c: [world * m, n], row stride ldc.
 * Overlapped form: the copy engines push each rank's rows to every peer (Triton-distributed, §3.2,
 * Algorithm 1, one peer link per sender at each step) with a signal behind each push, while the
 * GEMM starts at the rank's own rows and waits per tile for the rows it reads (a rotated tile order
 * that follows the arrivals). */
WEFT_API weft_status_t weft_ag_gemm(weft_comm_t *comm, const void *a, void *a_gathered,
                                    const void *b, int ldb, void *c, int ldc, int m, int n, int k,
                                    weft_dtype_t in, weft_dtype_t out, weft_gemm_layout_t layout,
                                    weft_algo_t algo, weft_stream_t stream);

/* AllGather + MoE: the first half of a tensor-parallel MoE layer (column-parallel experts: each
 * rank holds every expert's share of the intermediate columns), its tokens sharded over the ranks
 * of one node. x: this rank's m tokens [m, k] contiguous (any device memory, or x_gathered + rank
 * * m * k: in place); x_gathered: [world * m, k] from weft_malloc (symmetric), every rank's
 * tokens in rank order after the call; routing: the plan of all world * m tokens (weft_moe_route
 * of the ranks' topk_ids gathered in rank order, e.g. by weft_allgather: the same plan on every
 * rank); w and act as weft_grouped_gemm_silu_mul's b and c (each expert's gate and up rows of
 * this rank's inter columns; act [routing->max_rows, inter], row stride ldact): act = the gated
 * activation of the gathered tokens' grouped GEMM. Overlapped (WEFT_ALGO_COPY_ENGINE; AUTO where
 * m * topk, the GEMM's rows a rank, is at least WEFT_OVERLAP_MIN_ROWS): the copy engines gather
 * the tokens while the grouped GEMM runs, each tile of it waiting only for the ranks whose tokens
 * its rows hold (TileLink, §4.1: a dynamic tile mapping). Sequential: weft_allgather, then the
 * GEMM. Collective; every rank passes the same m, k, inter, dtypes, layout and algo, and the same
 * plan. Ranks that share a GPU have no copy-engine form (as weft_ag_gemm). */
WEFT_API weft_status_t weft_ag_moe(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                   const void *x, void *x_gathered, const void *w, int ldw,
                                   long long w_stride, void *act, int ldact, int m, int inter,
                                   int k, weft_dtype_t in, weft_dtype_t out,
                                   weft_gemm_layout_t layout, weft_algo_t algo,
                                   weft_stream_t stream);

/* MoE + ReduceScatter: the second half of a tensor-parallel MoE layer (row-parallel experts:
 * each rank holds every expert's share of the intermediate rows). act: this rank's activations in
 * the plan's rows ([routing->max_rows, k], row stride ldact: weft_ag_moe's act, k this rank's
 * share); w: each expert's [n, k] (LAYOUT_NK) or [k, n] at w + x * w_stride, row stride ldw;
 * weights [tokens, topk] of wdtype (bf16, fp16 or fp32). Rank r's out [tokens / world, n]
 * (contiguous; any device memory) = the sum over ranks of their weighted top-k combines
 * (weft_grouped_gemm_combine) for tokens [r * tokens / world, (r + 1) * tokens / world): each
 * rank's partial of every token, of out_dtype, goes into workspace (from weft_malloc,
 * weft_moe_reduce_workspace_size bytes), then weft_reduce_scatter sums the ranks' partials in
 * fp32 and rounds once. routing->tokens a multiple of world; n a multiple of 8. algo: AUTO or
 * WEFT_ALGO_SEQUENTIAL (the combine, then the ReduceScatter). Collective. */
WEFT_API weft_status_t weft_moe_rs(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                   const void *act, int ldact, const void *w, int ldw,
                                   long long w_stride, const void *weights, weft_dtype_t wdtype,
                                   void *out, void *workspace, int n, int k, weft_dtype_t in,
                                   weft_dtype_t out_dtype, weft_gemm_layout_t layout,
                                   weft_algo_t algo, weft_stream_t stream);

/* MoE + AllReduce: as weft_moe_rs, but every rank's out [tokens, n] (contiguous, from
 * weft_malloc) gets the sum of all the tokens' rows (weft_allreduce of the partials): the
 * decode-size form (Ditron, Figure 5's MoE-AR), any number of tokens. */
WEFT_API weft_status_t weft_moe_ar(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                   const void *act, int ldact, const void *w, int ldw,
                                   long long w_stride, const void *weights, weft_dtype_t wdtype,
                                   void *out, void *workspace, int n, int k, weft_dtype_t in,
                                   weft_dtype_t out_dtype, weft_gemm_layout_t layout,
                                   weft_algo_t algo, weft_stream_t stream);

/* Bytes of weft_moe_rs's and weft_moe_ar's workspace: one partial of tokens x n of out. */
WEFT_API weft_status_t weft_moe_reduce_workspace_size(weft_comm_t *comm, int tokens, int n,
                                                      weft_dtype_t out, size_t *bytes);

/* One tensor-parallel MoE layer's experts in one call: every rank passes its m tokens x [m,
 * hidden] (contiguous), their router's choices topk_ids [m, topk] (int32) and weights
 * topk_weights [m, topk] (wdtype: bf16, fp16 or fp32), and its shares of every expert's weights:
 * w1 [experts][2 * inter, hidden] (gate rows, then up rows: inter of each expert's intermediate
 * columns, contiguous) and w2 [experts][hidden, inter] (the same intermediate rows of its down
 * projection, contiguous). out [m, hidden] (contiguous) = the layer's output for this rank's
 * tokens: sum over their experts j of topk_weights[t, j] * down_j(silu(gate_j x_t) * up_j x_t),
 * every rank's share summed. The ids and weights are gathered (weft_allgather), every token
 * planned (weft_moe_route: 64-row tiles where the experts hold fewer than 128 rows on average,
 * else 128), then weft_ag_moe and weft_moe_rs (AUTO) run. workspace: from weft_malloc
 * (symmetric), at least weft_moe_tp_workspace_size bytes; it holds every intermediate. dtype:
 * bf16 or fp16, of x, w1, w2 and out; hidden and inter multiples of 8. Collective, with the
 * same sizes on every rank. */
WEFT_API weft_status_t weft_moe_tp(weft_comm_t *comm, const void *x, const int32_t *topk_ids,
                                   const void *topk_weights, weft_dtype_t wdtype, int m, int topk,
                                   int experts, int hidden, const void *w1, const void *w2,
                                   int inter, void *out, void *workspace, size_t workspace_bytes,
                                   weft_dtype_t dtype, weft_stream_t stream);

/* Bytes of weft_moe_tp's workspace for these sizes on this communicator. */
WEFT_API weft_status_t weft_moe_tp_workspace_size(weft_comm_t *comm, int m, int topk, int experts,
                                                  int hidden, int inter, weft_dtype_t wdtype,
                                                  weft_dtype_t dtype, size_t *bytes);

/* GEMM + ReduceScatter: rank r's c[m / world, n] = the sum over ranks of rows
 * [r * m / world, (r + 1) * m / world) of their A[m, k] op(B), with k this rank's share of the
 * reduction dimension. m must be a multiple of world. a: [m, k] row stride lda; b: [n, k] or
 * [k, n], ldb; c: [m / world, n] contiguous, any device memory. out is the dtype of the partial
 * products and of c (BF16, FP16 or FP32; partials are rounded to it, then summed in fp32 in rank
 * order and rounded once). workspace: from weft_malloc (symmetric), 16-byte aligned, at least
 * weft_gemm_rs_workspace_size bytes; it holds the partial products and the peers' segments.
 * Overlapped forms: the GEMM computes the segment of rank + 1 first, then rank + 2, ..., its own
 * last. WEFT_ALGO_COPY_ENGINE (AUTO from WEFT_OVERLAP_MIN_ROWS rows a rank): it counts each
 * segment's stored tiles and the copy engines send each finished segment to its owner while the
 * GEMM goes on (Triton-distributed, §3.3, Algorithm 3). WEFT_ALGO_SM (fused scatter): the GEMM's
 * epilogue stores each tile straight into its owner's workspace over NVLink (no copy engine; shapes
 * whose GEMM runs the split-K kernel, small m or n not a multiple of 16 bytes, run sequentially).
 * Either way each rank reduces what it received after its own GEMM. WEFT_ALGO_SEQUENTIAL: the GEMM,
 * then weft_reduce_scatter. */
WEFT_API weft_status_t weft_gemm_rs(weft_comm_t *comm, const void *a, int lda, const void *b,
                                    int ldb, void *c, void *workspace, int m, int n, int k,
                                    weft_dtype_t in, weft_dtype_t out, weft_gemm_layout_t layout,
                                    weft_algo_t algo, weft_stream_t stream);

/* Bytes of weft_gemm_rs's (and weft_gemm_ar's) workspace for these m, n and out on this
 * communicator. */
WEFT_API weft_status_t weft_gemm_rs_workspace_size(weft_comm_t *comm, int m, int n,
                                                   weft_dtype_t out, size_t *bytes);

/* GEMM + AllReduce: c[m, n] = the sum over ranks of their A[m, k] op(B), on every rank (k this
 * rank's share of the reduction dimension). a, b, out and workspace as for weft_gemm_rs; c:
 * [m, n] contiguous, from weft_malloc (symmetric); any m. Forms:
 *   WEFT_ALGO_SM (any m): the GEMM runs on most SMs and counts each block of rows
 *     it stores; a consumer kernel on the other SMs all-reduces each row block as soon as every
 *     rank has stored it (each rank sums 1/world of the block from every rank's partial product
 *     and stores the sum into every rank's c), so that only the last rows' AllReduce is left when
 *     the GEMM ends. How many SMs the consumer takes comes from a model of both sides' rates
 *     (FLOP/s and HBM bandwidth of the GEMM, NVLink bandwidth per SM of the consumer); the
 *     variable WEFT_COMM_SMS, read at weft_comm_init, fixes it instead.
 *     On 2 H200s (2026-11-25) it is the fastest form where the GEMM is short (8192 x 4096 x
 *     5504 a rank: 1.23x cuBLAS + NCCL on 16 SMs, the copy-engine form 1.15x) and slower on the
 *     longer shapes: AUTO keeps the copy engine, the autotuner (weft_comm_set_autotune) picks
 *     per shape (bench/results/2026-11-27-tp-overlap-h200x2.md,
 *     "GEMM+AR forms at TP=2").
 *   WEFT_ALGO_COPY_ENGINE (AUTO's choice from WEFT_OVERLAP_MIN_ROWS rows a rank, and from half
 *     that where n x k a rank is at least 32 Mi: the AllReduce moves world times a
 *     ReduceScatter's bytes, which a long GEMM hides sooner; m a multiple of world): the GEMM +
 *     ReduceScatter above, its reduction storing this rank's reduced rows into every rank's c
 *     (the AllGather fused into its stores). With 16-bit out and segments of whole 256-row
 *     tiles, the GEMM's epilogue does that reduction itself as it computes the rank's own rows
 *     (last), adding the peers' partials to its unrounded fp32 accumulators: one rounding fewer
 *     than the other forms, and every rank still gets the same bits.
 *   WEFT_ALGO_LL (small m: where the GEMM runs the direct-store kernel, rows of c are a multiple
 *     of 8 bytes and c is at most WEFT_ALLREDUCE_LL_MAX_BYTES(world); elsewhere it runs
 *     sequentially): the GEMM's epilogue writes no c but pushes its values as LL lines (data and
 *     flag in each 8-byte word) into every rank's LL area, then one small kernel sums the world
 *     copies into c. No handshake, no second pass over c; the workspace is not used. Measured no
 *     faster than the sequential form on two H100s, so AUTO does not take it.
 *   WEFT_ALGO_TWO_SHOT (AUTO's choice where it takes the shape: 64 < m <= 128 with 16-bit out
 *     and c 16-byte aligned, where the GEMM runs one row of unsplit 128 x 128 tiles, or 128 x 64
 *     tiles filling 3/4 of the SMs or more: on 132 SMs n of about 6.3K columns and up, to about
 *     64K; elsewhere it runs sequentially): the whole AllReduce inside the GEMM's epilogue, one
 *     kernel. Each rank owns a 1/world share of the tile columns; a tile of another rank's share
 *     goes into that rank's staging (16 MiB of the heap, the form's own; the workspace is not
 *     used), an own tile (computed last) adds the peers' partials to its fp32 accumulators and
 *     stores the sums into every rank's c. A decode GEMM's tiles all end together, so this
 *     saves the sequential form's AllReduce kernel around the same traffic: 4 H200s, 128 x 16384
 *     x 53248: 0.131-0.133 ms against 0.143-0.146 (1.20-1.23x cuBLAS + NCCL against
 *     1.10-1.12x); 128 x 8192 x 28672: 0.050 against 0.055; 2 H200s, the same: 0.072 against
 *     0.077 (bench/results/2026-11-27-tp-overlap-h200x4.md, "GEMM+AR at m <= 128: the two-shot
 *     epilogue form").
 *   WEFT_ALGO_SEQUENTIAL: the GEMM into the workspace, then weft_allreduce.
 * The SM and two-shot forms need no barrier at the start of a call: the SM form's consumer's
 * handshake orders the calls, and a peer stores into this rank's two-shot staging only once this
 * rank has read it in their previous call. */
WEFT_API weft_status_t weft_gemm_ar(weft_comm_t *comm, const void *a, int lda, const void *b,
                                    int ldb, void *c, void *workspace, int m, int n, int k,
                                    weft_dtype_t in, weft_dtype_t out, weft_gemm_layout_t layout,
                                    weft_algo_t algo, weft_stream_t stream);

/* ------------------------------------------------------------------------------------------ */
/* JIT: compile CUDA C tile programs that use the device library (<weft/device.cuh>)           */
/* ------------------------------------------------------------------------------------------ */

/* Compiles source with NVRTC to an sm_90a cubin (or the architecture of an "-arch=" option),
 * looking in the disk cache first (WEFT_CACHE_DIR, default ~/.cache/weft). The cache key covers
 * the source, every header it includes (the device library's, and the user's found through -I
 * options), the options, NVRTC's version and the architecture. Options are NVRTC options; -D
 * defines are the way to specialise. Needs no GPU. On a compile error returns
 * WEFT_STATUS_COMPILE_ERROR and, when log is not NULL, NVRTC's log in *log (free with
 * weft_jit_free). *cubin is freed with weft_jit_free. */
WEFT_API weft_status_t weft_jit_compile(const char *source, const char *name,
                                        const char *const *options, int num_options, void **cubin,
                                        size_t *cubin_size, char **log);
WEFT_API void weft_jit_free(void *p);

typedef struct weft_module weft_module_t;
typedef struct weft_kernel weft_kernel_t;

/* weft_jit_compile, then load the cubin on the communicator's GPU and fill the device state
 * block (rank, world, peer heap bases, timeout, abort flag) of the module. */
WEFT_API weft_status_t weft_module_load(weft_comm_t *comm, const char *source, const char *name,
                                        const char *const *options, int num_options,
                                        weft_module_t **module);
WEFT_API weft_status_t weft_module_unload(weft_module_t *module);

/* An `extern "C" __global__` function of the module. Valid until the module is unloaded. */
WEFT_API weft_status_t weft_module_get_kernel(weft_module_t *module, const char *name,
                                              weft_kernel_t **kernel);

typedef struct weft_launch_config {
  unsigned grid[3];
  unsigned block[3];
  unsigned cluster[3];     /* {0,0,0} or {1,1,1}: no cluster */
  size_t shared_bytes;     /* dynamic shared memory; raised above 48 KiB as needed */
  int cooperative;         /* all blocks co-resident (grid-wide sync allowed) */
  int programmatic;        /* programmatic dependent launch: the kernel may start while the
                              stream's previous kernel finishes; it must execute
                              `griddepcontrol.wait` before it touches memory that kernel
                              writes (until then: set-up only) */
} weft_launch_config_t;

#define WEFT_LAUNCH_CONFIG_INIT {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0, 0}

/* cuLaunchKernelEx with the cluster, cooperative and programmatic-serialisation attributes.
 * args as for cuLaunchKernel. */
WEFT_API weft_status_t weft_kernel_launch(weft_kernel_t *kernel, const weft_launch_config_t *config,
                                          void **args, weft_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
