/*
 * launch.c — weft_kernel_launch: argument checks, the function attributes a launch needs
 * (dynamic shared memory above 48 KiB, non-portable cluster sizes), then cuLaunchKernelEx with
 * the cluster-dimension, cooperative and programmatic-serialisation attributes.
 *
 * Every check runs before anything is set or launched, so a bad config has no side effect.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "module.h"

#include "comm.h"
#include "loader.h"

/* Beyond this a kernel must opt in to more dynamic shared memory (CUDA's static default). */
#define DEFAULT_DYNAMIC_SMEM (48u << 10)
/* Clusters beyond this many blocks are "non-portable" and need an opt-in (Hopper allows 16). */
#define PORTABLE_CLUSTER_BLOCKS 8u

static weft_status_t check_config(weft_comm_t *comm, const weft_launch_config_t *c,
                                  bool *cluster) {
  static const char axis[3] = {'x', 'y', 'z'};
  /* CUDA's grid limits: x up to 2^31 - 1, y and z up to 65535. */
  static const unsigned grid_max[3] = {0x7fffffffu, 65535u, 65535u};
  static const unsigned block_max[3] = {1024u, 1024u, 64u};
  for (int i = 0; i < 3; i++) {
    WEFT_ARG(comm, c->grid[i] > 0, "grid.%c is 0", axis[i]);
    WEFT_ARG(comm, c->block[i] > 0, "block.%c is 0", axis[i]);
    WEFT_ARG(comm, c->grid[i] <= grid_max[i], "grid.%c = %u exceeds %u", axis[i], c->grid[i],
             grid_max[i]);
    WEFT_ARG(comm, c->block[i] <= block_max[i], "block.%c = %u exceeds %u", axis[i],
             c->block[i], block_max[i]);
  }
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  WEFT_ARG(comm, threads <= 1024, "block of %u x %u x %u = %llu threads exceeds 1024",
           c->block[0], c->block[1], c->block[2], (unsigned long long)threads);
  unsigned zeros = (c->cluster[0] == 0) + (c->cluster[1] == 0) + (c->cluster[2] == 0);
  WEFT_ARG(comm, zeros == 0 || zeros == 3,
           "cluster {%u, %u, %u}: give all three dimensions, or {0, 0, 0} for none",
           c->cluster[0], c->cluster[1], c->cluster[2]);
  WEFT_ARG(comm, c->shared_bytes <= INT_MAX, "shared_bytes %zu is out of range", c->shared_bytes);
  *cluster = zeros == 0 && (uint64_t)c->cluster[0] * c->cluster[1] * c->cluster[2] > 1;
  if (*cluster)
    for (int i = 0; i < 3; i++)
      WEFT_ARG(comm, c->grid[i] % c->cluster[i] == 0,
               "cluster.%c = %u does not divide grid.%c = %u", axis[i], c->cluster[i], axis[i],
               c->grid[i]);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_kernel_launch(weft_kernel_t *k, const weft_launch_config_t *c, void **args,
                                 weft_stream_t stream) {
  WEFT_ARG(NULL, k, "kernel is NULL");
  weft_comm_t *comm = k->module->comm;
  WEFT_ARG(comm, c, "launch config is NULL");
  bool cluster;
  WEFT_CHECK(check_config(comm, c, &cluster));
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_CHECK(weft_comm_make_current(comm));

  /* Function attributes persist, so each is raised once, under the module's lock (two threads
   * launching the same kernel with different sizes must end at the larger). */
  if (c->shared_bytes > DEFAULT_DYNAMIC_SMEM &&
      c->shared_bytes > __atomic_load_n(&k->max_dynamic_smem, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&k->module->lock);
    weft_status_t st = WEFT_STATUS_SUCCESS;
    if (c->shared_bytes > k->max_dynamic_smem) {
      CUresult r = weft_cu.cuFuncSetAttribute(
          k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)c->shared_bytes);
      if (r == CUDA_SUCCESS)
        __atomic_store_n(&k->max_dynamic_smem, c->shared_bytes, __ATOMIC_RELEASE);
      else if (r == CUDA_ERROR_INVALID_VALUE)
        st = weft_error(comm, WEFT_STATUS_INVALID_ARGUMENT, __FILE__, __LINE__,
                        "kernel %s: %zu bytes of dynamic shared memory refused by the driver "
                        "(a Hopper block may have 227 KiB less its static shared memory)",
                        k->name, c->shared_bytes);
      else
        st = weft_cu_error(comm, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                           __FILE__, __LINE__);
    }
    pthread_mutex_unlock(&k->module->lock);
    WEFT_CHECK(st);
  }
  uint64_t cluster_blocks = (uint64_t)c->cluster[0] * c->cluster[1] * c->cluster[2];
  if (cluster && cluster_blocks > PORTABLE_CLUSTER_BLOCKS &&
      !__atomic_load_n(&k->non_portable_cluster, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&k->module->lock);
    CUresult r = weft_cu.cuFuncSetAttribute(
        k->function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (r == CUDA_SUCCESS) __atomic_store_n(&k->non_portable_cluster, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&k->module->lock);
    if (r != CUDA_SUCCESS)
      return weft_cu_error(comm, r, "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
                           __FILE__, __LINE__);
  }

  CUlaunchAttribute attrs[3];
  memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  if (cluster) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = c->cluster[0];
    attrs[n].value.clusterDim.y = c->cluster[1];
    attrs[n].value.clusterDim.z = c->cluster[2];
    n++;
  }
  if (c->cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    n++;
  }
  if (c->programmatic) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n].value.programmaticStreamSerializationAllowed = 1;
    n++;
  }
  CUlaunchConfig lc = {
      .gridDimX = c->grid[0], .gridDimY = c->grid[1], .gridDimZ = c->grid[2],
      .blockDimX = c->block[0], .blockDimY = c->block[1], .blockDimZ = c->block[2],
      .sharedMemBytes = (unsigned)c->shared_bytes, .hStream = (CUstream)stream,
      .attrs = n ? attrs : NULL, .numAttrs = n};
  CUresult r = weft_cu.cuLaunchKernelEx(&lc, k->function, args, NULL);
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "cuLaunchKernelEx(%s, grid %ux%ux%u, block %ux%ux%u, smem %zu%s)",
             k->name, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
             c->shared_bytes, c->cooperative ? ", cooperative" : "");
    return weft_cu_error(comm, r, what, __FILE__, __LINE__);
  }
  return WEFT_STATUS_SUCCESS;
}
