"""The Python package's bindings, without a GPU: every WEFT_API call of include/weft.h has a
prototype with its parameter count, the enum tables match the header's values, the version is
the header's, the JIT compiles through the package, and errors carry status and text.
Run by ctest (cpu_test_python_capi): python3 tests/python/capi.py <include/weft.h>."""

import os
import re
import sys

import weft
from weft import _capi

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


header = open(sys.argv[1]).read()
code = re.sub(r"/\*.*?\*/", "", header, flags=re.S)

# Every WEFT_API function bound, with as many parameters as the header declares.
decls = dict((m.group(1), m.group(2)) for m in
             re.finditer(r"WEFT_API\s+[\w\s\*]*?\b(weft_\w+)\s*\(([^)]*)\)\s*;", code))
check(len(decls) >= 40, f"{len(decls)} WEFT_API declarations parsed from the header")
for name, params in sorted(decls.items()):
    n = 0 if params.strip() in ("", "void") else params.count(",") + 1
    proto = _capi.PROTOTYPES.get(name)
    check(proto is not None and len(proto[1]) == n,
          f"{name}: {n} parameters, bound with {None if proto is None else len(proto[1])}")
for name in _capi.PROTOTYPES:
    check(name in decls, f"{name} bound and declared")


def header_enum(tag, prefix):
    body = re.search(r"typedef enum " + tag + r"\s*\{(.*?)\}", code, re.S).group(1)
    names, v = {}, -1
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = item.partition("=")
        v = int(value) if value.strip() else v + 1
        names[name.strip()[len(prefix):]] = v
    return names


dtype_names = {"UINT8": "uint8", "INT32": "int32", "FP16": "float16", "BF16": "bfloat16",
               "FP32": "float32", "FP64": "float64"}
for tag, prefix, table, rename in (
        ("weft_dtype", "WEFT_DTYPE_", _capi.DTYPES, dtype_names.get),
        ("weft_algo", "WEFT_ALGO_", _capi.ALGOS, str.lower),
        ("weft_gemm_layout", "WEFT_GEMM_LAYOUT_", _capi.LAYOUTS, str.lower),
        ("weft_red_op", "WEFT_RED_OP_", _capi.RED_OPS, str.lower)):
    want = {rename(k): v for k, v in header_enum(tag, prefix).items() if k != "COUNT"}
    check(want == table, f"{tag}: the package's table {table} is the header's {want}")
status = header_enum("weft_status", "WEFT_STATUS_")
check([k for k, v in sorted(status.items(), key=lambda kv: kv[1]) if k != "COUNT"]
      == list(_capi.STATUS_NAMES), "weft_status: names in the header's order")

ver = tuple(int(re.search(r"#define WEFT_VERSION_" + p + r" (\d+)", code).group(1))
            for p in ("MAJOR", "MINOR", "PATCH"))
check(weft.version() == ver, f"version {weft.version()} is the header's {ver}")
check(os.path.samefile(weft.LIBRARY_PATH, os.environ["WEFT_LIBRARY"]),
      f"loaded {weft.LIBRARY_PATH}")

# The JIT through the package: a kernel that uses the device library, then a broken one.
src = ('#include <weft/device.cuh>\n'
       'extern "C" __global__ void k(int *p) { p[0] = weft_my_pe() + N; }\n')
cubin = weft.jit_compile(src, "k.cu", ["-DN=3"])
check(cubin[:4] == b"\x7fELF", f"jit_compile gives an ELF cubin ({len(cubin)} bytes)")
try:
    weft.jit_compile('extern "C" __global__ void k() { undeclared(); }', "bad.cu")
    check(False, "a compile error raises weft.Error")
except weft.Error as e:
    check(e.status_name == "COMPILE_ERROR" and "undeclared" in str(e),
          f"a compile error raises {e.status_name} with NVRTC's log")

# A communicator: a world of one where a GPU is, NO_DEVICE where none is (CI), nothing else.
for var in ("RANK", "WORLD_SIZE", "WEFT_RANK", "WEFT_WORLD_SIZE"):
    os.environ.pop(var, None)
try:
    with weft.Comm() as comm:
        check((comm.rank, comm.world_size) == (0, 1), "Comm() alone is rank 0 of 1")
        comm.barrier()
except weft.Error as e:
    check(e.status_name == "NO_DEVICE" and e.text, f"Comm() without a GPU: {e}")

try:
    weft.Comm(device=-7)
    check(False, "a bad device raises weft.Error")
except weft.Error as e:
    check(e.status_name in ("INVALID_ARGUMENT", "NO_DEVICE"), f"Comm(device=-7): {e}")

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
