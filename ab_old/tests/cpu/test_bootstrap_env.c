/*
 * test_bootstrap_env.c — how the bootstrap reads a job from the environment, in one process with
 * setenv/unsetenv: each launcher's variables (WEFT_*, torchrun, Open MPI, Slurm with its per-node
 * task lists), their precedence, no variables (a world of one), malformed or inconsistent values
 * (WEFT_STATUS_INVALID_ARGUMENT, naming the variable), and the rendezvous address
 * (WEFT_BOOTSTRAP_ADDR; MASTER_ADDR with WEFT_BOOTSTRAP_PORT or MASTER_PORT+1, never MASTER_PORT).
 * Exit 0 on pass, 1 on failure.
 */
// weft-test: timeout=30
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bootstrap.h"

static int fails, checks;

static const char *all_vars[] = {
    "WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_WORLD_SIZE", "RANK",
    "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS_PER_NODE",
    "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "MASTER_ADDR", "MASTER_PORT",
    "WEFT_BOOTSTRAP_ADDR", "WEFT_BOOTSTRAP_PORT"};

/* Clears every variable the bootstrap reads, then sets the NULL-terminated name/value pairs. */
static void set_env(const char *const *kv) {
  for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++) unsetenv(all_vars[i]);
  for (; *kv; kv += 2) setenv(kv[0], kv[1], 1);
}

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_ENV ((const char *const[]){NULL})

/* Expects success with the given layout. */
static void ok_env(const char *what, const char *const *kv, int rank, int world, int lrank,
                   int lworld, const char *launcher) {
  set_env(kv);
  checks++;
  weft_bootstrap_info_t info;
  memset(&info, 0xff, sizeof info);
  weft_status_t st = weft_bootstrap_read_env(&info);
  if (st != WEFT_STATUS_SUCCESS) {
    fails++;
    printf("FAIL %s: %s (%s)\n", what, weft_get_error_string(st), weft_get_last_error());
    return;
  }
  if (info.rank != rank || info.world != world || info.local_rank != lrank ||
      info.local_world != lworld || !info.launcher || strcmp(info.launcher, launcher)) {
    fails++;
    printf("FAIL %s: got rank %d/%d local %d/%d via %s; want %d/%d local %d/%d via %s\n", what,
           info.rank, info.world, info.local_rank, info.local_world,
           info.launcher ? info.launcher : "(null)", rank, world, lrank, lworld, launcher);
  }
}

/* Expects WEFT_STATUS_INVALID_ARGUMENT with `names` in the message. */
static void bad_env(const char *what, const char *const *kv, const char *names) {
  set_env(kv);
  checks++;
  weft_bootstrap_info_t info;
  weft_status_t st = weft_bootstrap_read_env(&info);
  if (st != WEFT_STATUS_INVALID_ARGUMENT) {
    fails++;
    printf("FAIL %s: %s, want invalid argument\n", what, weft_get_error_string(st));
  } else if (names && !strstr(weft_get_last_error(), names)) {
    fails++;
    printf("FAIL %s: the message does not name %s: %s\n", what, names, weft_get_last_error());
  }
}

static void ok_addr(const char *what, const char *const *kv, int world, const char *want) {
  set_env(kv);
  checks++;
  weft_bootstrap_info_t info = {0, world, 0, world, "test"};
  char addr[128];
  memset(addr, 'x', sizeof addr);
  weft_status_t st = weft_bootstrap_read_addr(&info, addr, sizeof addr);
  if (st != WEFT_STATUS_SUCCESS) {
    fails++;
    printf("FAIL %s: %s (%s)\n", what, weft_get_error_string(st), weft_get_last_error());
    return;
  }
  if (strcmp(addr, want)) {
    fails++;
    printf("FAIL %s: address \"%s\", want \"%s\"\n", what, addr, want);
  }
  /* Whatever else happens, weft never takes torch's store port. */
  const char *mp = getenv("MASTER_PORT"), *colon = strrchr(addr, ':');
  if (mp && colon && !strcmp(colon + 1, mp)) {
    fails++;
    printf("FAIL %s: the address uses MASTER_PORT %s\n", what, mp);
  }
}

static void bad_addr(const char *what, const char *const *kv, int world, const char *names) {
  set_env(kv);
  checks++;
  weft_bootstrap_info_t info = {0, world, 0, world, "test"};
  char addr[128];
  weft_status_t st = weft_bootstrap_read_addr(&info, addr, sizeof addr);
  if (st != WEFT_STATUS_INVALID_ARGUMENT) {
    fails++;
    printf("FAIL %s: %s (address \"%s\"), want invalid argument\n", what,
           weft_get_error_string(st), st == WEFT_STATUS_SUCCESS ? addr : "");
  } else if (names && !strstr(weft_get_last_error(), names)) {
    fails++;
    printf("FAIL %s: the message does not name %s: %s\n", what, names, weft_get_last_error());
  }
}

static void test_launchers(void) {
  ok_env("no variables: a world of one", NO_ENV, 0, 1, 0, 1, "none");
  ok_env("WEFT_*", ENV("WEFT_RANK", "3", "WEFT_WORLD_SIZE", "8", "WEFT_LOCAL_RANK", "3",
                       "WEFT_LOCAL_WORLD_SIZE", "4"), 3, 8, 3, 4, "WEFT");
  ok_env("WEFT_* without local variables: one node",
         ENV("WEFT_RANK", "2", "WEFT_WORLD_SIZE", "4"), 2, 4, 2, 4, "WEFT");
  ok_env("WEFT_* with the local world only: block layout",
         ENV("WEFT_RANK", "5", "WEFT_WORLD_SIZE", "8", "WEFT_LOCAL_WORLD_SIZE", "4"), 5, 8, 1, 4,
         "WEFT");
  ok_env("WEFT_* local rank equal to rank, no local world: one node",
         ENV("WEFT_RANK", "1", "WEFT_WORLD_SIZE", "2", "WEFT_LOCAL_RANK", "1"), 1, 2, 1, 2, "WEFT");
  ok_env("torchrun", ENV("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE",
                         "4"), 5, 8, 1, 4, "torchrun");
  ok_env("torchrun, world of one", ENV("RANK", "0", "WORLD_SIZE", "1", "LOCAL_RANK", "0",
                                       "LOCAL_WORLD_SIZE", "1"), 0, 1, 0, 1, "torchrun");
  ok_env("Open MPI", ENV("OMPI_COMM_WORLD_RANK", "6", "OMPI_COMM_WORLD_SIZE", "16",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "6", "OMPI_COMM_WORLD_LOCAL_SIZE", "8"),
         6, 16, 6, 8, "Open MPI");
  ok_env("Slurm, SLURM_NTASKS_PER_NODE", ENV("SLURM_PROCID", "6", "SLURM_NTASKS", "8",
                                             "SLURM_LOCALID", "2", "SLURM_NTASKS_PER_NODE", "4"),
         6, 8, 2, 4, "Slurm");
  ok_env("Slurm, SLURM_TASKS_PER_NODE 2(x3)",
         ENV("SLURM_PROCID", "3", "SLURM_NTASKS", "6", "SLURM_LOCALID", "1", "SLURM_NODEID", "1",
             "SLURM_TASKS_PER_NODE", "2(x3)"), 3, 6, 1, 2, "Slurm");
  ok_env("Slurm, 4(x2),2 on node 2",
         ENV("SLURM_PROCID", "9", "SLURM_NTASKS", "10", "SLURM_LOCALID", "1", "SLURM_NODEID", "2",
             "SLURM_TASKS_PER_NODE", "4(x2),2"), 9, 10, 1, 2, "Slurm");
  ok_env("Slurm, 4(x2),2 on node 1",
         ENV("SLURM_PROCID", "5", "SLURM_NTASKS", "10", "SLURM_LOCALID", "1", "SLURM_NODEID", "1",
             "SLURM_TASKS_PER_NODE", "4(x2),2"), 5, 10, 1, 4, "Slurm");
  ok_env("Slurm, 3,1,2 on node 2 (no repeat groups)",
         ENV("SLURM_PROCID", "5", "SLURM_NTASKS", "6", "SLURM_LOCALID", "1", "SLURM_NODEID", "2",
             "SLURM_TASKS_PER_NODE", "3,1,2"), 5, 6, 1, 2, "Slurm");
  ok_env("Slurm, no SLURM_NODEID: node 0",
         ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1",
             "SLURM_NTASKS_PER_NODE", "4(x1)"), 1, 4, 1, 4, "Slurm");
  ok_env("Slurm, --ntasks-per-node wins over the allocation's list",
         ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1",
             "SLURM_NTASKS_PER_NODE", "2", "SLURM_TASKS_PER_NODE", "4"), 1, 4, 1, 2, "Slurm");
  ok_env("Slurm, the step's list wins over the allocation's",
         ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "6", "SLURM_LOCALID", "1",
             "SLURM_STEP_TASKS_PER_NODE", "3(x2)", "SLURM_TASKS_PER_NODE", "4,2"), 1, 6, 1, 3,
         "Slurm");
  ok_env("Slurm without a per-node list, one node",
         ENV("SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "2"), 2, 4, 2, 4, "Slurm");

  /* Precedence: WEFT_* > torchrun > Open MPI > Slurm. */
  ok_env("WEFT_* wins over torchrun, Open MPI and Slurm",
         ENV("WEFT_RANK", "1", "WEFT_WORLD_SIZE", "2", "RANK", "7", "WORLD_SIZE", "9",
             "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3", "SLURM_PROCID", "4",
             "SLURM_NTASKS", "5"), 1, 2, 1, 2, "WEFT");
  ok_env("torchrun wins over Open MPI and Slurm",
         ENV("RANK", "2", "WORLD_SIZE", "3", "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE",
             "5", "SLURM_PROCID", "1", "SLURM_NTASKS", "2"), 2, 3, 2, 3, "torchrun");
  ok_env("Open MPI wins over Slurm",
         ENV("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "SLURM_PROCID", "0",
             "SLURM_NTASKS", "7"), 1, 2, 1, 2, "Open MPI");
  ok_env("a launcher's local variables alone do not select it",
         ENV("LOCAL_RANK", "3", "LOCAL_WORLD_SIZE", "4", "SLURM_PROCID", "1", "SLURM_NTASKS", "2"),
         1, 2, 1, 2, "Slurm");

  /* Malformed or inconsistent: an error naming the variable, never a guess. */
  bad_env("rank == world", ENV("WEFT_RANK", "4", "WEFT_WORLD_SIZE", "4"), "WEFT_RANK");
  bad_env("world 0", ENV("RANK", "0", "WORLD_SIZE", "0"), "WORLD_SIZE");
  bad_env("rank not a number", ENV("RANK", "x", "WORLD_SIZE", "4"), "RANK");
  bad_env("negative rank", ENV("WEFT_RANK", "-1", "WEFT_WORLD_SIZE", "4"), "WEFT_RANK");
  bad_env("rank with a sign", ENV("WEFT_RANK", "+1", "WEFT_WORLD_SIZE", "4"), "WEFT_RANK");
  bad_env("rank with spaces", ENV("WEFT_RANK", " 1", "WEFT_WORLD_SIZE", "4"), "WEFT_RANK");
  bad_env("world with trailing text", ENV("WEFT_RANK", "1", "WEFT_WORLD_SIZE", "4x"),
          "WEFT_WORLD_SIZE");
  bad_env("empty rank", ENV("RANK", "", "WORLD_SIZE", "4"), "RANK");
  bad_env("huge world", ENV("RANK", "1", "WORLD_SIZE", "99999999999"), "WORLD_SIZE");
  bad_env("rank without world", ENV("RANK", "1"), "WORLD_SIZE");
  bad_env("world without rank", ENV("OMPI_COMM_WORLD_SIZE", "4"), "OMPI_COMM_WORLD_RANK");
  bad_env("a half-set WEFT_* does not fall through to torchrun",
          ENV("WEFT_RANK", "1", "RANK", "1", "WORLD_SIZE", "2"), "WEFT_WORLD_SIZE");
  bad_env("local rank >= local world",
          ENV("WEFT_RANK", "1", "WEFT_WORLD_SIZE", "4", "WEFT_LOCAL_RANK", "2",
              "WEFT_LOCAL_WORLD_SIZE", "2"), NULL);
  bad_env("local world > world", ENV("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                                     "LOCAL_WORLD_SIZE", "4"), NULL);
  bad_env("local world 0", ENV("RANK", "1", "WORLD_SIZE", "2", "LOCAL_WORLD_SIZE", "0"),
          "LOCAL_WORLD_SIZE");
  bad_env("local rank not a number", ENV("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "one"),
          "LOCAL_RANK");
  bad_env("local rank set, local world unknown, several nodes",
          ENV("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1"), "LOCAL_WORLD_SIZE");
  bad_env("Slurm, malformed list", ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID",
                                       "1", "SLURM_TASKS_PER_NODE", "4(x"),
          "SLURM_TASKS_PER_NODE");
  bad_env("Slurm, list of words", ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID",
                                      "1", "SLURM_NTASKS_PER_NODE", "four"),
          "SLURM_NTASKS_PER_NODE");
  bad_env("Slurm, trailing junk", ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID",
                                      "1", "SLURM_TASKS_PER_NODE", "2(x2)junk"),
          "SLURM_TASKS_PER_NODE");
  bad_env("Slurm, a node past the list",
          ENV("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1", "SLURM_NODEID", "5",
              "SLURM_TASKS_PER_NODE", "2(x2)"), "SLURM_NODEID");
  bad_env("Slurm, local id past the node's count",
          ENV("SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_LOCALID", "3",
              "SLURM_NTASKS_PER_NODE", "2"), NULL);
  bad_env("Slurm, several nodes without a per-node list",
          ENV("SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1"), "SLURM_LOCALID");
  checks++;
  if (weft_bootstrap_read_env(NULL) != WEFT_STATUS_INVALID_ARGUMENT) {
    fails++;
    printf("FAIL read_env(NULL) is not invalid argument\n");
  }
}

static void test_addresses(void) {
  ok_addr("WEFT_BOOTSTRAP_ADDR wins over MASTER_ADDR",
          ENV("WEFT_BOOTSTRAP_ADDR", "10.0.0.1:4000", "MASTER_ADDR", "h", "MASTER_PORT", "29500"),
          4, "10.0.0.1:4000");
  ok_addr("WEFT_BOOTSTRAP_ADDR with a host name", ENV("WEFT_BOOTSTRAP_ADDR", "node-7.cluster:31000"),
          8, "node-7.cluster:31000");
  ok_addr("WEFT_BOOTSTRAP_ADDR, IPv6 in brackets", ENV("WEFT_BOOTSTRAP_ADDR", "[::1]:29600"), 2,
          "[::1]:29600");
  ok_addr("MASTER_ADDR with MASTER_PORT+1 (never torch's port)",
          ENV("MASTER_ADDR", "node7", "MASTER_PORT", "29500"), 4, "node7:29501");
  ok_addr("WEFT_BOOTSTRAP_PORT over MASTER_PORT+1",
          ENV("MASTER_ADDR", "node7", "MASTER_PORT", "29500", "WEFT_BOOTSTRAP_PORT", "31000"), 4,
          "node7:31000");
  ok_addr("WEFT_BOOTSTRAP_PORT without MASTER_PORT",
          ENV("MASTER_ADDR", "10.1.2.3", "WEFT_BOOTSTRAP_PORT", "31000"), 4, "10.1.2.3:31000");
  ok_addr("MASTER_ADDR as a bare IPv6 literal gets brackets",
          ENV("MASTER_ADDR", "fe80::1", "MASTER_PORT", "29500"), 2, "[fe80::1]:29501");
  ok_addr("a world of one needs no address", NO_ENV, 1, "");
  ok_addr("a world of one ignores MASTER_ADDR", ENV("MASTER_ADDR", "h", "MASTER_PORT", "1"), 1, "");

  bad_addr("a world of 4 without any address", NO_ENV, 4, "WEFT_BOOTSTRAP_ADDR");
  bad_addr("address without a port", ENV("WEFT_BOOTSTRAP_ADDR", "nohostport"), 4,
           "WEFT_BOOTSTRAP_ADDR");
  bad_addr("address without a host", ENV("WEFT_BOOTSTRAP_ADDR", ":29500"), 4, "host");
  bad_addr("empty port", ENV("WEFT_BOOTSTRAP_ADDR", "h:"), 4, "port");
  bad_addr("port 0", ENV("WEFT_BOOTSTRAP_ADDR", "h:0"), 4, "port");
  bad_addr("port 65536", ENV("WEFT_BOOTSTRAP_ADDR", "h:65536"), 4, "port");
  bad_addr("port not a number", ENV("WEFT_BOOTSTRAP_ADDR", "h:http"), 4, "port");
  bad_addr("IPv6 without brackets", ENV("WEFT_BOOTSTRAP_ADDR", "::1:29500"), 4, "brackets");
  bad_addr("IPv6 without its closing bracket", ENV("WEFT_BOOTSTRAP_ADDR", "[::1:29500"), 4, "]");
  bad_addr("IPv6 without a port", ENV("WEFT_BOOTSTRAP_ADDR", "[::1]29500"), 4, "port");
  bad_addr("WEFT_BOOTSTRAP_ADDR on MASTER_PORT",
           ENV("WEFT_BOOTSTRAP_ADDR", "h:29500", "MASTER_PORT", "29500"), 4, "MASTER_PORT");
  bad_addr("WEFT_BOOTSTRAP_PORT equal to MASTER_PORT",
           ENV("MASTER_ADDR", "h", "MASTER_PORT", "29500", "WEFT_BOOTSTRAP_PORT", "29500"), 4,
           "MASTER_PORT");
  bad_addr("WEFT_BOOTSTRAP_PORT not a port", ENV("MASTER_ADDR", "h", "WEFT_BOOTSTRAP_PORT", "x"),
           4, "WEFT_BOOTSTRAP_PORT");
  bad_addr("MASTER_ADDR without MASTER_PORT", ENV("MASTER_ADDR", "h"), 4, "MASTER_PORT");
  bad_addr("MASTER_PORT not a number", ENV("MASTER_ADDR", "h", "MASTER_PORT", "abc"), 4,
           "MASTER_PORT");
  bad_addr("MASTER_PORT 65535 leaves no port above it",
           ENV("MASTER_ADDR", "h", "MASTER_PORT", "65535"), 4, "MASTER_PORT");
  checks++;
  char small[8];
  weft_bootstrap_info_t info = {0, 2, 0, 2, "test"};
  set_env(ENV("WEFT_BOOTSTRAP_ADDR", "a-long-host-name:29500"));
  if (weft_bootstrap_read_addr(&info, small, sizeof small) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_read_addr(NULL, small, sizeof small) != WEFT_STATUS_INVALID_ARGUMENT ||
      weft_bootstrap_read_addr(&info, NULL, 8) != WEFT_STATUS_INVALID_ARGUMENT) {
    fails++;
    printf("FAIL read_addr argument checks\n");
  }
}

int main(void) {
  setenv("WEFT_DEBUG", "NONE", 1); /* the expected failures would each log a WARN line */
  test_launchers();
  test_addresses();
  set_env(NO_ENV);
  printf("%d checks, %d failed: %s\n", checks, fails, fails ? "FAILED" : "PASSED");
  return fails ? 1 : 0;
}
