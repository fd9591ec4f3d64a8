/* embedded.c — lookup in the table that cmake/embed.cmake generates. */
#include "embedded.h"

#include <string.h>

const weft_embedded_file_t *weft_embedded_find(const char *name) {
  for (const weft_embedded_file_t *f = weft_embedded_files; f->name; f++)
    if (!strcmp(f->name, name)) return f;
  return NULL;
}
