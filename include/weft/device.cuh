/*
 * weft/device.cuh — the device library: include this in a program compiled by weft's JIT.
 * The runtime fills weft_state in every module it loads.
 *   sync.cuh      acquire/release loads and stores, atomics, fences, the timed wait
 *   shmem.cuh     OpenSHMEM-style: my_pe, n_pes, remote_ptr, int_p, put/get (thread, warp, block,
 *                 nbi), put-with-signal, signal_op, signal_wait_until, wait/notify/consume_token,
 *                 barrier_all, sync_all, broadcast
 *   tile.cuh      TileLink: producer/consumer/peer tile notify and wait, rank notify/wait, tile
 *                 push/pull, rank copy, over tile_map.h's static and dynamic mappings
 *   ll.cuh        the LL (data + flag) protocol
 *   multimem.cuh  NVLink multicast (guarded: off on weft's machines)
 */
#ifndef WEFT_DEVICE_CUH
#define WEFT_DEVICE_CUH

#include "weft/sync.cuh"
#include "weft/shmem.cuh"
#include "weft/tile.cuh"
#include "weft/ll.cuh"
#include "weft/multimem.cuh"

#endif
