/*
 * test_suballoc.c — the symmetric heap's sub-allocator: random alloc/free against a byte-map
 * model (no overlap, alignment, merge back to one block, exhaustion without side effect, lookup
 * of interior pointers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/heap.h"
#include "support.h"

enum { CAP = 1 << 20, ALIGN = 1024, MAXLIVE = 256 };

int main(void) {
  unsigned seed = (unsigned)time(NULL);
  printf("seed %u\n", seed);
  srand(seed);
  weft_suballoc_t a;
  EXPECT(weft_suballoc_init(&a, CAP, ALIGN) == WEFT_STATUS_SUCCESS, "init");
  EXPECT(weft_suballoc_init(&a, CAP, 1000) == WEFT_STATUS_INVALID_ARGUMENT, "non-power-of-2 align");
  unsigned char *owner = calloc(CAP, 1); /* 0 free, else slot+1 */
  uint64_t off[MAXLIVE], len[MAXLIVE];
  int live[MAXLIVE] = {0};

  for (int it = 0; it < 20000; it++) {
    int s = rand() % MAXLIVE;
    if (!live[s]) {
      uint64_t want = 1 + (uint64_t)(rand() % (rand() % 4 ? 8192 : 65536));
      uint64_t o;
      uint64_t used_before = weft_suballoc_used(&a);
      weft_status_t st = weft_suballoc_alloc(&a, want, &o);
      if (st == WEFT_STATUS_OUT_OF_MEMORY) {
        EXPECT(weft_suballoc_used(&a) == used_before, "failed alloc changed the heap");
        continue;
      }
      EXPECT(st == WEFT_STATUS_SUCCESS, "alloc status %d", st);
      EXPECT(o % ALIGN == 0, "offset %llu not aligned", (unsigned long long)o);
      EXPECT(o + want <= CAP, "allocation past the end");
      for (uint64_t b = o; b < o + want && b < CAP; b++) {
        if (owner[b]) {
          EXPECT(0, "overlap at %llu (slot %d and %d)", (unsigned long long)b, owner[b] - 1, s);
          break;
        }
        owner[b] = (unsigned char)(s + 1);
      }
      EXPECT(weft_suballoc_find(&a, o + want - 1, 1) >= 0, "interior lookup");
      off[s] = o, len[s] = want, live[s] = 1;
    } else {
      /* Blocks start on ALIGN multiples, so off+1 is never the start of an allocation. */
      EXPECT(weft_suballoc_free(&a, off[s] + 1) == WEFT_STATUS_INVALID_ARGUMENT, "interior free");
      EXPECT(weft_suballoc_free(&a, off[s]) == WEFT_STATUS_SUCCESS, "free");
      EXPECT(weft_suballoc_free(&a, off[s]) == WEFT_STATUS_INVALID_ARGUMENT, "double free");
      memset(owner + off[s], 0, len[s]);
      EXPECT(weft_suballoc_find(&a, off[s], 1) < 0, "freed memory still found");
      live[s] = 0;
    }
  }
  for (int s = 0; s < MAXLIVE; s++)
    if (live[s]) EXPECT(weft_suballoc_free(&a, off[s]) == WEFT_STATUS_SUCCESS, "final free");
  EXPECT(a.count == 1 && !a.blocks[0].used && a.blocks[0].size == CAP,
         "free blocks did not merge back into one (%d blocks)", a.count);
  uint64_t o;
  EXPECT(weft_suballoc_alloc(&a, CAP, &o) == WEFT_STATUS_SUCCESS && o == 0, "whole heap");
  EXPECT(weft_suballoc_alloc(&a, 1, &o) == WEFT_STATUS_OUT_OF_MEMORY, "exhausted heap");
  EXPECT(weft_suballoc_alloc(&a, 0, &o) == WEFT_STATUS_INVALID_ARGUMENT, "size 0");
  EXPECT(weft_suballoc_alloc(&a, (uint64_t)CAP + 1, &o) == WEFT_STATUS_OUT_OF_MEMORY, "too big");
  weft_suballoc_destroy(&a);
  free(owner);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
