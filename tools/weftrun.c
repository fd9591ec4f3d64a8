/*
 * weftrun — starts N local ranks of a program with everything weft's bootstrap needs set.
 *
 *   weftrun [-t SECONDS] [--cpu] [--share-gpus] [--tag-output] -n N prog [args...]
 *
 * Each rank gets WEFT_RANK, WEFT_WORLD_SIZE, WEFT_LOCAL_RANK, WEFT_LOCAL_WORLD_SIZE and
 * WEFT_BOOTSTRAP_ADDR=127.0.0.1:<port picked here>. NVLink multicast stays off
 * (NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1, TORCH_SYMM_MEM_DISABLE_MULTICAST=1) unless the
 * user set those variables, with a warning when a value they set would allow it.
 *
 * The job is all or nothing: when a rank fails (non-zero exit or a signal), the others get
 * SIGTERM, then SIGKILL after a grace period, and weftrun exits with the failing rank's code
 * (128 + signal for a signal). SIGINT/SIGTERM/SIGHUP are passed on to every rank (a second one
 * kills them). -t ends a job that runs too long (exit 124). Exit 77 (skip, as ctest's
 * SKIP_RETURN_CODE) when every rank exits 77, or before starting when the machine has no GPU
 * (no NVIDIA device nodes and no driver) or fewer GPUs than ranks (unless --cpu, or
 * --share-gpus / WEFT_SHARE_GPUS=1, with which ranks take GPUs round the ones present and their
 * kernels take turns: the multi-rank tests run, slowly, on a one-GPU machine); 1 when the device
 * nodes are there but the driver cannot be used.
 *
 * Each rank runs in its own process group, so that ending a rank also ends what it started (a
 * shell that runs the real program, say), and dies with weftrun (PR_SET_PDEATHSIG) so that a
 * ctest TIMEOUT that kills weftrun leaves nothing behind. Ranks other than 0 get /dev/null as
 * stdin; rank 0 gets weftrun's stdin unless that is a terminal (a rank in a background process
 * group that reads the terminal would be stopped).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools.h"

#define GRACE_S 5.0      /* from SIGTERM to SIGKILL when ending a job */
#define DRAIN_S 2.0      /* reading leftover output after the last rank exited */
#define MAX_RANKS 4096

/* One line-buffered output stream of a rank (--tag-output). */
typedef struct stream {
  int fd;      /* read end of the rank's pipe; -1 at EOF or without --tag-output */
  int dest;    /* 1 or 2 */
  size_t len;
  char buf[16384];
} stream_t;

typedef struct rank_proc {
  pid_t pid;
  bool running;
  stream_t out, err;
} rank_proc_t;

static int n_ranks;
static rank_proc_t *procs;

static void usage(FILE *f) {
  fprintf(f,
          "usage: weftrun [options] -n N prog [args...]\n"
          "Starts N ranks of prog on this machine with WEFT_RANK, WEFT_WORLD_SIZE,\n"
          "WEFT_LOCAL_RANK, WEFT_LOCAL_WORLD_SIZE and WEFT_BOOTSTRAP_ADDR set.\n"
          "  -n N, -np N    ranks to start (one GPU each)\n"
          "  -t SECONDS     end the job after this long (exit 124)\n"
          "  --cpu          do not require N GPUs (CPU-only programs)\n"
          "  --share-gpus   let ranks share GPUs when there are fewer than N (sets\n"
          "                 WEFT_SHARE_GPUS=1: for correctness tests; kernels take turns)\n"
          "  --tag-output   prefix every output line with \"[rank] \"\n"
          "  -h, --help     this text\n"
          "Exit status: 0 when every rank succeeded; the first failing rank's code (128+signal\n"
          "for a signal) otherwise; 124 on -t; 77 when every rank skipped (77) or the machine\n"
          "has fewer GPUs than ranks (and GPUs may not be shared).\n");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool parse_int(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v > 1 << 30) return false;
  *out = (int)v;
  return true;
}

/* Sends sig to every running rank's process group (the rank and what it started). */
static void signal_all(int sig) {
  for (int r = 0; r < n_ranks; r++)
    if (procs[r].running && killpg(procs[r].pid, sig) != 0) (void)kill(procs[r].pid, sig);
}

static void running_list(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int r = 0; r < n_ranks && len + 16 < n; r++)
    if (procs[r].running) len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? ", " : "", r);
}

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return; /* our own stdout is gone: nothing useful left to do with the text */
    p += k;
    n -= (size_t)k;
  }
}

/* Emits every complete line of s with the rank's tag; everything when flush (EOF, or a line
 * longer than the buffer). */
static void emit_lines(stream_t *s, int rank, bool flush) {
  char tag[16];
  int tl = snprintf(tag, sizeof tag, "[%d] ", rank);
  size_t start = 0;
  for (size_t i = 0; i < s->len; i++) {
    if (s->buf[i] != '\n') continue;
    write_all(s->dest, tag, (size_t)tl);
    write_all(s->dest, s->buf + start, i + 1 - start);
    start = i + 1;
  }
  if (flush && start < s->len) {
    write_all(s->dest, tag, (size_t)tl);
    write_all(s->dest, s->buf + start, s->len - start);
    write_all(s->dest, "\n", 1);
    start = s->len;
  }
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
}

static void pump_stream(stream_t *s, int rank) {
  for (;;) {
    if (s->len == sizeof s->buf) emit_lines(s, rank, true);
    ssize_t k = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (k <= 0) { /* EOF (or an error, which ends the stream the same way) */
      emit_lines(s, rank, true);
      close(s->fd);
      s->fd = -1;
      return;
    }
    s->len += (size_t)k;
    emit_lines(s, rank, false);
  }
}

/* A port on loopback that nothing else is using. The socket stays bound (never listening) while
 * the job runs, so the kernel gives the port to no one else; rank 0 may still bind and listen on
 * it because both sockets set SO_REUSEADDR and this one never listens. */
static int reserve_port(int *port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0) {
    fprintf(stderr, "weftrun: cannot pick a port on 127.0.0.1: %s\n", strerror(errno));
    if (s >= 0) close(s);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return s;
}

/* Whether the machine shows NVIDIA device nodes: then a driver that cannot be used is a
 * failure to report, not a machine without GPUs to skip on (which would turn every GPU test
 * green there). */
static bool nvidia_devices_present(void) {
  return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0;
}

/* Returns 0 when the GPUs are there, else the exit code (77: skip; 1: GPUs present but the
 * driver unusable). */
static int check_gpus(int n, bool share) {
  /* The loader logs its failure at WARN; weftrun says it once, in its own words. The log level
   * is read once per process, so unsetting the variable afterwards keeps it from the ranks. */
  bool quiet = !getenv("WEFT_DEBUG");
  if (quiet) setenv("WEFT_DEBUG", "NONE", 1);
  weft_status_t st = weft_cu_load(NULL, NULL);
  if (quiet) unsetenv("WEFT_DEBUG");
  if (st != WEFT_STATUS_SUCCESS) {
    if (nvidia_devices_present()) {
      fprintf(stderr, "weftrun: NVIDIA devices are present (/dev/nvidia*) but the CUDA driver cannot "
                      "be used: %s\n", weft_get_last_error());
      return 1;
    }
    printf("weftrun: no GPU (%s); skipping\n", weft_get_last_error());
    return 77;
  }
  int count = 0;
  CUresult res = weft_cu.cuDeviceGetCount(&count);
  if (res != CUDA_SUCCESS) {
    const char *name = "?";
    if (weft_cu.cuGetErrorName) weft_cu.cuGetErrorName(res, &name);
    if (nvidia_devices_present()) {
      fprintf(stderr, "weftrun: NVIDIA devices are present (/dev/nvidia*) but cuDeviceGetCount "
                      "failed: %s\n", name);
      return 1;
    }
    printf("weftrun: no GPU (cuDeviceGetCount failed: %s); skipping\n", name);
    return 77;
  }
  if (count < (share ? 1 : n)) {
    printf("weftrun: %d ranks need %d GPUs, found %d; skipping\n", n, share ? 1 : n, count);
    return 77;
  }
  return 0;
}

/* Keeps NVLink multicast off in every rank (docs/architecture.md, "NVLink multicast is off"). */
static void multicast_guard(void) {
  static const struct {
    const char *name, *off;
  } vars[] = {{"NCCL_NVLS_ENABLE", "0"},
              {"NVSHMEM_DISABLE_NVLS", "1"},
              {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}};
  const char *enable = getenv("WEFT_ENABLE_MULTICAST");
  bool wanted = enable && !strcmp(enable, "1");
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i].name);
    if (!v) {
      setenv(vars[i].name, vars[i].off, 1);
    } else if (strcmp(v, vars[i].off) && !wanted) {
      fprintf(stderr,
              "weftrun: warning: %s=%s allows NVLink multicast, which can take this host's GPUs "
              "out of service; set %s=%s (or WEFT_ENABLE_MULTICAST=1 if you mean it)\n",
              vars[i].name, v, vars[i].name, vars[i].off);
    }
  }
}

static void describe_exit(char *buf, size_t n, int status) {
  if (WIFSIGNALED(status))
    snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(buf, n, "exited with code %d", WEXITSTATUS(status));
}

int main(int argc, char **argv) {
  int n = 0;
  const char *share_env = getenv("WEFT_SHARE_GPUS");
  bool cpu = false, tag = false, share = share_env && !strcmp(share_env, "1");
  double limit = 0;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    } else if ((!strcmp(a, "-n") || !strcmp(a, "-np")) && i + 1 < argc) { /* -np: mpirun's */
      if (!parse_int(argv[++i], &n) || n < 1 || n > MAX_RANKS) {
        fprintf(stderr, "weftrun: -n %s: need a rank count in 1..%d\n", argv[i], MAX_RANKS);
        return 2;
      }
    } else if (!strcmp(a, "-t") && i + 1 < argc) {
      char *end;
      limit = strtod(argv[++i], &end);
      if (*end || end == argv[i] || !(limit > 0)) {
        fprintf(stderr, "weftrun: -t %s: need a positive number of seconds\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(a, "--cpu")) {
      cpu = true;
    } else if (!strcmp(a, "--share-gpus")) {
      share = true;
    } else if (!strcmp(a, "--tag-output")) {
      tag = true;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "weftrun: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (n < 1 || i >= argc) {
    fprintf(stderr, "weftrun: %s\n", n < 1 ? "-n N is required" : "no program to run");
    usage(stderr);
    return 2;
  }
  char **prog = argv + i;

  if (!cpu) {
    int code = check_gpus(n, share);
    if (code) return code;
  }
  if (share) setenv("WEFT_SHARE_GPUS", "1", 1);
  multicast_guard();
  /* Tagged output goes through pipes, where Python would buffer whole blocks. */
  if (tag) setenv("PYTHONUNBUFFERED", "1", 0);

  int port = 0;
  int port_sock = reserve_port(&port);
  if (port_sock < 0) return 1;
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", port);

  /* Signals arrive through a signalfd, so one poll() waits for exits, signals, output and
   * timers alike. The children get the original mask back before exec. */
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  /* A signal weftrun was started with ignored (nohup, or `&` in a script for SIGINT) stays
   * ignored, in weftrun and in the ranks, as the shell meant it. */
  const int forwarded_sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (int k = 0; k < 3; k++) {
    struct sigaction cur;
    if (sigaction(forwarded_sigs[k], NULL, &cur) == 0 && cur.sa_handler == SIG_IGN) continue;
    sigaddset(&mask, forwarded_sigs[k]);
  }
  if (sigprocmask(SIG_BLOCK, &mask, &old_mask) != 0) {
    perror("weftrun: sigprocmask");
    return 1;
  }
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    perror("weftrun: signalfd");
    return 1;
  }

  n_ranks = n;
  procs = calloc((size_t)n, sizeof *procs);
  if (!procs) {
    fprintf(stderr, "weftrun: out of memory\n");
    return 1;
  }
  pid_t parent = getpid();
  bool stdin_tty = isatty(0);
  for (int r = 0; r < n; r++) {
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    if (tag && (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0)) {
      perror("weftrun: pipe");
      signal_all(SIGKILL);
      return 1;
    }
    pid_t p = fork();
    if (p < 0) {
      perror("weftrun: fork");
      signal_all(SIGKILL);
      return 1;
    }
    if (p == 0) {
      /* Die with weftrun, whatever kills it (ctest's TIMEOUT included); if it is already gone,
       * do not start at all. */
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
      (void)setpgid(0, 0);
      sigprocmask(SIG_SETMASK, &old_mask, NULL);
      if (tag && (dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0)) _exit(126);
      if (r > 0 || stdin_tty) {
        int dn = open("/dev/null", O_RDONLY);
        if (dn < 0 || dup2(dn, 0) < 0) _exit(126);
        if (dn > 0) close(dn);
      }
      char buf[32];
      snprintf(buf, sizeof buf, "%d", r);
      if (setenv("WEFT_RANK", buf, 1) || setenv("WEFT_LOCAL_RANK", buf, 1)) _exit(126);
      snprintf(buf, sizeof buf, "%d", n);
      if (setenv("WEFT_WORLD_SIZE", buf, 1) || setenv("WEFT_LOCAL_WORLD_SIZE", buf, 1) ||
          setenv("WEFT_BOOTSTRAP_ADDR", addr, 1))
        _exit(126);
      execvp(prog[0], prog);
      fprintf(stderr, "weftrun: cannot run %s: %s\n", prog[0], strerror(errno));
      _exit(127);
    }
    (void)setpgid(p, p); /* also here, so that signal_all reaches the group from the start */
    procs[r].pid = p;
    procs[r].running = true;
    procs[r].out = (stream_t){.fd = -1, .dest = 1};
    procs[r].err = (stream_t){.fd = -1, .dest = 2};
    if (tag) {
      close(outp[1]);
      close(errp[1]);
      procs[r].out.fd = outp[0];
      procs[r].err.fd = errp[0];
      (void)fcntl(outp[0], F_SETFL, O_NONBLOCK);
      (void)fcntl(errp[0], F_SETFL, O_NONBLOCK);
    }
  }

  int live = n, skipped = 0, result = 0, forwarded = 0;
  bool ending = false;
  double start = now_s(), kill_at = 0, all_done_at = 0;
  struct pollfd *pfd = calloc((size_t)(2 * n + 1), sizeof *pfd);
  stream_t **pstream = calloc((size_t)(2 * n + 1), sizeof *pstream);
  int *prank = calloc((size_t)(2 * n + 1), sizeof *prank);
  if (!pfd || !pstream || !prank) {
    fprintf(stderr, "weftrun: out of memory\n");
    signal_all(SIGKILL);
    return 1;
  }
  for (;;) {
    int np = 0;
    pfd[np++] = (struct pollfd){sfd, POLLIN, 0};
    for (int r = 0; r < n; r++) {
      stream_t *ss[2] = {&procs[r].out, &procs[r].err};
      for (int k = 0; k < 2; k++)
        if (ss[k]->fd >= 0) {
          pstream[np] = ss[k];
          prank[np] = r;
          pfd[np++] = (struct pollfd){ss[k]->fd, POLLIN, 0};
        }
    }
    double now = now_s();
    if (live == 0) {
      /* Every rank is gone; output may still sit in the pipes, or a rank's child may hold them
       * open: read for a short while, no longer. */
      if (!all_done_at) all_done_at = now;
      if (np == 1 || now - all_done_at > DRAIN_S) break;
    }
    double wait = 1.0;
    if (limit > 0 && !ending) wait = start + limit - now < wait ? start + limit - now : wait;
    if (kill_at) wait = kill_at - now < wait ? kill_at - now : wait;
    if (live == 0) wait = 0.05;
    if (wait < 0) wait = 0;
    int k = poll(pfd, (nfds_t)np, (int)(wait * 1000) + 1);
    if (k < 0 && errno != EINTR) {
      perror("weftrun: poll");
      signal_all(SIGKILL);
      return 1;
    }
    for (int j = 1; k > 0 && j < np; j++)
      if (pfd[j].revents) pump_stream(pstream[j], prank[j]);

    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
      int sig = (int)si.ssi_signo;
      if (sig == SIGCHLD) continue; /* reaped below */
      if (forwarded++) {
        fprintf(stderr, "weftrun: signal %d again; killing every rank\n", sig);
        signal_all(SIGKILL);
        continue;
      }
      fprintf(stderr, "weftrun: got signal %d (%s); passing it to every rank\n", sig,
              strsignal(sig));
      signal_all(sig);
      if (!ending) result = 128 + sig;
      ending = true;
      kill_at = now_s() + GRACE_S;
    }

    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
      int r = 0;
      while (r < n && procs[r].pid != p) r++;
      if (r == n || !procs[r].running) continue;
      procs[r].running = false;
      live--;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code == 77) {
        skipped++;
      } else if (code != 0 && !ending) {
        char how[96], rest[256];
        describe_exit(how, sizeof how, status);
        running_list(rest, sizeof rest);
        if (rest[0])
          fprintf(stderr, "weftrun: rank %d %s; ending the others (rank(s) %s)\n", r, how, rest);
        else
          fprintf(stderr, "weftrun: rank %d %s\n", r, how);
        result = code;
        ending = true;
        signal_all(SIGTERM);
        kill_at = now_s() + GRACE_S;
      }
    }

    now = now_s();
    if (limit > 0 && !ending && now - start >= limit) {
      char rest[256];
      running_list(rest, sizeof rest);
      fprintf(stderr, "weftrun: the job ran past -t %g s; ending it (rank(s) %s still running)\n",
              limit, rest);
      result = 124;
      ending = true;
      signal_all(SIGTERM);
      kill_at = now + GRACE_S;
    }
    if (kill_at && now >= kill_at && live > 0) {
      char rest[256];
      running_list(rest, sizeof rest);
      fprintf(stderr, "weftrun: rank(s) %s still running %g s after being told to stop; sending "
              "SIGKILL\n", rest, GRACE_S);
      signal_all(SIGKILL);
      kill_at = 0;
    }
  }
  /* What a rank left running in its group when the job was ended goes too. */
  if (ending)
    for (int r = 0; r < n; r++) (void)killpg(procs[r].pid, SIGKILL);
  for (int r = 0; r < n; r++) {
    if (procs[r].out.fd >= 0) emit_lines(&procs[r].out, r, true);
    if (procs[r].err.fd >= 0) emit_lines(&procs[r].err, r, true);
  }
  close(port_sock);
  free(pfd);
  free(pstream);
  free(prank);
  if (result) return result;
  if (skipped == n) return 77;
  if (skipped) {
    fprintf(stderr, "weftrun: %d of %d ranks skipped (exit 77) while the others ran: treating "
            "the job as failed\n", skipped, n);
    return 1;
  }
  return 0;
}
