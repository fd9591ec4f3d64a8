/*
 * internal.h — what every library source shares: the communicator, status helpers that record
 * file and line, logging, and the environment readers.
 */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "weft/state.h"

/* ---- logging (WEFT_DEBUG=WARN|INFO|TRACE, WEFT_DEBUG_FILE) ---- */
typedef enum weft_log_level {
  WEFT_LOG_LEVEL_NONE = 0,
  WEFT_LOG_LEVEL_WARN,
  WEFT_LOG_LEVEL_INFO,
  WEFT_LOG_LEVEL_TRACE
} weft_log_level_t;

weft_log_level_t weft_log_level(void);
void weft_log(weft_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define WEFT_WARN(...) weft_log(WEFT_LOG_LEVEL_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define WEFT_INFO(...)                                                                    \
  do {                                                                                    \
    if (weft_log_level() >= WEFT_LOG_LEVEL_INFO)                                          \
      weft_log(WEFT_LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__);                     \
  } while (0)
#define WEFT_TRACE(...)                                                                   \
  do {                                                                                    \
    if (weft_log_level() >= WEFT_LOG_LEVEL_TRACE)                                         \
      weft_log(WEFT_LOG_LEVEL_TRACE, __FILE__, __LINE__, __VA_ARGS__);                    \
  } while (0)

/* ---- errors ----
 * weft_error records "file:line: message" as the last error of comm (or of the thread when comm is
 * NULL), logs it at WARN, and returns status, so that failures read:
 *     if (size == 0) return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT, "size is 0");
 */
weft_status_t weft_error(weft_comm_t *comm, weft_status_t status, const char *file, int line,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define WEFT_ERR(comm, status, ...) weft_error((comm), (status), __FILE__, __LINE__, __VA_ARGS__)
/* The same record without the log line: for a failure already said once (the watchdog's). */
weft_status_t weft_error_quiet(weft_comm_t *comm, weft_status_t status, const char *text);

/* Propagate a failed status (the callee already recorded the message). */
#define WEFT_CHECK(call)                                                                  \
  do {                                                                                    \
    weft_status_t weft_check_status_ = (call);                                            \
    if (weft_check_status_ != WEFT_STATUS_SUCCESS) return weft_check_status_;             \
  } while (0)

/* Propagate to a cleanup label. */
#define WEFT_CHECK_GOTO(call, st, label)                                                  \
  do {                                                                                    \
    (st) = (call);                                                                        \
    if ((st) != WEFT_STATUS_SUCCESS) goto label;                                          \
  } while (0)

/* Argument checks: return before any side effect. */
#define WEFT_ARG(comm, cond, ...)                                                         \
  do {                                                                                    \
    if (!(cond)) return WEFT_ERR((comm), WEFT_STATUS_INVALID_ARGUMENT, __VA_ARGS__);      \
  } while (0)

/* ---- environment ---- */
/* Integer from an environment variable; def when unset. Accepts K/M/G (powers of 1024) suffixes
 * when allow_suffix. Returns false (and leaves *out = def) when the value does not parse. */
bool weft_env_u64(const char *name, uint64_t def, bool allow_suffix, uint64_t *out);
/* Whether an environment variable is set to exactly `value` ("1" for the on/off switches). */
bool weft_env_is(const char *name, const char *value);
/* For tools and tests (their check macros): "<where>: <call> failed: <last error>" on stderr,
 * with the status's name before the last error where that text is not this call's own (whose
 * text starts with the name). */
void weft_report_failure(const char *where, const char *call, weft_status_t status);
/* Parses "123", "4K", "2M", "1G" into bytes; false if malformed. */
bool weft_parse_size(const char *s, uint64_t *out);

/* Monotonic clock in nanoseconds. */
uint64_t weft_now_ns(void);

#endif /* WEFT_INTERNAL_H */
