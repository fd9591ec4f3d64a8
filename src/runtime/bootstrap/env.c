/*
 * bootstrap/env.c — who this rank is and where the ranks meet, from the launcher's variables
 * alone: rank, world, local rank and local world from WEFT_*, torchrun, Open MPI or Slurm
 * variables, and the rendezvous address from WEFT_BOOTSTRAP_ADDR, else MASTER_ADDR with
 * WEFT_BOOTSTRAP_PORT or MASTER_PORT+1 (see bootstrap.h). Nothing here opens a socket; the
 * rendezvous parses its address with the same host:port reader.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
const char *weft_bootstrap_split_hostport(const char *addr, char *host, size_t host_size,
                                          int *port) {
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
    const char *why = weft_bootstrap_split_hostport(a, host, sizeof host, &port);
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
