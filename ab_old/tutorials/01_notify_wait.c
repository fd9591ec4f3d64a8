/*
 * 01_notify_wait.c — the smallest weft program: rank 0 writes a value into rank 1's buffer and
 * notifies it; rank 1 waits for the notification, then reads the value.
 *
 *   weftrun -n 2 ./tutorial_01_notify_wait
 *
 * What it shows: a communicator, symmetric allocations (one address names every rank's own
 * copy), a kernel compiled at run time that uses the device library, and the release/acquire
 * pair that makes data visible across GPUs: weft_putmem_signal (data, then the signal with
 * release) and weft_signal_wait_until (acquire; bounded by WEFT_TIMEOUT_MS, never a hang).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <weft.h>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    weft_status_t s_ = (call);                                                            \
    if (s_ != WEFT_STATUS_SUCCESS) {                                                      \
      fprintf(stderr, "%s: %s\n", #call, weft_get_last_error());                          \
      exit(s_ == WEFT_STATUS_NO_DEVICE ? 77 : 1);                                         \
    }                                                                                     \
  } while (0)

static const char *program =
    "#include <weft/device.cuh>\n"
    "extern \"C\" __global__ void hello(int *box, const int *value, unsigned long long *sig) {\n"
    "  if (weft_my_pe() == 0)\n"
    "    /* the value into rank 1's box, then rank 1's signal = 1: in that order */\n"
    "    weft_putmem_signal(box, value, sizeof(int), sig, 1, WEFT_SIGNAL_SET, 1);\n"
    "  else\n"
    "    weft_signal_wait_until(sig, WEFT_CMP_EQ, 1); /* acquire: the box is complete now */\n"
    "}\n";

int main(void) {
  weft_comm_t *comm;
  CHECK(weft_comm_init(&comm, NULL)); /* rank and world come from weftrun's variables */
  int rank, world;
  CHECK(weft_comm_rank(comm, &rank));
  CHECK(weft_comm_size(comm, &world));
  if (world != 2) {
    fprintf(stderr, "run me with: weftrun -n 2 %s\n", "tutorial_01_notify_wait");
    return 2;
  }
  int *box, *value;
  unsigned long long *sig;
  CHECK(weft_malloc(comm, sizeof *box, (void **)&box)); /* collective: same order everywhere */
  CHECK(weft_malloc(comm, sizeof *value, (void **)&value));
  CHECK(weft_malloc(comm, sizeof *sig, (void **)&sig));
  srand((unsigned)time(NULL));
  int secret = 1000 + rand() % 9000, got = 0;
  cudaMemcpy(value, &secret, sizeof secret, cudaMemcpyHostToDevice);

  weft_module_t *mod;
  weft_kernel_t *hello;
  CHECK(weft_module_load(comm, program, "hello.cu", NULL, 0, &mod)); /* NVRTC, disk-cached */
  CHECK(weft_module_get_kernel(mod, "hello", &hello));
  weft_launch_config_t one_thread = WEFT_LAUNCH_CONFIG_INIT;
  void *args[] = {&box, &value, &sig};
  CHECK(weft_kernel_launch(hello, &one_thread, args, NULL));
  CHECK(weft_stream_synchronize(comm, NULL)); /* bounded host wait */

  /* Rank 0 tells rank 1 what it sent, over the host barrier's back channel: here simply by
   * both printing; rank 1 checks against rank 0's value read back from rank 0's copy. */
  int ok = 1;
  if (rank == 1) {
    int *rank0_value;
    CHECK(weft_peer_ptr(comm, value, 0, (void **)&rank0_value)); /* rank 0's copy, from here */
    int sent = 0;
    cudaMemcpy(&got, box, sizeof got, cudaMemcpyDeviceToHost);
    cudaMemcpy(&sent, rank0_value, sizeof sent, cudaMemcpyDeviceToHost);
    ok = got == sent;
    printf("rank 1 received %d, rank 0 sent %d: %s\n", got, sent, ok ? "ok" : "WRONG");
  }
  CHECK(weft_comm_barrier(comm));
  weft_module_unload(mod);
  CHECK(weft_free(comm, sig));
  CHECK(weft_free(comm, value));
  CHECK(weft_free(comm, box));
  CHECK(weft_comm_destroy(comm));
  return ok ? 0 : 1;
}
