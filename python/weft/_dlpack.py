"""Device memory that weft owns (the symmetric heap), handed to torch through DLPack without a
copy. The tensor does not own the memory: its deleter only drops this module's record, and the
memory goes back with Comm.free (collective) or Comm.destroy."""

import ctypes

import torch
import torch.utils.dlpack

_DL_CUDA = 2
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT = 0, 1, 2, 4
_CODES = {
    torch.uint8: (_DL_UINT, 8), torch.int8: (_DL_INT, 8), torch.int16: (_DL_INT, 16),
    torch.int32: (_DL_INT, 32), torch.int64: (_DL_INT, 64), torch.float16: (_DL_FLOAT, 16),
    torch.bfloat16: (_DL_BFLOAT, 16), torch.float32: (_DL_FLOAT, 32),
    torch.float64: (_DL_FLOAT, 64),
}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _Deleter)]

# Every exported struct and its shape array, by the struct's address, until torch deletes it.
_live = {}


@_Deleter
def _delete(managed):
    _live.pop(ctypes.addressof(managed.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def supported(dtype):
    return dtype in _CODES


def as_tensor(ptr, shape, dtype, device):
    """A contiguous torch tensor of `shape` and `dtype` over device memory at `ptr` on CUDA
    device `device`. The caller keeps the memory valid for the tensor's life."""
    code, bits = _CODES[dtype]
    shape = tuple(int(s) for s in shape)
    step, steps = 1, []
    for s in reversed(shape):  # row-major strides, in elements (some consumers need them given)
        steps.insert(0, step)
        step *= s
    n = max(len(shape), 1)
    dims, strides = (ctypes.c_int64 * n)(*shape), (ctypes.c_int64 * n)(*steps)
    m = _Managed()
    m.dl_tensor = _Tensor(ptr, _Device(_DL_CUDA, device), len(shape), _DataType(code, bits, 1),
                          dims, strides, 0)
    m.deleter = _delete
    _live[ctypes.addressof(m)] = (m, dims, strides)
    try:
        cap = _capsule_new(ctypes.addressof(m), b"dltensor", None)
        return torch.utils.dlpack.from_dlpack(cap)
    except BaseException:
        _live.pop(ctypes.addressof(m), None)
        raise
