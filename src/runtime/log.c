/* log.c — status strings, last-error texts, logging (WEFT_DEBUG, WEFT_DEBUG_FILE), env readers. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../internal.h"
#include "comm.h"

int weft_get_version(void) { return WEFT_VERSION_CODE; }

const char *weft_get_error_string(weft_status_t status) {
  switch (status) {
  case WEFT_STATUS_SUCCESS: return "success";
  case WEFT_STATUS_INVALID_ARGUMENT: return "invalid argument";
  case WEFT_STATUS_INVALID_USAGE: return "invalid usage";
  case WEFT_STATUS_NO_DEVICE: return "no CUDA device";
  case WEFT_STATUS_CUDA_ERROR: return "CUDA error";
  case WEFT_STATUS_COMPILE_ERROR: return "compile error";
  case WEFT_STATUS_SYSTEM_ERROR: return "system error";
  case WEFT_STATUS_OUT_OF_MEMORY: return "out of memory";
  case WEFT_STATUS_TIMEOUT: return "timeout";
  case WEFT_STATUS_MISMATCH: return "ranks disagree in a collective call";
  case WEFT_STATUS_REMOTE_ERROR: return "remote rank failed";
  case WEFT_STATUS_ABORTED: return "aborted";
  case WEFT_STATUS_NOT_SUPPORTED: return "not supported";
  case WEFT_STATUS_INTERNAL_ERROR: return "internal error";
  case WEFT_STATUS_COUNT: break;
  }
  return "unknown status";
}

static _Thread_local char thread_last_error[1024];

const char *weft_get_last_error(void) { return thread_last_error; }

/* ---- logging ---- */

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static weft_log_level_t log_level = WEFT_LOG_LEVEL_WARN;
static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_host[64];

/* WEFT_DEBUG_FILE with %h (host) and %p (pid) expanded. */
static FILE *open_log_file(const char *pattern) {
  char path[1024];
  size_t n = 0;
  for (const char *p = pattern; *p && n + 64 < sizeof path; p++) {
    if (p[0] == '%' && p[1] == 'h') {
      n += (size_t)snprintf(path + n, sizeof path - n, "%s", log_host);
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      n += (size_t)snprintf(path + n, sizeof path - n, "%d", (int)getpid());
      p++;
    } else {
      path[n++] = *p;
    }
  }
  path[n] = 0;
  FILE *f = fopen(path, "a");
  if (!f) fprintf(stderr, "weft: cannot open WEFT_DEBUG_FILE %s: %s\n", path, strerror(errno));
  return f;
}

static void log_init(void) {
  gethostname(log_host, sizeof log_host - 1);
  const char *lvl = getenv("WEFT_DEBUG");
  if (lvl) {
    if (!strcasecmp(lvl, "NONE")) log_level = WEFT_LOG_LEVEL_NONE;
    else if (!strcasecmp(lvl, "WARN") || !strcasecmp(lvl, "VERSION")) log_level = WEFT_LOG_LEVEL_WARN;
    else if (!strcasecmp(lvl, "INFO")) log_level = WEFT_LOG_LEVEL_INFO;
    else if (!strcasecmp(lvl, "TRACE")) log_level = WEFT_LOG_LEVEL_TRACE;
    else fprintf(stderr, "weft: WEFT_DEBUG=%s not understood (NONE|WARN|INFO|TRACE)\n", lvl);
  }
  const char *file = getenv("WEFT_DEBUG_FILE");
  log_file = file ? open_log_file(file) : NULL;
  if (!log_file) log_file = stderr;
}

weft_log_level_t weft_log_level(void) {
  pthread_once(&log_once, log_init);
  return log_level;
}

void weft_log(weft_log_level_t level, const char *file, int line, const char *fmt, ...) {
  if (weft_log_level() < level) return;
  static const char *names[] = {"", "WARN", "INFO", "TRACE"};
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *rank = getenv("WEFT_RANK");
  if (!rank) rank = getenv("RANK");
  pthread_mutex_lock(&log_lock);
  fprintf(log_file, "%s:%d:%s weft %s %s:%d %s\n", log_host, (int)getpid(), rank ? rank : "-",
          names[level], base, line, msg);
  fflush(log_file);
  pthread_mutex_unlock(&log_lock);
}

weft_status_t weft_error_quiet(weft_comm_t *comm, weft_status_t status, const char *text) {
  char full[1024];
  snprintf(full, sizeof full, "%s: %s", weft_get_error_string(status), text);
  snprintf(thread_last_error, sizeof thread_last_error, "%s", full);
  if (comm) weft_comm_set_last_error(comm, full);
  return status;
}

weft_status_t weft_error(weft_comm_t *comm, weft_status_t status, const char *file, int line,
                         const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  /* A failure in the wake of a wait that timed out here or on another rank (a trapped context,
   * an aborted communicator) is that failure again, which the watchdog says once per rank: it
   * looks now, so that its line comes first, and this one is only recorded, with the cause's
   * status where the driver merely reports the trapped context (CUDA_ERROR). */
  if (comm && comm->error_host && comm->node_abort) weft_watchdog_check(comm);
  int after_abort = comm && comm->aborted;
  char text[1024];
  if (after_abort && status == WEFT_STATUS_CUDA_ERROR) {
    uint32_t rec = __atomic_load_n(&comm->error_host->status, __ATOMIC_ACQUIRE);
    status = rec == WEFT_DEVICE_ERROR_TIMEOUT ? WEFT_STATUS_TIMEOUT : WEFT_STATUS_ABORTED;
    snprintf(text, sizeof text, "%s: %s, after %s (%s:%d)", weft_get_error_string(status), msg,
             weft_watchdog_reason(comm), base, line);
  } else {
    snprintf(text, sizeof text, "%s: %s (%s:%d)", weft_get_error_string(status), msg, base, line);
  }
  snprintf(thread_last_error, sizeof thread_last_error, "%s", text);
  if (comm) weft_comm_set_last_error(comm, text);
  if (!after_abort)
    weft_log(WEFT_LOG_LEVEL_WARN, file, line, "%s: %s", weft_get_error_string(status), msg);
  return status;
}

/* ---- environment ---- */

bool weft_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || s[0] == '-') return false;
  uint64_t mul = 1;
  switch (*end) {
  case 0: break;
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: return false;
  }
  if (*end == 'i' || *end == 'B' || *end == 'b') end += (*end == 'i' && (end[1] == 'B')) ? 2 : 1;
  if (*end) return false;
  if (mul > 1 && v > UINT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

void weft_report_failure(const char *where, const char *call, weft_status_t status) {
  const char *name = weft_get_error_string(status), *text = weft_get_last_error();
  int own = !strncmp(text, name, strlen(name));
  fprintf(stderr, "%s: %s failed: %s%s%s\n", where, call, own ? "" : name, own ? "" : ": ", text);
}

bool weft_env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && !strcmp(v, value);
}

bool weft_env_u64(const char *name, uint64_t def, bool allow_suffix, uint64_t *out) {
  *out = def;
  const char *s = getenv(name);
  if (!s || !*s) return true;
  uint64_t v;
  char *end = NULL;
  bool ok = allow_suffix ? weft_parse_size(s, &v)
                         : (errno = 0, v = strtoull(s, &end, 10), !errno && *end == 0 && s[0] != '-');
  if (!ok) {
    WEFT_WARN("%s=%s is not a valid %s; using %llu", name, s, allow_suffix ? "size" : "number",
              (unsigned long long)def);
    return false;
  }
  *out = v;
  return true;
}

uint64_t weft_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
