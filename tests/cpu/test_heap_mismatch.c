/*
 * test_heap_mismatch.c — the collective check of weft_malloc / weft_free across 4 processes on
 * loopback, with no GPU: every rank builds a communicator around a real bootstrap and a heap
 * range that is never touched, then makes calls that disagree (sizes, order, kind) or cannot be
 * served on one rank. Every rank must get the error (never a hang), and its heap must be
 * unchanged.
 */
// weft-test: timeout=120
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/comm.h"
#include "support.h"

enum { WORLD = 4 };

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len))
    return -1;
  int port = ntohs(a.sin_port);
  close(s);
  return port;
}

static int run_rank(int rank, const char *addr) {
  snprintf(test_context, sizeof test_context, "rank %d", rank);
  weft_comm_t *comm = calloc(1, sizeof *comm);
  pthread_mutex_init(&comm->error_lock, NULL);
  comm->rank = comm->local_rank = rank;
  comm->world = comm->local_world = WORLD;
  comm->timeout_ns = 10000000000ull;
  if (weft_bootstrap_create(addr, rank, WORLD, comm->timeout_ns, &comm->bootstrap)) {
    printf("[%d] bootstrap: %s\n", rank, weft_get_last_error());
    return 1;
  }
  comm->heap.base = 0x7f0000000000ull;
  comm->heap.stride = (1u << 20) + WEFT_SYNC_BYTES;
  comm->heap.mine = comm->heap.base + (uint64_t)rank * comm->heap.stride;
  comm->heap.size = 1u << 20;
  weft_suballoc_init(&comm->heap.alloc, comm->heap.size, 1024);
  /* One allocation every rank made (as weft_malloc would have) to free later. */
  uint64_t off;
  weft_suballoc_alloc(&comm->heap.alloc, 4096, &off);
  void *live = (void *)(uintptr_t)(comm->heap.mine + WEFT_SYNC_BYTES + off);
  void *p;

  EXPECT_STATUS("sizes differ on rank 2", weft_malloc(comm, rank == 2 ? 8192 : 4096, &p),
                WEFT_STATUS_MISMATCH);
  /* Rank 3's heap is full (a local block no other rank has): it cannot serve a size the
   * others can. */
  uint64_t filler = 0;
  if (rank == 3) weft_suballoc_alloc(&comm->heap.alloc, (1u << 20) - 8192, &filler);
  EXPECT_STATUS("rank 3 cannot serve it", weft_malloc(comm, 65536, &p),
                rank == 3 ? WEFT_STATUS_OUT_OF_MEMORY : WEFT_STATUS_REMOTE_ERROR);
  if (rank == 3) weft_suballoc_free(&comm->heap.alloc, filler);
  EXPECT_STATUS("every rank asks too much", weft_malloc(comm, 2u << 20, &p),
                WEFT_STATUS_OUT_OF_MEMORY);
  EXPECT_STATUS("rank 1 frees while others allocate",
                rank == 1 ? weft_free(comm, live) : weft_malloc(comm, 4096, &p),
                WEFT_STATUS_MISMATCH);
  EXPECT(weft_suballoc_used(&comm->heap.alloc) == 4096, "the heap changed: %llu bytes in use",
         (unsigned long long)weft_suballoc_used(&comm->heap.alloc));
  /* Every rank agrees: the free goes through everywhere. */
  EXPECT_STATUS("agreed free", weft_free(comm, live), WEFT_STATUS_SUCCESS);
  EXPECT(weft_suballoc_used(&comm->heap.alloc) == 0, "agreed free left the heap in use");
  weft_bootstrap_destroy(comm->bootstrap);
  weft_suballoc_destroy(&comm->heap.alloc);
  free(comm);
  return test_failures ? 1 : 0;
}

int main(void) {
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", free_port());
  pid_t pids[WORLD];
  for (int r = 0; r < WORLD; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(run_rank(r, addr));
  }
  int bad = 0;
  for (int r = 0; r < WORLD; r++) {
    int status;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
      printf("rank %d failed (status %d)\n", r, status);
      bad = 1;
    }
  }
  printf("%s\n", bad ? "FAILED" : "ok");
  return bad;
}
