"""`acl.util`: pyACL's helpers for pointers, numpy arrays and callback threads.

These have no `ret` in pyACL except `start_thread`/`stop_thread`; misuse (such as asking for a
numpy view of a *device* address, which would crash real pyACL on the host) raises `AclError`.
"""
from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np

from .. import memory as _mem
from ..errors import AclError, ACL_ERROR_RT_PARAM_INVALID
from . import constants as C
from .handles import fail

_threads: dict = {}
_lock = threading.Lock()


def _logged(fn):
    """These raise (pyACL has no ret for them); the failure is still logged like any facade
    call's, and its message names the acl.util call."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AclError as e:
            fail(e, f"acl.util.{fn.__name__}")
            raise
    return wrapper


@_logged
def numpy_to_ptr(array: np.ndarray) -> int:
    """Mirrors `acl.util.numpy_to_ptr`: the host address of the array's data (keep it alive)."""
    if not isinstance(array, np.ndarray):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"numpy_to_ptr: array must be a numpy.ndarray, "
                       f"got array={type(array).__name__}")
    return int(array.ctypes.data)


def _host_addr(ptr, api: str) -> int:
    if isinstance(ptr, bool) or not isinstance(ptr, int) or ptr <= 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: ptr must be a host address, got ptr={ptr!r}")
    if _mem.is_device_address(int(ptr)):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: ptr must be a host address, got device address ptr={int(ptr):#x}; "
                       f"copy it to the host with acl.rt.memcpy first")
    return int(ptr)


def _dtype(np_type) -> np.dtype:
    if isinstance(np_type, int) and not isinstance(np_type, bool):
        for t in np.sctypeDict.values():
            dt = np.dtype(t)
            if dt.num == np_type:
                return dt
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"ptr_to_numpy: np_type must be a numpy type number "
                       f"(e.g. NPY_FLOAT32={C.NPY_FLOAT32}), got np_type={np_type}")
    return np.dtype(np_type)


@_logged
def ptr_to_numpy(ptr: int, shape, np_type) -> np.ndarray:
    """Mirrors `acl.util.ptr_to_numpy(ptr, shape, np_type)`: a numpy view of host memory (no copy).

    `np_type` is a numpy type number as in pyACL (`NPY_FLOAT32` = 11) or a dtype.
    """
    addr = _host_addr(ptr, "ptr_to_numpy")
    dt = _dtype(np_type)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    buf = (ctypes.c_ubyte * nbytes).from_address(addr)
    return np.frombuffer(buf, dtype=np.uint8).view(dt).reshape(shape)


@_logged
def bytes_to_ptr(data) -> int:
    """Mirrors `acl.util.bytes_to_ptr`: the address of a bytes/bytearray buffer (keep it alive)."""
    if isinstance(data, bytes):
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    if isinstance(data, (bytearray, memoryview)):
        return int(np.frombuffer(data, dtype=np.uint8).ctypes.data) if len(data) else 0
    raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                   f"bytes_to_ptr: data must be bytes or bytearray, got data={type(data).__name__}")


@_logged
def ptr_to_bytes(ptr: int, size: int) -> bytes:
    """Mirrors `acl.util.ptr_to_bytes`: a copy of `size` bytes of host memory at `ptr`."""
    return ctypes.string_at(_host_addr(ptr, "ptr_to_bytes"), size)


def start_thread(fn, args=None):
    """Mirrors `acl.util.start_thread(fn, args_list)`: run `fn(args_list)` on a new thread.

    Returns `(thread_id, ret)`; `thread_id` is what `acl.rt.subscribe_report` takes.
    """
    if not callable(fn):
        return 0, fail(AclError(ACL_ERROR_RT_PARAM_INVALID, f"fn must be callable, got "
                                f"fn={fn!r}"), "acl.util.start_thread")
    t = threading.Thread(target=fn, args=(args if args is not None else [],), daemon=True,
                         name="acl-util-thread")
    t.start()
    with _lock:
        _threads[t.ident] = t
    return t.ident, C.ACL_SUCCESS


def stop_thread(thread_id: int) -> int:
    """Mirrors `acl.util.stop_thread`: wait for the thread (its function must return), then
    forget it."""
    with _lock:
        t = _threads.pop(thread_id, None)
    if t is None:
        return fail(AclError(ACL_ERROR_RT_PARAM_INVALID, f"thread_id must be a thread of "
                             f"acl.util.start_thread, got thread_id={thread_id!r}"),
                    "acl.util.stop_thread")
    t.join()
    return C.ACL_SUCCESS
