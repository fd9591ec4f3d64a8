/*
 * bootstrap.c — rank discovery from launcher variables, the TCP star rendezvous, all-gather and
 * barrier of small blobs, and fd passing between the ranks of a node (see bootstrap.h).
 *
 * Wire format (all ranks of a job run the same build on the same architecture, so structs go
 * as they are): every message is a 40-byte msg_header_t then `bytes` of payload.
 *
 *   rendezvous   joiner -> 0: HELLO {version, pid, host}    0 -> joiner: WELCOME {job id, pid, host}
 *   collective   joiner -> 0: CONTRIB {seq, op, blob}       0 -> joiner: RESULT {world * blob}
 *   any failure  0 -> joiner: ERROR {status, text}          (the same status on every rank)
 *
 * Rank 0 holds one socket per other rank and reads them all at once through poll(), so a rank
 * that dies is seen as soon as its socket closes, whatever the others are doing. Every wait has
 * the deadline of its call. Rank 0 decides every collective's outcome; the others wait a little
 * past their own deadline (reply_grace_ns) so that rank 0's verdict, which names the guilty rank,
 * reaches them before their own timer fires. A failed collective (a timeout, a lost rank, ranks
 * at different calls) leaves the sockets out of step, so the failure sticks: later calls return
 * it at once. Only a size mismatch within one call leaves them in step and does not stick.
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
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BOOT_MAGIC 0x77656674u /* "weft" */
#define BOOT_VERSION 2u
#define BOOT_DEFAULT_TIMEOUT_NS 60000000000ull
/* A guard against a corrupt header allocating or draining forever, not a real limit. */
#define BOOT_MAX_BLOB (1ull << 32)

enum msg_kind { MSG_HELLO = 1, MSG_WELCOME, MSG_CONTRIB, MSG_RESULT, MSG_ERROR };
enum coll_op { OP_ALLGATHER = 1, OP_BARRIER = 2 };

typedef struct msg_header {
  uint32_t magic, kind;
  int32_t rank, world; /* the sender's */
  uint32_t op;         /* CONTRIB: which collective, so a barrier never pairs with an all-gather */
  int32_t status;      /* ERROR: what every rank returns */
  uint64_t seq;        /* CONTRIB: collectives this rank finished before this one */
  uint64_t bytes;      /* payload that follows */
} msg_header_t;
_Static_assert(sizeof(msg_header_t) == 40, "the wire header has no padding");

/* Who a process is, for messages that name a rank a user must go and look at. */
typedef struct ident {
  int32_t pid;
  char host[64];
} ident_t;

typedef struct hello {
  uint32_t version;
  ident_t id;
} hello_t;

typedef struct welcome {
  char job_id[64];
  ident_t id; /* rank 0's */
} welcome_t;

struct weft_bootstrap {
  int rank, world;
  uint64_t timeout_ns;
  uint64_t seq;        /* collectives completed */
  int *sock;           /* rank 0: sock[r] for every other rank; others: sock[0] */
  ident_t *ids;        /* rank 0: every rank's identity; others: ids[0] only */
  char addr[256];
  char job_id[64];     /* unique per job: names the node-local AF_UNIX sockets */
  weft_status_t failed; /* sticky failure of an earlier collective */
  char failed_msg[768];
};

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                             */
/* ---------------------------------------------------------------------------------------- */

static void fmt_duration(char *buf, size_t n, uint64_t ns) {
  if (ns % 1000000000ull == 0) snprintf(buf, n, "%llu s", (unsigned long long)(ns / 1000000000ull));
  else if (ns >= 1000000000ull) snprintf(buf, n, "%.1f s", (double)ns * 1e-9);
  else snprintf(buf, n, "%llu ms", (unsigned long long)(ns / 1000000ull));
}

/* "3", "3, 5", "2-7, 9": which ranks, compactly, for worlds of thousands. */
static void fmt_ranks(char *buf, size_t n, const bool *in, int count) {
  size_t len = 0;
  buf[0] = 0;
  for (int r = 0; r < count && len + 24 < n; r++) {
    if (!in[r]) continue;
    int end = r;
    while (end + 1 < count && in[end + 1]) end++;
    len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? ", " : "", r);
    if (end > r) len += (size_t)snprintf(buf + len, n - len, "%s%d", end == r + 1 ? ", " : "-", end);
    r = end;
  }
  if (len + 24 >= n) snprintf(buf + len, n - len, ", ...");
}

static int ms_left(uint64_t deadline) {
  uint64_t now = weft_now_ns();
  if (now >= deadline) return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000; /* round up: never spin on a 0 ms poll */
  return ms > 1000000 ? 1000000 : (int)ms;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* How long past their own deadline the other ranks wait for rank 0's verdict: rank 0 started
 * its own timer at about the same moment and reports which rank was missing. */
static uint64_t reply_grace_ns(uint64_t timeout_ns) {
  uint64_t g = timeout_ns / 4;
  if (g < 1000000000ull) g = 1000000000ull;
  return min_u64(g, 10000000000ull);
}

static void self_ident(ident_t *id) {
  memset(id, 0, sizeof *id);
  id->pid = (int32_t)getpid();
  if (gethostname(id->host, sizeof id->host - 1) != 0) snprintf(id->host, sizeof id->host, "?");
}

static void fmt_who(char *buf, size_t n, int rank, const ident_t *id) {
  if (id && id->pid > 0) snprintf(buf, n, "rank %d (pid %d on %s)", rank, (int)id->pid, id->host);
  else snprintf(buf, n, "rank %d", rank);
}

static void set_nodelay(int fd) {
  /* Collectives are a request and a reply of a few bytes: Nagle would add 40 ms to each. A
   * failure only costs latency, so it is not an error. */
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---------------------------------------------------------------------------------------- */
/* Environment                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Strict decimal: digits only, no sign, no spaces, at most 2^30 (no job has more ranks). */
static bool parse_count(const char *s, int *out) {
  if (!s || !*s) return false;
  long long v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    if (v > (1 << 30)) return false;
  }
  *out = (int)v;
  return true;
}

/* 0: absent, 1: parsed, -1: present but malformed. */
static int env_count(const char *name, int *out) {
  const char *s = getenv(name);
  if (!s) return 0;
  return parse_count(s, out) ? 1 : -1;
}

/* Slurm's per-node task lists, e.g. "4", "2(x3),1": node `node` (SLURM_NODEID) gets the count of
 * the group that covers it. False when s is malformed or has no entry for that node. */
static bool slurm_tasks_on_node(const char *s, int node, int *out) {
  const char *p = s;
  long first = 0;
  bool found = false;
  for (;;) {
    if (*p < '0' || *p > '9') return false;
    char *end;
    long count = strtol(p, &end, 10), repeat = 1;
    if (count < 1 || count > (1 << 30)) return false;
    p = end;
    if (*p == '(') {
      if (p[1] != 'x' || p[2] < '0' || p[2] > '9') return false;
      repeat = strtol(p + 2, &end, 10);
      if (repeat < 1 || repeat > (1 << 30) || *end != ')') return false;
      p = end + 1;
    }
    if (!found && node >= first && node < first + repeat) {
      *out = (int)count;
      found = true;
    }
    first += repeat;
    if (*p == 0) return found;
    if (*p != ',') return false;
    p++;
  }
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
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
    int rank = -1, world = -1, lrank = -1, lworld = -1;
    int has_rank = env_count(schemes[i].rank, &rank);
    int has_world = env_count(schemes[i].world, &world);
    /* The first launcher with either variable set decides; a half-set one is an error rather
     * than a silent fall-through to the next launcher. */
    if (!has_rank && !has_world) continue;
    const char *which = schemes[i].launcher;
    if (has_rank < 0 || has_world < 0) {
      const char *bad = has_rank < 0 ? schemes[i].rank : schemes[i].world;
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "%s=\"%s\" is not a non-negative integer (read as the %s launcher's)", bad,
                      getenv(bad), which);
    }
    if (!has_rank || !has_world)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "%s is set but %s is not: set both (or neither) for the %s launcher",
                      has_rank ? schemes[i].rank : schemes[i].world,
                      has_rank ? schemes[i].world : schemes[i].rank, which);
    if (world < 1 || rank >= world)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "%s=%d with %s=%d: the rank must be below the world size", schemes[i].rank,
                      rank, schemes[i].world, world);

    const char *lrank_name = schemes[i].local_rank, *lworld_name = schemes[i].local_world;
    int has_lrank = env_count(lrank_name, &lrank);
    int has_lworld = 0;
    if (lworld_name) {
      has_lworld = env_count(lworld_name, &lworld);
    } else {
      /* Slurm: the task count of this node from the per-node list ("4", "2(x3),1"), the
       * explicit --ntasks-per-node first, then the step's layout, then the allocation's. */
      static const char *lists[] = {"SLURM_NTASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE",
                                    "SLURM_TASKS_PER_NODE"};
      int node = 0;
      if (env_count("SLURM_NODEID", &node) < 0)
        return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                        "SLURM_NODEID=\"%s\" is not a non-negative integer", getenv("SLURM_NODEID"));
      for (size_t k = 0; k < 3 && !has_lworld; k++) {
        const char *s = getenv(lists[k]);
        if (!s) continue;
        lworld_name = lists[k];
        has_lworld = slurm_tasks_on_node(s, node, &lworld) ? 1 : -1;
      }
    }
    if (has_lrank < 0)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "%s=\"%s\" is not a non-negative integer", lrank_name, getenv(lrank_name));
    if (has_lworld < 0 && !schemes[i].local_world)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "%s=\"%s\" gives no task count for this node (SLURM_NODEID=%s); expected a "
                      "list such as \"4\" or \"2(x3),1\"", lworld_name, getenv(lworld_name),
                      getenv("SLURM_NODEID") ? getenv("SLURM_NODEID") : "unset, so 0");
    if (has_lworld < 0 || (has_lworld > 0 && lworld < 1))
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "%s=\"%s\" is not a positive integer", lworld_name, getenv(lworld_name));
    if (!has_lrank && !has_lworld) {
      lrank = rank; /* nothing says otherwise: one node */
      lworld = world;
    } else if (!has_lrank) {
      lrank = rank % lworld; /* the block layout every launcher uses by default */
    } else if (!has_lworld) {
      if (lrank != rank)
        return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                        "%s=%d is set but the ranks per node are not (%s): set %s",
                        lrank_name, lrank, which,
                        schemes[i].local_world ? schemes[i].local_world : "SLURM_NTASKS_PER_NODE");
      lworld = world;
    }
    if (lworld < 1 || lworld > world || lrank >= lworld)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "local rank %d of %d ranks on this node (from %s's variables) does not fit "
                      "rank %d of %d", lrank, lworld, which, rank, world);
    *info = (weft_bootstrap_info_t){rank, world, lrank, lworld, which};
    return WEFT_STATUS_SUCCESS;
  }
  *info = (weft_bootstrap_info_t){0, 1, 0, 1, "none"};
  return WEFT_STATUS_SUCCESS;
}

/* "host:port", "[v6]:port": the host without brackets and the port. NULL, or why not. */
static const char *split_hostport(const char *addr, char *host, size_t host_size, int *port) {
  const char *colon;
  size_t len;
  if (addr[0] == '[') {
    const char *close = strchr(addr, ']');
    if (!close) return "an IPv6 address needs its closing ']'";
    if (close[1] != ':') return "there is no ':port' after the ']'";
    len = (size_t)(close - addr - 1);
    memcpy(host, addr + 1, len < host_size ? len : 0);
    colon = close + 1;
  } else {
    colon = strrchr(addr, ':');
    if (!colon) return "there is no ':port'";
    len = (size_t)(colon - addr);
    if (memchr(addr, ':', len)) return "an IPv6 address goes in brackets: [addr]:port";
    memcpy(host, addr, len < host_size ? len : 0);
  }
  if (len == 0) return "there is no host before ':port'";
  if (len >= host_size) return "the host name is too long";
  host[len] = 0;
  int p;
  if (!parse_count(colon + 1, &p) || p < 1 || p > 65535) return "the port is not a number in 1..65535";
  *port = p;
  return NULL;
}

weft_status_t weft_bootstrap_read_addr(const weft_bootstrap_info_t *info, char *addr,
                                       size_t addr_size) {
  WEFT_ARG(NULL, info && addr && addr_size > 0, "NULL argument");
  addr[0] = 0;
  char host[256];
  int port, master_port = 0;
  const char *mp = getenv("MASTER_PORT");
  bool has_master_port = mp && parse_count(mp, &master_port);
  const char *a = getenv("WEFT_BOOTSTRAP_ADDR");
  if (a && *a) {
    const char *why = split_hostport(a, host, sizeof host, &port);
    if (why)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "WEFT_BOOTSTRAP_ADDR=\"%s\": %s (write host:port, e.g. 10.0.0.1:29501)", a,
                      why);
    if (has_master_port && port == master_port)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "WEFT_BOOTSTRAP_ADDR=\"%s\" uses MASTER_PORT, which torch's store holds: "
                      "pick another port", a);
    if ((size_t)snprintf(addr, addr_size, "%s", a) >= addr_size)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "WEFT_BOOTSTRAP_ADDR is too long");
    return WEFT_STATUS_SUCCESS;
  }
  if (info->world == 1) return WEFT_STATUS_SUCCESS;
  const char *h = getenv("MASTER_ADDR");
  if (!h || !*h)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                    "%d ranks but no rendezvous address: set WEFT_BOOTSTRAP_ADDR=host:port on "
                    "every rank (or MASTER_ADDR and MASTER_PORT, as torchrun does), or start the "
                    "job with weftrun", info->world);
  const char *wp = getenv("WEFT_BOOTSTRAP_PORT");
  if (wp && *wp) {
    if (!parse_count(wp, &port) || port < 1 || port > 65535)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "WEFT_BOOTSTRAP_PORT=\"%s\" is not a port (1..65535)", wp);
    if (has_master_port && port == master_port)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "WEFT_BOOTSTRAP_PORT=%d equals MASTER_PORT, which torch's store holds: "
                      "pick another port", port);
  } else {
    /* torch's store holds MASTER_PORT itself: weft takes the next one. */
    if (!has_master_port || master_port < 1 || master_port >= 65535)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                      "MASTER_ADDR is set but MASTER_PORT=\"%s\" is not a port below 65535 (weft "
                      "uses MASTER_PORT+1; or set WEFT_BOOTSTRAP_PORT)", mp ? mp : "(unset)");
    port = master_port + 1;
  }
  /* A bare IPv6 literal in MASTER_ADDR gets the brackets host:port needs. */
  bool v6 = strchr(h, ':') && h[0] != '[';
  if ((size_t)snprintf(addr, addr_size, v6 ? "[%s]:%d" : "%s:%d", h, port) >= addr_size)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "MASTER_ADDR is too long");
  return WEFT_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Deadline-bounded socket I/O (every socket here is non-blocking)                           */
/* ---------------------------------------------------------------------------------------- */

/* WEFT_STATUS_SUCCESS, WEFT_STATUS_TIMEOUT, or WEFT_STATUS_REMOTE_ERROR (closed or reset). */
static weft_status_t send_all(int fd, const void *buf, size_t n, uint64_t deadline) {
  const char *p = buf;
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return WEFT_STATUS_REMOTE_ERROR;
    struct pollfd pfd = {fd, POLLOUT, 0};
    int left = ms_left(deadline);
    if (left == 0) return WEFT_STATUS_TIMEOUT;
    if (poll(&pfd, 1, left) < 0 && errno != EINTR) return WEFT_STATUS_SYSTEM_ERROR;
  }
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t recv_all(int fd, void *buf, size_t n, uint64_t deadline) {
  char *p = buf;
  while (n) {
    ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k == 0) return WEFT_STATUS_REMOTE_ERROR;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return WEFT_STATUS_REMOTE_ERROR;
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0) return WEFT_STATUS_TIMEOUT;
    if (poll(&pfd, 1, left) < 0 && errno != EINTR) return WEFT_STATUS_SYSTEM_ERROR;
  }
  return WEFT_STATUS_SUCCESS;
}

/* Reads and discards n bytes (a payload that has no place to go). */
static weft_status_t drain(int fd, uint64_t n, uint64_t deadline) {
  char sink[4096];
  while (n) {
    size_t k = n < sizeof sink ? (size_t)n : sizeof sink;
    weft_status_t st = recv_all(fd, sink, k, deadline);
    if (st != WEFT_STATUS_SUCCESS) return st;
    n -= k;
  }
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t send_msg(int fd, const msg_header_t *h, const void *payload, uint64_t deadline) {
  weft_status_t st = send_all(fd, h, sizeof *h, deadline);
  if (st == WEFT_STATUS_SUCCESS && h->bytes) st = send_all(fd, payload, h->bytes, deadline);
  return st;
}

/* Incremental reader for rank 0, which polls many sockets at once: a message arrives in pieces
 * and the caller decides where its payload goes once the header is in. */
typedef struct reader {
  int fd;
  msg_header_t h;
  size_t hgot;
  bool placed;  /* the caller has seen the header and set dst */
  char *dst;    /* payload destination; NULL discards it */
  uint64_t pgot;
  bool done;
} reader_t;

typedef enum { RD_AGAIN, RD_HEADER, RD_DONE, RD_CLOSED } rd_result_t;

static rd_result_t rd_pump(reader_t *rd) {
  for (;;) {
    void *p;
    size_t want;
    char sink[4096];
    if (rd->hgot < sizeof rd->h) {
      p = (char *)&rd->h + rd->hgot;
      want = sizeof rd->h - rd->hgot;
    } else if (!rd->placed) {
      return RD_HEADER;
    } else if (rd->pgot == rd->h.bytes) {
      return RD_DONE;
    } else {
      uint64_t left = rd->h.bytes - rd->pgot;
      p = rd->dst ? rd->dst + rd->pgot : sink;
      want = rd->dst ? (size_t)min_u64(left, SIZE_MAX / 2) : (size_t)min_u64(left, sizeof sink);
    }
    ssize_t k = recv(rd->fd, p, want, MSG_DONTWAIT);
    if (k == 0) return RD_CLOSED;
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return RD_AGAIN;
      return RD_CLOSED;
    }
    if (rd->hgot < sizeof rd->h) rd->hgot += (size_t)k;
    else rd->pgot += (uint64_t)k;
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Failure bookkeeping                                                                       */
/* ---------------------------------------------------------------------------------------- */

/* Records a collective failure as sticky and as the thread's last error. */
static weft_status_t fail(weft_bootstrap_t *bs, weft_status_t st, const char *file, int line,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static weft_status_t fail(weft_bootstrap_t *bs, weft_status_t st, const char *file, int line,
                          const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (bs && bs->failed == WEFT_STATUS_SUCCESS) {
    bs->failed = st;
    snprintf(bs->failed_msg, sizeof bs->failed_msg, "%s", msg);
  }
  return weft_error(NULL, st, file, line, "%s", msg);
}
#define FAIL(bs, st, ...) fail((bs), (st), __FILE__, __LINE__, __VA_ARGS__)

/* Rank 0 tells every other rank still connected why the job cannot go on, so that each fails
 * now with rank 0's diagnosis instead of at its own deadline with less to say. Best effort:
 * a rank that cannot be told finds out from its own timer or from the closed socket. */
static void broadcast_error(weft_bootstrap_t *bs, weft_status_t st, const char *text,
                            const int *socks, int count, bool in_step) {
  /* op = 1 tells the others that the failed call still counts and the stream is in step. */
  msg_header_t h = {BOOT_MAGIC, MSG_ERROR, 0, bs->world, in_step, (int32_t)st, bs->seq,
                    strlen(text) + 1};
  uint64_t deadline = weft_now_ns() + 1000000000ull;
  for (int i = 0; i < count; i++)
    if (socks[i] >= 0) (void)send_msg(socks[i], &h, text, deadline);
}

/* A joiner read an ERROR header from rank 0: its text, and the status every rank returns. */
static weft_status_t read_remote_error(int fd, const msg_header_t *h, char *text, size_t n,
                                       uint64_t deadline) {
  size_t k = h->bytes < n ? (size_t)h->bytes : n - 1;
  text[0] = 0;
  if (recv_all(fd, text, k, deadline) == WEFT_STATUS_SUCCESS) text[k] = 0;
  else snprintf(text, n, "(rank 0's message was cut off)");
  if (h->bytes > k) (void)drain(fd, h->bytes - k, deadline);
  text[n - 1] = 0;
  return h->status > 0 && h->status < WEFT_STATUS_COUNT ? (weft_status_t)h->status
                                                         : WEFT_STATUS_REMOTE_ERROR;
}

/* ---------------------------------------------------------------------------------------- */
/* Rendezvous                                                                                */
/* ---------------------------------------------------------------------------------------- */

static weft_status_t resolve(const char *addr, struct addrinfo **res) {
  char host[256], port_s[8];
  int port;
  const char *why = split_hostport(addr, host, sizeof host, &port);
  if (why)
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "bootstrap address \"%s\": %s", addr, why);
  snprintf(port_s, sizeof port_s, "%d", port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  int r = getaddrinfo(host, port_s, &hints, res);
  if (r)
    return WEFT_ERR(NULL, r == EAI_AGAIN ? WEFT_STATUS_TIMEOUT : WEFT_STATUS_INVALID_ARGUMENT,
                    "cannot resolve the bootstrap host \"%s\" (from %s): %s", host, addr,
                    r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
  return WEFT_STATUS_SUCCESS;
}

static bool is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
  return false;
}

/* Rank 0's listening socket. A loopback address is bound as it is (nothing outside this host
 * needs it); any other is bound on the wildcard address of its family, as torch's store does,
 * because a host name often resolves differently on rank 0 (e.g. to 127.0.1.1 via /etc/hosts)
 * than on the other nodes, and what they reach is what matters. */
static weft_status_t listen_at(const char *addr, int world, int *out) {
  struct addrinfo *ai;
  WEFT_CHECK(resolve(addr, &ai));
  struct sockaddr_storage ss;
  socklen_t len = ai->ai_addrlen;
  memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
  int family = ai->ai_family;
  freeaddrinfo(ai);
  if (!is_loopback((struct sockaddr *)&ss)) {
    if (family == AF_INET) ((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (family == AF_INET6) ((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_any;
  }
  int ls = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (ls < 0)
    return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "socket(): %s", strerror(errno));
  int one = 1;
  /* SO_REUSEADDR: a port left in TIME_WAIT by the previous job must not stop this one. */
  if (setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(ls, (struct sockaddr *)&ss, len) != 0 || listen(ls, world < 4096 ? world : 4096) != 0) {
    int e = errno;
    close(ls);
    return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR,
                    "rank 0 cannot listen at %s: %s%s", addr, strerror(e),
                    e == EADDRINUSE ? " (another job, or torch's store, holds that port: choose "
                                      "another with WEFT_BOOTSTRAP_ADDR or WEFT_BOOTSTRAP_PORT)"
                    : e == EADDRNOTAVAIL ? " (the address is not one of this host's: rank 0 must "
                                           "run on the host WEFT_BOOTSTRAP_ADDR/MASTER_ADDR names)"
                                         : "");
  }
  *out = ls;
  return WEFT_STATUS_SUCCESS;
}

/* A connection accepted by rank 0 that has not said who it is yet. */
typedef struct pending {
  reader_t rd;
  hello_t hello;
} pending_t;

static weft_status_t serve(weft_bootstrap_t *bs, uint64_t deadline) {
  int ls = -1;
  WEFT_CHECK(listen_at(bs->addr, bs->world, &ls));
  /* Room for every rank plus a few strangers (port scanners, a stale rank of an old job). */
  int cap = bs->world + 8, npend = 0, arrived = 1;
  pending_t *pend = calloc((size_t)cap, sizeof *pend);
  struct pollfd *pfd = calloc((size_t)cap + 1, sizeof *pfd);
  bool *seen = calloc((size_t)bs->world, sizeof *seen); /* rank r said hello */
  if (!pend || !pfd || !seen) {
    free(pend);
    free(pfd);
    free(seen);
    close(ls);
    return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  }
  seen[0] = true;
  /* After a fatal disagreement rank 0 keeps answering, until every rank has heard the verdict
   * or the deadline: a rank that arrives later would otherwise find nobody listening and report
   * a timeout that hides the real cause. */
  weft_status_t st = WEFT_STATUS_SUCCESS;
  char msg[768] = "", dur[32];
  while (arrived < bs->world) {
    int left = ms_left(deadline);
    if (left == 0) {
      if (st != WEFT_STATUS_SUCCESS) break;
      bool *missing = calloc((size_t)bs->world, sizeof *missing);
      char list[256] = "?";
      if (missing) {
        for (int r = 1; r < bs->world; r++) missing[r] = !seen[r];
        fmt_ranks(list, sizeof list, missing, bs->world);
        free(missing);
      }
      fmt_duration(dur, sizeof dur, bs->timeout_ns);
      snprintf(msg, sizeof msg,
               "rank(s) %s never connected to %s within %s (%d of %d ranks arrived); are they "
               "running? is WEFT_BOOTSTRAP_ADDR (or MASTER_ADDR/MASTER_PORT) the same on every "
               "rank?", list, bs->addr, dur, arrived, bs->world);
      st = WEFT_STATUS_TIMEOUT;
      broadcast_error(bs, st, msg, bs->sock, bs->world, false);
      break;
    }
    pfd[0] = (struct pollfd){ls, POLLIN, 0};
    for (int i = 0; i < npend; i++) pfd[1 + i] = (struct pollfd){pend[i].rd.fd, POLLIN, 0};
    int n = poll(pfd, (nfds_t)npend + 1, left);
    if (n < 0 && errno != EINTR) {
      if (st == WEFT_STATUS_SUCCESS) {
        snprintf(msg, sizeof msg, "rank 0: poll(): %s", strerror(errno));
        st = WEFT_STATUS_SYSTEM_ERROR;
        broadcast_error(bs, st, msg, bs->sock, bs->world, false);
      }
      break;
    }
    if (n <= 0) continue;
    /* Newcomers first; their hellos are read on the next round. */
    if (pfd[0].revents) {
      for (;;) {
        int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break; /* EAGAIN: no more; other errors (ECONNABORTED...) are the peer's */
        if (npend == cap) {
          WEFT_WARN("bootstrap at %s: too many connections that are not ranks; dropping one",
                    bs->addr);
          close(fd);
          continue;
        }
        set_nodelay(fd);
        memset(&pend[npend], 0, sizeof pend[npend]);
        pend[npend++].rd.fd = fd;
      }
    }
    for (int i = 0; i < npend; i++) {
      pending_t *c = &pend[i];
      bool drop = false;          /* done with this connection (kept or closed) */
      weft_status_t bad = WEFT_STATUS_SUCCESS;
      char why[768] = "";
      for (;;) {
        rd_result_t r = rd_pump(&c->rd);
        if (r == RD_AGAIN) break;
        if (r == RD_CLOSED) {
          drop = true;
          break;
        }
        const msg_header_t *h = &c->rd.h;
        if (r == RD_HEADER) {
          if (h->magic != BOOT_MAGIC || h->kind != MSG_HELLO) {
            WEFT_WARN("bootstrap at %s: ignored a connection that is not a weft rank", bs->addr);
            drop = true;
            break;
          }
          if (h->bytes != sizeof c->hello) {
            snprintf(why, sizeof why,
                     "a process claiming rank %d speaks another bootstrap protocol (hello of %llu "
                     "bytes, rank 0 expects %zu): are all ranks running the same weft build?",
                     (int)h->rank, (unsigned long long)h->bytes, sizeof c->hello);
            bad = WEFT_STATUS_MISMATCH;
            break;
          }
          c->rd.dst = (char *)&c->hello;
          c->rd.placed = true;
          continue;
        }
        /* RD_DONE: a complete hello. */
        int rr = h->rank;
        char who[128];
        c->hello.id.host[sizeof c->hello.id.host - 1] = 0;
        fmt_who(who, sizeof who, rr, &c->hello.id);
        if (c->hello.version != BOOT_VERSION) {
          snprintf(why, sizeof why, "%s runs bootstrap protocol %u, rank 0 runs %u: are all "
                   "ranks running the same weft build?", who, c->hello.version, BOOT_VERSION);
          bad = WEFT_STATUS_MISMATCH;
        } else if (h->world != bs->world || rr < 1 || rr >= bs->world) {
          snprintf(why, sizeof why, "%s of world %d joined rank 0 of world %d at %s: do all "
                   "ranks agree on the world size, and does no other job use this address?",
                   who, (int)h->world, bs->world, bs->addr);
          bad = WEFT_STATUS_MISMATCH;
        } else if (seen[rr]) {
          char first[128];
          fmt_who(first, sizeof first, rr, &bs->ids[rr]);
          snprintf(why, sizeof why, "two processes claim rank %d: %s and %s; are two jobs using "
                   "the bootstrap address %s, or is the rank variable wrong?", rr, first, who,
                   bs->addr);
          bad = WEFT_STATUS_MISMATCH;
        } else {
          seen[rr] = true;
          arrived++;
          bs->ids[rr] = c->hello.id;
          if (st != WEFT_STATUS_SUCCESS) { /* the job already failed: tell it why, let it go */
            broadcast_error(bs, st, msg, &c->rd.fd, 1, false);
          } else {
            bs->sock[rr] = c->rd.fd;
            c->rd.fd = -1; /* now owned by bs->sock */
          }
          drop = true;
          break;
        }
        break;
      }
      if (bad != WEFT_STATUS_SUCCESS) {
        int rr = c->rd.h.rank; /* it hears the verdict below: nobody need wait for it */
        if (rr >= 1 && rr < bs->world && !seen[rr]) {
          seen[rr] = true;
          arrived++;
        }
        if (st == WEFT_STATUS_SUCCESS) { /* the first disagreement decides the job */
          st = bad;
          snprintf(msg, sizeof msg, "%s", why);
          broadcast_error(bs, st, msg, bs->sock, bs->world, false);
          for (int r = 1; r < bs->world; r++)
            if (bs->sock[r] >= 0) close(bs->sock[r]), bs->sock[r] = -1;
        }
        broadcast_error(bs, st, msg, &c->rd.fd, 1, false);
        drop = true;
      }
      if (drop) {
        if (c->rd.fd >= 0) close(c->rd.fd);
        pend[i] = pend[--npend];
        /* The moved entry's payload pointer still points into its old slot. */
        if (pend[i].rd.placed) pend[i].rd.dst = (char *)&pend[i].hello;
        i--;
      }
    }
  }
  close(ls);
  for (int i = 0; i < npend; i++)
    if (pend[i].rd.fd >= 0) close(pend[i].rd.fd);
  free(pend);
  free(pfd);
  free(seen);
  if (st == WEFT_STATUS_SUCCESS) {
    /* Everyone is here: a job id that names the node-local sockets, unique even when two jobs
     * share a host and a port over time (pid and random bits). */
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
      rnd = weft_now_ns() ^ ((uint64_t)getpid() << 32); /* entropy pool not ready: still unique */
    welcome_t w;
    memset(&w, 0, sizeof w);
    int port = 0;
    char host[256];
    (void)split_hostport(bs->addr, host, sizeof host, &port);
    snprintf(w.job_id, sizeof w.job_id, "weft-%d-%016llx-%d", (int)getpid(),
             (unsigned long long)rnd, port);
    snprintf(bs->job_id, sizeof bs->job_id, "%s", w.job_id);
    w.id = bs->ids[0];
    msg_header_t h = {BOOT_MAGIC, MSG_WELCOME, 0, bs->world, 0, 0, 0, sizeof w};
    for (int r = 1; r < bs->world && st == WEFT_STATUS_SUCCESS; r++) {
      if (send_msg(bs->sock[r], &h, &w, deadline + reply_grace_ns(bs->timeout_ns)) !=
          WEFT_STATUS_SUCCESS) {
        char who[128];
        fmt_who(who, sizeof who, r, &bs->ids[r]);
        snprintf(msg, sizeof msg, "%s connected to %s, then left before the rendezvous completed "
                 "(see its output)", who, bs->addr);
        st = WEFT_STATUS_REMOTE_ERROR;
        close(bs->sock[r]);
        bs->sock[r] = -1;
        broadcast_error(bs, st, msg, bs->sock, bs->world, false);
      }
    }
  }
  if (st != WEFT_STATUS_SUCCESS) return WEFT_ERR(NULL, st, "bootstrap (rank 0): %s", msg);
  return WEFT_STATUS_SUCCESS;
}

/* One non-blocking connect attempt to every address of ai, each bounded by the deadline.
 * Returns a connected socket or -1 with *err set to the last reason. */
static int try_connect(const struct addrinfo *ai, uint64_t deadline, int *err) {
  for (const struct addrinfo *a = ai; a; a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *err = errno;
      continue;
    }
    int r = connect(fd, a->ai_addr, a->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      /* Unreachable hosts can leave a SYN unanswered for minutes: wait at most 2 s per try. */
      struct pollfd pfd = {fd, POLLOUT, 0};
      int left = ms_left(min_u64(deadline, weft_now_ns() + 2000000000ull));
      int n;
      do n = poll(&pfd, 1, left);
      while (n < 0 && errno == EINTR);
      int soerr = ETIMEDOUT;
      socklen_t sl = sizeof soerr;
      if (n > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) soerr = errno;
      r = soerr ? -1 : 0;
      errno = soerr;
    }
    if (r == 0) return fd;
    *err = errno;
    close(fd);
  }
  return -1;
}

static weft_status_t join(weft_bootstrap_t *bs, uint64_t deadline) {
  char dur[32];
  fmt_duration(dur, sizeof dur, bs->timeout_ns);
  /* Resolve, retrying only while the resolver says "try again" (DNS not up yet in a fresh
   * container); a name that does not exist fails now. */
  struct addrinfo *ai = NULL;
  for (;;) {
    weft_status_t st = resolve(bs->addr, &ai);
    if (st == WEFT_STATUS_SUCCESS) break;
    if (st != WEFT_STATUS_TIMEOUT || ms_left(deadline) == 0) return st;
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
  }
  int fd = -1, err = 0;
  uint64_t backoff_ms = 10;
  bool told = false;
  while ((fd = try_connect(ai, deadline, &err)) < 0 && ms_left(deadline) > 0) {
    if (!told && weft_now_ns() + 3000000000ull < deadline) {
      WEFT_INFO("rank %d: rank 0 not listening at %s yet (%s); retrying", bs->rank, bs->addr,
                strerror(err));
      told = true;
    }
    /* Rank 0 may simply not have started yet: retry with a growing pause. */
    uint64_t pause = min_u64(backoff_ms * 1000000ull, (uint64_t)ms_left(deadline) * 1000000ull);
    struct timespec ts = {(time_t)(pause / 1000000000ull), (long)(pause % 1000000000ull)};
    nanosleep(&ts, NULL);
    backoff_ms = backoff_ms * 2 > 500 ? 500 : backoff_ms * 2;
  }
  freeaddrinfo(ai);
  if (fd < 0)
    return WEFT_ERR(NULL, WEFT_STATUS_TIMEOUT,
                    "rank %d could not connect to rank 0 at %s within %s (last error: %s); is "
                    "rank 0 running? is WEFT_BOOTSTRAP_ADDR (or MASTER_ADDR/MASTER_PORT) the same "
                    "on every rank?", bs->rank, bs->addr, dur, err ? strerror(err) : "none");
  set_nodelay(fd);
  bs->sock[0] = fd;
  hello_t hello = {BOOT_VERSION, {0, {0}}};
  self_ident(&hello.id);
  bs->ids[0] = (ident_t){0, {0}};
  msg_header_t h = {BOOT_MAGIC, MSG_HELLO, bs->rank, bs->world, 0, 0, 0, sizeof hello};
  weft_status_t st = send_msg(fd, &h, &hello, deadline);
  /* Rank 0 answers when the last rank arrives or at its own deadline: wait a little past ours.
   * If the hello could not be sent, rank 0 may still have left its verdict in the socket. */
  uint64_t reply_deadline = deadline + reply_grace_ns(bs->timeout_ns);
  if (st != WEFT_STATUS_SUCCESS)
    reply_deadline = min_u64(reply_deadline, weft_now_ns() + 200000000ull);
  st = recv_all(fd, &h, sizeof h, reply_deadline);
  if (st == WEFT_STATUS_SUCCESS && h.magic == BOOT_MAGIC && h.kind == MSG_ERROR) {
    char why[768];
    weft_status_t remote = read_remote_error(fd, &h, why, sizeof why, reply_deadline);
    return WEFT_ERR(NULL, remote, "rank %d: rank 0 ended the rendezvous: %s", bs->rank, why);
  }
  welcome_t w;
  if (st == WEFT_STATUS_SUCCESS &&
      (h.magic != BOOT_MAGIC || h.kind != MSG_WELCOME || h.bytes != sizeof w))
    return WEFT_ERR(NULL, WEFT_STATUS_MISMATCH,
                    "rank %d: what listens at %s is not a weft rank 0 of the same build (is the "
                    "port someone else's, e.g. torch's MASTER_PORT?)", bs->rank, bs->addr);
  if (st == WEFT_STATUS_SUCCESS) st = recv_all(fd, &w, sizeof w, reply_deadline);
  if (st == WEFT_STATUS_TIMEOUT)
    return WEFT_ERR(NULL, st, "rank %d: connected to rank 0 at %s but the rendezvous did not "
                    "complete within %s; rank 0 never answered", bs->rank, bs->addr, dur);
  if (st != WEFT_STATUS_SUCCESS)
    return WEFT_ERR(NULL, WEFT_STATUS_REMOTE_ERROR, "rank %d: rank 0 at %s closed the connection "
                    "during the rendezvous (did it fail or exit? see its output)", bs->rank,
                    bs->addr);
  w.job_id[sizeof w.job_id - 1] = 0;
  w.id.host[sizeof w.id.host - 1] = 0;
  memcpy(bs->job_id, w.job_id, sizeof bs->job_id);
  bs->ids[0] = w.id;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_create(const char *addr, int rank, int world, uint64_t timeout_ns,
                                    weft_bootstrap_t **out) {
  WEFT_ARG(NULL, out, "bootstrap is NULL");
  WEFT_ARG(NULL, world >= 1 && rank >= 0 && rank < world, "rank %d of world %d", rank, world);
  WEFT_ARG(NULL, world == 1 || (addr && *addr), "%d ranks need a rendezvous address (host:port)",
           world);
  WEFT_ARG(NULL, !addr || strlen(addr) < sizeof((weft_bootstrap_t *)0)->addr,
           "bootstrap address too long");
  *out = NULL;
  weft_bootstrap_t *bs = calloc(1, sizeof *bs);
  if (!bs) return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  bs->rank = rank;
  bs->world = world;
  bs->timeout_ns = timeout_ns ? timeout_ns : BOOT_DEFAULT_TIMEOUT_NS;
  int nsock = rank == 0 ? world : 1;
  bs->sock = malloc(sizeof *bs->sock * (size_t)nsock);
  bs->ids = calloc((size_t)nsock, sizeof *bs->ids);
  if (!bs->sock || !bs->ids) {
    free(bs->sock);
    free(bs->ids);
    free(bs);
    return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  }
  for (int r = 0; r < nsock; r++) bs->sock[r] = -1;
  if (addr) snprintf(bs->addr, sizeof bs->addr, "%s", addr);
  if (rank == 0) self_ident(&bs->ids[0]);
  uint64_t start = weft_now_ns();
  weft_status_t st = WEFT_STATUS_SUCCESS;
  if (world == 1) {
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) rnd = start;
    snprintf(bs->job_id, sizeof bs->job_id, "weft-%d-%016llx", (int)getpid(),
             (unsigned long long)rnd);
  } else {
    st = rank == 0 ? serve(bs, start + bs->timeout_ns) : join(bs, start + bs->timeout_ns);
  }
  if (st != WEFT_STATUS_SUCCESS) {
    weft_bootstrap_destroy(bs);
    return st;
  }
  WEFT_INFO("bootstrap: rank %d of %d met the others at %s in %.1f ms", rank, world,
            world > 1 ? bs->addr : "-", (double)(weft_now_ns() - start) * 1e-6);
  *out = bs;
  return WEFT_STATUS_SUCCESS;
}

void weft_bootstrap_destroy(weft_bootstrap_t *bs) {
  if (!bs) return;
  int nsock = bs->rank == 0 ? bs->world : 1;
  for (int r = 0; r < nsock; r++)
    if (bs->sock[r] >= 0) close(bs->sock[r]);
  free(bs->sock);
  free(bs->ids);
  free(bs);
}

int weft_bootstrap_rank(const weft_bootstrap_t *bs) { return bs->rank; }
int weft_bootstrap_world(const weft_bootstrap_t *bs) { return bs->world; }

/* ---------------------------------------------------------------------------------------- */
/* Collectives: gather at rank 0, reply to all                                               */
/* ---------------------------------------------------------------------------------------- */

static const char *op_name(uint32_t op) {
  return op == OP_ALLGATHER ? "all-gather" : op == OP_BARRIER ? "barrier" : "unknown collective";
}

/* Rank 0's half: read every rank's contribution at once (so that a rank that dies is seen at
 * once), check that all agree on the call, then send back the whole array or the verdict. */
static weft_status_t collective_root(weft_bootstrap_t *bs, uint32_t op, char *buf, size_t bytes) {
  uint64_t deadline = weft_now_ns() + bs->timeout_ns;
  int world = bs->world;
  reader_t *rd = calloc((size_t)world, sizeof *rd);
  struct pollfd *pfd = calloc((size_t)world, sizeof *pfd);
  int *idx = calloc((size_t)world, sizeof *idx);
  if (!rd || !pfd || !idx) {
    free(rd);
    free(pfd);
    free(idx);
    return FAIL(bs, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  }
  for (int r = 1; r < world; r++) rd[r].fd = bs->sock[r];
  int waiting = world - 1;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  weft_status_t mismatch = WEFT_STATUS_SUCCESS;
  bool in_step = true; /* false once any rank is at another collective: then the failure sticks */
  char msg[768] = "", who[128], dur[32];
  while (waiting > 0 && st == WEFT_STATUS_SUCCESS) {
    int left = ms_left(deadline), n = 0;
    if (left == 0) {
      bool *late = calloc((size_t)world, sizeof *late);
      char list[256] = "?";
      if (late) {
        for (int r = 1; r < world; r++) late[r] = !rd[r].done;
        fmt_ranks(list, sizeof list, late, world);
        free(late);
      }
      fmt_duration(dur, sizeof dur, bs->timeout_ns);
      if (mismatch != WEFT_STATUS_SUCCESS) { /* the disagreement is the likelier cause */
        size_t len = strlen(msg);
        snprintf(msg + len, sizeof msg - len, "; and rank(s) %s did not reach it within %s",
                 list, dur);
        st = mismatch;
        break;
      }
      snprintf(msg, sizeof msg, "%s #%llu: rank(s) %s did not reach it within %s (rank 0 and %d "
               "other(s) did); they are stuck or slower than the bootstrap timeout, or the ranks "
               "call different collectives", op_name(op), (unsigned long long)bs->seq, list, dur,
               world - 1 - waiting);
      st = WEFT_STATUS_TIMEOUT;
      break;
    }
    for (int r = 1; r < world; r++)
      if (!rd[r].done) {
        idx[n] = r;
        pfd[n++] = (struct pollfd){rd[r].fd, POLLIN, 0};
      }
    int k = poll(pfd, (nfds_t)n, left);
    if (k < 0 && errno != EINTR) {
      snprintf(msg, sizeof msg, "rank 0: poll(): %s", strerror(errno));
      st = WEFT_STATUS_SYSTEM_ERROR;
      break;
    }
    for (int i = 0; k > 0 && i < n && st == WEFT_STATUS_SUCCESS; i++) {
      if (!pfd[i].revents) continue;
      int r = idx[i];
      reader_t *c = &rd[r];
      for (;;) {
        rd_result_t res = rd_pump(c);
        if (res == RD_AGAIN) break;
        if (res == RD_CLOSED) {
          fmt_who(who, sizeof who, r, &bs->ids[r]);
          snprintf(msg, sizeof msg, "%s left during %s #%llu (its connection closed): it exited "
                   "or crashed; see its output", who, op_name(op), (unsigned long long)bs->seq);
          st = WEFT_STATUS_REMOTE_ERROR;
          close(bs->sock[r]); /* nobody to tell any more */
          bs->sock[r] = -1;
          break;
        }
        if (res == RD_DONE) {
          c->done = true;
          waiting--;
          break;
        }
        /* RD_HEADER: check that this rank makes the same call as rank 0. */
        const msg_header_t *h = &c->h;
        c->placed = true;
        c->dst = NULL;
        fmt_who(who, sizeof who, r, &bs->ids[r]);
        if (h->magic != BOOT_MAGIC || h->kind != MSG_CONTRIB || h->rank != r) {
          snprintf(msg, sizeof msg, "%s sent a message rank 0 cannot read (kind %u) during %s "
                   "#%llu: the bootstrap stream is out of step", who, h->kind, op_name(op),
                   (unsigned long long)bs->seq);
          st = WEFT_STATUS_REMOTE_ERROR;
          break;
        }
        if (h->bytes > BOOT_MAX_BLOB) {
          snprintf(msg, sizeof msg, "%s sent a %llu-byte contribution: the stream is corrupt",
                   who, (unsigned long long)h->bytes);
          st = WEFT_STATUS_REMOTE_ERROR;
          break;
        }
        if (mismatch == WEFT_STATUS_SUCCESS) {
          if (h->seq != bs->seq)
            snprintf(msg, sizeof msg, "%s is at bootstrap collective #%llu (%s) while rank 0 is at "
                     "#%llu (%s): the ranks made different numbers of collective calls (e.g. a "
                     "weft_malloc or barrier on some ranks only)", who,
                     (unsigned long long)h->seq, op_name(h->op), (unsigned long long)bs->seq,
                     op_name(op));
          else if (h->op != op)
            snprintf(msg, sizeof msg, "collective #%llu: %s called %s while rank 0 called %s",
                     (unsigned long long)bs->seq, who, op_name(h->op), op_name(op));
          else if (h->bytes != bytes)
            snprintf(msg, sizeof msg, "%s #%llu: %s contributed %llu bytes, rank 0 %zu: every "
                     "rank must pass the same size", op_name(op), (unsigned long long)bs->seq,
                     who, (unsigned long long)h->bytes, bytes);
          if (h->seq != bs->seq || h->op != op || h->bytes != bytes) mismatch = WEFT_STATUS_MISMATCH;
        }
        if (h->seq != bs->seq || h->op != op) in_step = false;
        /* A payload that does not fit is read and dropped, so every rank still gets an answer. */
        if (h->seq == bs->seq && h->op == op && h->bytes == bytes && bytes)
          c->dst = buf + (size_t)r * bytes;
      }
    }
  }
  if (st == WEFT_STATUS_SUCCESS && mismatch != WEFT_STATUS_SUCCESS) st = mismatch;
  if (st == WEFT_STATUS_SUCCESS) {
    msg_header_t h = {BOOT_MAGIC, MSG_RESULT, 0, world, op, 0, bs->seq,
                      op == OP_ALLGATHER ? (uint64_t)bytes * (uint64_t)world : 0};
    for (int r = 1; r < world && st == WEFT_STATUS_SUCCESS; r++) {
      /* The others wait for this reply with extra grace: rank 0 may use it too. */
      weft_status_t s = send_msg(bs->sock[r], &h, buf, deadline + reply_grace_ns(bs->timeout_ns));
      if (s != WEFT_STATUS_SUCCESS) {
        fmt_who(who, sizeof who, r, &bs->ids[r]);
        snprintf(msg, sizeof msg, "%s left during %s #%llu (rank 0 could not send it the "
                 "result): it exited or crashed; see its output", who, op_name(op),
                 (unsigned long long)bs->seq);
        st = WEFT_STATUS_REMOTE_ERROR;
        close(bs->sock[r]);
        bs->sock[r] = -1;
        /* The ranks before r have their result already and will learn of r's loss next time. */
        broadcast_error(bs, st, msg, bs->sock + r + 1, world - r - 1, false);
      }
    }
  } else if (st == WEFT_STATUS_MISMATCH && in_step) {
    /* Only the sizes differed: every payload was read, every rank gets this verdict and counts
     * the call, so the stream stays in step and later collectives may still work. */
    broadcast_error(bs, st, msg, bs->sock + 1, world - 1, true);
    free(rd);
    free(pfd);
    free(idx);
    bs->seq++;
    return WEFT_ERR(NULL, st, "bootstrap (rank 0): %s", msg);
  } else {
    broadcast_error(bs, st, msg, bs->sock + 1, world - 1, false);
  }
  free(rd);
  free(pfd);
  free(idx);
  if (st != WEFT_STATUS_SUCCESS) return FAIL(bs, st, "bootstrap (rank 0): %s", msg);
  bs->seq++;
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t collective_leaf(weft_bootstrap_t *bs, uint32_t op, char *buf, size_t bytes) {
  uint64_t start = weft_now_ns(), deadline = start + bs->timeout_ns;
  int fd = bs->sock[0];
  char who0[128], dur[32];
  fmt_who(who0, sizeof who0, 0, &bs->ids[0]);
  msg_header_t h = {BOOT_MAGIC, MSG_CONTRIB, bs->rank, bs->world, op, 0, bs->seq, bytes};
  weft_status_t st = send_msg(fd, &h, bytes ? buf + (size_t)bs->rank * bytes : NULL, deadline);
  /* Rank 0 replies when the slowest rank arrives or at its own deadline, naming that rank. */
  uint64_t reply_deadline = deadline + reply_grace_ns(bs->timeout_ns);
  /* A send can fail because rank 0 gave up on this call (this rank was late) and left; its
   * verdict may still be waiting in the socket, and says more than "connection closed". */
  if (st != WEFT_STATUS_SUCCESS)
    reply_deadline = min_u64(reply_deadline, weft_now_ns() + 200000000ull);
  st = recv_all(fd, &h, sizeof h, reply_deadline);
  if (st == WEFT_STATUS_SUCCESS && h.magic == BOOT_MAGIC && h.kind == MSG_ERROR) {
    char why[768];
    weft_status_t remote = read_remote_error(fd, &h, why, sizeof why, reply_deadline);
    if (h.op == 1 && remote == WEFT_STATUS_MISMATCH) { /* see collective_root: still in step */
      bs->seq++;
      return WEFT_ERR(NULL, remote, "rank %d: %s #%llu failed; rank 0 reports: %s", bs->rank,
                      op_name(op), (unsigned long long)(bs->seq - 1), why);
    }
    return FAIL(bs, remote, "rank %d: %s #%llu failed; rank 0 reports: %s", bs->rank,
                op_name(op), (unsigned long long)bs->seq, why);
  }
  uint64_t want = op == OP_ALLGATHER ? (uint64_t)bytes * (uint64_t)bs->world : 0;
  if (st == WEFT_STATUS_SUCCESS &&
      (h.magic != BOOT_MAGIC || h.kind != MSG_RESULT || h.seq != bs->seq || h.bytes != want))
    return FAIL(bs, WEFT_STATUS_INTERNAL_ERROR, "rank %d: %s #%llu: rank 0 sent an unexpected "
                "reply (kind %u, collective #%llu, %llu bytes)", bs->rank, op_name(op),
                (unsigned long long)bs->seq, h.kind, (unsigned long long)h.seq,
                (unsigned long long)h.bytes);
  if (st == WEFT_STATUS_SUCCESS && want) st = recv_all(fd, buf, (size_t)want, reply_deadline);
  if (st == WEFT_STATUS_TIMEOUT) {
    fmt_duration(dur, sizeof dur, reply_deadline - start);
    return FAIL(bs, st, "rank %d: %s #%llu: no reply from %s within %s; rank 0 is stuck, or has "
                "not reached this call", bs->rank, op_name(op), (unsigned long long)bs->seq, who0,
                dur);
  }
  if (st != WEFT_STATUS_SUCCESS)
    return FAIL(bs, WEFT_STATUS_REMOTE_ERROR, "rank %d: %s left during %s #%llu (its connection "
                "closed): it exited or crashed; see its output", bs->rank, who0, op_name(op),
                (unsigned long long)bs->seq);
  bs->seq++;
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t collective(weft_bootstrap_t *bs, uint32_t op, void *buf, size_t bytes) {
  if (bs->failed != WEFT_STATUS_SUCCESS)
    return WEFT_ERR(NULL, bs->failed, "rank %d: the bootstrap failed earlier, so no collective can "
                    "run: %s", bs->rank, bs->failed_msg);
  if (bs->world == 1) return WEFT_STATUS_SUCCESS;
  return bs->rank == 0 ? collective_root(bs, op, buf, bytes) : collective_leaf(bs, op, buf, bytes);
}

weft_status_t weft_bootstrap_allgather(weft_bootstrap_t *bs, void *buf, size_t bytes) {
  WEFT_ARG(NULL, bs, "bootstrap is NULL");
  WEFT_ARG(NULL, buf || !bytes, "buf is NULL");
  WEFT_ARG(NULL, bytes <= BOOT_MAX_BLOB / (uint64_t)bs->world,
           "%zu bytes per rank from %d ranks is more than the bootstrap carries", bytes, bs->world);
  return collective(bs, OP_ALLGATHER, buf, bytes);
}

weft_status_t weft_bootstrap_barrier(weft_bootstrap_t *bs) {
  WEFT_ARG(NULL, bs, "bootstrap is NULL");
  return collective(bs, OP_BARRIER, NULL, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* fd exchange inside a node (AF_UNIX, SCM_RIGHTS)                                           */
/* ---------------------------------------------------------------------------------------- */

typedef struct fd_note {
  uint32_t magic;
  int32_t rank;
  uint64_t seq; /* the bootstrap collective this exchange follows: a stale sender is refused */
} fd_note_t;

static socklen_t unix_name(struct sockaddr_un *sa, const char *job, int rank) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  /* Abstract name (leading NUL): nothing on disk to clean up after a crash; it needs the ranks
   * of a node to share a network namespace, which they do unless containers separate them. */
  int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "%s-%d", job, rank);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Connects to rank `to`'s listening socket and sends fd; bounded by the deadline. */
static weft_status_t send_fd(weft_bootstrap_t *bs, int to, int fd, uint64_t deadline) {
  struct sockaddr_un sa;
  socklen_t len = unix_name(&sa, bs->job_id, to);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "socket(AF_UNIX): %s", strerror(errno));
  /* A non-blocking AF_UNIX connect says EAGAIN when the backlog is full: try again shortly. */
  while (connect(s, (struct sockaddr *)&sa, len) != 0) {
    int e = errno;
    if (e == EINTR) continue;
    if ((e == EAGAIN || e == EINPROGRESS) && ms_left(deadline) > 0) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
      continue;
    }
    close(s);
    if (e == ECONNREFUSED || e == ENOENT)
      return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR,
                      "rank %d cannot reach rank %d's local socket: %s; are both on this node, in "
                      "one network namespace (containers must share it)?", bs->rank, to,
                      strerror(e));
    return WEFT_ERR(NULL, e == EAGAIN ? WEFT_STATUS_TIMEOUT : WEFT_STATUS_SYSTEM_ERROR,
                    "rank %d: connect to rank %d's local socket: %s", bs->rank, to, strerror(e));
  }
  fd_note_t note = {BOOT_MAGIC, bs->rank, bs->seq};
  struct iovec iov = {&note, sizeof note};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  memset(&ctrl, 0, sizeof ctrl);
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctrl.buf;
  m.msg_controllen = sizeof ctrl.buf;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  for (;;) {
    ssize_t k = sendmsg(s, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k == (ssize_t)sizeof note) break;
    int e = k < 0 ? errno : EIO; /* a short write of 16 bytes on a fresh socket: never seen */
    if (k < 0 && e == EINTR) continue;
    if (k < 0 && (e == EAGAIN || e == EWOULDBLOCK)) {
      struct pollfd pfd = {s, POLLOUT, 0};
      int left = ms_left(deadline);
      if (left > 0 && (poll(&pfd, 1, left) >= 0 || errno == EINTR)) continue;
      e = ETIMEDOUT;
    }
    close(s);
    return WEFT_ERR(NULL, e == ETIMEDOUT ? WEFT_STATUS_TIMEOUT : WEFT_STATUS_SYSTEM_ERROR,
                    "rank %d: passing an fd to rank %d: %s", bs->rank, to, strerror(e));
  }
  close(s);
  return WEFT_STATUS_SUCCESS;
}

/* Accepts one sender on ls and takes its fd. *from = the sender's rank. */
static weft_status_t recv_fd(weft_bootstrap_t *bs, int ls, int *from, int *fd, uint64_t deadline) {
  int s = -1;
  for (;;) {
    s = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s >= 0) break;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
      return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "rank %d: accept on its local socket: %s",
                      bs->rank, strerror(errno));
    struct pollfd pfd = {ls, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0) return WEFT_STATUS_TIMEOUT; /* the caller names who is missing */
    if (poll(&pfd, 1, left) < 0 && errno != EINTR)
      return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "poll(): %s", strerror(errno));
  }
  /* Abstract names are visible to every user of the network namespace: take fds only from a
   * process of this user. */
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != getuid()) {
    close(s);
    return WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR,
                    "rank %d: a process of another user connected to its local socket", bs->rank);
  }
  fd_note_t note = {0, -1, 0};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  struct iovec iov = {&note, sizeof note};
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctrl.buf;
  m.msg_controllen = sizeof ctrl.buf;
  ssize_t k;
  for (;;) {
    k = recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (k >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    struct pollfd pfd = {s, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0) {
      close(s);
      return WEFT_STATUS_TIMEOUT;
    }
    if (poll(&pfd, 1, left) < 0 && errno != EINTR) break;
  }
  int e = errno;
  close(s);
  int got = -1;
  struct cmsghdr *c = k > 0 ? CMSG_FIRSTHDR(&m) : NULL;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
      c->cmsg_len == CMSG_LEN(sizeof(int)))
    memcpy(&got, CMSG_DATA(c), sizeof got);
  if (k != (ssize_t)sizeof note || got < 0 || (m.msg_flags & MSG_CTRUNC) ||
      note.magic != BOOT_MAGIC || note.seq != bs->seq) {
    if (got >= 0) close(got);
    return WEFT_ERR(NULL, WEFT_STATUS_REMOTE_ERROR,
                    "rank %d: a malformed fd message on its local socket (%s)", bs->rank,
                    k < 0 ? strerror(e) : (m.msg_flags & MSG_CTRUNC) ? "fd limit reached?"
                                                                      : "wrong size or stale");
  }
  *from = note.rank;
  *fd = got;
  return WEFT_STATUS_SUCCESS;
}

/* What each rank reports after its part of the exchange, so that all agree on the outcome. */
typedef struct fd_outcome {
  int32_t status;
  char text[252];
} fd_outcome_t;

weft_status_t weft_bootstrap_exchange_fds(weft_bootstrap_t *bs, const int *ranks, int local_world,
                                          int local_rank, int fd, int *peer_fds) {
  WEFT_ARG(NULL, bs && ranks && peer_fds, "NULL argument");
  WEFT_ARG(NULL, local_world >= 1 && local_world <= bs->world && local_rank >= 0 &&
                     local_rank < local_world,
           "local rank %d of %d on a world of %d", local_rank, local_world, bs->world);
  WEFT_ARG(NULL, ranks[local_rank] == bs->rank, "ranks[%d] = %d is not this rank (%d)",
           local_rank, ranks[local_rank], bs->rank);
  for (int i = 0; i < local_world; i++) {
    WEFT_ARG(NULL, ranks[i] >= 0 && ranks[i] < bs->world, "ranks[%d] = %d is not a rank", i,
             ranks[i]);
    for (int j = 0; j < i; j++)
      WEFT_ARG(NULL, ranks[i] != ranks[j], "rank %d appears twice in ranks[]", ranks[i]);
  }
  WEFT_ARG(NULL, fd >= 0 && fcntl(fd, F_GETFD) >= 0, "fd %d is not an open file descriptor", fd);
  if (bs->failed != WEFT_STATUS_SUCCESS)
    return WEFT_ERR(NULL, bs->failed, "rank %d: the bootstrap failed earlier: %s", bs->rank,
                    bs->failed_msg);
  for (int i = 0; i < local_world; i++) peer_fds[i] = -1;

  /* Every rank of the world makes the same two collective calls below, whatever its node's
   * size and whatever fails locally, because the barrier and the agreement are world-wide: a
   * rank that skipped them would leave everyone else waiting for it. */
  weft_status_t st = WEFT_STATUS_SUCCESS, lst = WEFT_STATUS_SUCCESS;
  uint64_t deadline = weft_now_ns() + bs->timeout_ns;
  int ls = -1;
  peer_fds[local_rank] = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (peer_fds[local_rank] < 0)
    st = WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "rank %d: dup of its fd: %s", bs->rank,
                  strerror(errno));
  if (local_world > 1) {
    struct sockaddr_un sa;
    socklen_t len = unix_name(&sa, bs->job_id, bs->rank);
    ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, len) != 0 || listen(ls, local_world) != 0) {
      lst = WEFT_ERR(NULL, WEFT_STATUS_SYSTEM_ERROR, "rank %d: cannot listen on its local "
                     "socket @%s: %s", bs->rank, sa.sun_path + 1, strerror(errno));
      if (ls >= 0) close(ls);
      ls = -1;
    }
  }
  /* Everyone listens before anyone connects. */
  weft_status_t bst = weft_bootstrap_barrier(bs);
  if (bst != WEFT_STATUS_SUCCESS) {
    if (ls >= 0) close(ls);
    for (int i = 0; i < local_world; i++)
      if (peer_fds[i] >= 0) close(peer_fds[i]), peer_fds[i] = -1;
    return bst;
  }
  /* Send to each peer in turn (a connect lands in the peer's backlog, so nobody waits for the
   * other to accept first), starting after this rank so that not everyone hits one peer at
   * once. A rank that cannot listen still sends, so that its peers are not left waiting; it
   * fails the exchange at the agreement below. Messages carry bs->seq (one past the barrier's),
   * the same on every rank. */
  for (int i = 1; i < local_world && st == WEFT_STATUS_SUCCESS; i++)
    st = send_fd(bs, ranks[(local_rank + i) % local_world], fd, deadline);
  if (st == WEFT_STATUS_SUCCESS) st = lst;
  for (int got = 0; st == WEFT_STATUS_SUCCESS && got < local_world - 1; got++) {
    int from = -1, rfd = -1;
    st = recv_fd(bs, ls, &from, &rfd, deadline);
    if (st == WEFT_STATUS_TIMEOUT) {
      bool *missing = calloc((size_t)bs->world, sizeof *missing);
      char list[256] = "?", dur[32];
      if (missing) {
        for (int i = 0; i < local_world; i++) missing[ranks[i]] = peer_fds[i] < 0;
        fmt_ranks(list, sizeof list, missing, bs->world);
        free(missing);
      }
      fmt_duration(dur, sizeof dur, bs->timeout_ns);
      st = WEFT_ERR(NULL, st, "rank %d: rank(s) %s never passed their fd within %s", bs->rank,
                    list, dur);
      break;
    }
    if (st != WEFT_STATUS_SUCCESS) break;
    int slot = -1;
    for (int i = 0; i < local_world; i++)
      if (ranks[i] == from) slot = i;
    if (slot < 0 || peer_fds[slot] >= 0) {
      close(rfd);
      st = WEFT_ERR(NULL, WEFT_STATUS_REMOTE_ERROR, "rank %d: an fd from rank %d, which is %s",
                    bs->rank, from, slot < 0 ? "not on its node list" : "a second one");
      break;
    }
    peer_fds[slot] = rfd;
  }
  if (ls >= 0) close(ls);

  /* Agree on the outcome: one rank's failure fails every rank, with its reason. */
  fd_outcome_t *all = calloc((size_t)bs->world, sizeof *all);
  if (!all) {
    st = WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  } else {
    all[bs->rank].status = st;
    if (st != WEFT_STATUS_SUCCESS)
      snprintf(all[bs->rank].text, sizeof all[bs->rank].text, "%s", weft_get_last_error());
    weft_status_t ast = weft_bootstrap_allgather(bs, all, sizeof *all);
    if (ast != WEFT_STATUS_SUCCESS) st = ast;
    for (int r = 0; st == WEFT_STATUS_SUCCESS && r < bs->world; r++)
      if (all[r].status != WEFT_STATUS_SUCCESS) {
        all[r].text[sizeof all[r].text - 1] = 0;
        st = WEFT_ERR(NULL, WEFT_STATUS_REMOTE_ERROR, "rank %d: the fd exchange failed on rank "
                      "%d: %s", bs->rank, r, all[r].text);
      }
    free(all);
  }
  if (st != WEFT_STATUS_SUCCESS)
    for (int i = 0; i < local_world; i++)
      if (peer_fds[i] >= 0) close(peer_fds[i]), peer_fds[i] = -1;
  return st;
}
