/*
 * bootstrap.h — how the ranks of a job find each other, before and beside the GPU.
 *
 * Rank, world, local rank and local world come from WEFT_* variables, else torchrun's, else
 * Open MPI's, else Slurm's. The rendezvous is a TCP star at an explicit address
 * (WEFT_BOOTSTRAP_ADDR=host:port, else MASTER_ADDR with port WEFT_BOOTSTRAP_PORT or MASTER_PORT+1,
 * never MASTER_PORT itself, which torch's store holds): rank 0 listens, the others connect; every
 * step has a deadline. On top of it: all-gather and barrier of small blobs, and the exchange of
 * file descriptors between the ranks of a node over AF_UNIX sockets (SCM_RIGHTS).
 */
#ifndef WEFT_BOOTSTRAP_H
#define WEFT_BOOTSTRAP_H

#include "../internal.h"

typedef struct weft_bootstrap_info {
  int rank, world, local_rank, local_world;
  const char *launcher; /* "WEFT", "torchrun", "Open MPI", "Slurm", or "none" (world of 1) */
} weft_bootstrap_info_t;

/* Reads the launcher's variables. With none set: a world of 1 (launcher "none"). Inconsistent
 * or malformed values (rank >= world, local_rank >= local_world, non-numbers) are
 * WEFT_STATUS_INVALID_ARGUMENT with the variable named. */
weft_status_t weft_bootstrap_read_env(weft_bootstrap_info_t *info);

/* The rendezvous address from the environment: "host:port" in addr (size addr_size). A world of
 * 1 needs none (addr = ""). WEFT_STATUS_INVALID_ARGUMENT when a world > 1 has no address. */
weft_status_t weft_bootstrap_read_addr(const weft_bootstrap_info_t *info, char *addr,
                                       size_t addr_size);

typedef struct weft_bootstrap weft_bootstrap_t;

/* Meets the other ranks at addr ("host:port"; rank 0 binds it). Returns within timeout_ns:
 * WEFT_STATUS_TIMEOUT naming the ranks that never came; WEFT_STATUS_MISMATCH when ranks disagree
 * on the world size or two claim one rank. A world of 1 needs no address and no socket. */
weft_status_t weft_bootstrap_create(const char *addr, int rank, int world, uint64_t timeout_ns,
                                    weft_bootstrap_t **bs);
void weft_bootstrap_destroy(weft_bootstrap_t *bs);

int weft_bootstrap_rank(const weft_bootstrap_t *bs);
int weft_bootstrap_world(const weft_bootstrap_t *bs);

/* In place: buf holds world * bytes; this rank's slot is buf + rank * bytes. Every rank must pass
 * the same bytes (a difference is WEFT_STATUS_MISMATCH on every rank). A rank that left is
 * WEFT_STATUS_REMOTE_ERROR; a deadline passed is WEFT_STATUS_TIMEOUT. */
weft_status_t weft_bootstrap_allgather(weft_bootstrap_t *bs, void *buf, size_t bytes);
weft_status_t weft_bootstrap_barrier(weft_bootstrap_t *bs);

/* Between the ranks of one node: ranks[i] (world ranks, local_world of them, this rank among them
 * at local_rank) each contribute fd; peer_fds[i] receives a duplicate of rank ranks[i]'s fd
 * (peer_fds[local_rank] = dup of its own). The caller closes the received fds. */
weft_status_t weft_bootstrap_exchange_fds(weft_bootstrap_t *bs, const int *ranks, int local_world,
                                          int local_rank, int fd, int *peer_fds);

#endif /* WEFT_BOOTSTRAP_H */
