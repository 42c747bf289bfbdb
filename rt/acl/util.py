"""`acl.util`: pyACL's helpers for pointers, numpy arrays and callback threads.

These have no `ret` in pyACL except `start_thread`/`stop_thread`; misuse (such as asking for a
numpy view of a *device* address, which would crash real pyACL on the host) raises `AclError`.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
import weakref

import numpy as np

from .. import hostmem as _hostmem
from ..array import DeviceArray
from .. import memory as _mem
from ..errors import AclError, ACL_ERROR_RT_PARAM_INVALID
from . import constants as C
from .handles import fail

_threads: dict = {}
_lock = threading.Lock()
_handed_out: dict = {}       # address -> (nbytes, weakref to the array) from numpy_to_ptr


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
def run_mode() -> int:
    """`aclrtGetRunMode`'s answer: ACL_HOST, or ACL_DEVICE with ASCEND_EMU_RUN_MODE=ACL_DEVICE
    (the program as run on the board, an Atlas 200 DK: its memory is the device's, so
    `ptr_to_bytes` / `ptr_to_numpy` read device addresses, single ops and models take host
    buffers)."""
    mode = os.environ.get("ASCEND_EMU_RUN_MODE", "ACL_HOST")
    if mode not in ("ACL_HOST", "ACL_DEVICE"):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"ASCEND_EMU_RUN_MODE must be ACL_HOST or ACL_DEVICE, got {mode!r}")
    return C.ACL_DEVICE if mode == "ACL_DEVICE" else C.ACL_HOST


_staged: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def on_board(ptr) -> bool:
    """A host address in a data buffer, in ACL_DEVICE run mode: the board's memory, which the
    device reaches directly (single ops, model execution)."""
    return isinstance(ptr, int) and not isinstance(ptr, bool) and ptr > 0 and \
        not _mem.is_device_address(ptr) and run_mode() == C.ACL_DEVICE


def board_array(shape, dtype, nbytes: int, ptr: int, write: bool, api: str) -> DeviceArray:
    """A device array standing for the host buffer at `ptr` (checked: `nbytes` of live memory
    of this process) in ACL_DEVICE run mode: `stage_in` queues the buffer's bytes into it before
    the work, `stage_out` queues them back (`write`: an output) after it, so the work sees and
    leaves the program's memory as on the board, in stream order."""
    host = host_range(ptr, nbytes, api)
    dev = DeviceArray(shape, dtype)
    _staged[dev] = (host, write)
    return dev


def _copy_task(stream, arrays, to_device: bool, what: str) -> None:
    pairs = [(a, _staged.pop(a, None) if not to_device else _staged.get(a)) for a in arrays
             if a is not None and a in _staged]
    pairs = [(a, hw) for a, hw in pairs if hw is not None and (to_device or hw[1])]
    if not pairs:
        return

    def run():
        for a, (host, _) in pairs:
            dev = _mem.device_view(int(a.ptr), host.size, "acl (ACL_DEVICE run mode)")
            if to_device:
                dev[:] = host
            else:
                host[:] = dev
    stream.enqueue(run, "memcpy", f"{what} ({'host buffers in' if to_device else 'outputs out'})")


def stage_in(arrays, stream, what: str) -> None:
    """Queue on `stream` the copy of each `board_array`'s host bytes into its device array."""
    _copy_task(stream, arrays, True, what)


def stage_out(arrays, stream, what: str) -> None:
    """Queue on `stream` the copy of each output `board_array` back to its host buffer."""
    _copy_task(stream, arrays, False, what)
    for a in arrays:
        if a is not None:
            _staged.pop(a, None)


@_logged
def numpy_to_ptr(array: np.ndarray) -> int:
    """Mirrors `acl.util.numpy_to_ptr`: the host address of the array's data (keep it alive)."""
    if not isinstance(array, np.ndarray):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"numpy_to_ptr: array must be a numpy.ndarray, "
                       f"got array={type(array).__name__}")
    addr = int(array.ctypes.data)
    with _lock:
        for a in [a for a, (_, ref) in _handed_out.items() if ref() is None]:
            del _handed_out[a]
        _handed_out[addr] = (array.nbytes, weakref.ref(array))
    return addr


def _known_host_range(addr: int, nbytes: int, api: str) -> np.ndarray | None:
    """A uint8 view of [addr, addr + nbytes) if it lies in memory we know is live: a pinned
    buffer (acl.rt.malloc_host) or an array numpy_to_ptr handed out that is still alive."""
    reg = _hostmem.region(addr) if _hostmem.any_pinned() else None
    if reg is not None:
        start, size, u8 = reg
        if addr + nbytes > start + size:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"{api}: ptr must point to {nbytes} bytes of live host memory of this "
                           f"process, got ptr={addr:#x}: past the end of the pinned buffer at "
                           f"{start:#x} (size {size})")
        return u8[addr - start:addr - start + nbytes]
    with _lock:
        for a, (size, ref) in _handed_out.items():
            arr = ref()
            if arr is not None and a <= addr and addr + nbytes <= a + size:
                return np.frombuffer((ctypes.c_ubyte * nbytes).from_address(addr), np.uint8)
    return None


def host_range(ptr, nbytes, api: str) -> np.ndarray:
    """A uint8 view of `nbytes` of host memory at `ptr`, after checking that all of it is
    readable memory of this process (a bad pointer is refused, never dereferenced)."""
    if isinstance(ptr, bool) or not isinstance(ptr, int) or ptr <= 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: ptr must be a host address, got ptr={ptr!r}")
    addr = int(ptr)
    if _mem.is_device_address(addr) and run_mode() == C.ACL_DEVICE:
        return _mem.device_view(addr, nbytes, api)
    if _mem.is_device_address(addr):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: ptr must be a host address, got device address ptr={addr:#x}; "
                       f"copy it to the host with acl.rt.memcpy first (or run as on the "
                       f"board: ASCEND_EMU_RUN_MODE=ACL_DEVICE)")
    if nbytes == 0:
        return np.empty(0, np.uint8)
    view = _known_host_range(addr, nbytes, api)
    if view is not None:
        return view
    if not _hostmem.host_range_ok(addr, nbytes, False, fresh=True):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: ptr must point to {nbytes} bytes of live host memory of this "
                       f"process, got ptr={addr:#x}: not a mapped range (not from numpy_to_ptr, "
                       f"bytes_to_ptr or acl.rt.malloc_host, or freed)")
    return np.frombuffer((ctypes.c_ubyte * nbytes).from_address(addr), np.uint8)


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
    dt = _dtype(np_type)
    dims = (shape,) if isinstance(shape, int) else tuple(shape) \
        if isinstance(shape, (tuple, list)) else None
    if dims is None or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                               for d in dims):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"ptr_to_numpy: shape must be an int or a sequence of ints >= 0, got "
                       f"shape={shape!r}")
    nbytes = dt.itemsize
    for d in dims:
        nbytes *= d
    return host_range(ptr, nbytes, "ptr_to_numpy").view(dt).reshape(dims)


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
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"ptr_to_bytes: size must be an int >= 0, got size={size!r}")
    return host_range(ptr, size, "ptr_to_bytes").tobytes()


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
