/* multicast.c — the multicast guard (see multicast.h). */
#include "multicast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int weft_multicast_allowed(char *why, size_t why_size) {
  static const struct { const char *name, *value; } vetoes[] = {
      {"NCCL_NVLS_ENABLE", "0"},
      {"NVSHMEM_DISABLE_NVLS", "1"},
      {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
  };
  if (!weft_env_is("WEFT_ENABLE_MULTICAST", "1")) {
    snprintf(why, why_size, "WEFT_ENABLE_MULTICAST is not 1");
    return 0;
  }
  for (size_t i = 0; i < sizeof vetoes / sizeof vetoes[0]; i++)
    if (weft_env_is(vetoes[i].name, vetoes[i].value)) {
      snprintf(why, why_size, "%s=%s forbids NVLink multicast on this machine", vetoes[i].name,
               vetoes[i].value);
      return 0;
    }
  snprintf(why, why_size, "permitted by the environment");
  return 1;
}

void weft_multicast_check_env(weft_comm_t *comm) {
  (void)comm;
  char why[128];
  if (!getenv("WEFT_ENABLE_MULTICAST")) return;
  if (weft_multicast_allowed(why, sizeof why))
    WEFT_WARN("WEFT_ENABLE_MULTICAST=1: multicast is permitted but weft does not create "
              "multicast objects yet; multimem primitives stay off");
  else
    WEFT_WARN("NVLink multicast stays off: %s", why);
}
