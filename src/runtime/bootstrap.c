/*
 * bootstrap.c — rank discovery from launcher variables, the TCP star rendezvous, all-gather and
 * barrier of small blobs, and fd passing between the ranks of a node (see bootstrap.h).
 *
 * Wire format: every message is a header {magic, kind, rank, bytes} then bytes of payload. Rank 0
 * holds one socket per other rank; an all-gather is "everyone sends its blob to rank 0, rank 0
 * checks sizes and sends the whole array back". All I/O goes through poll() with the deadline
 * of the call, so a dead or missing rank is an error within the timeout, never a hang.
 */
#include "bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BOOT_MAGIC 0x77656674u /* "weft" */
#define BOOT_VERSION 1u

enum { MSG_HELLO = 1, MSG_GATHER = 2, MSG_RESULT = 3, MSG_ERROR = 4 };

typedef struct msg_header {
  uint32_t magic, kind;
  int32_t rank, world;
  uint64_t bytes;
} msg_header_t;

struct weft_bootstrap {
  int rank, world;
  uint64_t timeout_ns;
  int *peers;    /* rank 0: socket of every rank (index 0 unused); others: peers[0] = rank 0 */
  char job_id[64];
};

/* ---------------------------------------------------------------------------------------- */
/* Environment                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Parses a non-negative int; false if absent. *bad names a malformed variable. */
static bool env_int(const char *name, int *out, const char **bad) {
  const char *s = getenv(name);
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > 1 << 30) {
    if (!*bad) *bad = name;
    return true;
  }
  *out = (int)v;
  return true;
}

weft_status_t weft_bootstrap_read_env(weft_bootstrap_info_t *info) {
  static const struct {
    const char *launcher, *rank, *world, *local_rank, *local_world;
  } schemes[] = {
      {"WEFT", "WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_WORLD_SIZE"},
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
      {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
  };
  WEFT_ARG(NULL, info, "info is NULL");
  *info = (weft_bootstrap_info_t){0, 1, 0, 1, "none"};
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
    const char *bad = NULL;
    int rank = -1, world = -1, lrank = -1, lworld = -1;
    bool has_rank = env_int(schemes[i].rank, &rank, &bad);
    bool has_world = env_int(schemes[i].world, &world, &bad);
    if (!has_rank && !has_world) continue;
    if (bad)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "%s=%s is not a non-negative integer",
                      bad, getenv(bad));
    if (!has_rank || !has_world)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "%s is set but %s is not",
                      has_rank ? schemes[i].rank : schemes[i].world,
                      has_rank ? schemes[i].world : schemes[i].rank);
    if (world < 1 || rank >= world)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "%s=%d is not below %s=%d",
                      schemes[i].rank, rank, schemes[i].world, world);
    bool has_lrank = env_int(schemes[i].local_rank, &lrank, &bad);
    bool has_lworld = false;
    if (schemes[i].local_world) {
      has_lworld = env_int(schemes[i].local_world, &lworld, &bad);
    } else { /* Slurm: "4" or "4(x2),2" -- this node's count is the first number */
      const char *s = getenv("SLURM_NTASKS_PER_NODE");
      if (!s) s = getenv("SLURM_TASKS_PER_NODE");
      if (s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1) bad = "SLURM_NTASKS_PER_NODE";
        else lworld = (int)v, has_lworld = true;
      }
    }
    if (bad)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "%s=%s is not a valid count", bad,
                      getenv(bad) ? getenv(bad) : "");
    if (!has_lrank) lrank = rank;           /* one node */
    if (!has_lworld) lworld = has_lrank ? world : world;
    if (lworld < 1 || lrank >= lworld || lworld > world)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "local rank %d of %d (from %s) is inconsistent with rank %d of %d", lrank,
                      lworld, schemes[i].launcher, rank, world);
    *info = (weft_bootstrap_info_t){rank, world, lrank, lworld, schemes[i].launcher};
    return WEFT_STATUS_SUCCESS;
  }
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_read_addr(const weft_bootstrap_info_t *info, char *addr,
                                       size_t addr_size) {
  WEFT_ARG(NULL, info && addr && addr_size > 0, "NULL argument");
  addr[0] = 0;
  const char *a = getenv("WEFT_BOOTSTRAP_ADDR");
  if (a && *a) {
    if (!strrchr(a, ':'))
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "WEFT_BOOTSTRAP_ADDR=%s lacks a port (host:port)", a);
    snprintf(addr, addr_size, "%s", a);
    return WEFT_STATUS_SUCCESS;
  }
  if (info->world == 1) return WEFT_STATUS_SUCCESS;
  const char *host = getenv("MASTER_ADDR");
  if (!host || !*host)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                    "%d ranks but no rendezvous address: set WEFT_BOOTSTRAP_ADDR=host:port (or "
                    "MASTER_ADDR and MASTER_PORT as torchrun does), or start with weftrun",
                    info->world);
  uint64_t port = 0;
  const char *wp = getenv("WEFT_BOOTSTRAP_PORT");
  if (wp && *wp) {
    if (!weft_env_u64("WEFT_BOOTSTRAP_PORT", 0, false, &port) || port == 0 || port > 65535)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "WEFT_BOOTSTRAP_PORT=%s is not a port", wp);
  } else {
    /* torch's store holds MASTER_PORT itself: weft takes the next one. */
    const char *mp = getenv("MASTER_PORT");
    uint64_t master = 0;
    if (!mp || !weft_env_u64("MASTER_PORT", 0, false, &master) || master == 0 || master >= 65535)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "MASTER_ADDR is set but MASTER_PORT=%s is not a port (or set "
                      "WEFT_BOOTSTRAP_PORT)", mp ? mp : "(unset)");
    port = master + 1;
  }
  snprintf(addr, addr_size, "%s:%llu", host, (unsigned long long)port);
  return WEFT_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Deadline-bounded socket I/O                                                               */
/* ---------------------------------------------------------------------------------------- */

static int ms_left(uint64_t deadline) {
  uint64_t now = weft_now_ns();
  if (now >= deadline) return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : (int)ms;
}

/* 0 ok, WEFT_STATUS_TIMEOUT, or WEFT_STATUS_REMOTE_ERROR (peer closed or error). */
static weft_status_t io_all(int fd, void *buf, size_t n, bool write_, uint64_t deadline) {
  char *p = buf;
  while (n) {
    struct pollfd pfd = {fd, write_ ? POLLOUT : POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0) return WEFT_STATUS_TIMEOUT;
    int r = poll(&pfd, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return WEFT_STATUS_SYSTEM_ERROR;
    if (r == 0) continue;
    ssize_t k = write_ ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return WEFT_STATUS_REMOTE_ERROR;
    p += k;
    n -= (size_t)k;
  }
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t send_msg(int fd, uint32_t kind, int rank, int world, const void *payload,
                              uint64_t bytes, uint64_t deadline) {
  msg_header_t h = {BOOT_MAGIC, kind, rank, world, bytes};
  weft_status_t st = io_all(fd, &h, sizeof h, true, deadline);
  if (st == WEFT_STATUS_SUCCESS && bytes) st = io_all(fd, (void *)payload, bytes, true, deadline);
  return st;
}

static weft_status_t recv_header(int fd, msg_header_t *h, uint64_t deadline) {
  weft_status_t st = io_all(fd, h, sizeof *h, false, deadline);
  if (st == WEFT_STATUS_SUCCESS && h->magic != BOOT_MAGIC) return WEFT_STATUS_MISMATCH;
  return st;
}

/* "host:port" (IPv4, hostname, or [IPv6]:port) resolved for TCP. */
static weft_status_t resolve(const char *addr, struct addrinfo **res) {
  char host[256];
  const char *colon = strrchr(addr, ':');
  if (!colon || colon == addr)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "bootstrap address '%s' is not host:port", addr);
  size_t hl = (size_t)(colon - addr);
  if (hl >= sizeof host) hl = sizeof host - 1;
  memcpy(host, addr, hl);
  host[hl] = 0;
  if (host[0] == '[' && hl > 1 && host[hl - 1] == ']') {
    memmove(host, host + 1, hl - 2);
    host[hl - 2] = 0;
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  int r = getaddrinfo(host, colon + 1, &hints, res);
  if (r)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "cannot resolve bootstrap address %s: %s",
                    addr, gai_strerror(r));
  return WEFT_STATUS_SUCCESS;
}

static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---------------------------------------------------------------------------------------- */
/* Rendezvous                                                                                */
/* ---------------------------------------------------------------------------------------- */

static weft_status_t serve(weft_bootstrap_t *bs, const char *addr, uint64_t deadline) {
  struct addrinfo *ai;
  WEFT_CHECK(resolve(addr, &ai));
  int ls = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, bs->world)) {
    int e = errno;
    freeaddrinfo(ai);
    if (ls >= 0) close(ls);
    return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR,
                    "rank 0 cannot listen at %s: %s (is the port in use, or the address not this "
                    "host's?)", addr, strerror(e));
  }
  freeaddrinfo(ai);
  set_nonblock(ls);
  int arrived = 1;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  while (arrived < bs->world) {
    struct pollfd pfd = {ls, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0) {
      char missing[256] = "";
      size_t n = 0;
      int count = 0;
      for (int r = 1; r < bs->world && n + 16 < sizeof missing; r++)
        if (bs->peers[r] < 0) n += (size_t)snprintf(missing + n, sizeof missing - n, "%s%d", count++ ? ", " : "", r);
      st = WEFT_ERR(NULL, WEFT_STATUS_TIMEOUT,
                    "rank(s) %s never connected to %s within %llu ms; are they running, with the "
                    "same WEFT_BOOTSTRAP_ADDR?", missing, addr,
                    (unsigned long long)(bs->timeout_ns / 1000000));
      break;
    }
    int r = poll(&pfd, 1, left);
    if (r <= 0) continue;
    int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    set_nonblock(fd);
    msg_header_t h;
    uint64_t hello_deadline = weft_now_ns() + 2000000000ull < deadline ? weft_now_ns() + 2000000000ull : deadline;
    uint32_t version = 0;
    if (recv_header(fd, &h, hello_deadline) != WEFT_STATUS_SUCCESS || h.kind != MSG_HELLO ||
        h.bytes != sizeof version ||
        io_all(fd, &version, sizeof version, false, hello_deadline) != WEFT_STATUS_SUCCESS) {
      close(fd); /* a stray connection (a port scanner, an old job): ignore it */
      continue;
    }
    if (h.world != bs->world || h.rank <= 0 || h.rank >= bs->world || bs->peers[h.rank] >= 0 ||
        version != BOOT_VERSION) {
      char why[160];
      snprintf(why, sizeof why, "rank %d says world %d (rank 0 has %d)%s", h.rank, h.world,
               bs->world, (h.rank > 0 && h.rank < bs->world && bs->peers[h.rank] >= 0) ? ", and that rank already joined" : "");
      send_msg(fd, MSG_ERROR, WEFT_STATUS_MISMATCH, bs->world, why, strlen(why) + 1, hello_deadline);
      close(fd);
      st = WEFT_ERR(NULL, WEFT_STATUS_MISMATCH, "bootstrap at %s: %s", addr, why);
      break;
    }
    bs->peers[h.rank] = fd;
    arrived++;
  }
  close(ls);
  if (st != WEFT_STATUS_SUCCESS) {
    /* Tell whoever came, so that they fail now rather than at their own deadline. */
    for (int r = 1; r < bs->world; r++)
      if (bs->peers[r] >= 0) send_msg(bs->peers[r], MSG_ERROR, (int)st, bs->world, weft_get_last_error(),
                                      strlen(weft_get_last_error()) + 1, weft_now_ns() + 1000000000ull);
    return st;
  }
  /* Everyone is here: a job id for the node-local sockets. */
  snprintf(bs->job_id, sizeof bs->job_id, "weft-%d-%llx-%s", (int)getpid(),
           (unsigned long long)weft_now_ns(), strrchr(addr, ':') + 1);
  for (int r = 1; r < bs->world; r++)
    WEFT_CHECK(send_msg(bs->peers[r], MSG_RESULT, 0, bs->world, bs->job_id, sizeof bs->job_id, deadline) ==
                       WEFT_STATUS_SUCCESS
                   ? WEFT_STATUS_SUCCESS
                   : WEFT_ERR(NULL, WEFT_STATUS_REMOTE_ERROR, "rank %d left during the rendezvous", r));
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t join(weft_bootstrap_t *bs, const char *addr, uint64_t deadline) {
  struct addrinfo *ai;
  WEFT_CHECK(resolve(addr, &ai));
  int fd = -1;
  int last_errno = 0;
  while (ms_left(deadline) > 0) {
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    last_errno = errno;
    close(fd);
    fd = -1;
    struct timespec ts = {0, 20000000}; /* rank 0 may not listen yet: retry */
    nanosleep(&ts, NULL);
  }
  freeaddrinfo(ai);
  if (fd < 0)
    return WEFT_ERR(NULL, WEFT_STATUS_TIMEOUT,
                    "rank %d could not reach rank 0 at %s within %llu ms (%s); is rank 0 running "
                    "with the same WEFT_BOOTSTRAP_ADDR?", bs->rank, addr,
                    (unsigned long long)(bs->timeout_ns / 1000000),
                    last_errno ? strerror(last_errno) : "no attempt");
  set_nonblock(fd);
  bs->peers[0] = fd;
  uint32_t version = BOOT_VERSION;
  weft_status_t st = send_msg(fd, MSG_HELLO, bs->rank, bs->world, &version, sizeof version, deadline);
  msg_header_t h;
  if (st == WEFT_STATUS_SUCCESS) st = recv_header(fd, &h, deadline);
  if (st == WEFT_STATUS_SUCCESS && h.kind == MSG_ERROR) {
    char why[256] = "";
    io_all(fd, why, h.bytes < sizeof why ? h.bytes : sizeof why - 1, false, deadline);
    /* The header's rank field carries rank 0's status (a timeout, a mismatch). */
    weft_status_t remote = h.rank > 0 && h.rank < WEFT_STATUS_COUNT ? (weft_status_t)h.rank
                                                                    : WEFT_STATUS_REMOTE_ERROR;
    return WEFT_ERR(NULL, remote, "rank 0 ended the rendezvous for rank %d: %s", bs->rank, why);
  }
  if (st == WEFT_STATUS_SUCCESS && (h.kind != MSG_RESULT || h.bytes != sizeof bs->job_id))
    st = WEFT_STATUS_MISMATCH;
  if (st == WEFT_STATUS_SUCCESS) st = io_all(fd, bs->job_id, sizeof bs->job_id, false, deadline);
  if (st == WEFT_STATUS_TIMEOUT)
    return WEFT_ERR(NULL, st, "rank %d: the rendezvous at %s did not complete within %llu ms "
                              "(some rank never arrived)", bs->rank, addr,
                    (unsigned long long)(bs->timeout_ns / 1000000));
  if (st != WEFT_STATUS_SUCCESS)
    return WEFT_ERR(NULL, st, "rank %d: rendezvous with rank 0 at %s failed", bs->rank, addr);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_create(const char *addr, int rank, int world, uint64_t timeout_ns,
                                    weft_bootstrap_t **out) {
  WEFT_ARG(NULL, out, "bootstrap is NULL");
  WEFT_ARG(NULL, world >= 1 && rank >= 0 && rank < world, "rank %d of world %d", rank, world);
  WEFT_ARG(NULL, world == 1 || (addr && *addr), "%d ranks need a rendezvous address", world);
  weft_bootstrap_t *bs = calloc(1, sizeof *bs);
  if (!bs) return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  bs->rank = rank;
  bs->world = world;
  bs->timeout_ns = timeout_ns ? timeout_ns : 60000000000ull;
  bs->peers = malloc(sizeof *bs->peers * (size_t)world);
  if (!bs->peers) {
    free(bs);
    return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  }
  for (int r = 0; r < world; r++) bs->peers[r] = -1;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  uint64_t deadline = weft_now_ns() + bs->timeout_ns;
  if (world == 1)
    snprintf(bs->job_id, sizeof bs->job_id, "weft-%d-%llx", (int)getpid(), (unsigned long long)weft_now_ns());
  else
    st = rank == 0 ? serve(bs, addr, deadline) : join(bs, addr, deadline);
  if (st != WEFT_STATUS_SUCCESS) {
    weft_bootstrap_destroy(bs);
    return st;
  }
  *out = bs;
  return WEFT_STATUS_SUCCESS;
}

void weft_bootstrap_destroy(weft_bootstrap_t *bs) {
  if (!bs) return;
  for (int r = 0; r < bs->world; r++)
    if (bs->peers[r] >= 0) close(bs->peers[r]);
  free(bs->peers);
  free(bs);
}

int weft_bootstrap_rank(const weft_bootstrap_t *bs) { return bs->rank; }
int weft_bootstrap_world(const weft_bootstrap_t *bs) { return bs->world; }

/* ---------------------------------------------------------------------------------------- */
/* All-gather and barrier                                                                    */
/* ---------------------------------------------------------------------------------------- */

static weft_status_t io_error(weft_bootstrap_t *bs, weft_status_t st, int peer, const char *what) {
  if (st == WEFT_STATUS_TIMEOUT)
    return WEFT_ERR(NULL, st, "rank %d: %s timed out after %llu ms waiting for rank %d", bs->rank,
                    what, (unsigned long long)(bs->timeout_ns / 1000000), peer);
  if (st == WEFT_STATUS_REMOTE_ERROR)
    return WEFT_ERR(NULL, st, "rank %d: rank %d left (connection closed) during %s", bs->rank,
                    peer, what);
  return WEFT_ERR(NULL, st, "rank %d: %s with rank %d failed", bs->rank, what, peer);
}

weft_status_t weft_bootstrap_allgather(weft_bootstrap_t *bs, void *buf, size_t bytes) {
  WEFT_ARG(NULL, bs && (buf || !bytes), "NULL argument");
  if (bs->world == 1) return WEFT_STATUS_SUCCESS;
  uint64_t deadline = weft_now_ns() + bs->timeout_ns;
  char *b = buf;
  weft_status_t st;
  if (bs->rank != 0) {
    st = send_msg(bs->peers[0], MSG_GATHER, bs->rank, bs->world, b + (size_t)bs->rank * bytes,
                  bytes, deadline);
    if (st) return io_error(bs, st, 0, "all-gather (send)");
    msg_header_t h;
    st = recv_header(bs->peers[0], &h, deadline);
    if (st) return io_error(bs, st, 0, "all-gather (receive)");
    if (h.kind == MSG_ERROR) {
      char why[512] = "";
      io_all(bs->peers[0], why, h.bytes < sizeof why ? h.bytes : sizeof why - 1, false, deadline);
      return WEFT_ERR(NULL, (weft_status_t)h.rank, "%s", why);
    }
    if (h.kind != MSG_RESULT || h.bytes != (uint64_t)bytes * (uint64_t)bs->world)
      return WEFT_ERR(NULL, WEFT_STATUS_INTERNAL_ERROR, "rank %d: bad all-gather reply", bs->rank);
    st = io_all(bs->peers[0], b, bytes * (size_t)bs->world, false, deadline);
    return st ? io_error(bs, st, 0, "all-gather (receive)") : WEFT_STATUS_SUCCESS;
  }
  /* Rank 0: collect every blob; a size that differs fails every rank. */
  weft_status_t err = WEFT_STATUS_SUCCESS;
  char why[512] = "";
  for (int r = 1; r < bs->world; r++) {
    msg_header_t h;
    st = recv_header(bs->peers[r], &h, deadline);
    if (st == WEFT_STATUS_SUCCESS && (h.kind != MSG_GATHER || h.rank != r))
      st = WEFT_STATUS_INTERNAL_ERROR;
    if (st != WEFT_STATUS_SUCCESS) {
      err = io_error(bs, st, r, "all-gather");
      snprintf(why, sizeof why, "%s", weft_get_last_error());
      if (err == WEFT_STATUS_TIMEOUT || err == WEFT_STATUS_REMOTE_ERROR) err = WEFT_STATUS_REMOTE_ERROR;
      break;
    }
    if (h.bytes != bytes) {
      /* Drain what it sent so that the stream stays in step, then fail everyone. */
      char sink[256];
      uint64_t left = h.bytes;
      while (left && io_all(bs->peers[r], sink, left < sizeof sink ? left : sizeof sink, false, deadline) == WEFT_STATUS_SUCCESS)
        left -= left < sizeof sink ? left : sizeof sink;
      if (err == WEFT_STATUS_SUCCESS) {
        err = WEFT_STATUS_MISMATCH;
        snprintf(why, sizeof why, "bootstrap all-gather: rank %d sent %llu bytes, rank 0 %zu: "
                                  "ranks are out of step", r, (unsigned long long)h.bytes, bytes);
      }
      continue;
    }
    st = io_all(bs->peers[r], b + (size_t)r * bytes, bytes, false, deadline);
    if (st != WEFT_STATUS_SUCCESS) {
      err = io_error(bs, st, r, "all-gather");
      snprintf(why, sizeof why, "%s", weft_get_last_error());
      err = WEFT_STATUS_REMOTE_ERROR;
      break;
    }
  }
  for (int r = 1; r < bs->world; r++) {
    if (err != WEFT_STATUS_SUCCESS)
      send_msg(bs->peers[r], MSG_ERROR, (int)err, bs->world, why, strlen(why) + 1, deadline);
    else if ((st = send_msg(bs->peers[r], MSG_RESULT, 0, bs->world, b, bytes * (size_t)bs->world,
                            deadline)) != WEFT_STATUS_SUCCESS)
      return io_error(bs, st, r, "all-gather (send)");
  }
  if (err != WEFT_STATUS_SUCCESS) return WEFT_ERR(NULL, err, "%s", why);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_barrier(weft_bootstrap_t *bs) {
  WEFT_ARG(NULL, bs, "bootstrap is NULL");
  char *tokens = calloc((size_t)bs->world, 1);
  if (!tokens) return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  weft_status_t st = weft_bootstrap_allgather(bs, tokens, 1);
  free(tokens);
  return st;
}

/* ---------------------------------------------------------------------------------------- */
/* fd exchange inside a node (AF_UNIX, SCM_RIGHTS)                                           */
/* ---------------------------------------------------------------------------------------- */

static socklen_t unix_name(struct sockaddr_un *sa, const char *job, int rank) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  /* Abstract name (leading NUL): nothing on disk to clean up; needs a shared net namespace,
   * which the ranks of one node have. */
  int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "%s-%d", job, rank);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static weft_status_t send_fd(int sock, int from_rank, int fd) {
  struct msghdr m = {0};
  char ctrl[CMSG_SPACE(sizeof(int))];
  memset(ctrl, 0, sizeof ctrl);
  int32_t payload = from_rank;
  struct iovec iov = {&payload, sizeof payload};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctrl;
  m.msg_controllen = sizeof ctrl;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)sizeof payload ? WEFT_STATUS_SUCCESS
                                                                      : WEFT_STATUS_SYSTEM_ERROR;
}

static weft_status_t recv_fd(int sock, int *from_rank, int *fd, uint64_t deadline) {
  struct pollfd pfd = {sock, POLLIN, 0};
  for (;;) {
    int left = ms_left(deadline);
    if (left == 0) return WEFT_STATUS_TIMEOUT;
    int r = poll(&pfd, 1, left);
    if (r > 0) break;
    if (r < 0 && errno != EINTR) return WEFT_STATUS_SYSTEM_ERROR;
  }
  struct msghdr m = {0};
  char ctrl[CMSG_SPACE(sizeof(int))];
  int32_t payload = -1;
  struct iovec iov = {&payload, sizeof payload};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctrl;
  m.msg_controllen = sizeof ctrl;
  if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof payload) return WEFT_STATUS_REMOTE_ERROR;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_type != SCM_RIGHTS) return WEFT_STATUS_REMOTE_ERROR;
  memcpy(fd, CMSG_DATA(c), sizeof *fd);
  *from_rank = payload;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_exchange_fds(weft_bootstrap_t *bs, const int *ranks, int local_world,
                                          int local_rank, int fd, int *peer_fds) {
  WEFT_ARG(NULL, bs && ranks && peer_fds && local_world >= 1 && local_rank >= 0 &&
                     local_rank < local_world && fd >= 0, "bad fd-exchange arguments");
  for (int i = 0; i < local_world; i++) peer_fds[i] = -1;
  peer_fds[local_rank] = dup(fd);
  if (peer_fds[local_rank] < 0)
    return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "dup: %s", strerror(errno));
  if (local_world == 1) return WEFT_STATUS_SUCCESS;
  uint64_t deadline = weft_now_ns() + bs->timeout_ns;
  struct sockaddr_un sa;
  socklen_t len = unix_name(&sa, bs->job_id, bs->rank);
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0 || bind(ls, (struct sockaddr *)&sa, len) || listen(ls, local_world)) {
    int e = errno;
    if (ls >= 0) close(ls);
    return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "rank %d: AF_UNIX listen: %s", bs->rank, strerror(e));
  }
  /* Everyone listens before anyone connects. */
  weft_status_t st = weft_bootstrap_barrier(bs);
  for (int i = 0; st == WEFT_STATUS_SUCCESS && i < local_world; i++) {
    if (i == local_rank) continue;
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t l = unix_name(&sa, bs->job_id, ranks[i]);
    if (s < 0 || connect(s, (struct sockaddr *)&sa, l) || send_fd(s, bs->rank, fd)) {
      st = WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "rank %d: passing its heap fd to rank %d: %s",
                    bs->rank, ranks[i], strerror(errno));
    }
    if (s >= 0) close(s);
  }
  for (int got = 0; st == WEFT_STATUS_SUCCESS && got < local_world - 1; got++) {
    struct pollfd pfd = {ls, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0 || poll(&pfd, 1, left) <= 0) {
      st = WEFT_ERR(NULL, WEFT_STATUS_TIMEOUT, "rank %d: only %d of %d peers passed their heap fd",
                    bs->rank, got, local_world - 1);
      break;
    }
    int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0) {
      got--;
      continue;
    }
    int from = -1, rfd = -1;
    weft_status_t r = recv_fd(s, &from, &rfd, deadline);
    close(s);
    int idx = -1;
    for (int i = 0; r == WEFT_STATUS_SUCCESS && i < local_world; i++)
      if (ranks[i] == from) idx = i;
    if (r != WEFT_STATUS_SUCCESS || idx < 0 || peer_fds[idx] >= 0) {
      if (rfd >= 0) close(rfd);
      st = WEFT_ERR(NULL, WEFT_STATUS_REMOTE_ERROR, "rank %d: bad fd message (from rank %d)",
                    bs->rank, from);
      break;
    }
    peer_fds[idx] = rfd;
  }
  close(ls);
  /* Nobody leaves while a peer may still connect to its socket. */
  weft_status_t st2 = weft_bootstrap_barrier(bs);
  if (st == WEFT_STATUS_SUCCESS) st = st2;
  if (st != WEFT_STATUS_SUCCESS)
    for (int i = 0; i < local_world; i++)
      if (peer_fds[i] >= 0) close(peer_fds[i]), peer_fds[i] = -1;
  return st;
}
