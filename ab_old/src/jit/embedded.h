/* embedded.h — the device library headers and kernels compiled into libweft (cmake/embed.cmake). */
#ifndef WEFT_EMBEDDED_H
#define WEFT_EMBEDDED_H

#include <stddef.h>

typedef struct weft_embedded_file {
  const char *name;     /* "weft/device.cuh", "kernels/runtime.cu" */
  const char *data;     /* NUL-terminated */
  size_t size;          /* without the NUL */
} weft_embedded_file_t;

extern const weft_embedded_file_t weft_embedded_files[]; /* ends with a {NULL} entry */
extern const int weft_embedded_count;

/* The embedded file of that name, or NULL. */
const weft_embedded_file_t *weft_embedded_find(const char *name);

#endif
