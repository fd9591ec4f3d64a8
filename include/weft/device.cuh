/*
 * weft/device.cuh — the device library: include this in a program compiled by weft's JIT.
 * NVRTC-clean: no system, CUDA or C++ standard headers; C-style static inline functions, structs
 * and macros, every name prefixed weft_.
 *
 * The runtime fills `__constant__ weft_device_state_t weft_state` (declared once, at global
 * scope, by sync.cuh; layout in weft/state.h) in every module it loads: rank, world, the local
 * peers' heap mappings, the wait deadline, the abort flag and the error record.
 *
 *   sync.cuh      acquire/release loads and stores, atomics, fence, quiet, the timed wait
 *   shmem.cuh     OpenSHMEM-style (Triton-distributed, Table 1): my_pe, n_pes, remote_ptr, int_p,
 *                 put/get (+nbi), put-with-signal, signal_op, signal_wait_until, barrier_all,
 *                 sync_all, broadcast (thread, _warp, _block), wait/notify/consume_token
 *   tile.cuh      tile-centric (TileLink, Table 3): producer/consumer/peer tile notify and wait,
 *                 rank notify/wait, tile push/pull, rank copy, over tile_map.h's static and
 *                 dynamic mappings; TMA proxy fences
 *   ll.cuh        the LL (data + flag in one store) protocol
 *   multimem.cuh  NVLink multicast (guarded: off on weft's machines)
 *   reduce.cuh    fp32-accumulated sums of fp16/bf16/fp32 arrays (included on its own by the
 *                 reducing kernels, not by this file)
 *
 * Every wait in these headers is bounded by WEFT_TIMEOUT_MS and ends on weft_comm_abort; on
 * expiry it reports op, rank, peer, signal index, expected and observed values, and traps.
 */
#ifndef WEFT_DEVICE_CUH
#define WEFT_DEVICE_CUH

#include "weft/state.h"
#include "weft/sync.cuh"
#include "weft/shmem.cuh"
#include "weft/tile.cuh"
#include "weft/ll.cuh"
#include "weft/multimem.cuh"

#endif
