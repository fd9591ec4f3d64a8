/*
 * test_bootstrap.c — the bootstrap without a GPU: each launcher's variables and their precedence,
 * the rendezvous address rules, and a 4-process rendezvous on loopback: all-gather (every byte
 * checked), barriers, fd passing, a size mismatch (an error on every rank), a rank that never
 * comes (every present rank fails within the deadline, naming it) and a rank that dies mid-way
 * (the others fail, no hang).
 */
// weft-test: timeout=120
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/bootstrap.h"

static int fails;
#define EXPECT(cond, ...)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fails++;                                                                            \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      printf(__VA_ARGS__);                                                                \
      printf("\n");                                                                       \
    }                                                                                     \
  } while (0)

static const char *all_vars[] = {
    "WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_WORLD_SIZE", "RANK",
    "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "MASTER_ADDR",
    "MASTER_PORT", "WEFT_BOOTSTRAP_ADDR", "WEFT_BOOTSTRAP_PORT"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++) unsetenv(all_vars[i]);
}

/* Sets "NAME=value" pairs from a NULL-terminated list. */
static void set_env(const char *const *kv) {
  clear_env();
  for (; *kv; kv += 2) setenv(kv[0], kv[1], 1);
}

static void check_env(const char *what, const char *const *kv, weft_status_t want_st, int rank,
                      int world, int lrank, int lworld, const char *launcher) {
  set_env(kv);
  weft_bootstrap_info_t info;
  weft_status_t st = weft_bootstrap_read_env(&info);
  EXPECT(st == want_st, "%s: status %s, want %s (%s)", what, weft_get_error_string(st),
         weft_get_error_string(want_st), weft_get_last_error());
  if (st == WEFT_STATUS_SUCCESS && want_st == WEFT_STATUS_SUCCESS)
    EXPECT(info.rank == rank && info.world == world && info.local_rank == lrank &&
               info.local_world == lworld && !strcmp(info.launcher, launcher),
           "%s: got %d/%d local %d/%d via %s, want %d/%d local %d/%d via %s", what, info.rank,
           info.world, info.local_rank, info.local_world, info.launcher, rank, world, lrank,
           lworld, launcher);
}

static void check_addr(const char *what, const char *const *kv, int world, weft_status_t want_st,
                       const char *want) {
  set_env(kv);
  weft_bootstrap_info_t info = {0, world, 0, world, "test"};
  char addr[128];
  weft_status_t st = weft_bootstrap_read_addr(&info, addr, sizeof addr);
  EXPECT(st == want_st, "%s: status %s, want %s", what, weft_get_error_string(st),
         weft_get_error_string(want_st));
  if (st == WEFT_STATUS_SUCCESS) EXPECT(!strcmp(addr, want), "%s: address '%s', want '%s'", what, addr, want);
}

static void test_env(void) {
  const char *none[] = {NULL};
  check_env("no variables: a world of one", none, WEFT_STATUS_SUCCESS, 0, 1, 0, 1, "none");
  const char *weft[] = {"WEFT_RANK", "3", "WEFT_WORLD_SIZE", "8", "WEFT_LOCAL_RANK", "3",
                        "WEFT_LOCAL_WORLD_SIZE", "4", NULL};
  check_env("WEFT_*", weft, WEFT_STATUS_SUCCESS, 3, 8, 3, 4, "WEFT");
  const char *torch[] = {"RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", NULL};
  check_env("torchrun", torch, WEFT_STATUS_SUCCESS, 5, 8, 1, 4, "torchrun");
  const char *ompi[] = {"OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "4", NULL};
  check_env("Open MPI", ompi, WEFT_STATUS_SUCCESS, 2, 4, 2, 4, "Open MPI");
  const char *slurm[] = {"SLURM_PROCID", "6", "SLURM_NTASKS", "8", "SLURM_LOCALID", "2",
                         "SLURM_NTASKS_PER_NODE", "4", NULL};
  check_env("Slurm", slurm, WEFT_STATUS_SUCCESS, 6, 8, 2, 4, "Slurm");
  const char *slurm2[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "6", "SLURM_LOCALID", "1",
                          "SLURM_TASKS_PER_NODE", "2(x3)", NULL};
  check_env("Slurm 2(x3)", slurm2, WEFT_STATUS_SUCCESS, 1, 6, 1, 2, "Slurm");
  const char *prec[] = {"WEFT_RANK", "1", "WEFT_WORLD_SIZE", "2", "RANK", "7", "WORLD_SIZE", "9",
                        "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3", NULL};
  check_env("WEFT_* wins over torchrun and MPI", prec, WEFT_STATUS_SUCCESS, 1, 2, 1, 2, "WEFT");
  const char *prec2[] = {"RANK", "2", "WORLD_SIZE", "3", "OMPI_COMM_WORLD_RANK", "0",
                         "OMPI_COMM_WORLD_SIZE", "5", "SLURM_PROCID", "1", "SLURM_NTASKS", "2", NULL};
  check_env("torchrun wins over MPI and Slurm", prec2, WEFT_STATUS_SUCCESS, 2, 3, 2, 3, "torchrun");
  const char *bad1[] = {"WEFT_RANK", "4", "WEFT_WORLD_SIZE", "4", NULL};
  check_env("rank == world", bad1, WEFT_STATUS_INVALID_ARGUMENT, 0, 0, 0, 0, "");
  const char *bad2[] = {"RANK", "x", "WORLD_SIZE", "4", NULL};
  check_env("rank not a number", bad2, WEFT_STATUS_INVALID_ARGUMENT, 0, 0, 0, 0, "");
  const char *bad3[] = {"RANK", "1", NULL};
  check_env("rank without world", bad3, WEFT_STATUS_INVALID_ARGUMENT, 0, 0, 0, 0, "");
  const char *bad4[] = {"WEFT_RANK", "1", "WEFT_WORLD_SIZE", "4", "WEFT_LOCAL_RANK", "2",
                        "WEFT_LOCAL_WORLD_SIZE", "2", NULL};
  check_env("local rank >= local world", bad4, WEFT_STATUS_INVALID_ARGUMENT, 0, 0, 0, 0, "");
  const char *bad5[] = {"WEFT_RANK", "-1", "WEFT_WORLD_SIZE", "4", NULL};
  check_env("negative rank", bad5, WEFT_STATUS_INVALID_ARGUMENT, 0, 0, 0, 0, "");

  const char *a1[] = {"WEFT_BOOTSTRAP_ADDR", "10.0.0.1:4000", "MASTER_ADDR", "h", "MASTER_PORT", "29500", NULL};
  check_addr("WEFT_BOOTSTRAP_ADDR wins", a1, 4, WEFT_STATUS_SUCCESS, "10.0.0.1:4000");
  const char *a2[] = {"MASTER_ADDR", "node7", "MASTER_PORT", "29500", NULL};
  check_addr("MASTER_ADDR with MASTER_PORT+1 (never torch's port)", a2, 4, WEFT_STATUS_SUCCESS, "node7:29501");
  const char *a3[] = {"MASTER_ADDR", "node7", "MASTER_PORT", "29500", "WEFT_BOOTSTRAP_PORT", "31000", NULL};
  check_addr("WEFT_BOOTSTRAP_PORT", a3, 4, WEFT_STATUS_SUCCESS, "node7:31000");
  const char *a4[] = {NULL};
  check_addr("world 4 without address", a4, 4, WEFT_STATUS_INVALID_ARGUMENT, "");
  check_addr("world 1 needs none", a4, 1, WEFT_STATUS_SUCCESS, "");
  const char *a5[] = {"WEFT_BOOTSTRAP_ADDR", "nohostport", NULL};
  check_addr("address without a port", a5, 4, WEFT_STATUS_INVALID_ARGUMENT, "");
  const char *a6[] = {"MASTER_ADDR", "h", "MASTER_PORT", "abc", NULL};
  check_addr("MASTER_PORT not a number", a6, 4, WEFT_STATUS_INVALID_ARGUMENT, "");
  clear_env();
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len))
    return 0;
  close(s);
  return ntohs(a.sin_port);
}

enum { WORLD = 4 };
enum scenario { FULL, MISSING, DIES };

/* One rank's part; returns its exit code (0 = as expected). */
static int rank_main(int rank, const char *addr, enum scenario sc) {
  uint64_t timeout = sc == MISSING ? 2000000000ull : 10000000000ull;
  weft_bootstrap_t *bs;
  weft_status_t st = weft_bootstrap_create(addr, rank, WORLD, timeout, &bs);
  if (sc == MISSING) {
    /* Rank 3 never comes: every present rank must fail with a timeout naming it. */
    if (st != WEFT_STATUS_TIMEOUT) return printf("[%d] missing rank: %s\n", rank, weft_get_error_string(st)), 1;
    if (rank == 0 && !strstr(weft_get_last_error(), "3")) return printf("[0] message lacks rank 3: %s\n", weft_get_last_error()), 1;
    return 0;
  }
  if (st) return printf("[%d] create: %s\n", rank, weft_get_last_error()), 1;
  if (sc == DIES) {
    if (rank == 2) _exit(0); /* leaves without a word */
    st = weft_bootstrap_barrier(bs);
    weft_bootstrap_destroy(bs);
    if (st != WEFT_STATUS_REMOTE_ERROR && st != WEFT_STATUS_TIMEOUT)
      return printf("[%d] after rank 2 died: %s\n", rank, weft_get_error_string(st)), 1;
    return 0;
  }
  int bad = 0;
  /* all-gather of 1000-byte blobs, 50 rounds, each byte a function of (round, rank, i) */
  enum { B = 1000 };
  unsigned char *buf = malloc(B * WORLD);
  for (int round = 0; round < 50 && !bad; round++) {
    memset(buf, 0xEE, B * WORLD);
    for (int i = 0; i < B; i++) buf[rank * B + i] = (unsigned char)(round * 31 + rank * 7 + i);
    if (weft_bootstrap_allgather(bs, buf, B)) bad = printf("[%d] allgather: %s\n", rank, weft_get_last_error());
    for (int r = 0; r < WORLD && !bad; r++)
      for (int i = 0; i < B; i++)
        if (buf[r * B + i] != (unsigned char)(round * 31 + r * 7 + i)) {
          bad = printf("[%d] allgather byte %d of rank %d wrong in round %d\n", rank, i, r, round);
          break;
        }
  }
  for (int i = 0; i < 100 && !bad; i++)
    if (weft_bootstrap_barrier(bs)) bad = printf("[%d] barrier: %s\n", rank, weft_get_last_error());
  /* fd passing: each rank's memfd holds its rank; peers read it back through the passed fd */
  int fd = memfd_create("weft-test", 0), fds[WORLD], ranks[WORLD] = {0, 1, 2, 3};
  char msg[16];
  snprintf(msg, sizeof msg, "rank %d", rank);
  if (write(fd, msg, sizeof msg) != sizeof msg) bad = 1;
  if (!bad && weft_bootstrap_exchange_fds(bs, ranks, WORLD, rank, fd, fds))
    bad = printf("[%d] exchange_fds: %s\n", rank, weft_get_last_error());
  for (int r = 0; r < WORLD && !bad; r++) {
    char got[16] = "", want[16];
    snprintf(want, sizeof want, "rank %d", r);
    if (pread(fds[r], got, sizeof got, 0) != sizeof got || strcmp(got, want))
      bad = printf("[%d] fd of rank %d reads '%s'\n", rank, r, got);
    close(fds[r]);
  }
  close(fd);
  /* A size mismatch fails every rank, and the bootstrap stays usable after it. */
  st = weft_bootstrap_allgather(bs, buf, rank == 1 ? 8 : 4);
  if (st != WEFT_STATUS_MISMATCH) bad = printf("[%d] mismatch gave %s\n", rank, weft_get_error_string(st));
  if (!bad && weft_bootstrap_barrier(bs)) bad = printf("[%d] barrier after mismatch: %s\n", rank, weft_get_last_error());
  free(buf);
  weft_bootstrap_destroy(bs);
  return bad ? 1 : 0;
}

static void run_scenario(const char *name, enum scenario sc) {
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", free_port());
  int n = sc == MISSING ? WORLD - 1 : WORLD;
  pid_t pids[WORLD];
  uint64_t t0 = weft_now_ns();
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      fflush(stdout);
      _exit(rank_main(r, addr, sc));
    }
  }
  for (int r = 0; r < n; r++) {
    int status;
    waitpid(pids[r], &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: rank %d failed", name, r);
  }
  double s = (double)(weft_now_ns() - t0) * 1e-9;
  printf("%-40s %.2f s\n", name, s);
  if (sc == MISSING) EXPECT(s < 2.0 + 3.0, "%s: took %.1f s for a 2 s deadline", name, s);
  if (sc == DIES) EXPECT(s < 10.0, "%s: took %.1f s", name, s);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  test_env();
  run_scenario("4 ranks: all-gather, barrier, fds, mismatch", FULL);
  run_scenario("rank 3 missing (2 s deadline)", MISSING);
  run_scenario("rank 2 dies after the rendezvous", DIES);
  printf("%s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
