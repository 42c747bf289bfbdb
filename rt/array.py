"""DeviceArray: a typed, C-contiguous buffer in device memory (what kernels take as arguments).

The data lives in the device's arena; ``copy_to_host``/``copy_from_host``/``to_device`` move it,
synchronously or on a stream. To hand it to numpy or torch without a copy use DLPack
(``np.from_dlpack(a)``, ``torch.from_dlpack(a)``): the emulated device memory *is* host memory, so
``__dlpack_device__`` says CPU. There is deliberately no ``__array__`` (``np.asarray`` would copy
silently); ``host_view()`` is the explicit zero-copy backdoor.

An owning array frees its memory on ``free()``, at the end of a ``with`` block, or when it is
garbage collected (whichever comes first). ``DeviceArray.map_host(ary)`` is a DeviceArray whose
device address maps the host array itself (``aclrtHostRegister``, rt.hostmem): kernels work on
`ary` in place; ``free()`` ends the mapping.
"""
from __future__ import annotations

import ctypes
import math
import mmap
import weakref

import numpy as np

from . import copy as _copy
from . import device as _dev
from . import hostmem
from . import memory as _mem
from .errors import AclError, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from .memcheck import check_access, device_of
from .memory import DeviceBuffer, DevicePtr, MemcpyKind, copy_bytes, device_view
from .pool import alloc_bytes


def _release(pool, blk, serial) -> None:
    try:
        _mem.free_block_ordered(pool, blk, serial)   # after queued work using it has run
    except Exception:       # the device was reset: its memory is gone already
        pass


def _unmap(addr) -> None:
    try:
        hostmem.host_unregister(addr)
    except AclError:        # unregistered already
        pass


_MAPPING_RESOLVES = []      # [bool] once probed: does device memory access resolve mappings?


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

    @classmethod
    def map_host(cls, ary: np.ndarray, write: bool = True,
                 device: int | None = None) -> "DeviceArray":
        """Mirrors `aclrtHostRegister` + `aclrtHostGetDevicePointer`: a DeviceArray of `ary`'s
        shape and dtype whose device address maps `ary`'s own memory into `device`'s address
        space (default: the current device). A kernel launched on it reads and writes `ary` in
        place, with the bounds of an allocation of `ary.nbytes`; `write=False` maps it read-only.
        ``free()`` (or the end of a ``with`` block, or garbage collection) unregisters it: do
        that only once the work using it has completed. `ary` must be C-contiguous."""
        if not cls.can_map_host():
            raise AclError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           "rt.DeviceArray.map_host: device memory access must resolve mapped "
                           "host memory (rt.memory's device_view hook), got a runtime without it")
        dev = _dev.get_device(device, api="rt.DeviceArray.map_host")
        addr = hostmem.host_register(ary, dev.id, write)
        p = int.__new__(DevicePtr, addr)
        p.device, p.size = dev.id, ary.nbytes
        out = cls._wrap(ary.shape, ary.dtype, p, dev.id, ary)
        out._finalizer = weakref.finalize(out, _unmap, addr)
        return out

    @staticmethod
    def can_map_host() -> bool:
        """Whether rt's device memory access (`rt.memory.device_view`, copies, kernels) resolves
        addresses of mapped host memory (probed once per process)."""
        if not _MAPPING_RESOLVES:
            probe = np.arange(64, dtype=np.uint8)
            addr = hostmem.host_register(probe, 0, write=False)
            try:
                ok = device_view(addr, 64).ctypes.data == probe.ctypes.data
            except AclError:
                ok = False
            finally:
                hostmem.host_unregister(addr)
            _MAPPING_RESOLVES.append(ok)
        return _MAPPING_RESOLVES[0]

    @property
    def is_mapped_host(self) -> bool:
        """Whether this array's device address maps host memory (`map_host`)."""
        return hostmem.is_mapped_address(int(self.ptr))

    @classmethod
    def _wrap(cls, shape, dtype, ptr: DevicePtr, device: int, base) -> "DeviceArray":
        """A non-owning DeviceArray of checked memory `ptr` (no allocation, no access check)."""
        out = cls.__new__(cls)
        out.shape, out.dtype, out._ptr, out.device = tuple(shape), np.dtype(dtype), ptr, device
        out._base, out._finalizer = base, None
        return out

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
        if hostmem.is_mapped_address(int(self.ptr)):
            return hostmem.mapped_view(self.ptr, self.nbytes, "rt.DeviceArray.host_view") \
                .view(self.dtype).reshape(self.shape)
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
        if hostmem.is_mapped_address(int(self.ptr)):
            return DeviceArray._wrap(shape, self.dtype, self.ptr, self.device, self)
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


def _map_padded(ary: np.ndarray) -> DeviceArray | None:
    """A read-only mapping of `ary` whose registered bytes reach `alloc_bytes(ary.nbytes)` (what
    a kernel may read of a device copy), or None when the host memory after `ary` is not readable
    that far."""
    span = alloc_bytes(ary.nbytes)
    addr = ary.ctypes.data if ary.nbytes else 0
    if not addr:
        return None
    page = mmap.PAGESIZE
    if (addr + span - 1) // page != (addr + ary.nbytes - 1) // page and \
            not hostmem.host_range_ok(addr, span, False, fresh=True):
        return None         # (inside the array's last page the padding is mapped: no check)
    raw = np.ctypeslib.as_array((ctypes.c_ubyte * span).from_address(addr))
    raw.flags.writeable = False
    dev = _dev.get_device(None, api="rt.HostArgs")
    mapped = hostmem.host_register(raw, dev.id, write=False)
    p = int.__new__(DevicePtr, mapped)
    p.device, p.size = dev.id, ary.nbytes
    out = DeviceArray._wrap(ary.shape, ary.dtype, p, dev.id, ary)
    out._finalizer = weakref.finalize(out, _unmap, mapped)
    return out


class HostArgs:
    """The device buffers of a synchronous launch's numpy arguments, with copy semantics.

    The promise (pyasc's launcher copies host arrays in before a launch and back after it): the
    kernel never sees its own writes through another argument during the launch, and a host
    array changes only if the kernel wrote it and the launch succeeded. Kept here with fewer
    copies: an array the kernel only reads is mapped read-only into the device
    (`DeviceArray.map_host`: no copy in, nothing to copy back); an array it may write is copied
    in and, after a successful launch, back (`copy_back`), so aliasing and faults behave exactly
    as with copies. Without the runtime's mapping every array is copied in, and only the
    written ones back."""

    def __init__(self):
        self.staged: list = []      # [(host array, its device copy)]: copied back in order
        self.bufs: list = []

    def add(self, ary: np.ndarray, written: bool) -> DeviceArray:
        """The DeviceArray a kernel gets for host array `ary` (`written`: it may write it).

        As with the copy into an ``aclrtMalloc``'d buffer a real launch makes, the kernel reaches
        ``alloc_bytes(ary.nbytes)`` bytes (`rt.memory.kernel_view`): a copy's own allocation
        has them; a read-only mapping covers them when the host memory after `ary` is readable
        (a read there returns whatever lies there, as a device buffer's padding holds garbage),
        else the array is copied in. Writes never reach host memory past `ary` (only a copy is
        written, and only `ary.nbytes` of it are copied back)."""
        if not written and ary.flags.c_contiguous and DeviceArray.can_map_host():
            dev = _map_padded(ary)
            if dev is None:
                dev = to_device(ary)
        else:
            dev = to_device(ary)
            if written:             # an array the kernel only reads has nothing to copy back
                self.staged.append((ary, dev))
        self.bufs.append(dev)
        return dev

    def copy_back(self) -> None:
        """Copy the written arrays back (call after the launch has completed successfully)."""
        for host, dev in self.staged:
            if host.flags.c_contiguous and host.flags.writeable and host.shape == dev.shape:
                dev.copy_to_host(out=host)      # straight into the array: one copy, not two
            else:
                np.copyto(host, dev.copy_to_host().reshape(host.shape), casting="no")

    def free(self) -> None:
        """Free the copies and end the mappings."""
        for dev in self.bufs:
            dev.free()
        self.bufs, self.staged = [], []
