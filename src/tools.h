/*
 * tools.h — the one internal header that weft's own tools (tools/: weft-bench, weftrun) include
 * besides weft.h. The benchmark reports the GPU as the ops see it, runs the GEMM at a chosen
 * configuration and with its overlap hooks (its GEMM suites time the kernel's variants), gathers
 * each rank's results over the bootstrap, and calls the driver through weft's loaded table;
 * weftrun counts the GPUs through that table. None of this is a public interface: it changes with
 * the library, and the tools build with it (they link the static weft_internal).
 */
#ifndef WEFT_TOOLS_H
#define WEFT_TOOLS_H

#include "ops/gemm/gemm.h"
#include "ops/ops.h"
#include "runtime/bootstrap.h"
#include "runtime/comm.h"
#include "runtime/loader.h"

#endif /* WEFT_TOOLS_H */
