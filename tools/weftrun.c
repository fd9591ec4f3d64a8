/*
 * weftrun — starts N local ranks of a program with the WEFT_* bootstrap variables set.
 *
 *   weftrun [-t SECONDS] [--cpu] [--tag-output] -n N prog args...
 *
 * Each rank gets WEFT_RANK, WEFT_WORLD_SIZE, WEFT_LOCAL_RANK, WEFT_LOCAL_WORLD_SIZE and a
 * WEFT_BOOTSTRAP_ADDR on loopback with a port picked here; NVLink multicast is kept off
 * (NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1, TORCH_SYMM_MEM_DISABLE_MULTICAST=1) unless the user
 * set those variables. Signals are forwarded; when a rank fails the others are ended (SIGTERM,
 * then SIGKILL) and weftrun exits with that rank's code. Exit 77 (skip) when every rank exits 77,
 * or before starting when the machine has fewer GPUs than ranks (unless --cpu).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/loader.h"

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

static void usage(void) {
  fprintf(stderr,
          "usage: weftrun [-t SECONDS] [--cpu] -n N prog [args...]\n"
          "  -n N        ranks to start on this machine (one GPU each)\n"
          "  -t SECONDS  end the job after this long (exit 124)\n"
          "  --cpu       do not check for GPUs (CPU-only programs)\n");
  exit(2);
}

static int pick_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) ||
      getsockname(s, (struct sockaddr *)&a, &len)) {
    perror("weftrun: picking a port");
    exit(1);
  }
  close(s);
  return ntohs(a.sin_port);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void signal_all(pid_t *pids, int n, int sig) {
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) kill(pids[i], sig);
}

int main(int argc, char **argv) {
  int n = 0, cpu = 0;
  double limit = 0;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-t") && i + 1 < argc) limit = atof(argv[++i]);
    else if (!strcmp(argv[i], "--cpu")) cpu = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) usage();
    else usage();
  }
  if (n < 1 || i >= argc) usage();
  char **prog = argv + i;

  if (!cpu) {
    if (weft_cu_load(NULL, NULL) != WEFT_STATUS_SUCCESS) {
      printf("weftrun: no GPU (%s); skipping\n", weft_get_last_error());
      return 77;
    }
    int count = 0;
    weft_cu.cuDeviceGetCount(&count);
    if (count < n) {
      printf("weftrun: %d ranks need %d GPUs, found %d; skipping\n", n, n, count);
      return 77;
    }
  }

  char addr[64], buf[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", pick_port());
  const char *mc[][2] = {{"NCCL_NVLS_ENABLE", "0"},
                         {"NVSHMEM_DISABLE_NVLS", "1"},
                         {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}};
  for (int k = 0; k < 3; k++) setenv(mc[k][0], mc[k][1], 0);

  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  pid_t *pids = calloc((size_t)n, sizeof *pids);
  pid_t parent = getpid();
  for (int r = 0; r < n; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("weftrun: fork");
      signal_all(pids, r, SIGKILL);
      return 1;
    }
    if (p == 0) {
      /* Die with weftrun, whatever kills it (ctest's TIMEOUT included). */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      snprintf(buf, sizeof buf, "%d", r);
      setenv("WEFT_RANK", buf, 1);
      setenv("WEFT_LOCAL_RANK", buf, 1);
      snprintf(buf, sizeof buf, "%d", n);
      setenv("WEFT_WORLD_SIZE", buf, 1);
      setenv("WEFT_LOCAL_WORLD_SIZE", buf, 1);
      setenv("WEFT_BOOTSTRAP_ADDR", addr, 1);
      execvp(prog[0], prog);
      fprintf(stderr, "weftrun: cannot run %s: %s\n", prog[0], strerror(errno));
      _exit(127);
    }
    pids[r] = p;
  }

  int live = n, result = 0, skipped = 0, failed_rank = -1;
  double start = now_s(), kill_at = 0;
  while (live > 0) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      int r = 0;
      while (r < n && pids[r] != p) r++;
      if (r == n) continue;
      pids[r] = 0;
      live--;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code == 77) {
        skipped++;
      } else if (code != 0 && failed_rank < 0 && !kill_at) {
        failed_rank = r;
        result = code;
        if (WIFSIGNALED(status))
          fprintf(stderr, "weftrun: rank %d killed by signal %d; ending the others\n", r,
                  WTERMSIG(status));
        else
          fprintf(stderr, "weftrun: rank %d exited with %d; ending the others\n", r, code);
        signal_all(pids, n, SIGTERM);
        kill_at = now_s() + 5;
      }
      continue;
    }
    if (got_signal && !kill_at) {
      fprintf(stderr, "weftrun: got signal %d; forwarding it to every rank\n", (int)got_signal);
      signal_all(pids, n, got_signal);
      result = 128 + got_signal;
      kill_at = now_s() + 5;
    }
    if (limit > 0 && !kill_at && now_s() - start > limit) {
      fprintf(stderr, "weftrun: the job ran past -t %.0f s; ending it\n", limit);
      signal_all(pids, n, SIGTERM);
      result = 124;
      kill_at = now_s() + 5;
    }
    if (kill_at && now_s() > kill_at) {
      signal_all(pids, n, SIGKILL);
      kill_at = now_s() + 3600;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  free(pids);
  if (result) return result;
  if (skipped == n) return 77;
  if (skipped) {
    fprintf(stderr, "weftrun: %d of %d ranks skipped (77), the others ran: treating as failure\n",
            skipped, n);
    return 1;
  }
  return 0;
}
