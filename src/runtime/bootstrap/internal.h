/*
 * bootstrap/internal.h — what the files of the bootstrap share, and nothing else includes: the
 * wire format of the TCP star, the state behind weft_bootstrap_t, rank 0's incremental message
 * reader, and the helpers that more than one of those files calls.
 *
 * Wire format (all ranks of a job run the same build on the same architecture, so structs go
 * as they are): every message is a 40-byte msg_header_t then `bytes` of payload.
 *
 *   rendezvous   joiner -> 0: HELLO {version, pid, host}    0 -> joiner: WELCOME {job id, pid, host}
 *   collective   joiner -> 0: CONTRIB {seq, op, blob}       0 -> joiner: RESULT {world * blob}
 *   any failure  0 -> joiner: ERROR {status, text}          (the same status on every rank)
 */
#ifndef WEFT_BOOTSTRAP_INTERNAL_H
#define WEFT_BOOTSTRAP_INTERNAL_H

#include "../bootstrap.h"

#define BOOT_MAGIC 0x77656674u /* "weft" */
#define BOOT_VERSION 2u
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

/* env.c */
const char *weft_bootstrap_split_hostport(const char *addr, char *host, size_t host_size,
                                          int *port);

/* protocol.c: messages, deadlines, deadline-bounded I/O and rank 0's reader */
void weft_bootstrap_fmt_duration(char *buf, size_t n, uint64_t ns);
void weft_bootstrap_fmt_ranks(char *buf, size_t n, const bool *in, int count);
void weft_bootstrap_fmt_who(char *buf, size_t n, int rank, const ident_t *id);
int weft_bootstrap_ms_left(uint64_t deadline);
uint64_t weft_bootstrap_min_u64(uint64_t a, uint64_t b);
uint64_t weft_bootstrap_reply_grace_ns(uint64_t timeout_ns);
weft_status_t weft_bootstrap_recv_all(int fd, void *buf, size_t n, uint64_t deadline);
weft_status_t weft_bootstrap_send_msg(int fd, const msg_header_t *h, const void *payload,
                                      uint64_t deadline);
rd_result_t weft_bootstrap_rd_pump(reader_t *rd);
void weft_bootstrap_broadcast_error(weft_bootstrap_t *bs, weft_status_t st, const char *text,
                                    const int *socks, int count, bool in_step);
weft_status_t weft_bootstrap_read_remote_error(int fd, const msg_header_t *h, char *text,
                                               size_t n, uint64_t deadline);

#endif /* WEFT_BOOTSTRAP_INTERNAL_H */
