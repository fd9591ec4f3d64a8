/*
 * kernels/runtime.cu — the runtime's own kernels behind the stream API (src/runtime/stream.c
 * launches each as one block): weft_stream_barrier, weft_stream_signal_wait and
 * weft_stream_signal_add (weft_stream_signal_set is a stream write, cuStreamWriteValue64); and
 * weft_rt_occupancy_probe, never launched, whose occupancy weft_ops_init asks (src/ops/ops.c,
 * gpu_clusters).
 *
 * Ordering: the barrier is weft_barrier_all_block (every earlier access of every rank's stream is
 * visible to every later one); the wait acquires (ld.acquire.sys), so later work of the stream
 * sees what the signaller wrote before its release; add releases (.sys) on pe's copy, after
 * all earlier work of the stream (kernel boundaries order the stream's earlier writes).
 * The wait is bounded by WEFT_TIMEOUT_MS and the abort flag like every wait.
 */
#include <weft/device.cuh>

extern "C" __global__ void weft_rt_barrier(void) { weft_barrier_all_block(); }

extern "C" __global__ void weft_rt_signal_wait(unsigned long long *sig, int cmp,
                                               unsigned long long value) {
  if (threadIdx.x == 0) weft_wait_until(sig, cmp, value, "stream_signal_wait", -1);
}

extern "C" __global__ void weft_rt_signal_add(unsigned long long *sig, unsigned long long value,
                                              int pe) {
  if (threadIdx.x == 0) weft_signal_op(sig, value, WEFT_SIGNAL_ADD, pe);
}

extern "C" __global__ void weft_rt_occupancy_probe(void) {}
