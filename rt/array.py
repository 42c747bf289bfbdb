"""DeviceArray: a typed, C-contiguous buffer in device memory (what kernels take as arguments).

The data lives in the device's arena; ``copy_to_host``/``copy_from_host``/``to_device`` move it,
synchronously or on a stream. To hand it to numpy or torch without a copy use DLPack
(``np.from_dlpack(a)``, ``torch.from_dlpack(a)``): the emulated device memory *is* host memory, so
``__dlpack_device__`` says CPU. There is deliberately no ``__array__`` (``np.asarray`` would copy
silently); ``host_view()`` is the explicit zero-copy backdoor.

An owning array frees its memory on ``free()``, at the end of a ``with`` block, or when it is
garbage collected (whichever comes first).
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from . import copy as _copy
from . import device as _dev
from . import memory as _mem
from .errors import AclError, ACL_ERROR_RT_PARAM_INVALID
from .memcheck import check_access, device_of
from .memory import DeviceBuffer, DevicePtr, MemcpyKind, copy_bytes, device_view


def _release(pool, blk, serial) -> None:
    try:
        _mem.free_block_ordered(pool, blk, serial)   # after queued work using it has run
    except Exception:       # the device was reset: its memory is gone already
        pass


class _Keep:
    __slots__ = ("__array_interface__", "owner", "mem")


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        shape = None
    if shape is None or any(s < 0 for s in shape):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"rt.DeviceArray: shape must be a tuple of ints >= 0, got shape={shape!r}")
    return shape


class DeviceArray(DeviceBuffer):
    """A typed device buffer: ``.shape .dtype .size .nbytes .ndim .itemsize .ptr .device``.

    ``DeviceArray(shape, dtype)`` allocates on `device` (default: the current one) with
    ``rt.malloc`` and owns it. ``DeviceArray(shape, dtype, ptr)`` wraps existing device memory
    (which must hold ``nbytes``) without owning it, unless ``owner=True``.
    """
    __slots__ = ("shape", "dtype", "_ptr", "device", "_finalizer", "_base", "__weakref__")

    def __init__(self, shape, dtype=np.float32, ptr: int | None = None, device: int | None = None,
                 owner: bool = False):
        self.shape = _shape(shape)
        self.dtype = np.dtype(dtype)
        self._base = None
        nbytes = self.nbytes
        if ptr is None:
            dev = _dev.get_device(device, api="rt.DeviceArray")
            ptr = dev.pool.malloc(max(nbytes, 1))
            owner = True
        else:
            blk = check_access(ptr, nbytes, "rt.DeviceArray")
            dev = _dev.DEVICES[device_of(int(ptr))]
            if device is not None and device != dev.id:
                raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                               f"rt.DeviceArray: device must be where ptr lives, "
                               f"got device={device}, ptr on device {dev.id}")
            if not isinstance(ptr, DevicePtr):
                p = int.__new__(DevicePtr, int(ptr))
                p.device, p.size = dev.id, blk.req
                ptr = p
        self._ptr = ptr
        self.device = dev.id
        self._finalizer = None
        if owner:
            blk = dev.pool.allocs[int(ptr)]
            self._finalizer = weakref.finalize(self, _release, dev.pool, blk, blk.serial)

    # -- properties --------------------------------------------------------------------------
    @property
    def ptr(self) -> DevicePtr:
        """The device address of element 0."""
        if self._ptr is None:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           "rt.DeviceArray: the array must be live, got freed=True")
        return self._ptr

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        out, step = [], self.dtype.itemsize
        for s in reversed(self.shape):
            out.append(step)
            step *= s
        return tuple(reversed(out))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        where = f"0x{int(self._ptr):x}" if self._ptr is not None else "freed"
        return (f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device}, "
                f"ptr={where})")

    # -- lifetime ----------------------------------------------------------------------------
    def free(self) -> None:
        """Free the memory (mirrors `aclrtFree` for an owning array); later use raises. Stream-
        ordered: kernels and async copies already queued on it still see it (`rt.free`)."""
        if self._finalizer is not None:
            self._finalizer()
        self._ptr = None

    def __enter__(self) -> "DeviceArray":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    # -- data --------------------------------------------------------------------------------
    def host_view(self) -> np.ndarray:
        """Emulator backdoor: a writable numpy view of the device memory (no copy, no sync: pending
        stream work may still be writing it)."""
        u8 = device_view(self.ptr, self.nbytes, "rt.DeviceArray.host_view")
        keep = _Keep()                      # the view keeps this array (and the arena) alive
        keep.__array_interface__ = {"shape": (u8.size,), "typestr": "|u1", "version": 3,
                                    "data": (u8.ctypes.data if u8.size else 0, False)}
        keep.owner, keep.mem = self, u8
        return np.asarray(keep).view(self.dtype).reshape(self.shape)

    def copy_to_host(self, stream=None, out: np.ndarray | None = None) -> np.ndarray:
        """Mirrors `aclrtMemcpy`/`aclrtMemcpyAsync` DEVICE_TO_HOST into `out` (new if None).

        With a `stream` the copy is queued: `out` is filled once the stream reaches it."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif out.dtype != self.dtype or out.shape != self.shape or not out.flags.c_contiguous:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"rt.DeviceArray.copy_to_host: out must be C-contiguous {self.dtype}"
                           f"{list(self.shape)}, got out={out.dtype}{list(out.shape)}")
        if stream is None:
            copy_bytes(out, self.ptr, self.nbytes, MemcpyKind.DEVICE_TO_HOST,
                       "rt.DeviceArray.copy_to_host")
        else:
            _copy.memcpy_async(out, self.ptr, self.nbytes, MemcpyKind.DEVICE_TO_HOST, stream)
        return out

    def copy_from_host(self, ary, stream=None) -> "DeviceArray":
        """Mirrors `aclrtMemcpy`/`aclrtMemcpyAsync` HOST_TO_DEVICE from `ary` (same shape; cast to
        this dtype if needed). With a `stream` the copy is queued."""
        a = np.asarray(ary, dtype=self.dtype, order="C")   # keeps 0-d (ascontiguousarray does not)
        if a.shape != self.shape:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"rt.DeviceArray.copy_from_host: ary.shape must equal {self.shape}, "
                           f"got ary.shape={a.shape}")
        if stream is None:
            copy_bytes(self.ptr, a, self.nbytes, MemcpyKind.HOST_TO_DEVICE,
                       "rt.DeviceArray.copy_from_host")
        else:
            _copy.memcpy_async(self.ptr, a, self.nbytes, MemcpyKind.HOST_TO_DEVICE, stream)
        return self

    def reshape(self, *shape) -> "DeviceArray":
        """A non-owning DeviceArray of the same memory with another shape (same size)."""
        shape = _shape(shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
        if -1 in shape or math.prod(shape) != self.size:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"rt.DeviceArray.reshape: shape must have {self.size} elements, got "
                           f"shape={shape}")
        out = DeviceArray(shape, self.dtype, self.ptr)
        out._base = self
        return out

    def __dlpack__(self, **kwargs):
        """DLPack export of the device memory (zero-copy, CPU device); see `host_view`."""
        return self.host_view().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)       # kDLCPU: the emulated device memory is host memory


def device_empty(shape, dtype=np.float32, device: int | None = None) -> DeviceArray:
    """An uninitialized DeviceArray (like `aclrtMalloc`: contents undefined)."""
    return DeviceArray(shape, dtype, device=device)


def device_zeros(shape, dtype=np.float32, device: int | None = None) -> DeviceArray:
    """A zero-filled DeviceArray (`aclrtMalloc` + `aclrtMemset(0)`)."""
    a = DeviceArray(shape, dtype, device=device)
    if a.nbytes:
        device_view(a.ptr, a.nbytes).fill(0)
    return a


def to_device(ary, stream=None, device: int | None = None) -> DeviceArray:
    """A new DeviceArray holding a copy of `ary` (H2D; queued on `stream` if given)."""
    a = np.asarray(ary, order="C")
    return DeviceArray(a.shape, a.dtype, device=device).copy_from_host(a, stream)
