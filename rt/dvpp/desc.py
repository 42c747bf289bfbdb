"""DVPP memory, picture descriptions, channels and configs (`acldvppMalloc`, `acldvppPicDesc`,
`acldvppChannelDesc`, `acldvppResizeConfig`, `acldvppRoiConfig`, `acldvppJpegeConfig`,
`acldvppBatchPicDesc`).

`malloc(size)` mirrors `acldvppMalloc`: device memory of the current device whose start address is
128-byte aligned (DVPP's rule; `rt.malloc` gives 64), reserved as align32(size) + 32 bytes like
`aclrtMalloc`. Free it with `free` (`acldvppFree`), not `rt.free`.
"""
from __future__ import annotations

import threading

from .. import device as _dev
from .. import memory as _mem
from ..errors import AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_MEMORY_FREE
from ..pool import DevicePtr
from .formats import ChannelMode, PixelFormat, bad

DVPP_ADDR_ALIGN = 128

_lock = threading.Lock()
_allocs: dict = {}          # aligned address -> (allocation base, requested size)
_by_base: dict = {}         # allocation base -> aligned address


def _int(api: str, name: str, v, lo: int = 0, hi: int = (1 << 32) - 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise bad(api, f"{name} must be an int in [{lo}, {hi}], got {name}={v!r}")
    return int(v)


def malloc(size: int) -> DevicePtr:
    """Mirrors `acldvppMalloc(&p, size)`: `size` bytes of device memory, 128-byte aligned."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"dvpp_malloc: size must be an int > 0, got size={size!r}")
    base = _mem.malloc(size + DVPP_ADDR_ALIGN - 64)
    addr = (int(base) + DVPP_ADDR_ALIGN - 1) // DVPP_ADDR_ALIGN * DVPP_ADDR_ALIGN
    dev = _dev.get_device(base.device)
    with _lock:
        _allocs[addr] = (base, size)
        _by_base[int(base)] = addr
        if _on_reset not in dev.reset_hooks:
            dev.reset_hooks.append(_on_reset)
    p = int.__new__(DevicePtr, addr)
    p.device, p.size = base.device, size
    return p


def free(ptr: int) -> None:
    """Mirrors `acldvppFree`: stream-ordered like `rt.free` (queued DVPP work that uses the memory
    runs first). A pointer not from `malloc` raises 207002 naming it."""
    if isinstance(ptr, bool) or not isinstance(ptr, int):
        raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                       f"dvpp_free: ptr must be an address returned by dvpp_malloc, got {ptr!r}")
    with _lock:
        entry = _allocs.pop(int(ptr), None)
        if entry is not None:
            _by_base.pop(int(entry[0]), None)
    if entry is None:
        raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                       f"dvpp_free: ptr must be a live address returned by dvpp_malloc, got "
                       f"ptr=0x{int(ptr):x} (freed already, or from rt.malloc: free that with "
                       f"rt.free)")
    _mem.free(entry[0])


def _on_reset(dev) -> None:
    with _lock:
        for a, (base, _n) in list(_allocs.items()):
            if base.device == dev.id:
                del _allocs[a]
                _by_base.pop(int(base), None)


def check_span(api: str, role: str, addr: int, nbytes: int) -> None:
    """`[addr, addr + nbytes)` must lie in one live device allocation (dvpp_malloc's requested
    size counts, not its padding); raises 100000 naming `role` otherwise."""
    if isinstance(addr, bool) or not isinstance(addr, int) or addr <= 0:
        raise bad(api, f"{role} must be a device address (from dvpp_malloc), got {role}={addr!r}")
    if not _mem.is_device_address(int(addr)):
        raise bad(api, f"{role} must be device memory (from dvpp_malloc), got host address "
                       f"{role}=0x{int(addr):x}; copy the data to the device first")
    found = _mem.find_allocation(int(addr))
    if found is None:
        raise bad(api, f"{role} must point into a live device allocation, got {role}="
                       f"0x{int(addr):x} (freed, or never allocated)")
    base, req = found
    with _lock:
        aligned = _by_base.get(int(base))
        end = aligned + _allocs[aligned][1] if aligned is not None else int(base) + req
    if int(addr) + nbytes > end:
        raise bad(api, f"{role} range must fit in its allocation, got [0x{int(addr):x}, "
                       f"+{nbytes}) ending {int(addr) + nbytes - end} byte(s) past it")


class _Handle:
    """Base of the DVPP objects: destroyed ones refuse use (100000)."""
    __slots__ = ("destroyed",)
    kind = "object"

    def __init__(self):
        self.destroyed = False

    def live(self, api: str, role: str):
        if self.destroyed:
            raise bad(api, f"{role} must be a live {self.kind}, got one already destroyed")
        return self

    def destroy(self) -> None:
        self.destroyed = True


Handle, checked_int = _Handle, _int       # for the video descs (rt.dvpp.video_desc)


class PicDesc(_Handle):
    """Mirrors `acldvppPicDesc`: where a picture is and how it is laid out. `ret_code` is the
    per-picture result an operation leaves (0 = ok), as `acldvppGetPicDescRetCode`."""
    __slots__ = ("data", "size", "format", "width", "height", "width_stride", "height_stride",
                 "ret_code", "explicit")
    kind = "pic desc"
    FIELDS = ("data", "size", "format", "width", "height", "width_stride", "height_stride")

    def __init__(self, data: int = 0, size: int = 0, format: int = PixelFormat.YUV_SEMIPLANAR_420,
                 width: int = 0, height: int = 0, width_stride: int = 0, height_stride: int = 0):
        super().__init__()
        self.data, self.size, self.format = int(data), int(size), int(format)
        self.width, self.height = int(width), int(height)
        self.width_stride, self.height_stride = int(width_stride), int(height_stride)
        self.ret_code = 0
        self.explicit = frozenset()     # fields a setter gave (VDEC: an unset format -> channel's)

    def set(self, field: str, value: int, api: str = "dvpp_set_pic_desc") -> None:
        self.live(api, "pic_desc")
        hi = (1 << 64) - 1 if field == "data" else (1 << 32) - 1
        setattr(self, field, _int(api, field, value, 0, hi))
        self.explicit |= {field}

    def snapshot(self) -> "PicDesc":
        """A copy of the fields as they are now (operations capture their descs when queued)."""
        c = PicDesc(self.data, self.size, self.format, self.width, self.height,
                    self.width_stride, self.height_stride)
        c.explicit = self.explicit
        return c

    def __repr__(self):
        f = ", ".join(f"{k}={getattr(self, k)}" for k in self.FIELDS)
        return f"<rt.dvpp.PicDesc {f}>"


class BatchPicDesc(_Handle):
    """Mirrors `acldvppBatchPicDesc`: `batch_size` pic descs (`pics[i]`, `acldvppGetPicDesc`)."""
    __slots__ = ("pics",)
    kind = "batch pic desc"

    def __init__(self, batch_size: int):
        super().__init__()
        n = _int("dvpp_create_batch_pic_desc", "batch_size", batch_size, 1, 256)
        self.pics = [PicDesc() for _ in range(n)]

    def __len__(self):
        return len(self.pics)

    def destroy(self) -> None:
        super().destroy()
        for p in self.pics:
            p.destroy()


class ChannelDesc(_Handle):
    """Mirrors `acldvppChannelDesc` plus the channel `acldvppCreateChannel` opens on it."""
    __slots__ = ("mode", "created", "device", "channel_id")
    kind = "channel desc"
    _ids = iter(range(1 << 62))

    def __init__(self):
        super().__init__()
        self.mode, self.created, self.device, self.channel_id = 0, False, None, None

    def set_mode(self, mode: int) -> None:
        self.live("dvpp_set_channel_desc_mode", "channel_desc")
        if isinstance(mode, bool) or not isinstance(mode, int) or mode < 0 or mode & ~0xF:
            raise bad("dvpp_set_channel_desc_mode", "mode must be an OR of DVPP_CHNMODE_VPC (1), "
                      f"_JPEGD (2), _JPEGE (4), _PNGD (8), got mode={mode!r}")
        self.mode = int(mode)

    def create(self) -> None:
        """`acldvppCreateChannel`: open the channel on the current device."""
        self.live("dvpp_create_channel", "channel_desc")
        if self.created:
            raise bad("dvpp_create_channel", f"channel_desc must not have a channel yet, got "
                                             f"channel {self.channel_id} already created")
        self.device = _dev.current_device()
        self.channel_id = next(ChannelDesc._ids)
        self.created = True

    def close(self) -> None:
        """`acldvppDestroyChannel`: work queued before keeps running; later calls are refused."""
        self.live("dvpp_destroy_channel", "channel_desc")
        if not self.created:
            raise bad("dvpp_destroy_channel", "channel_desc must have a channel (create it with "
                                              "dvpp_create_channel), got none")
        self.created = False

    def usable(self, api: str, unit: str) -> "ChannelDesc":
        self.live(api, "channel_desc")
        if not self.created:
            raise bad(api, "channel_desc must have a channel created by dvpp_create_channel, "
                           "got a desc without one (or its channel was destroyed)")
        bit = ChannelMode[unit]
        if self.mode and not self.mode & bit:
            raise bad(api, f"channel mode must include DVPP_CHNMODE_{unit} ({int(bit)}), got "
                           f"mode={self.mode}")
        return self


class ResizeConfig(_Handle):
    """Mirrors `acldvppResizeConfig`: interpolation 0 (default: bilinear on A2/310P), 1 (bilinear)
    or 2 (nearest neighbour)."""
    __slots__ = ("interpolation",)
    kind = "resize config"

    def __init__(self, interpolation: int = 0):
        super().__init__()
        self.interpolation = 0
        self.set_interpolation(interpolation)

    def set_interpolation(self, interpolation: int) -> None:
        self.live("dvpp_set_resize_config_interpolation", "resize_config")
        self.interpolation = _int("dvpp_set_resize_config_interpolation", "interpolation",
                                  interpolation, 0, 2)


class RoiConfig(_Handle):
    """Mirrors `acldvppRoiConfig`: an inclusive rectangle [left, right] x [top, bottom]."""
    __slots__ = ("left", "right", "top", "bottom")
    kind = "roi config"

    def __init__(self, left: int, right: int, top: int, bottom: int):
        super().__init__()
        self.set(left, right, top, bottom)

    def set(self, left: int, right: int, top: int, bottom: int) -> None:
        api = "dvpp_set_roi_config"
        self.live(api, "roi_config")
        vals = [_int(api, n, v, 0, 8191) for n, v in
                (("left", left), ("right", right), ("top", top), ("bottom", bottom))]
        self.left, self.right, self.top, self.bottom = vals

    @property
    def width(self) -> int:
        return self.right - self.left + 1

    @property
    def height(self) -> int:
        return self.bottom - self.top + 1

    def __repr__(self):
        return f"<rt.dvpp.RoiConfig l={self.left} r={self.right} t={self.top} b={self.bottom}>"


class JpegeConfig(_Handle):
    """Mirrors `acldvppJpegeConfig`: level 0..100 (0 encodes like 100; lower is smaller and worse;
    the emulator passes it to the encoder as its quality)."""
    __slots__ = ("level",)
    kind = "jpege config"

    def __init__(self, level: int = 100):
        super().__init__()
        self.level = 100
        self.set_level(level)

    def set_level(self, level: int) -> None:
        self.live("dvpp_set_jpege_config_level", "jpege_config")
        self.level = _int("dvpp_set_jpege_config_level", "level", level, 0, 100)

    @property
    def quality(self) -> int:
        return 100 if self.level == 0 else self.level
