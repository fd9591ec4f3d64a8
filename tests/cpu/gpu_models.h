/*
 * gpu_models.h — the GPUs the CPU tests enumerate the ops' choices for (weft_ops_gpu_t, as
 * weft_ops_init measures it on the device).
 */
#ifndef WEFT_TESTS_GPU_MODELS_H
#define WEFT_TESTS_GPU_MODELS_H

#include "ops/ops.h"

/* cluster counts as cuOccupancyMaxActiveClusters gave them (weft-bench's header, 2026-11-26);
 * the H100 PCIe's are sms / size, a guess (none lent) */
static const weft_ops_gpu_t WEFT_GPU_H100_SXM = {132, 3352, {132, 66, 30, 15}};
static const weft_ops_gpu_t WEFT_GPU_H200 = {132, 4800, {132, 66, 30, 15}};
static const weft_ops_gpu_t WEFT_GPU_H100_PCIE = {114, 2039, {114, 57, 28, 14}};

#endif
