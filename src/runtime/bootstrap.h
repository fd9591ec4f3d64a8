/*
 * bootstrap.h — how the ranks of a job find each other, before and beside the GPU.
 *
 * Rank, world, local rank and local world come from WEFT_* variables, else torchrun's, else
 * Open MPI's, else Slurm's. The rendezvous is a TCP star at an explicit address
 * (WEFT_BOOTSTRAP_ADDR=host:port, else MASTER_ADDR with port WEFT_BOOTSTRAP_PORT or MASTER_PORT+1,
 * never MASTER_PORT itself, which torch's store holds): rank 0 listens, the others connect; every
 * step has a deadline. On top of it: all-gather and barrier of small blobs, and the exchange of
 * file descriptors between the ranks of a node over AF_UNIX sockets (SCM_RIGHTS).
 *
 * The implementation is in bootstrap/: env.c reads the launchers' variables, rendezvous.c meets
 * the ranks at rank 0, collective.c runs the all-gather and barrier over it, protocol.c holds
 * what those two share (deadline-bounded messages, rank 0's reader and verdicts), fdpass.c
 * passes the fds, and internal.h declares what the files share (the wire format among it).
 */
#ifndef WEFT_BOOTSTRAP_H
#define WEFT_BOOTSTRAP_H

#include "../internal.h"

typedef struct weft_bootstrap_info {
  int rank, world, local_rank, local_world;
  const char *launcher; /* "WEFT", "torchrun", "Open MPI", "Slurm", or "none" (world of 1) */
} weft_bootstrap_info_t;

/* Reads the launcher's variables. With none set: a world of 1 (launcher "none"). The first
 * launcher with its rank or world variable set decides (no fall-through from a half-set one).
 * Without local variables the job is one node; with only the local world, local rank = rank %
 * local world. Slurm's local world is this node's entry (SLURM_NODEID) of SLURM_NTASKS_PER_NODE,
 * SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE ("4", "2(x3),1"). Inconsistent or malformed
 * values (rank >= world, local_rank >= local_world, anything but plain digits) are
 * WEFT_STATUS_INVALID_ARGUMENT with the variable named; *info is then unchanged. */
weft_status_t weft_bootstrap_read_env(weft_bootstrap_info_t *info);

/* The rendezvous address from the environment: "host:port" in addr (size addr_size), the host an
 * IPv4 address, a name, or an IPv6 address in brackets. A world of 1 needs none (addr = "").
 * WEFT_STATUS_INVALID_ARGUMENT when a world > 1 has no address, when the address or a port is
 * malformed, or when it would use MASTER_PORT. */
weft_status_t weft_bootstrap_read_addr(const weft_bootstrap_info_t *info, char *addr,
                                       size_t addr_size);

typedef struct weft_bootstrap weft_bootstrap_t;

/* Meets the other ranks at addr ("host:port"; rank 0 listens there, on the wildcard address
 * unless it is a loopback one). timeout_ns bounds this call and each later call (0: 60 s).
 * Returns within it (the ranks other than 0 wait up to a few seconds more for rank 0's verdict):
 * WEFT_STATUS_TIMEOUT naming the ranks that never came (or saying rank 0 never listened);
 * WEFT_STATUS_MISMATCH when ranks disagree on the world size, two claim one rank, or builds
 * differ; the same status on every rank that reached rank 0. A world of 1 needs no address and
 * no socket. */
weft_status_t weft_bootstrap_create(const char *addr, int rank, int world, uint64_t timeout_ns,
                                    weft_bootstrap_t **bs);
void weft_bootstrap_destroy(weft_bootstrap_t *bs);

int weft_bootstrap_rank(const weft_bootstrap_t *bs);
int weft_bootstrap_world(const weft_bootstrap_t *bs);

/* In place: buf holds world * bytes; this rank's slot is buf + rank * bytes (bytes may be 0).
 * Collective: every rank calls the same sequence of all-gathers and barriers. Every rank returns
 * the same status, with rank 0's diagnosis naming the rank at fault: WEFT_STATUS_MISMATCH when
 * the bytes differ (the bootstrap stays usable) or when ranks are at different calls;
 * WEFT_STATUS_REMOTE_ERROR when a rank left (seen as soon as its socket closes);
 * WEFT_STATUS_TIMEOUT when a rank did not arrive in time. Except after a size mismatch, a failure
 * sticks: every later call returns it at once. */
weft_status_t weft_bootstrap_allgather(weft_bootstrap_t *bs, void *buf, size_t bytes);
weft_status_t weft_bootstrap_barrier(weft_bootstrap_t *bs);

/* Between the ranks of one node: ranks[i] (world ranks, local_world of them, this rank among them
 * at local_rank) each contribute fd; peer_fds[i] receives a duplicate of rank ranks[i]'s fd
 * (peer_fds[local_rank] = dup of its own), close-on-exec. The caller closes the received fds;
 * on failure none are left open. Collective over the whole world (two bootstrap collectives
 * inside), every node with its own ranks[]; a failure on any rank fails every rank with its
 * reason. Uses abstract AF_UNIX sockets, so the ranks of a node must share a network
 * namespace; fds are taken only from processes of the same user. */
weft_status_t weft_bootstrap_exchange_fds(weft_bootstrap_t *bs, const int *ranks, int local_world,
                                          int local_rank, int fd, int *peer_fds);

#endif /* WEFT_BOOTSTRAP_H */
