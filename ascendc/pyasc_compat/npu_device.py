"""torch's device "npu" for pyasc scripts, backed by the emulated device's memory.

pyasc's NPU tests make torch tensors with `device="npu"` and pass them to kernels (pyasc's
`resolve_memory_handle` takes any tensor with `.is_npu`, python/asc/runtime/memory_handle.py).
On a real machine that device comes from torch_npu, which torch >= 2.5 imports by itself on
`import torch` (the `torch.backends` entry point, torch/__init__.py `_import_device_backends`);
pyasc never imports torch_npu. Here, while the compat layer is active, `activate()` registers
torch's PrivateUse1 key as a python backend named "npu"
(`torch.utils.backend_registration._setup_privateuseone_for_python_backend`, as torch's own
test/test_privateuseone_python_backend.py does) with one fallback for every aten op:

- an npu tensor is a wrapper (`NpuTensor`) around a CPU torch tensor (`raw`) whose storage IS
  the emulated device memory of an `rt` allocation; ops run on the raw CPU tensors;
- a result that shares no storage with an input (a new tensor) is moved into fresh device
  memory, laid out as torch_npu's caching allocator lays it out (`_Segments`);
- torch_npu orders its ops on the current stream after earlier kernels: here every op first
  waits for the device (`rt.synchronize_device`), so a kernel's writes are visible.

Kernels take an npu tensor as an `rt.DeviceArray` over the same memory (`as_device_array`).
Never active unless asked: `ascendc.run`, the pytest plugin and `set_platform(Backend.NPU)` ask.
If a real torch_npu is installed, nothing is done (it owns the device name "npu").
"""
from __future__ import annotations

import importlib.util
import sys
import threading

import numpy as np

import rt as _rt

DEVICE = "npu"
_state = {"active": False}
_lock = threading.Lock()

# torch_npu's NPUCachingAllocator (c10_npu/NPUCachingAllocator.cpp): a request is padded by
# 32 bytes and rounded up to 512-byte blocks (round_size, kMinBlockSize); requests up to 1 MiB
# (kSmallSize) are carved from 2 MiB segments (kSmallBuffer), each one aclrtMalloc; larger ones
# get a segment of their own, rounded up to 2 MiB (kRoundLarge)
_MIN_BLOCK = 512
_PAD = 32
_SMALL_SIZE = 1 << 20
_SEGMENT = 2 << 20


def torch_npu_block_bytes(nbytes: int) -> int:
    """The block torch_npu's caching allocator reserves for a tensor of `nbytes` bytes."""
    size = int(nbytes) + _PAD
    return max(_MIN_BLOCK, (size + _MIN_BLOCK - 1) // _MIN_BLOCK * _MIN_BLOCK)


class _Segments:
    """torch_npu's segments over `rt` allocations: small blocks are handed out in order from
    the current 2 MiB segment (never reused: simpler than torch_npu's free lists, same memory
    layout for a script that only allocates); a segment is freed with its last tensor."""

    def __init__(self):
        self.current, self.used = None, 0

    def block(self, nbytes: int):
        """(segment, byte offset) of a new block for a tensor of `nbytes` bytes."""
        size = torch_npu_block_bytes(nbytes)
        if size > _SMALL_SIZE:
            seg = _rt.DeviceArray(((size + _SEGMENT - 1) // _SEGMENT * _SEGMENT,), np.uint8)
            return seg, 0
        if self.current is None or self.used + size > _SEGMENT or not _alive(self.current):
            self.current, self.used = _rt.DeviceArray((_SEGMENT,), np.uint8), 0
        off, self.used = self.used, self.used + size
        return self.current, off


def _alive(seg) -> bool:
    """False once the segment's device was reset (set_platform may reopen it): its memory is
    gone, the next block takes a new segment."""
    try:
        seg.host_view()
    except _rt.AclError:
        return False
    return True


_segments = _Segments()

# CompositeExplicitAutograd ops that would call their out= form on an empty(0) npu tensor
_DIRECT = ("abs", "allclose", "bitwise_and.Scalar", "bitwise_and.Scalar_Tensor")


def real_torch_npu_installed() -> bool:
    return importlib.util.find_spec("torch_npu") is not None


def is_active() -> bool:
    return _state["active"]


def activate() -> bool:
    """Register the "npu" device in torch (once per process); False when torch is missing, a
    real torch_npu is installed, or PrivateUse1 already belongs to another backend."""
    with _lock:
        if _state["active"]:
            return True
        if importlib.util.find_spec("torch") is None or real_torch_npu_installed():
            return False
        import torch
        if torch._C._get_privateuse1_backend_name() not in ("privateuseone", DEVICE):
            return False
        _register(torch)
        _state["active"] = True
        return True


def activate_when_torch_imported() -> None:
    """`activate()` now if torch is imported, else right after the script's `import torch`
    (importing torch up front would slow every script that never uses it)."""
    if "torch" in sys.modules:
        activate()
    elif not any(isinstance(f, _TorchImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchImportHook())


class _TorchImportHook:
    """A meta-path finder that lets `import torch` load normally, then activates the device."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)          # one shot: find torch's real spec without us
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            activate()
        spec.loader.exec_module = exec_module
        return spec


# -- the backend ---------------------------------------------------------------------------------
class _BackendModule:
    """`torch.npu`: what torch and pyasc-style scripts call on the device module."""

    def is_initialized(self) -> bool:
        return True

    def is_available(self) -> bool:
        return True

    def current_device(self) -> int:
        _rt.ensure_device()
        return _rt.current_device()

    def device_count(self) -> int:
        return _rt.device_count()

    def set_device(self, device) -> None:
        _rt.set_device(device.index if hasattr(device, "index") else int(device))

    def synchronize(self, device=None) -> None:
        _sync()

    def _is_in_bad_fork(self) -> bool:
        return False

    def manual_seed_all(self, seed: int) -> None:
        pass


def _sync() -> None:
    try:
        _rt.current_device()
    except _rt.AclError:      # no device open: nothing can be queued
        return
    _rt.synchronize_device()


def _register(torch) -> None:
    from torch.utils._pytree import tree_map
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    if torch._C._get_privateuse1_backend_name() != DEVICE:
        _setup_privateuseone_for_python_backend(DEVICE, backend_module=_BackendModule())
    npu_tensor = _make_tensor_class(torch)
    cpu = torch.device("cpu")

    def unwrap(x):
        if isinstance(x, npu_tensor):
            return x.raw
        if isinstance(x, torch.device) and x.type == DEVICE:
            return cpu
        return x

    def fallback(op, *args, **kwargs):
        _sync()
        if op is torch.ops.aten._copy_from.default:     # x.cpu(), x.to("npu"), x.copy_(y)
            src, dst = args[0], args[1]
            unwrap(dst).copy_(unwrap(src))
            return dst
        inputs = _npu_inputs(args, kwargs)
        out = kwargs.get("out")
        if isinstance(out, npu_tensor) and out.numel() == 0 and out.raw.numel() == 0:
            # torch's composite kernels (abs, ...) allocate out= as empty(0) and resize it: a
            # python backend cannot resize its wrapper, so such ops are registered directly
            raise NotImplementedError(f"{op}: not supported on the emulated 'npu' device "
                                      f"(an out= tensor that must be resized); ascend-emu "
                                      f"registers the functional form of: {', '.join(_DIRECT)}")
        res = op(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        dev = kwargs.get("device")
        to_npu = dev.type == DEVICE if isinstance(dev, torch.device) else bool(inputs)
        by_raw = {id(t.raw): t for t in inputs}
        storages = {t.raw.untyped_storage().data_ptr(): t for t in inputs}

        def wrap(r):
            if not isinstance(r, torch.Tensor):
                return r
            same = by_raw.get(id(r))
            if same is not None:                      # in-place or out= result
                return same
            base = storages.get(r.untyped_storage().data_ptr())
            if base is not None:                      # a view of an npu tensor
                return npu_tensor(r, base.owner)
            return to_device_memory(r) if to_npu else r
        return tree_map(wrap, res)

    def _npu_inputs(args, kwargs):
        found = []
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, npu_tensor):
                found.append(a)
            elif isinstance(a, (list, tuple)):
                found += [t for t in a if isinstance(t, npu_tensor)]
        return found

    def to_device_memory(r):
        _rt.ensure_device()
        nbytes = r.numel() * r.element_size()
        with _lock:
            seg, off = _segments.block(nbytes)
        raw = torch.from_numpy(seg.host_view()[off:off + nbytes]).view(r.dtype).view(r.shape)
        raw.copy_(r)
        return npu_tensor(raw, seg)

    lib = torch.library.Library("_", "IMPL")
    lib.fallback(fallback, dispatch_key="PrivateUse1")
    aten_lib = torch.library.Library("aten", "IMPL")
    for name in _DIRECT:        # before torch's composite kernel: see fallback's out= case
        op = getattr(torch.ops.aten, name.split(".")[0])
        overload = getattr(op, name.split(".")[1] if "." in name else "default")
        aten_lib.impl(name, lambda *a, _op=overload, **k: fallback(_op, *a, **k), "PrivateUse1")
    _state["aten_library"] = aten_lib
    _state["library"] = lib              # the registration lives as long as this object
    _state["tensor_class"] = npu_tensor


def _make_tensor_class(torch):
    class NpuTensor(torch.Tensor):
        """A tensor on device "npu": `raw` is a CPU tensor over the emulated device memory
        `owner` (the rt.DeviceArray of its torch_npu segment, shared by views and by the other
        tensors of the segment)."""
        # no subclass propagation: a CPU result (x.cpu()) must stay a plain tensor
        __torch_function__ = torch._C._disabled_torch_function_impl

        @staticmethod
        def __new__(cls, raw, owner):
            res = torch._C._acc.create_empty_tensor(raw.shape, raw.dtype)
            res.__class__ = cls
            return res

        def __init__(self, raw, owner):
            self.raw = raw
            self.owner = owner

        def __format__(self, spec):
            # torch formats 0-d tensors through item() for its own class only (printing)
            if self.dim() == 0:
                return self.item().__format__(spec)
            return super().__format__(spec)
    return NpuTensor


def is_npu_tensor(x) -> bool:
    cls = _state.get("tensor_class")
    return cls is not None and isinstance(x, cls)


def as_device_array(t) -> "_rt.DeviceArray":
    """An npu tensor as the kernel argument: an rt.DeviceArray over its memory (no copy, the
    tensor's own size) inside the tensor's torch_npu segment, the allocation the NPU sees (a
    kernel gets only an address). pyasc's tests read and write past a tensor's end on tail
    shapes: a kernel's view reaches the segment's allocation end (rt.memory.kernel_view), so
    that runs, as on hardware (docs/limitations.md), reading or overwriting what lies there, and
    checked mode warns (lang/gmreach.py); past it stays a GM trap."""
    raw = t.raw
    if not raw.is_contiguous():
        raise ValueError(f"kernel argument: npu tensors must be contiguous, got shape "
                         f"{tuple(raw.shape)} with strides {raw.stride()}")
    owner = t.owner
    offset = raw.data_ptr() - owner.host_view().ctypes.data
    dtype = np.dtype(_numpy_dtype(raw))
    return _rt.DeviceArray((raw.numel(),), dtype, owner.ptr + offset)


def _numpy_dtype(raw):
    import torch
    if raw.dtype == torch.bfloat16:
        from ..lang import dtypes as D
        return D.BFLOAT16
    return torch.empty(0, dtype=raw.dtype).numpy().dtype


__all__ = ["activate", "activate_when_torch_imported", "is_active", "is_npu_tensor",
           "as_device_array", "torch_npu_block_bytes", "real_torch_npu_installed"]
