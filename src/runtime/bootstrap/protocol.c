/*
 * bootstrap/protocol.c — the pieces of the TCP star's protocol that rank 0's server, the other
 * ranks' client and the collectives all use: deadline-bounded sends and receives of whole
 * messages (every socket here is non-blocking, and every wait has the deadline of its call),
 * the incremental reader through which rank 0 reads many sockets at once, the ERROR message by
 * which rank 0 gives every rank its verdict, and the helpers for deadlines and for messages that
 * name ranks. The wire format is in internal.h.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                             */
/* ---------------------------------------------------------------------------------------- */

void weft_bootstrap_fmt_duration(char *buf, size_t n, uint64_t ns) {
  if (ns % 1000000000ull == 0) snprintf(buf, n, "%llu s", (unsigned long long)(ns / 1000000000ull));
  else if (ns >= 1000000000ull) snprintf(buf, n, "%.1f s", (double)ns * 1e-9);
  else snprintf(buf, n, "%llu ms", (unsigned long long)(ns / 1000000ull));
}

/* "3", "3, 5", "2-7, 9": which ranks, compactly, for worlds of thousands. */
void weft_bootstrap_fmt_ranks(char *buf, size_t n, const bool *in, int count) {
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

int weft_bootstrap_ms_left(uint64_t deadline) {
  uint64_t now = weft_now_ns();
  if (now >= deadline) return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000; /* round up: never spin on a 0 ms poll */
  return ms > 1000000 ? 1000000 : (int)ms;
}

uint64_t weft_bootstrap_min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* How long past their own deadline the other ranks wait for rank 0's verdict: rank 0 started
 * its own timer at about the same moment and reports which rank was missing. */
uint64_t weft_bootstrap_reply_grace_ns(uint64_t timeout_ns) {
  uint64_t g = timeout_ns / 4;
  if (g < 1000000000ull) g = 1000000000ull;
  return weft_bootstrap_min_u64(g, 10000000000ull);
}

void weft_bootstrap_fmt_who(char *buf, size_t n, int rank, const ident_t *id) {
  if (id && id->pid > 0) snprintf(buf, n, "rank %d (pid %d on %s)", rank, (int)id->pid, id->host);
  else snprintf(buf, n, "rank %d", rank);
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
    int left = weft_bootstrap_ms_left(deadline);
    if (left == 0) return WEFT_STATUS_TIMEOUT;
    if (poll(&pfd, 1, left) < 0 && errno != EINTR) return WEFT_STATUS_SYSTEM_ERROR;
  }
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_recv_all(int fd, void *buf, size_t n, uint64_t deadline) {
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
    int left = weft_bootstrap_ms_left(deadline);
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
    weft_status_t st = weft_bootstrap_recv_all(fd, sink, k, deadline);
    if (st != WEFT_STATUS_SUCCESS) return st;
    n -= k;
  }
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_bootstrap_send_msg(int fd, const msg_header_t *h, const void *payload,
                                      uint64_t deadline) {
  weft_status_t st = send_all(fd, h, sizeof *h, deadline);
  if (st == WEFT_STATUS_SUCCESS && h->bytes) st = send_all(fd, payload, h->bytes, deadline);
  return st;
}

/* Takes what has arrived for rd without waiting: RD_HEADER once the header is in and the caller
 * has not yet placed its payload, RD_DONE once the payload is in too. */
rd_result_t weft_bootstrap_rd_pump(reader_t *rd) {
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
      want = rd->dst ? (size_t)weft_bootstrap_min_u64(left, SIZE_MAX / 2)
                     : (size_t)weft_bootstrap_min_u64(left, sizeof sink);
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
/* Rank 0's verdict (ERROR)                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* Rank 0 tells every other rank still connected why the job cannot go on, so that each fails
 * now with rank 0's diagnosis instead of at its own deadline with less to say. Best effort:
 * a rank that cannot be told finds out from its own timer or from the closed socket. */
void weft_bootstrap_broadcast_error(weft_bootstrap_t *bs, weft_status_t st, const char *text,
                                    const int *socks, int count, bool in_step) {
  /* op = 1 tells the others that the failed call still counts and the stream is in step. */
  msg_header_t h = {BOOT_MAGIC, MSG_ERROR, 0, bs->world, in_step, (int32_t)st, bs->seq,
                    strlen(text) + 1};
  uint64_t deadline = weft_now_ns() + 1000000000ull;
  for (int i = 0; i < count; i++)
    if (socks[i] >= 0) (void)weft_bootstrap_send_msg(socks[i], &h, text, deadline);
}

/* A joiner read an ERROR header from rank 0: its text, and the status every rank returns. */
weft_status_t weft_bootstrap_read_remote_error(int fd, const msg_header_t *h, char *text,
                                               size_t n, uint64_t deadline) {
  size_t k = h->bytes < n ? (size_t)h->bytes : n - 1;
  text[0] = 0;
  if (weft_bootstrap_recv_all(fd, text, k, deadline) == WEFT_STATUS_SUCCESS) text[k] = 0;
  else snprintf(text, n, "(rank 0's message was cut off)");
  if (h->bytes > k) (void)drain(fd, h->bytes - k, deadline);
  text[n - 1] = 0;
  return h->status > 0 && h->status < WEFT_STATUS_COUNT ? (weft_status_t)h->status
                                                         : WEFT_STATUS_REMOTE_ERROR;
}
