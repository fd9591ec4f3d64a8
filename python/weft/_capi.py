"""The C ABI of libweft through ctypes: where the library is found, every call's prototype, and
the check that turns a status into an exception. Nothing here imports torch."""

import ctypes
import ctypes.util
import os
import sys

# Status codes, in weft_status_t's order (include/weft.h).
STATUS_NAMES = (
    "SUCCESS", "INVALID_ARGUMENT", "INVALID_USAGE", "NO_DEVICE", "CUDA_ERROR", "COMPILE_ERROR",
    "SYSTEM_ERROR", "OUT_OF_MEMORY", "TIMEOUT", "MISMATCH", "REMOTE_ERROR", "ABORTED",
    "NOT_SUPPORTED", "INTERNAL_ERROR",
)
SUCCESS = 0
INVALID_USAGE = STATUS_NAMES.index("INVALID_USAGE")

# weft_dtype_t, weft_algo_t, weft_gemm_layout_t and weft_cmp_t by name.
DTYPES = {"uint8": 0, "int32": 1, "float16": 2, "bfloat16": 3, "float32": 4, "float64": 5}
ALGOS = {"auto": 0, "copy_engine": 1, "sm": 2, "ll": 3, "two_shot": 4, "ring": 5, "sequential": 6}
LAYOUTS = {"nk": 0, "kn": 1}
RED_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


class Error(RuntimeError):
    """A weft call failed. `status` is the weft_status_t value, `status_name` its name
    ("TIMEOUT", ...), `text` the library's last-error text; the message is the call and that
    text."""

    def __init__(self, call, status, text):
        self.status = status
        self.status_name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else str(status)
        self.text = text
        # The library's text starts with the status's own name ("timeout: ...").
        super().__init__(f"{call}: " + (text or lib.weft_get_error_string(status).decode()))


class CommConfig(ctypes.Structure):
    _fields_ = [("heap_size", ctypes.c_size_t), ("timeout_ms", ctypes.c_int),
                ("device", ctypes.c_int)]


class MoeRouting(ctypes.Structure):
    """weft_moe_routing_t (include/weft.h): a plan's sizes and its arrays in device memory."""
    _fields_ = [("tokens", ctypes.c_int), ("topk", ctypes.c_int), ("experts", ctypes.c_int),
                ("tile_rows", ctypes.c_int), ("max_rows", ctypes.c_longlong),
                ("counts", ctypes.c_void_p), ("offsets", ctypes.c_void_p),
                ("row_entry", ctypes.c_void_p), ("entry_row", ctypes.c_void_p),
                ("tile_expert", ctypes.c_void_p), ("tiles", ctypes.c_void_p)]


_p, _sz, _i, _u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint64
_pp, _pi, _psz = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t)
_st = ctypes.c_int  # weft_status_t

# name: (restype, argtypes). Enums travel as int, streams and buffers as void *.
# tests/python/capi.py checks this table against include/weft.h's WEFT_API declarations.
PROTOTYPES = {
    "weft_get_version": (_i, []),
    "weft_get_error_string": (ctypes.c_char_p, [_st]),
    "weft_get_last_error": (ctypes.c_char_p, []),
    "weft_comm_init": (_st, [_pp, ctypes.POINTER(CommConfig)]),
    "weft_comm_destroy": (_st, [_p]),
    "weft_comm_abort": (_st, [_p]),
    "weft_comm_get_last_error": (ctypes.c_char_p, [_p]),
    "weft_comm_get_async_error": (_st, [_p]),
    "weft_comm_set_autotune": (_st, [_p, _i]),
    "weft_comm_rank": (_st, [_p, _pi]),
    "weft_comm_size": (_st, [_p, _pi]),
    "weft_comm_local_rank": (_st, [_p, _pi]),
    "weft_comm_local_size": (_st, [_p, _pi]),
    "weft_comm_device": (_st, [_p, _pi]),
    "weft_comm_barrier": (_st, [_p]),
    "weft_malloc": (_st, [_p, _sz, _pp]),
    "weft_free": (_st, [_p, _p]),
    "weft_peer_ptr": (_st, [_p, _p, _i, _pp]),
    "weft_stream_put": (_st, [_p, _p, _p, _sz, _i, _p]),
    "weft_stream_get": (_st, [_p, _p, _p, _sz, _i, _p]),
    "weft_stream_signal_set": (_st, [_p, _p, _u64, _i, _p]),
    "weft_stream_signal_add": (_st, [_p, _p, _u64, _i, _p]),
    "weft_stream_put_signal": (_st, [_p, _p, _p, _sz, _p, _u64, _i, _p]),
    "weft_stream_signal_wait": (_st, [_p, _p, _i, _u64, _p]),
    "weft_stream_barrier": (_st, [_p, _p]),
    "weft_stream_synchronize": (_st, [_p, _p]),
    "weft_dtype_size": (_sz, [_i]),
    "weft_allgather": (_st, [_p, _p, _p, _sz, _i, _i, _p]),
    "weft_reduce_scatter": (_st, [_p, _p, _p, _sz, _i, _i, _i, _p]),
    "weft_allreduce": (_st, [_p, _p, _p, _sz, _i, _i, _i, _p]),
    "weft_alltoall": (_st, [_p, _p, _p, _sz, _i, _i, _p]),
    "weft_alltoallv": (_st, [_p, _p, _psz, _psz, _p, _psz, _psz, _i, _i, _p]),
    "weft_gemm": (_st, [_p, _p, _i, _p, _i, _p, _i, _i, _i, _i, _i, _i, _i, _p]),
    "weft_ag_gemm": (_st, [_p, _p, _p, _p, _i, _p, _i, _i, _i, _i, _i, _i, _i, _i, _p]),
    "weft_moe_rs": (_st, [_p, _p, _p, _i, _p, _i, ctypes.c_longlong, _p, _i, _p, _p, _i, _i, _i,
                          _i, _i, _i, _p]),
    "weft_moe_ar": (_st, [_p, _p, _p, _i, _p, _i, ctypes.c_longlong, _p, _i, _p, _p, _i, _i, _i,
                          _i, _i, _i, _p]),
    "weft_moe_reduce_workspace_size": (_st, [_p, _i, _i, _i, _psz]),
    "weft_moe_tp": (_st, [_p, _p, _p, _p, _i, _i, _i, _i, _i, _p, _p, _i, _p, _p, _sz, _i, _p]),
    "weft_moe_tp_workspace_size": (_st, [_p, _i, _i, _i, _i, _i, _i, _i, _psz]),
    "weft_ag_moe": (_st, [_p, _p, _p, _p, _p, _i, ctypes.c_longlong, _p, _i, _i, _i, _i, _i, _i, _i,
                          _i, _p]),
    "weft_gemm_rs": (_st, [_p, _p, _i, _p, _i, _p, _p, _i, _i, _i, _i, _i, _i, _i, _p]),
    "weft_gemm_rs_workspace_size": (_st, [_p, _i, _i, _i, _psz]),
    "weft_gemm_ar": (_st, [_p, _p, _i, _p, _i, _p, _p, _i, _i, _i, _i, _i, _i, _i, _p]),
    "weft_grouped_gemm": (_st, [_p, _p, _p, _i, _p, _i, ctypes.c_longlong, _p, _i, _i, _i, _i, _i,
                                _i, _p]),
    "weft_grouped_gemm_silu_mul": (_st, [_p, _p, _p, _i, _p, _i, ctypes.c_longlong, _p, _i, _i,
                                         _i, _i, _i, _i, _p]),
    "weft_grouped_gemm_combine": (_st, [_p, _p, _p, _i, _p, _i, ctypes.c_longlong, _p, _i, _p, _i,
                                        _i, _i, _i, _i, _i, _p]),
    "weft_moe_silu_mul": (_st, [_p, _p, _p, _i, _i, _p, _p]),
    "weft_moe_combine": (_st, [_p, _p, _p, _p, _i, _i, _i, _p, _p]),
    "weft_moe_routing_size": (_st, [_i, _i, _i, _i, _psz, ctypes.POINTER(ctypes.c_longlong)]),
    "weft_moe_route": (_st, [_p, _p, _i, _i, _i, _i, _p, _sz, _p, _p]),
    "weft_moe_gather": (_st, [_p, _p, _p, _i, _i, _p, _p]),
    "weft_jit_compile": (_st, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                               _i, _pp, _psz, ctypes.POINTER(ctypes.c_char_p)]),
    "weft_jit_free": (None, [_p]),
    "weft_module_load": (_st, [_p, ctypes.c_char_p, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.c_char_p), _i, _pp]),
    "weft_module_unload": (_st, [_p]),
    "weft_module_get_kernel": (_st, [_p, ctypes.c_char_p, _pp]),
    "weft_kernel_launch": (_st, [_p, _p, _pp, _p]),
}


def _candidates():
    """Where libweft may be, most explicit first."""
    env = os.environ.get("WEFT_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    # Bundled by `pip install ./python` beside the package's modules. An editable install keeps
    # the modules in the source tree and the library in site-packages: the package's __path__
    # names both.
    package = sys.modules.get(__package__)
    dirs = [here] + [os.path.abspath(d) for d in getattr(package, "__path__", ())]
    for d in dict.fromkeys(dirs):
        yield os.path.join(d, "libweft.so")
    yield os.path.join(here, "..", "..", "build", "libweft.so")  # a source tree's build/
    found = ctypes.util.find_library("weft")                     # the linker's search path
    if found:
        yield found
    yield "libweft.so.0"                                         # LD_LIBRARY_PATH


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, (res, args) in PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        return lib, path
    raise ImportError("weft: libweft.so not found; set WEFT_LIBRARY to its path (tried: "
                      + "; ".join(tried) + ")")


lib, LIBRARY_PATH = _load()


def call(name, *args, comm=None):
    """Calls weft function `name`; raises Error unless it returns WEFT_STATUS_SUCCESS. The
    error's text is the communicator's last error where the call has one, else the thread's."""
    st = getattr(lib, name)(*args)
    if st != SUCCESS:
        text = lib.weft_comm_get_last_error(comm) if comm else lib.weft_get_last_error()
        raise Error(name, st, (text or b"").decode(errors="replace"))

