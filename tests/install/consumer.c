/* consumer.c — what a program built against an installed weft sees: the header's version is the
 * loaded library's, the public headers compile on their own, and a call answers without a GPU. */
#include <stdio.h>
#include <string.h>

#include <weft.h>

int main(void) {
  int v = weft_get_version();
  if (v != WEFT_VERSION_CODE) {
    fprintf(stderr, "consumer: header version %d, library %d\n", WEFT_VERSION_CODE, v);
    return 1;
  }
  const char *s = weft_get_error_string(WEFT_STATUS_INVALID_ARGUMENT);
  if (!s || !strlen(s)) {
    fprintf(stderr, "consumer: no error string\n");
    return 1;
  }
  printf("consumer: weft %d.%d.%d (%s)\n", WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR,
         WEFT_VERSION_PATCH, s);
  return 0;
}
