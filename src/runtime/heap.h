/*
 * heap.h — the symmetric heap: one VMM allocation per rank, exported as a POSIX fd, every local
 * peer's mapped into one reserved range (peer r at base + r * stride), and a sub-allocator whose
 * decisions are identical on every rank because every rank makes the same calls in the same order.
 */
#ifndef WEFT_HEAP_H
#define WEFT_HEAP_H

#include <cuda.h>

#include "../internal.h"

/* ---- sub-allocator: host logic only, tested on the CPU ---- */

typedef struct weft_suballoc_block {
  uint64_t offset, size;
  int used;
} weft_suballoc_block_t;

typedef struct weft_suballoc {
  uint64_t capacity;
  uint64_t align;
  weft_suballoc_block_t *blocks; /* sorted by offset, covering [0, capacity) */
  int count, cap_blocks;
} weft_suballoc_t;

/* align must be a power of two. */
weft_status_t weft_suballoc_init(weft_suballoc_t *a, uint64_t capacity, uint64_t align);
void weft_suballoc_destroy(weft_suballoc_t *a);
/* First fit. WEFT_STATUS_OUT_OF_MEMORY when no free block is large enough (nothing changes). */
weft_status_t weft_suballoc_alloc(weft_suballoc_t *a, uint64_t size, uint64_t *offset);
/* WEFT_STATUS_INVALID_ARGUMENT when offset is not the start of a live allocation. */
weft_status_t weft_suballoc_free(weft_suballoc_t *a, uint64_t offset);
/* The live allocation containing [offset, offset + bytes), or -1. */
int weft_suballoc_find(const weft_suballoc_t *a, uint64_t offset, uint64_t bytes);
uint64_t weft_suballoc_used(const weft_suballoc_t *a);

/* ---- the heap ---- */

typedef struct weft_heap {
  CUdeviceptr base;   /* reserved range: local_world * stride */
  uint64_t stride;    /* mapped bytes per rank (size rounded up to the granularity) */
  uint64_t size;      /* usable bytes per rank */
  CUdeviceptr mine;   /* base + local_rank * stride */
  CUmemGenericAllocationHandle handle;
  int mapped;         /* number of peers mapped (for teardown after a partial init) */
  weft_suballoc_t alloc;
  uint64_t serial;    /* collective allocation calls so far (for the mismatch check) */
} weft_heap_t;

weft_status_t weft_heap_create(weft_comm_t *comm, uint64_t size);
weft_status_t weft_heap_destroy(weft_comm_t *comm);

/* Is [p, p + bytes) inside this rank's heap (the local view, sync area included)? */
static inline int weft_heap_contains(const weft_heap_t *h, const void *p, uint64_t bytes) {
  uint64_t a = (uint64_t)(uintptr_t)p;
  return h->base && a >= h->mine && bytes <= h->stride && a - h->mine <= h->stride - bytes;
}

/* The address, in this process, of local peer `local`'s copy of symmetric address p (p inside
 * this rank's heap). */
static inline CUdeviceptr weft_heap_peer(const weft_heap_t *h, const void *p, int local) {
  return (CUdeviceptr)(uintptr_t)p - h->mine + h->base + (uint64_t)local * h->stride;
}

#endif /* WEFT_HEAP_H */
