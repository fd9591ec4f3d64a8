/*
 * test_rendezvous.c — the bootstrap's TCP rendezvous and collectives with real processes on
 * loopback, no GPU: 4 forked ranks per scenario.
 *
 * Scenarios: everything working (all-gather of several sizes with every byte checked, 100
 * barriers, fd passing inside one node of 4 and two nodes of 2, a size mismatch that fails every
 * rank and leaves the bootstrap usable, a barrier/all-gather mix-up that fails every rank for
 * good); a rank that never comes (every present rank times out within the deadline plus slack,
 * naming it); rank 0 missing; a rank that exits mid-way and rank 0 that exits mid-way (the
 * others fail at once, naming it); a rank stuck outside the collective; a rank claiming another
 * world size; two processes claiming one rank; a stranger connecting to the port.
 *
 * Each rank exits 0 when everything it saw was as expected; the parent checks every exit code
 * and how long the scenario took. Exit 0 on pass, 1 on failure.
 */
// weft-test: timeout=120
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/bootstrap.h"
#include "support.h"

#define WORLD 4
#define NS 1000000000ull

/* In a rank, a failed check fails the rank: REQUIRE returns 1 from the rank's function, which
 * becomes the process's exit status (the verdict that the parent reads); a weft call that must
 * succeed (OK) exits 1. test_context names the rank in every FAIL line. */

static double now_s(void) { return (double)weft_now_ns() * 1e-9; }

/* A loopback port for one scenario: bound with SO_REUSEADDR and kept (never listening) until the
 * scenario ends, so that nothing else takes it while rank 0 can still listen on it (weftrun's
 * trick, checked here too). */
static int reserve_port(int *port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len)) {
    perror("reserve_port");
    exit(1);
  }
  *port = ntohs(a.sin_port);
  return s;
}

/* ---------------------------------------------------------------------------------------- */
/* What the ranks do                                                                         */
/* ---------------------------------------------------------------------------------------- */

typedef struct proc_spec {
  int rank, world;     /* what this process claims */
  int role;            /* scenario-specific */
} proc_spec_t;

typedef int (*rank_fn)(const proc_spec_t *p, const char *addr);

static uint8_t pattern(int rank, size_t i, int iter) {
  return (uint8_t)(rank * 131 + i * 7 + (i >> 8) * 13 + iter * 29 + 1);
}

static int check_allgather(weft_bootstrap_t *bs, size_t bytes, int iter) {
  int rank = weft_bootstrap_rank(bs), world = weft_bootstrap_world(bs);
  uint8_t *buf = malloc(bytes * (size_t)world + 1);
  REQUIRE(EXPECT(buf, "malloc"));
  memset(buf, 0xEE, bytes * (size_t)world);
  for (size_t i = 0; i < bytes; i++) buf[(size_t)rank * bytes + i] = pattern(rank, i, iter);
  OK(weft_bootstrap_allgather(bs, buf, bytes));
  for (int r = 0; r < world; r++)
    for (size_t i = 0; i < bytes; i++)
      REQUIRE(EXPECT(buf[(size_t)r * bytes + i] == pattern(r, i, iter),
                     "all-gather of %zu bytes: byte %zu of rank %d is %u, want %u", bytes, i, r,
                     buf[(size_t)r * bytes + i], pattern(r, i, iter)));
  free(buf);
  return 0;
}

/* Each rank of the group shares a memfd holding its own text; every rank reads all of them. */
static int check_fds(weft_bootstrap_t *bs, const int *ranks, int n, int me) {
  char text[64];
  int rank = weft_bootstrap_rank(bs);
  int fd = memfd_create("weft-test", MFD_CLOEXEC);
  REQUIRE(EXPECT(fd >= 0, "memfd_create"));
  int len = snprintf(text, sizeof text, "rank %d of group %d, pid %d", rank, ranks[0], (int)getpid());
  REQUIRE(EXPECT(write(fd, text, (size_t)len) == len, "write memfd"));
  int peer[WORLD];
  OK(weft_bootstrap_exchange_fds(bs, ranks, n, me, fd, peer));
  close(fd); /* the received duplicates keep every file alive */
  for (int i = 0; i < n; i++) {
    char got[64] = "";
    REQUIRE(EXPECT(peer[i] >= 0 && peer[i] != fd, "slot %d: fd %d", i, peer[i]));
    ssize_t k = pread(peer[i], got, sizeof got - 1, 0);
    REQUIRE(EXPECT(k > 0, "read of rank %d's file", ranks[i]));
    got[k] = 0;
    char want[64];
    snprintf(want, sizeof want, "rank %d of group %d, pid", ranks[i], ranks[0]);
    REQUIRE(EXPECT(!strncmp(got, want, strlen(want)), "slot %d holds \"%s\", want \"%s...\"", i,
                   got, want));
    close(peer[i]);
  }
  return 0;
}

static int rank_full(const proc_spec_t *p, const char *addr) {
  weft_bootstrap_t *bs;
  OK(weft_bootstrap_create(addr, p->rank, p->world, 10 * NS, &bs));
  REQUIRE(EXPECT(weft_bootstrap_rank(bs) == p->rank && weft_bootstrap_world(bs) == WORLD,
                 "rank/world"));
  /* Sizes around the socket buffers: 1 MiB per rank makes rank 0 read all ranks at once. */
  static const size_t sizes[] = {1, 3, 40, 4096, 65537, 1 << 20, 0};
  for (int it = 0; it < 7; it++)
    if (check_allgather(bs, sizes[it], it)) return 1;
  for (int it = 0; it < 50; it++)
    if (check_allgather(bs, 64, it)) return 1;
  double t0 = now_s();
  for (int i = 0; i < 100; i++) OK(weft_bootstrap_barrier(bs));
  if (p->rank == 0) printf("  100 barriers of 4 ranks: %.1f us each\n", (now_s() - t0) * 1e4);

  /* fds: one node of 4, then two "nodes" of 2 (ranks 0,1 and 2,3). */
  int all[WORLD] = {0, 1, 2, 3};
  if (check_fds(bs, all, WORLD, p->rank)) return 1;
  int half[2] = {p->rank < 2 ? 0 : 2, p->rank < 2 ? 1 : 3};
  if (check_fds(bs, half, 2, p->rank % 2)) return 1;
  /* A node of one rank still takes part in the world-wide steps. */
  int solo[1] = {p->rank};
  if (check_fds(bs, solo, 1, 0)) return 1;
  int bad_ranks[2] = {p->rank, p->rank};
  int pfds[2];
  REQUIRE(EXPECT_ERROR(weft_bootstrap_exchange_fds(bs, bad_ranks, 2, 0, 0, pfds),
                       WEFT_STATUS_INVALID_ARGUMENT, "twice"));

  /* Rank 2 passes another size: every rank fails, naming it, and the bootstrap goes on. */
  char buf[8 * WORLD];
  memset(buf, 0, sizeof buf);
  REQUIRE(EXPECT_ERROR(weft_bootstrap_allgather(bs, buf, p->rank == 2 ? 8 : 4),
                       WEFT_STATUS_MISMATCH, "rank 2"));
  OK(weft_bootstrap_barrier(bs));
  if (check_allgather(bs, 100, 99)) return 1;

  /* Rank 1 calls a barrier where the others all-gather: every rank fails, and for good. */
  if (p->rank == 1)
    REQUIRE(EXPECT_ERROR(weft_bootstrap_barrier(bs), WEFT_STATUS_MISMATCH, "barrier"));
  else
    REQUIRE(EXPECT_ERROR(weft_bootstrap_allgather(bs, buf, 4), WEFT_STATUS_MISMATCH, "barrier"));
  REQUIRE(EXPECT_ERROR(weft_bootstrap_barrier(bs), WEFT_STATUS_MISMATCH, "failed earlier"));
  weft_bootstrap_destroy(bs);
  return 0;
}

/* Present ranks of a world where one (role 1: rank 3; role 2: rank 0) never comes. */
static int rank_missing(const proc_spec_t *p, const char *addr) {
  weft_bootstrap_t *bs = NULL;
  double t0 = now_s();
  const char *want = p->role == 1 ? "rank(s) 3 never connected" : "could not connect to rank 0";
  REQUIRE(EXPECT_ERROR(weft_bootstrap_create(addr, p->rank, p->world, 2 * NS, &bs),
                       WEFT_STATUS_TIMEOUT, want));
  double dt = now_s() - t0;
  /* The deadline, plus rank 0's verdict travelling, plus slack for a loaded machine. */
  REQUIRE(EXPECT(dt >= 1.9 && dt < 4.5, "took %.2f s for a 2 s deadline", dt));
  REQUIRE(EXPECT(bs == NULL, "no bootstrap on failure"));
  return 0;
}

/* Role 1: this rank exits after a few barriers; the others must fail promptly, naming it. */
static int rank_dies(const proc_spec_t *p, const char *addr) {
  weft_bootstrap_t *bs;
  OK(weft_bootstrap_create(addr, p->rank, p->world, 20 * NS, &bs));
  for (int i = 0; i < 5; i++) OK(weft_bootstrap_barrier(bs));
  if (p->role == 1) {
    fflush(stdout);
    _exit(0); /* sockets close with the process, as in a crash */
  }
  double t0 = now_s();
  weft_status_t st = WEFT_STATUS_SUCCESS;
  for (int i = 0; i < 1000 && st == WEFT_STATUS_SUCCESS; i++) st = weft_bootstrap_barrier(bs);
  double dt = now_s() - t0;
  REQUIRE(EXPECT(st == WEFT_STATUS_REMOTE_ERROR, "got \"%s\", want \"remote rank failed\"",
                 weft_get_error_string(st)));
  char who[32];
  snprintf(who, sizeof who, "rank %d", p->role == 2 ? 0 : 2);
  REQUIRE(EXPECT(strstr(weft_get_last_error(), who) && strstr(weft_get_last_error(), "left"),
                 "message does not say that %s left: %s", who, weft_get_last_error()));
  REQUIRE(EXPECT(dt < 3.0, "took %.2f s to notice (deadline 20 s): it waited instead of seeing "
                           "the close", dt));
  /* Sticky: the next call fails at once with the same diagnosis. */
  t0 = now_s();
  REQUIRE(EXPECT_ERROR(weft_bootstrap_allgather(bs, NULL, 0), WEFT_STATUS_REMOTE_ERROR, who));
  REQUIRE(EXPECT(now_s() - t0 < 0.1, "the sticky failure waited"));
  weft_bootstrap_destroy(bs);
  return 0;
}

/* Role 1: alive but late to the collective (busy elsewhere for 3 s, past the 1 s timeout). */
static int rank_stuck(const proc_spec_t *p, const char *addr) {
  weft_bootstrap_t *bs;
  OK(weft_bootstrap_create(addr, p->rank, p->world, 1 * NS, &bs));
  OK(weft_bootstrap_barrier(bs));
  double t0 = now_s();
  if (p->role == 1) {
    struct timespec ts = {3, 0};
    nanosleep(&ts, NULL);
  }
  /* Everyone, the late rank included, hears rank 0's verdict naming rank 3. */
  REQUIRE(
      EXPECT_ERROR(weft_bootstrap_barrier(bs), WEFT_STATUS_TIMEOUT, "rank(s) 3 did not reach it"));
  double dt = now_s() - t0;
  if (p->role != 1) REQUIRE(EXPECT(dt >= 0.9 && dt < 3.0, "took %.2f s for a 1 s deadline", dt));
  weft_bootstrap_destroy(bs);
  return 0;
}

/* A short job: meet, all-gather, barrier (for other address forms). */
static int rank_small(const proc_spec_t *p, const char *addr) {
  weft_bootstrap_t *bs;
  OK(weft_bootstrap_create(addr, p->rank, p->world, 5 * NS, &bs));
  if (check_allgather(bs, 1000, 1)) return 1;
  OK(weft_bootstrap_barrier(bs));
  weft_bootstrap_destroy(bs);
  return 0;
}

/* Every process must fail the rendezvous with `want`, naming the problem. */
static int rank_bad_join(const proc_spec_t *p, const char *addr) {
  weft_bootstrap_t *bs = NULL;
  double t0 = now_s();
  const char *text = p->role == 1 ? "world" : "two processes claim rank 2";
  REQUIRE(EXPECT_ERROR(weft_bootstrap_create(addr, p->rank, p->world, 3 * NS, &bs),
                       WEFT_STATUS_MISMATCH, text));
  /* Rank 0 stays until every rank heard the verdict, or its deadline when one never comes (the
   * twins scenario has no rank 3); the others hear at once. */
  double limit = p->rank == 0 && p->role == 2 ? 4.5 : 1.5;
  REQUIRE(EXPECT(now_s() - t0 < limit, "a mismatch took %.2f s to report (deadline 3 s)",
                 now_s() - t0));
  return 0;
}

/* Role 1: a stranger that connects and sends garbage; the ranks must not care. */
static int rank_stranger(const proc_spec_t *p, const char *addr) {
  if (p->role == 1) {
    int port = atoi(strrchr(addr, ':') + 1);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int tries = 0; tries < 200; tries++) {
      int s = socket(AF_INET, SOCK_STREAM, 0);
      if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        static const char junk[64] = "GET / HTTP/1.0\r\n\r\n";
        if (write(s, junk, sizeof junk) < 0) return 0;
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
        close(s);
        return 0;
      }
      if (s >= 0) close(s);
      struct timespec ts = {0, 10000000};
      nanosleep(&ts, NULL);
    }
    REQUIRE(EXPECT(0, "the stranger never reached rank 0"));
  }
  if (p->rank != 0) { /* let the stranger get there first */
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  weft_bootstrap_t *bs;
  OK(weft_bootstrap_create(addr, p->rank, p->world, 5 * NS, &bs));
  if (check_allgather(bs, 16, 0)) return 1;
  weft_bootstrap_destroy(bs);
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The parent                                                                                */
/* ---------------------------------------------------------------------------------------- */

static const char *host_fmt = "127.0.0.1:%d"; /* how a scenario writes its address */

/* Runs one process per spec; every one must exit 0 within max_s. */
static void scenario(const char *name, const proc_spec_t *specs, int n, rank_fn fn, double max_s) {
  int port;
  int hold = reserve_port(&port);
  char addr[64];
  snprintf(addr, sizeof addr, host_fmt, port);
  printf("%s\n", name);
  fflush(stdout);
  pid_t pids[8];
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    pids[i] = fork();
    if (pids[i] < 0) {
      perror("fork");
      exit(1);
    }
    if (pids[i] == 0) {
      close(hold);
      snprintf(test_context, sizeof test_context, "rank %d", specs[i].rank);
      int rc = fn(&specs[i], addr);
      fflush(stdout);
      _exit(rc);
    }
  }
  /* Bounded wait: a hang is a failure, never a hung test. */
  int left = n;
  bool ok = true;
  while (left > 0) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      left--;
      int i = 0;
      while (i < n && pids[i] != p) i++;
      if (i < n) pids[i] = 0;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("  FAIL process %d (rank %d) %s %d\n", i, i < n ? specs[i].rank : -1,
               WIFEXITED(status) ? "exited with" : "killed by signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        ok = false;
      }
      continue;
    }
    if (now_s() - t0 > max_s + 10) {
      printf("  FAIL processes still running after %.0f s: a hang\n", max_s + 10);
      for (int i = 0; i < n; i++)
        if (pids[i] > 0) kill(pids[i], SIGKILL);
      ok = false;
      while (waitpid(-1, NULL, 0) > 0) {}
      break;
    }
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  double dt = now_s() - t0;
  if (dt > max_s) {
    printf("  FAIL took %.2f s, limit %.1f s\n", dt, max_s);
    ok = false;
  }
  close(hold);
  printf("  %s (%.2f s)\n", ok ? "ok" : "FAILED", dt);
  if (!ok) test_failures++;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* Expected failures would each log a WARN line; the checks print what matters. */
  setenv("WEFT_DEBUG", "NONE", 1);

  proc_spec_t four[WORLD] = {{0, WORLD, 0}, {1, WORLD, 0}, {2, WORLD, 0}, {3, WORLD, 0}};
  scenario("4 ranks: all-gather (every byte), 100 barriers, fd passing, size and call mismatches",
           four, WORLD, rank_full, 20);

  proc_spec_t no3[3] = {{0, WORLD, 1}, {1, WORLD, 1}, {2, WORLD, 1}};
  scenario("rank 3 never comes (2 s deadline): every rank times out naming it", no3, 3,
           rank_missing, 5);
  proc_spec_t no0[3] = {{1, WORLD, 2}, {2, WORLD, 2}, {3, WORLD, 2}};
  scenario("rank 0 never comes (2 s deadline): every rank times out saying so", no0, 3,
           rank_missing, 5);

  proc_spec_t dies2[WORLD] = {{0, WORLD, 0}, {1, WORLD, 0}, {2, WORLD, 1}, {3, WORLD, 0}};
  scenario("rank 2 exits mid-way (20 s deadline): the others fail at once, naming it", dies2,
           WORLD, rank_dies, 4);
  proc_spec_t dies0[WORLD] = {{0, WORLD, 1}, {1, WORLD, 2}, {2, WORLD, 2}, {3, WORLD, 2}};
  scenario("rank 0 exits mid-way (20 s deadline): the others fail at once, naming it", dies0,
           WORLD, rank_dies, 4);

  proc_spec_t stuck[WORLD] = {{0, WORLD, 0}, {1, WORLD, 0}, {2, WORLD, 0}, {3, WORLD, 1}};
  scenario("rank 3 late to a barrier (1 s deadline): every rank times out naming it", stuck,
           WORLD, rank_stuck, 6);

  proc_spec_t wrong_world[WORLD] = {{0, WORLD, 1}, {1, WORLD, 1}, {2, WORLD, 1}, {3, 5, 1}};
  scenario("rank 3 claims a world of 5: every process fails with a mismatch", wrong_world, WORLD,
           rank_bad_join, 6);
  proc_spec_t twins[WORLD] = {{0, WORLD, 2}, {1, WORLD, 2}, {2, WORLD, 2}, {2, WORLD, 2}};
  scenario("two processes claim rank 2: every process fails with a mismatch", twins, WORLD,
           rank_bad_join, 6);

  proc_spec_t stranger[WORLD + 1] = {{0, WORLD, 0}, {1, WORLD, 0}, {2, WORLD, 0}, {3, WORLD, 0},
                                     {-1, WORLD, 1}};
  scenario("a stranger connects to rank 0's port: ignored", stranger, WORLD + 1, rank_stranger, 6);

  host_fmt = "localhost:%d";
  scenario("a host name (localhost)", four, WORLD, rank_small, 6);
  int s6 = socket(AF_INET6, SOCK_STREAM, 0);
  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  if (s6 >= 0 && bind(s6, (struct sockaddr *)&a6, sizeof a6) == 0) {
    close(s6);
    host_fmt = "[::1]:%d";
    scenario("IPv6 loopback in brackets", four, WORLD, rank_small, 6);
  } else {
    printf("IPv6 loopback in brackets\n  not tested: no IPv6 loopback here\n");
    if (s6 >= 0) close(s6);
  }
  host_fmt = "127.0.0.1:%d";

  /* Argument checks need no peers. */
  weft_bootstrap_t *bs = NULL;
  printf("bad arguments\n");
  if (weft_bootstrap_create(NULL, 0, 2, NS, &bs) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_create("127.0.0.1:1", 2, 2, NS, &bs) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_create("127.0.0.1:1", 0, 0, NS, &bs) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_create("127.0.0.1", 1, 2, NS, &bs) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_create("no-such-host.invalid:4000", 1, 2, NS, &bs) ==
          WEFT_STATUS_SUCCESS ||
      weft_bootstrap_allgather(NULL, NULL, 0) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_barrier(NULL) != WEFT_STATUS_INVALID_ARGUMENT) {
    printf("  FAIL an argument check (last error: %s)\n", weft_get_last_error());
    test_failures++;
  }
  /* A world of one needs no address and no peers, and every collective is a no-op. */
  int fd = memfd_create("solo", MFD_CLOEXEC), got = -1, me = 0;
  if (weft_bootstrap_create(NULL, 0, 1, NS, &bs) != WEFT_STATUS_SUCCESS ||
      weft_bootstrap_barrier(bs) != WEFT_STATUS_SUCCESS ||
      weft_bootstrap_allgather(bs, &me, sizeof me) != WEFT_STATUS_SUCCESS ||
      weft_bootstrap_exchange_fds(bs, &me, 1, 0, fd, &got) != WEFT_STATUS_SUCCESS || got < 0 ||
      got == fd) {
    printf("  FAIL world of one (last error: %s)\n", weft_get_last_error());
    test_failures++;
  }
  if (got >= 0) close(got);
  close(fd);
  weft_bootstrap_destroy(bs);
  printf("  done\n");

  printf(test_failures ? "FAILED: %d scenario(s)\n" : "PASSED\n", test_failures);
  return test_failures ? 1 : 0;
}
