/*
 * bootstrap/collective.c — all-gather and barrier of small blobs over the TCP star: every rank
 * sends its contribution to rank 0, which replies to all. Rank 0 decides every collective's
 * outcome; the others wait a little past their own deadline (weft_bootstrap_reply_grace_ns) so
 * that rank 0's verdict, which names the guilty rank, reaches them before their own timer fires.
 * A failed collective (a timeout, a lost rank, ranks at different calls) leaves the sockets out
 * of step, so the failure sticks: later calls return it at once. Only a size mismatch within one
 * call leaves them in step and does not stick.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Collectives: gather at rank 0, reply to all                                               */
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
    int left = weft_bootstrap_ms_left(deadline), n = 0;
    if (left == 0) {
      bool *late = calloc((size_t)world, sizeof *late);
      char list[256] = "?";
      if (late) {
        for (int r = 1; r < world; r++) late[r] = !rd[r].done;
        weft_bootstrap_fmt_ranks(list, sizeof list, late, world);
        free(late);
      }
      weft_bootstrap_fmt_duration(dur, sizeof dur, bs->timeout_ns);
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
        rd_result_t res = weft_bootstrap_rd_pump(c);
        if (res == RD_AGAIN) break;
        if (res == RD_CLOSED) {
          weft_bootstrap_fmt_who(who, sizeof who, r, &bs->ids[r]);
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
        weft_bootstrap_fmt_who(who, sizeof who, r, &bs->ids[r]);
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
      weft_status_t s = weft_bootstrap_send_msg(
          bs->sock[r], &h, buf, deadline + weft_bootstrap_reply_grace_ns(bs->timeout_ns));
      if (s != WEFT_STATUS_SUCCESS) {
        weft_bootstrap_fmt_who(who, sizeof who, r, &bs->ids[r]);
        snprintf(msg, sizeof msg, "%s left during %s #%llu (rank 0 could not send it the "
                 "result): it exited or crashed; see its output", who, op_name(op),
                 (unsigned long long)bs->seq);
        st = WEFT_STATUS_REMOTE_ERROR;
        close(bs->sock[r]);
        bs->sock[r] = -1;
        /* The ranks before r have their result already and will learn of r's loss next time. */
        weft_bootstrap_broadcast_error(bs, st, msg, bs->sock + r + 1, world - r - 1, false);
      }
    }
  } else if (st == WEFT_STATUS_MISMATCH && in_step) {
    /* Only the sizes differed: every payload was read, every rank gets this verdict and counts
     * the call, so the stream stays in step and later collectives may still work. */
    weft_bootstrap_broadcast_error(bs, st, msg, bs->sock + 1, world - 1, true);
    free(rd);
    free(pfd);
    free(idx);
    bs->seq++;
    return WEFT_ERR(NULL, st, "bootstrap (rank 0): %s", msg);
  } else {
    weft_bootstrap_broadcast_error(bs, st, msg, bs->sock + 1, world - 1, false);
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
  weft_bootstrap_fmt_who(who0, sizeof who0, 0, &bs->ids[0]);
  msg_header_t h = {BOOT_MAGIC, MSG_CONTRIB, bs->rank, bs->world, op, 0, bs->seq, bytes};
  weft_status_t st =
      weft_bootstrap_send_msg(fd, &h, bytes ? buf + (size_t)bs->rank * bytes : NULL, deadline);
  /* Rank 0 replies when the slowest rank arrives or at its own deadline, naming that rank. */
  uint64_t reply_deadline = deadline + weft_bootstrap_reply_grace_ns(bs->timeout_ns);
  /* A send can fail because rank 0 gave up on this call (this rank was late) and left; its
   * verdict may still be waiting in the socket, and says more than "connection closed". */
  if (st != WEFT_STATUS_SUCCESS)
    reply_deadline = weft_bootstrap_min_u64(reply_deadline, weft_now_ns() + 200000000ull);
  st = weft_bootstrap_recv_all(fd, &h, sizeof h, reply_deadline);
  if (st == WEFT_STATUS_SUCCESS && h.magic == BOOT_MAGIC && h.kind == MSG_ERROR) {
    char why[768];
    weft_status_t remote =
        weft_bootstrap_read_remote_error(fd, &h, why, sizeof why, reply_deadline);
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
  if (st == WEFT_STATUS_SUCCESS && want)
    st = weft_bootstrap_recv_all(fd, buf, (size_t)want, reply_deadline);
  if (st == WEFT_STATUS_TIMEOUT) {
    weft_bootstrap_fmt_duration(dur, sizeof dur, reply_deadline - start);
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
