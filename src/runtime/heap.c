/*
 * heap.c — the symmetric heap (see heap.h): VMM allocation exported as a POSIX fd, every local
 * peer's allocation mapped into one reserved range, and the first-fit sub-allocator behind
 * weft_malloc / weft_free with the collective mismatch check.
 */
#include "heap.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "loader.h"

/* ---------------------------------------------------------------------------------------- */
/* Sub-allocator                                                                             */
/* ---------------------------------------------------------------------------------------- */

weft_status_t weft_suballoc_init(weft_suballoc_t *a, uint64_t capacity, uint64_t align) {
  if (!a || align == 0 || (align & (align - 1)) || capacity < align)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "bad sub-allocator capacity or alignment");
  memset(a, 0, sizeof *a);
  a->capacity = capacity & ~(align - 1);
  a->align = align;
  a->cap_blocks = 16;
  a->blocks = calloc((size_t)a->cap_blocks, sizeof *a->blocks);
  if (!a->blocks) return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  a->blocks[0] = (weft_suballoc_block_t){0, a->capacity, 0};
  a->count = 1;
  return WEFT_STATUS_SUCCESS;
}

void weft_suballoc_destroy(weft_suballoc_t *a) {
  if (!a) return;
  free(a->blocks);
  memset(a, 0, sizeof *a);
}

weft_status_t weft_suballoc_alloc(weft_suballoc_t *a, uint64_t size, uint64_t *offset) {
  if (size == 0 || size > a->capacity)
    return WEFT_ERR(NULL, size ? WEFT_STATUS_OUT_OF_MEMORY : WEFT_STATUS_INVALID_ARGUMENT,
                    "cannot allocate %llu bytes from a heap of %llu", (unsigned long long)size,
                    (unsigned long long)a->capacity);
  size = (size + a->align - 1) & ~(a->align - 1);
  for (int i = 0; i < a->count; i++) {
    weft_suballoc_block_t *b = &a->blocks[i];
    if (b->used || b->size < size) continue;
    if (b->size > size) { /* split: the tail stays free */
      if (a->count == a->cap_blocks) {
        int cap = a->cap_blocks * 2;
        weft_suballoc_block_t *nb = realloc(a->blocks, (size_t)cap * sizeof *nb);
        if (!nb) return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
        a->blocks = nb;
        a->cap_blocks = cap;
        b = &a->blocks[i];
      }
      memmove(&a->blocks[i + 2], &a->blocks[i + 1], (size_t)(a->count - i - 1) * sizeof *b);
      a->blocks[i + 1] = (weft_suballoc_block_t){b->offset + size, b->size - size, 0};
      b->size = size;
      a->count++;
    }
    b->used = 1;
    *offset = b->offset;
    return WEFT_STATUS_SUCCESS;
  }
  return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY,
                  "symmetric heap exhausted: %llu bytes asked, %llu of %llu in use "
                  "(raise WEFT_HEAP_SIZE)",
                  (unsigned long long)size, (unsigned long long)weft_suballoc_used(a),
                  (unsigned long long)a->capacity);
}

weft_status_t weft_suballoc_free(weft_suballoc_t *a, uint64_t offset) {
  int i = 0;
  while (i < a->count && a->blocks[i].offset != offset) i++;
  if (i == a->count || !a->blocks[i].used)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                    "offset %llu is not the start of a live heap allocation",
                    (unsigned long long)offset);
  a->blocks[i].used = 0;
  /* Merge with the free neighbours so that fragmentation does not grow over a long job. */
  if (i + 1 < a->count && !a->blocks[i + 1].used) {
    a->blocks[i].size += a->blocks[i + 1].size;
    memmove(&a->blocks[i + 1], &a->blocks[i + 2], (size_t)(a->count - i - 2) * sizeof *a->blocks);
    a->count--;
  }
  if (i > 0 && !a->blocks[i - 1].used) {
    a->blocks[i - 1].size += a->blocks[i].size;
    memmove(&a->blocks[i], &a->blocks[i + 1], (size_t)(a->count - i - 1) * sizeof *a->blocks);
    a->count--;
  }
  return WEFT_STATUS_SUCCESS;
}

int weft_suballoc_find(const weft_suballoc_t *a, uint64_t offset, uint64_t bytes) {
  int lo = 0, hi = a->count - 1;
  while (lo <= hi) { /* blocks are sorted and contiguous */
    int mid = (lo + hi) / 2;
    const weft_suballoc_block_t *b = &a->blocks[mid];
    if (offset < b->offset) hi = mid - 1;
    else if (offset >= b->offset + b->size) lo = mid + 1;
    else return (b->used && bytes <= b->size - (offset - b->offset)) ? mid : -1;
  }
  return -1;
}

uint64_t weft_suballoc_used(const weft_suballoc_t *a) {
  uint64_t used = 0;
  for (int i = 0; i < a->count; i++)
    if (a->blocks[i].used) used += a->blocks[i].size;
  return used;
}

/* ---------------------------------------------------------------------------------------- */
/* VMM heap                                                                                  */
/* ---------------------------------------------------------------------------------------- */

weft_status_t weft_heap_create(weft_comm_t *comm, uint64_t size) {
  weft_heap_t *h = &comm->heap;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  int *fds = NULL, *ranks = NULL, own_fd = -1;

  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = comm->device_ordinal;
  /* Export must be requested at creation, or cuMemExportToShareableHandle fails later. */
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  WEFT_CU(comm, cuMemGetAllocationGranularity(&gran, &prop,
                                              CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  /* The runtime's sync area sits at the start of every heap. */
  uint64_t want = size + WEFT_SYNC_BYTES;
  h->stride = (want + gran - 1) / gran * gran;
  h->size = h->stride - WEFT_SYNC_BYTES;

  WEFT_CU(comm, cuMemCreate(&h->handle, h->stride, &prop, 0));
  WEFT_CU_GOTO(comm, cuMemAddressReserve(&h->base, h->stride * (uint64_t)comm->local_world, gran, 0, 0),
               st, fail_release);
  WEFT_CU_GOTO(comm, cuMemExportToShareableHandle(&own_fd, h->handle,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
               st, fail_reserve);

  fds = malloc(sizeof *fds * (size_t)comm->local_world);
  ranks = malloc(sizeof *ranks * (size_t)comm->local_world);
  if (!fds || !ranks) {
    st = WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
    goto fail_reserve;
  }
  for (int i = 0; i < comm->local_world; i++) {
    fds[i] = -1;
    ranks[i] = comm->node_first_rank + i;
  }
  WEFT_CHECK_GOTO(weft_bootstrap_exchange_fds(comm->bootstrap, ranks, comm->local_world,
                                              comm->local_rank, own_fd, fds),
                  st, fail_fds);

  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = comm->device_ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int r = 0; r < comm->local_world; r++) {
    CUmemGenericAllocationHandle hr = h->handle;
    if (r != comm->local_rank) {
      /* The handle argument is the fd value itself, cast to a pointer. */
      WEFT_CU_GOTO(comm, cuMemImportFromShareableHandle(&hr, (void *)(uintptr_t)fds[r],
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                   st, fail_map);
    }
    CUdeviceptr at = h->base + (uint64_t)r * h->stride;
    CUresult res = weft_cu.cuMemMap(at, h->stride, 0, hr, 0);
    /* The mapping keeps imported memory alive: release our reference now. */
    if (r != comm->local_rank) weft_cu.cuMemRelease(hr);
    if (res != CUDA_SUCCESS) {
      st = weft_cu_error(comm, res, "cuMemMap(peer heap)", __FILE__, __LINE__);
      goto fail_map;
    }
    h->mapped = r + 1;
    WEFT_CU_GOTO(comm, cuMemSetAccess(at, h->stride, &access, 1), st, fail_map);
  }
  h->mine = h->base + (uint64_t)comm->local_rank * h->stride;
  /* zeroed before any peer may write (the barrier below) */
  WEFT_CU_GOTO(comm, cuMemsetD8Async(h->mine, 0, h->stride, comm->quiet), st, fail_map);
  WEFT_CHECK_GOTO(weft_stream_wait_idle(comm, comm->quiet, "zeroing the symmetric heap"), st, fail_map);
  WEFT_CHECK_GOTO(weft_suballoc_init(&h->alloc, h->size, 1024), st, fail_map);
  /* Nobody may touch a peer's heap before that peer zeroed it. */
  WEFT_CHECK_GOTO(weft_bootstrap_barrier(comm->bootstrap), st, fail_alloc);

  for (int i = 0; i < comm->local_world; i++)
    if (fds[i] >= 0) close(fds[i]);
  close(own_fd);
  free(fds);
  free(ranks);
  WEFT_INFO("symmetric heap: %llu MiB per rank, %d ranks mapped at 0x%llx (stride %llu)",
            (unsigned long long)(h->size >> 20), comm->local_world, (unsigned long long)h->base,
            (unsigned long long)h->stride);
  return WEFT_STATUS_SUCCESS;

fail_alloc:
  weft_suballoc_destroy(&h->alloc);
fail_map:
  for (int r = 0; r < h->mapped; r++) weft_cu.cuMemUnmap(h->base + (uint64_t)r * h->stride, h->stride);
  h->mapped = 0;
fail_fds:
  for (int i = 0; fds && i < comm->local_world; i++)
    if (fds[i] >= 0) close(fds[i]);
fail_reserve:
  if (own_fd >= 0) close(own_fd);
  free(fds);
  free(ranks);
  weft_cu.cuMemAddressFree(h->base, h->stride * (uint64_t)comm->local_world);
  h->base = 0;
fail_release:
  weft_cu.cuMemRelease(h->handle);
  return st;
}

weft_status_t weft_heap_destroy(weft_comm_t *comm) {
  weft_heap_t *h = &comm->heap;
  if (!h->base) return WEFT_STATUS_SUCCESS;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  for (int r = 0; r < h->mapped; r++) {
    CUresult res = weft_cu.cuMemUnmap(h->base + (uint64_t)r * h->stride, h->stride);
    if (res != CUDA_SUCCESS && st == WEFT_STATUS_SUCCESS)
      st = weft_cu_error(comm, res, "cuMemUnmap", __FILE__, __LINE__);
  }
  weft_cu.cuMemAddressFree(h->base, h->stride * (uint64_t)comm->local_world);
  weft_cu.cuMemRelease(h->handle);
  weft_suballoc_destroy(&h->alloc);
  memset(h, 0, sizeof *h);
  return st;
}

/* ---------------------------------------------------------------------------------------- */
/* Public: weft_malloc, weft_free, weft_peer_ptr                                             */
/* ---------------------------------------------------------------------------------------- */

/* What each rank contributes to the mismatch check of a collective heap call. */
typedef struct heap_call {
  uint64_t serial; /* how many heap calls this rank made before */
  uint64_t kind;   /* 1 malloc, 2 free */
  uint64_t arg;    /* size, or offset freed */
  uint64_t ok;     /* this rank could do it */
} heap_call_t;

/* All-gathers every rank's call and fails on every rank if any differs or any rank cannot do
 * it. */
static weft_status_t heap_agree(weft_comm_t *comm, heap_call_t mine, const char *what) {
  int world = comm->world;
  heap_call_t *all = calloc((size_t)world, sizeof *all);
  if (!all) return WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  all[comm->rank] = mine;
  weft_status_t st = weft_bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  if (st != WEFT_STATUS_SUCCESS) {
    free(all);
    return st;
  }
  for (int r = 0; r < world; r++) {
    if (all[r].serial != mine.serial || all[r].kind != mine.kind || all[r].arg != mine.arg) {
      st = WEFT_ERR(comm, WEFT_STATUS_MISMATCH,
                    "%s is collective: call #%llu here is %s(%llu) but rank %d made call #%llu "
                    "%s(%llu); every rank must make the same heap calls in the same order",
                    what, (unsigned long long)mine.serial, mine.kind == 1 ? "weft_malloc" : "weft_free",
                    (unsigned long long)mine.arg, r, (unsigned long long)all[r].serial,
                    all[r].kind == 1 ? "weft_malloc" : "weft_free", (unsigned long long)all[r].arg);
      break;
    }
  }
  /* Ranks agree on the call: a rank that could not serve it reports its own out-of-memory,
   * the others name the first rank that failed. */
  for (int r = 0; st == WEFT_STATUS_SUCCESS && r < world; r++) {
    if (!mine.ok)
      st = WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "%s(%llu) cannot be served on rank %d",
                    what, (unsigned long long)mine.arg, comm->rank);
    else if (!all[r].ok)
      st = WEFT_ERR(comm, WEFT_STATUS_REMOTE_ERROR, "%s(%llu) failed on rank %d", what,
                    (unsigned long long)mine.arg, r);
  }
  free(all);
  return st;
}

weft_status_t weft_malloc(weft_comm_t *comm, size_t size, void **ptr) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, ptr, "ptr is NULL");
  WEFT_ARG(comm, size > 0, "size is 0");
  weft_heap_t *h = &comm->heap;
  /* Try locally first, but commit only when every rank agrees and succeeded. */
  uint64_t off = 0;
  int ok = weft_suballoc_alloc(&h->alloc, size, &off) == WEFT_STATUS_SUCCESS;
  heap_call_t mine = {h->serial, 1, size, (uint64_t)ok};
  weft_status_t st = heap_agree(comm, mine, "weft_malloc");
  if (st != WEFT_STATUS_SUCCESS) {
    if (ok) weft_suballoc_free(&h->alloc, off);
    return st;
  }
  h->serial++;
  WEFT_CHECK(weft_comm_make_current(comm));
  /* Fresh allocations are zero, so that signals in them start at 0 on every rank; the memset
   * must be complete before the barrier lets any peer write into the buffer. */
  WEFT_CU(comm, cuMemsetD8Async(h->mine + WEFT_SYNC_BYTES + off, 0, size, comm->quiet));
  WEFT_CHECK(weft_stream_wait_idle(comm, comm->quiet, "weft_malloc (zeroing)"));
  WEFT_CHECK(weft_bootstrap_barrier(comm->bootstrap));
  *ptr = (void *)(uintptr_t)(h->mine + WEFT_SYNC_BYTES + off);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_free(weft_comm_t *comm, void *ptr) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, ptr, "ptr is NULL");
  weft_heap_t *h = &comm->heap;
  WEFT_ARG(comm, weft_heap_contains(h, ptr, 1), "%p is not in the symmetric heap", ptr);
  uint64_t off = (uint64_t)(uintptr_t)ptr - h->mine - WEFT_SYNC_BYTES;
  int i = weft_suballoc_find(&h->alloc, off, 1);
  WEFT_ARG(comm, i >= 0 && h->alloc.blocks[i].offset == off,
           "%p is not the start of a live weft_malloc allocation", ptr);
  heap_call_t mine = {h->serial, 2, off, 1};
  WEFT_CHECK(heap_agree(comm, mine, "weft_free"));
  h->serial++;
  return weft_suballoc_free(&h->alloc, off);
}

weft_status_t weft_peer_ptr(const weft_comm_t *ccomm, const void *ptr, int rank, void **peer_ptr) {
  weft_comm_t *comm = (weft_comm_t *)ccomm; /* for the last-error text only */
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, ptr && peer_ptr, "ptr or peer_ptr is NULL");
  WEFT_ARG(comm, rank >= 0 && rank < comm->world, "rank %d out of range [0, %d)", rank, comm->world);
  int l = weft_comm_local_index(comm, rank);
  if (l < 0)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED, "rank %d is on another node", rank);
  const weft_heap_t *h = &comm->heap;
  WEFT_ARG(comm, weft_heap_contains(h, ptr, 1), "%p is not in the symmetric heap", ptr);
  *peer_ptr = (void *)(uintptr_t)((uint64_t)(uintptr_t)ptr - h->mine + h->base +
                                  (uint64_t)l * h->stride);
  return WEFT_STATUS_SUCCESS;
}
