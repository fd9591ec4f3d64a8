/*
 * bootstrap/fdpass.c — the exchange of file descriptors between the ranks of a node: each rank
 * listens on an abstract AF_UNIX socket named after the job, sends its fd to every other rank of
 * its node (SCM_RIGHTS) and takes theirs, between a world-wide barrier (everyone listens before
 * anyone connects) and a world-wide all-gather of the outcomes (one rank's failure fails all).
 * Fds are taken only from processes of the same user.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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
    if ((e == EAGAIN || e == EINPROGRESS) && weft_bootstrap_ms_left(deadline) > 0) {
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
      int left = weft_bootstrap_ms_left(deadline);
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
    int left = weft_bootstrap_ms_left(deadline);
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
    int left = weft_bootstrap_ms_left(deadline);
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
        weft_bootstrap_fmt_ranks(list, sizeof list, missing, bs->world);
        free(missing);
      }
      weft_bootstrap_fmt_duration(dur, sizeof dur, bs->timeout_ns);
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
