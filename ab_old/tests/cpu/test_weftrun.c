/*
 * test_weftrun.c — the local launcher, run as a user runs it, with --cpu on small shell commands
 * and on this program itself as a rank (a real bootstrap through the port weftrun picked).
 *
 * Checks: every rank's variables; all succeed -> 0; one rank fails -> the others are ended at
 * once and its code comes back; a rank killed by a signal -> 128+signal; a rank that ignores
 * SIGTERM is killed after the grace period; what a rank started is ended with it; all exit 77 ->
 * 77, a mix of 77 and 0 -> failure; -t -> 124; SIGTERM to weftrun reaches the ranks;
 * --tag-output; usage errors; no GPUs -> 77 before starting anything; a missing program -> 127.
 *
 * weftrun is found as argv[1], else $WEFTRUN, else ../tools/weftrun beside this test's build
 * directory. Exit 0 on pass, 1 on failure.
 */
// weft-test: timeout=120
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/bootstrap.h"

static int fails;
static char weftrun[PATH_MAX], self[PATH_MAX], dir[] = "/tmp/weftrun-test-XXXXXX";

static double now_s(void) { return (double)weft_now_ns() * 1e-9; }

/* The rank side of the self-test: weftrun's variables give a working bootstrap. */
static int rank_main(void) {
  weft_bootstrap_info_t info;
  char addr[256];
  if (weft_bootstrap_read_env(&info) || strcmp(info.launcher, "WEFT") ||
      info.local_rank != info.rank || info.local_world != info.world ||
      weft_bootstrap_read_addr(&info, addr, sizeof addr) || strncmp(addr, "127.0.0.1:", 10)) {
    printf("rank: bad environment (%s)\n", weft_get_last_error());
    return 1;
  }
  weft_bootstrap_t *bs;
  if (weft_bootstrap_create(addr, info.rank, info.world, 10000000000ull, &bs)) {
    printf("rank %d: %s\n", info.rank, weft_get_last_error());
    return 1;
  }
  int ranks[64] = {0};
  ranks[info.rank] = info.rank + 100;
  int rc = weft_bootstrap_allgather(bs, ranks, sizeof ranks[0]) ? 1 : 0;
  for (int r = 0; r < info.world; r++)
    if (ranks[r] != r + 100) rc = 1;
  weft_bootstrap_destroy(bs);
  if (rc) printf("rank %d: all-gather wrong (%s)\n", info.rank, weft_get_last_error());
  return rc;
}

typedef struct result {
  int code;       /* exit code, 128+signal for a signal, -1 when it had to be killed */
  double seconds;
  char out[8192]; /* stdout and stderr together */
} result_t;

/* Runs weftrun with args (NULL-terminated), sending sig after signal_ms when sig != 0. */
static void run(result_t *res, const char *const *args, int sig, int signal_ms) {
  const char *argv[32];
  int n = 0;
  argv[n++] = weftrun;
  for (; *args && n < 31; args++) argv[n++] = *args;
  argv[n] = NULL;
  int p[2];
  if (pipe(p) != 0) {
    perror("pipe");
    exit(1);
  }
  memset(res, 0, sizeof *res);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    execv(weftrun, (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  size_t len = 0;
  bool signalled = false, eof = false;
  int status = 0;
  for (;;) {
    if (sig && !signalled && now_s() - t0 >= signal_ms * 1e-3) {
      kill(pid, sig);
      signalled = true;
    }
    if (now_s() - t0 > 30) { /* a hang: the test fails, it does not hang too */
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      res->code = -1;
      break;
    }
    if (!eof) {
      struct pollfd pfd = {p[0], POLLIN, 0};
      if (poll(&pfd, 1, 10) > 0) {
        ssize_t k = read(p[0], res->out + len, sizeof res->out - 1 - len);
        if (k <= 0) eof = true;
        else len += (size_t)k;
      }
    } else {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
    }
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      res->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      /* Take what is left in the pipe without waiting for writers that may linger. */
      (void)fcntl(p[0], F_SETFL, O_NONBLOCK);
      ssize_t k;
      while (len < sizeof res->out - 1 && (k = read(p[0], res->out + len, sizeof res->out - 1 - len)) > 0)
        len += (size_t)k;
      break;
    }
  }
  close(p[0]);
  res->out[len] = 0;
  res->seconds = now_s() - t0;
}

static void expect(const char *what, const result_t *r, int code, double max_s, const char *text) {
  bool ok = r->code == code && r->seconds <= max_s && (!text || strstr(r->out, text));
  printf("%-62s %s (exit %d, %.2f s)\n", what, ok ? "ok" : "FAIL", r->code, r->seconds);
  if (!ok) {
    fails++;
    printf("  want exit %d within %.1f s%s%s%s; output:\n%s\n", code, max_s,
           text ? " and output containing \"" : "", text ? text : "", text ? "\"" : "", r->out);
  }
}

/* A process started by a rank must be gone (or a zombie waiting for a reaper) by now. */
static bool gone(pid_t pid) {
  char path[64], stat[256] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return true;
  bool z = fgets(stat, sizeof stat, f) && strstr(stat, ") Z ");
  fclose(f);
  return z;
}

static bool find_weftrun(int argc, char **argv) {
  const char *cand = argc > 1 ? argv[1] : getenv("WEFTRUN");
  if (cand) {
    snprintf(weftrun, sizeof weftrun, "%s", cand);
  } else {
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return false;
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = 0;
    snprintf(weftrun, sizeof weftrun, "%s/../tools/weftrun", exe);
  }
  return access(weftrun, X_OK) == 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--rank")) return rank_main();
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!find_weftrun(argc, argv)) {
    printf("FAIL weftrun not found (tried \"%s\"): pass its path as argv[1] or $WEFTRUN\n",
           weftrun);
    return 1;
  }
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k <= 0 || !mkdtemp(dir)) {
    perror("setup");
    return 1;
  }
  self[k] = 0;
  /* The user's own settings must not leak into what is checked. */
  unsetenv("NCCL_NVLS_ENABLE");
  unsetenv("NVSHMEM_DISABLE_NVLS");
  unsetenv("TORCH_SYMM_MEM_DISABLE_MULTICAST");
  setenv("WEFT_TEST_DIR", dir, 1);
  result_t r;

  run(&r, (const char *[]){"--cpu", "-n", "4", self, "--rank", NULL}, 0, 0);
  expect("4 ranks meet through weftrun's address (real bootstrap)", &r, 0, 15, NULL);

  run(&r, (const char *[]){"--cpu", "-n", "3", "sh", "-c",
                           "test \"$WEFT_WORLD_SIZE\" = 3 && test \"$WEFT_LOCAL_WORLD_SIZE\" = 3 && "
                           "test \"$WEFT_RANK\" = \"$WEFT_LOCAL_RANK\" && "
                           "test \"$NCCL_NVLS_ENABLE\" = 0 && test \"$NVSHMEM_DISABLE_NVLS\" = 1 && "
                           "test \"$TORCH_SYMM_MEM_DISABLE_MULTICAST\" = 1 && "
                           "case \"$WEFT_BOOTSTRAP_ADDR\" in 127.0.0.1:[0-9]*) ;; *) exit 9;; esac && "
                           "touch \"$WEFT_TEST_DIR/rank$WEFT_RANK\"",
                           NULL}, 0, 0);
  expect("every rank's variables, multicast kept off", &r, 0, 10, NULL);
  for (int i = 0; i < 3; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rank%d", dir, i);
    if (access(path, F_OK) != 0) {
      fails++;
      printf("  FAIL rank %d never ran\n", i);
    }
    unlink(path);
  }

  setenv("NCCL_NVLS_ENABLE", "1", 1);
  run(&r, (const char *[]){"--cpu", "-n", "1", "sh", "-c", "test \"$NCCL_NVLS_ENABLE\" = 1", NULL},
      0, 0);
  expect("a user's NCCL_NVLS_ENABLE=1 is kept, with a warning", &r, 0, 10, "warning");
  unsetenv("NCCL_NVLS_ENABLE");

  run(&r, (const char *[]){"--cpu", "-n", "4", "sh", "-c",
                           "if [ $WEFT_RANK = 2 ]; then exit 3; fi; exec sleep 30", NULL}, 0, 0);
  expect("rank 2 exits 3: the others are ended at once, exit 3", &r, 3, 3,
         "rank 2 exited with code 3");

  run(&r, (const char *[]){"--cpu", "-n", "2", "sh", "-c",
                           "if [ $WEFT_RANK = 1 ]; then kill -KILL $$; fi; exec sleep 30", NULL},
      0, 0);
  expect("rank 1 killed by SIGKILL: exit 137", &r, 137, 3, "rank 1 was killed by signal 9");

  run(&r, (const char *[]){"--cpu", "-n", "2", "sh", "-c",
                           "trap '' TERM; if [ $WEFT_RANK = 0 ]; then sleep 0.2; exit 1; fi; "
                           "sleep 30", NULL}, 0, 0);
  expect("a rank that ignores SIGTERM is killed after the grace", &r, 1, 8, "SIGKILL");
  if (r.seconds < 4.5) {
    fails++;
    printf("  FAIL ended after %.2f s, before the 5 s grace\n", r.seconds);
  }

  run(&r, (const char *[]){"--cpu", "-n", "2", "sh", "-c",
                           "if [ $WEFT_RANK = 0 ]; then sleep 0.3; exit 2; fi; "
                           "sleep 30 & echo $! > \"$WEFT_TEST_DIR/child\"; wait", NULL}, 0, 0);
  expect("what a rank started ends with the job", &r, 2, 3, NULL);
  {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/child", dir);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0) {
      fails++;
      printf("  FAIL the rank's child pid was not recorded\n");
    } else {
      struct timespec ts = {0, 100000000};
      nanosleep(&ts, NULL);
      if (!gone(pid)) {
        fails++;
        printf("  FAIL the rank's child (pid %d) is still running\n", pid);
        kill(pid, SIGKILL);
      }
    }
    if (f) fclose(f);
    unlink(path);
  }

  run(&r, (const char *[]){"--cpu", "-n", "3", "sh", "-c", "exit 77", NULL}, 0, 0);
  expect("every rank exits 77: skip (77)", &r, 77, 5, NULL);
  run(&r, (const char *[]){"--cpu", "-n", "3", "sh", "-c",
                           "if [ $WEFT_RANK = 1 ]; then exit 77; fi; exit 0", NULL}, 0, 0);
  expect("some ranks skip, others pass: a failure", &r, 1, 5, "skipped");

  run(&r, (const char *[]){"--cpu", "-t", "1", "-n", "2", "sleep", "30", NULL}, 0, 0);
  expect("-t 1 on a 30 s job: exit 124 after about 1 s", &r, 124, 3, "-t 1");

  run(&r, (const char *[]){"--cpu", "-n", "3", "sleep", "30", NULL}, SIGTERM, 500);
  expect("SIGTERM to weftrun reaches every rank: exit 143", &r, 143, 3, "passing it");

  run(&r, (const char *[]){"--cpu", "--tag-output", "-n", "2", "sh", "-c",
                           "echo hello; echo oops >&2; printf 'no newline'", NULL}, 0, 0);
  expect("--tag-output prefixes every line", &r, 0, 5, NULL);
  static const char *tags[] = {"[0] hello\n", "[1] hello\n", "[0] oops\n", "[1] oops\n",
                               "[0] no newline\n", "[1] no newline\n"};
  for (int i = 0; i < 6; i++)
    if (!strstr(r.out, tags[i])) {
      fails++;
      printf("  FAIL no \"%.*s\" in the output:\n%s\n", (int)strlen(tags[i]) - 1, tags[i], r.out);
    }

  run(&r, (const char *[]){"--cpu", "sh", "-c", "true", NULL}, 0, 0);
  expect("no -n: usage error (2)", &r, 2, 5, "usage");
  run(&r, (const char *[]){"--cpu", "-n", "0", "true", NULL}, 0, 0);
  expect("-n 0: usage error (2)", &r, 2, 5, "-n 0");
  run(&r, (const char *[]){"-h", NULL}, 0, 0);
  expect("-h: usage, exit 0", &r, 0, 5, "usage");
  run(&r, (const char *[]){"--cpu", "-n", "1", "/nonexistent/program", NULL}, 0, 0);
  expect("a program that does not exist: 127", &r, 127, 5, "cannot run");
  /* No machine has 4096 GPUs: the check skips before starting anything. */
  run(&r, (const char *[]){"-n", "4096", "sh", "-c", "touch \"$WEFT_TEST_DIR/ran\"", NULL}, 0, 0);
  expect("too few GPUs (or none): skip (77) without starting", &r, 77, 10, "skipping");
  {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/ran", dir);
    if (access(path, F_OK) == 0) {
      fails++;
      printf("  FAIL a rank started although the GPU check failed\n");
      unlink(path);
    }
  }
  rmdir(dir);
  printf(fails ? "FAILED: %d check(s)\n" : "PASSED\n", fails);
  return fails ? 1 : 0;
}
