/*
 * test_autotune_cache.c — the autotuner's disk entries (src/jit/autotune.c), on a machine with no
 * GPU: a written entry is read back as its candidate's index, also among reordered candidates;
 * another key, a name no longer among the candidates, a damaged entry and a missing one read as
 * -1 (so the ranks tune again instead of trusting it); a rewrite replaces the winner; with the
 * cache off nothing is written. The cache lives in a fresh temporary directory (WEFT_CACHE_DIR).
 * And the pick among trial times (weft_autotune_pick).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit/jit.h"
#include "ops/plan.h"
#include "support.h"

/* The single entry file under dir/autotune (its path into out); 0 when there is not exactly one. */
static int only_entry(const char *dir, char *out, size_t size) {
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/autotune", dir);
  DIR *d = opendir(sub);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++, snprintf(out, size, "%s/%s", sub, e->d_name);
  closedir(d);
  return n == 1;
}

int main(void) {
  test_show_ok = 1; /* a line for every check, passed or not */
  char dir[] = "/tmp/weft-test-autotune-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("WEFT_CACHE_DIR", dir, 1);
  unsetenv("WEFT_CACHE_DISABLE");
  const char *key = "gemm_rs m=8192 n=4096 k=2752 world=4 gpu=test sms=132 weft=0.1.0";
  const char *names[] = {"ce", "ce/bn128", "sm", "seq"};
  const char *reordered[] = {"seq", "sm", "ce"};
  const char *fewer[] = {"ce", "seq"};

  EXPECT(weft_autotune_entry_read(key, names, 4) == -1, "no entry yet: -1");
  weft_autotune_entry_write(key, "sm");
  char path[4400];
  EXPECT(only_entry(dir, path, sizeof path), "one entry file written");
  EXPECT(weft_autotune_entry_read(key, names, 4) == 2, "read back as candidate 2 (sm)");
  EXPECT(weft_autotune_entry_read(key, reordered, 3) == 1, "found by name among reordered candidates");
  EXPECT(weft_autotune_entry_read(key, fewer, 2) == -1, "a winner no longer among the candidates: -1");
  EXPECT(weft_autotune_entry_read("gemm_rs m=8192 n=4096 k=2753 world=4 gpu=test sms=132 weft=0.1.0",
                                  names, 4) == -1,
         "another key: -1");
  weft_autotune_entry_write(key, "ce/bn128");
  EXPECT(weft_autotune_entry_read(key, names, 4) == 1, "a rewrite replaces the winner (ce/bn128)");
  EXPECT(only_entry(dir, path, sizeof path), "still one entry file (no temporary left behind)");

  /* damaged: a truncated file, then one whose key line is another key's (a hash collision or a
   * hand edit) */
  FILE *f = fopen(path, "w");
  if (f) fputs("weft-autotune 2\n", f), fclose(f);
  EXPECT(weft_autotune_entry_read(key, names, 4) == -1, "truncated entry: -1");
  f = fopen(path, "w");
  if (f) fprintf(f, "weft-autotune 2\n%s-x\nsm\n", key), fclose(f);
  EXPECT(weft_autotune_entry_read(key, names, 4) == -1, "entry of another key under this name: -1");
  f = fopen(path, "w");
  if (f) fprintf(f, "weft-autotune 9\n%s\nsm\n", key), fclose(f);
  EXPECT(weft_autotune_entry_read(key, names, 4) == -1, "another format version: -1");
  f = fopen(path, "w");
  if (f) fprintf(f, "weft-autotune 1\n%s\nsm\n", key), fclose(f);
  EXPECT(weft_autotune_entry_read(key, names, 4) == -1,
         "a winner of the pick before the 3%% margin (format 1): -1");
  unlink(path);

  setenv("WEFT_CACHE_DISABLE", "1", 1);
  weft_autotune_entry_write(key, "sm");
  EXPECT(!only_entry(dir, path, sizeof path), "cache off: nothing written");
  EXPECT(weft_autotune_entry_read(key, names, 4) == -1, "cache off: nothing read");

  /* the pick among trial times: the earliest within 3% of the fastest */
  const double far[] = {10.5, 11.8, 9.9}, near[] = {10.1, 11.8, 9.9}, one[] = {7.0};
  EXPECT(weft_autotune_pick(far, 3) == 2, "the fastest wins where the first is 6%% slower");
  EXPECT(weft_autotune_pick(near, 3) == 0, "the first wins within 3%% of the fastest");
  EXPECT(weft_autotune_pick(one, 1) == 0, "one candidate");

  char sub[4200];
  snprintf(sub, sizeof sub, "%s/autotune", dir);
  rmdir(sub);
  rmdir(dir);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
