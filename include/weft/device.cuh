/*
 * weft/device.cuh — the device library: include this in a program compiled by weft's JIT.
 * The runtime fills weft_state in every module it loads.
 */
#ifndef WEFT_DEVICE_CUH
#define WEFT_DEVICE_CUH

#include "weft/sync.cuh"
#include "weft/shmem.cuh"

#endif
