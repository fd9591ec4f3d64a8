/*
 * bootstrap/rendezvous.c — how the ranks meet: rank 0 listens at the rendezvous address and
 * admits every other rank (serve), the others connect and say hello (join), and
 * weft_bootstrap_create/destroy hold the result, one socket per other rank on rank 0 and one to
 * rank 0 elsewhere. Rank 0 reads all its sockets at once through poll(), so a rank that dies is
 * seen as soon as its socket closes, whatever the others are doing. The whole rendezvous has the
 * deadline of the create call; a disagreement (world size, a rank claimed twice, another build)
 * is decided by rank 0 and sent to every rank, so that all fail with the same status.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BOOT_DEFAULT_TIMEOUT_NS 60000000000ull

/* ---------------------------------------------------------------------------------------- */
/* Identity, addresses, sockets                                                             */
/* ---------------------------------------------------------------------------------------- */

static void self_ident(ident_t *id) {
  memset(id, 0, sizeof *id);
  id->pid = (int32_t)getpid();
  if (gethostname(id->host, sizeof id->host - 1) != 0) snprintf(id->host, sizeof id->host, "?");
}

static void set_nodelay(int fd) {
  /* Collectives are a request and a reply of a few bytes: Nagle would add 40 ms to each. A
   * failure only costs latency, so it is not an error. */
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static weft_status_t resolve(const char *addr, struct addrinfo **res) {
  char host[256], port_s[8];
  int port;
  const char *why = weft_bootstrap_split_hostport(addr, host, sizeof host, &port);
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

/* ---------------------------------------------------------------------------------------- */
/* Rank 0: admits every other rank                                                          */
/* ---------------------------------------------------------------------------------------- */

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
    int left = weft_bootstrap_ms_left(deadline);
    if (left == 0) {
      if (st != WEFT_STATUS_SUCCESS) break;
      bool *missing = calloc((size_t)bs->world, sizeof *missing);
      char list[256] = "?";
      if (missing) {
        for (int r = 1; r < bs->world; r++) missing[r] = !seen[r];
        weft_bootstrap_fmt_ranks(list, sizeof list, missing, bs->world);
        free(missing);
      }
      weft_bootstrap_fmt_duration(dur, sizeof dur, bs->timeout_ns);
      snprintf(msg, sizeof msg,
               "rank(s) %s never connected to %s within %s (%d of %d ranks arrived); are they "
               "running? is WEFT_BOOTSTRAP_ADDR (or MASTER_ADDR/MASTER_PORT) the same on every "
               "rank?", list, bs->addr, dur, arrived, bs->world);
      st = WEFT_STATUS_TIMEOUT;
      weft_bootstrap_broadcast_error(bs, st, msg, bs->sock, bs->world, false);
      break;
    }
    pfd[0] = (struct pollfd){ls, POLLIN, 0};
    for (int i = 0; i < npend; i++) pfd[1 + i] = (struct pollfd){pend[i].rd.fd, POLLIN, 0};
    int n = poll(pfd, (nfds_t)npend + 1, left);
    if (n < 0 && errno != EINTR) {
      if (st == WEFT_STATUS_SUCCESS) {
        snprintf(msg, sizeof msg, "rank 0: poll(): %s", strerror(errno));
        st = WEFT_STATUS_SYSTEM_ERROR;
        weft_bootstrap_broadcast_error(bs, st, msg, bs->sock, bs->world, false);
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
        rd_result_t r = weft_bootstrap_rd_pump(&c->rd);
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
        weft_bootstrap_fmt_who(who, sizeof who, rr, &c->hello.id);
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
          weft_bootstrap_fmt_who(first, sizeof first, rr, &bs->ids[rr]);
          snprintf(why, sizeof why, "two processes claim rank %d: %s and %s; are two jobs using "
                   "the bootstrap address %s, or is the rank variable wrong?", rr, first, who,
                   bs->addr);
          bad = WEFT_STATUS_MISMATCH;
        } else {
          seen[rr] = true;
          arrived++;
          bs->ids[rr] = c->hello.id;
          if (st != WEFT_STATUS_SUCCESS) { /* the job already failed: tell it why, let it go */
            weft_bootstrap_broadcast_error(bs, st, msg, &c->rd.fd, 1, false);
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
          weft_bootstrap_broadcast_error(bs, st, msg, bs->sock, bs->world, false);
          for (int r = 1; r < bs->world; r++)
            if (bs->sock[r] >= 0) close(bs->sock[r]), bs->sock[r] = -1;
        }
        weft_bootstrap_broadcast_error(bs, st, msg, &c->rd.fd, 1, false);
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
    (void)weft_bootstrap_split_hostport(bs->addr, host, sizeof host, &port);
    snprintf(w.job_id, sizeof w.job_id, "weft-%d-%016llx-%d", (int)getpid(),
             (unsigned long long)rnd, port);
    snprintf(bs->job_id, sizeof bs->job_id, "%s", w.job_id);
    w.id = bs->ids[0];
    msg_header_t h = {BOOT_MAGIC, MSG_WELCOME, 0, bs->world, 0, 0, 0, sizeof w};
    for (int r = 1; r < bs->world && st == WEFT_STATUS_SUCCESS; r++) {
      if (weft_bootstrap_send_msg(bs->sock[r], &h, &w,
                                  deadline + weft_bootstrap_reply_grace_ns(bs->timeout_ns)) !=
          WEFT_STATUS_SUCCESS) {
        char who[128];
        weft_bootstrap_fmt_who(who, sizeof who, r, &bs->ids[r]);
        snprintf(msg, sizeof msg, "%s connected to %s, then left before the rendezvous completed "
                 "(see its output)", who, bs->addr);
        st = WEFT_STATUS_REMOTE_ERROR;
        close(bs->sock[r]);
        bs->sock[r] = -1;
        weft_bootstrap_broadcast_error(bs, st, msg, bs->sock, bs->world, false);
      }
    }
  }
  if (st != WEFT_STATUS_SUCCESS) return WEFT_ERR(NULL, st, "bootstrap (rank 0): %s", msg);
  return WEFT_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* The other ranks: connect to rank 0 and say hello                                         */
/* ---------------------------------------------------------------------------------------- */

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
      int left =
          weft_bootstrap_ms_left(weft_bootstrap_min_u64(deadline, weft_now_ns() + 2000000000ull));
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
  weft_bootstrap_fmt_duration(dur, sizeof dur, bs->timeout_ns);
  /* Resolve, retrying only while the resolver says "try again" (DNS not up yet in a fresh
   * container); a name that does not exist fails now. */
  struct addrinfo *ai = NULL;
  for (;;) {
    weft_status_t st = resolve(bs->addr, &ai);
    if (st == WEFT_STATUS_SUCCESS) break;
    if (st != WEFT_STATUS_TIMEOUT || weft_bootstrap_ms_left(deadline) == 0) return st;
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
  }
  int fd = -1, err = 0;
  uint64_t backoff_ms = 10;
  bool told = false;
  while ((fd = try_connect(ai, deadline, &err)) < 0 && weft_bootstrap_ms_left(deadline) > 0) {
    if (!told && weft_now_ns() + 3000000000ull < deadline) {
      WEFT_INFO("rank %d: rank 0 not listening at %s yet (%s); retrying", bs->rank, bs->addr,
                strerror(err));
      told = true;
    }
    /* Rank 0 may simply not have started yet: retry with a growing pause. */
    uint64_t pause = weft_bootstrap_min_u64(
        backoff_ms * 1000000ull, (uint64_t)weft_bootstrap_ms_left(deadline) * 1000000ull);
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
  weft_status_t st = weft_bootstrap_send_msg(fd, &h, &hello, deadline);
  /* Rank 0 answers when the last rank arrives or at its own deadline: wait a little past ours.
   * If the hello could not be sent, rank 0 may still have left its verdict in the socket. */
  uint64_t reply_deadline = deadline + weft_bootstrap_reply_grace_ns(bs->timeout_ns);
  if (st != WEFT_STATUS_SUCCESS)
    reply_deadline = weft_bootstrap_min_u64(reply_deadline, weft_now_ns() + 200000000ull);
  st = weft_bootstrap_recv_all(fd, &h, sizeof h, reply_deadline);
  if (st == WEFT_STATUS_SUCCESS && h.magic == BOOT_MAGIC && h.kind == MSG_ERROR) {
    char why[768];
    weft_status_t remote =
        weft_bootstrap_read_remote_error(fd, &h, why, sizeof why, reply_deadline);
    return WEFT_ERR(NULL, remote, "rank %d: rank 0 ended the rendezvous: %s", bs->rank, why);
  }
  welcome_t w;
  if (st == WEFT_STATUS_SUCCESS &&
      (h.magic != BOOT_MAGIC || h.kind != MSG_WELCOME || h.bytes != sizeof w))
    return WEFT_ERR(NULL, WEFT_STATUS_MISMATCH,
                    "rank %d: what listens at %s is not a weft rank 0 of the same build (is the "
                    "port someone else's, e.g. torch's MASTER_PORT?)", bs->rank, bs->addr);
  if (st == WEFT_STATUS_SUCCESS) st = weft_bootstrap_recv_all(fd, &w, sizeof w, reply_deadline);
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

/* ---------------------------------------------------------------------------------------- */
/* Create and destroy                                                                       */
/* ---------------------------------------------------------------------------------------- */

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
