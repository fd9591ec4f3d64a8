/*
 * multicast.h — the guard around NVLink multicast (why it is off: docs/architecture.md,
 * "NVLink multicast is off"). Multicast objects may be created only when
 * WEFT_ENABLE_MULTICAST=1 and none of NCCL_NVLS_ENABLE=0,
 * NVSHMEM_DISABLE_NVLS=1, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 is set; weft does not create them
 * yet at all, so the device state's multicast_enabled stays 0 and multimem primitives trap.
 */
#ifndef WEFT_MULTICAST_H
#define WEFT_MULTICAST_H

#include <stddef.h>

#include "../internal.h"

/* 1 when the environment permits multicast; otherwise 0 with the reason in why. */
int weft_multicast_allowed(char *why, size_t why_size);

/* Logs why multicast is off when the user asked for it. Never enables it. */
void weft_multicast_check_env(weft_comm_t *comm);

#endif
