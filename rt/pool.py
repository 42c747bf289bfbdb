"""Device memory: the lazily-backed arena of one device and its caching pool.

The arena is one ``mmap(MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)`` of the device's capacity, so
only touched pages cost RAM. Device *d*'s addresses start at ``(0x100 + d) << 40``.

The pool works like torch's CUDA caching allocator: it asks the arena for *segments* (2 MiB granules
for the huge-page policies, 4 KiB pages for ``NORMAL_ONLY``, 1 GiB for ``HUGE1G_ONLY``), splits
them into blocks, returns freed blocks to a free list (merging neighbours) and gives fully free
segments back to the arena in :meth:`DevicePool.empty_cache` (``madvise(MADV_DONTNEED)``).
A block reserves ``align32(size) + 32`` bytes (``aclrtMalloc``'s rule; no +32 for 1 GiB pages),
rounded up to 64 so every start address is 64-byte aligned.

The *allocation* is those ``align32(size) + 32`` bytes (`alloc_bytes`, kept as ``Block.real``):
CANN documents ``aclrtMalloc`` as rounding the size up to a multiple of 32 and adding 32 bytes
(A2/A3/310P/910; the 950 only rounds to 32, 1 GiB huge pages get no +32; the emulated SoCs are
all of the first kind). Copies and memsets through raw pointers (``acl.rt.memcpy``, ``memset``)
are checked against that allocation, as CANN's runtime checks them; DeviceArray stays bounded by
the size asked; a kernel may reach the whole allocation, as the AI Core does
(`rt.memory.kernel_view`).
"""
from __future__ import annotations

import enum
import mmap
import sys
import threading
from bisect import bisect_left, insort
from collections import deque

import numpy as np

from . import log as _log
from .errors import AclError, ACL_ERROR_RT_MEMORY_ALLOCATION, ACL_ERROR_RT_MEMORY_FREE

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
MAP_NORESERVE = 0x4000           # Linux; Python 3.11's mmap has no name for it
ADDR_SHIFT = 40
OFF_MASK = (1 << ADDR_SHIFT) - 1
FREE, LIVE, QUARANTINED = 0, 1, 2


def device_base(device_id: int) -> int:
    """First address of device `device_id`'s arena."""
    return (0x100 + device_id) << ADDR_SHIFT


class MemMallocPolicy(enum.IntEnum):
    """Mirrors `aclrtMemMallocPolicy`."""
    HUGE_FIRST = 0
    HUGE_ONLY = 1
    NORMAL_ONLY = 2
    HUGE_FIRST_P2P = 3
    HUGE_ONLY_P2P = 4
    NORMAL_ONLY_P2P = 5
    HUGE1G_ONLY = 6
    HUGE1G_ONLY_P2P = 7
    TYPE_LOW_BAND_WIDTH = 0x100
    TYPE_HIGH_BAND_WIDTH = 0x1000
    ACCESS_USER_SPACE_READONLY = 0x100000


class DevicePtr(int):
    """A device address (an ``int``) with ``.device`` and ``.size`` (bytes asked of ``malloc``)."""

    def __repr__(self) -> str:
        return f"DevicePtr(0x{int(self):x}, device={self.device}, size={self.size})"


def where(skip: int = 2, depth: int = 6) -> str:
    """A short stack summary of the caller outside ``rt`` (for leak and use-after-free reports)."""
    f = sys._getframe(skip)
    out = []
    while f is not None and len(out) < depth:
        fn = f.f_code.co_filename
        if "/rt/" not in fn.replace("\\", "/") or "/tests/" in fn:
            out.append(f"{fn}:{f.f_lineno} in {f.f_code.co_name}")
        f = f.f_back
    return " <- ".join(out) or "<unknown>"


class Arena:
    """The address space of one device: an anonymous mmap handed out in aligned segments."""

    def __init__(self, device_id: int, capacity: int):
        self.device_id = device_id
        self.base = device_base(device_id)
        self.capacity = capacity
        self.reserved = 0
        self.u8: np.ndarray | None = None   # the whole arena as uint8, mapped on first use
        self._mm: mmap.mmap | None = None
        self._free = [(0, capacity)]        # sorted, disjoint [start, end) offsets

    def _map(self) -> None:
        self._mm = mmap.mmap(-1, self.capacity, prot=mmap.PROT_READ | mmap.PROT_WRITE,
                             flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE)
        self.u8 = np.frombuffer(self._mm, dtype=np.uint8)

    def reserve(self, nbytes: int, align: int) -> int | None:
        """Offset of `nbytes` aligned to `align` (first fit), or None when it does not fit."""
        for i, (s, e) in enumerate(self._free):
            a = -(-s // align) * align
            if a + nbytes <= e:
                pieces = [(lo, hi) for lo, hi in ((s, a), (a + nbytes, e)) if hi > lo]
                self._free[i:i + 1] = pieces
                self.reserved += nbytes
                if self._mm is None:
                    self._map()
                return a
        return None

    def release(self, off: int, nbytes: int) -> None:
        """Give a segment back; its pages are dropped (they read as zeros when reused)."""
        self.reserved -= nbytes
        if self._mm is not None:
            self._mm.madvise(mmap.MADV_DONTNEED, off, nbytes)
        i = bisect_left(self._free, (off, off))
        lo, hi = off, off + nbytes
        if i < len(self._free) and self._free[i][0] == hi:
            hi = self._free.pop(i)[1]
        if i > 0 and self._free[i - 1][1] == lo:
            i -= 1
            lo = self._free.pop(i)[0]
        self._free.insert(i, (lo, hi))

    def largest_free(self) -> int:
        return max((e - s for s, e in self._free), default=0)

    def close(self) -> None:
        self.u8 = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:     # views still exported: the GC unmaps it later
                pass
            self._mm = None


class Segment:
    __slots__ = ("addr", "size", "sub", "head")


def alloc_bytes(size: int, huge1g: bool = False) -> int:
    """The bytes `aclrtMalloc(size)` really allocates: ``align32(size) + 32`` (no +32 on 1 GiB
    huge pages). A kernel's accesses past `size` but inside them run on hardware."""
    return ((int(size) + 31) & ~31) + (0 if huge1g else 32)


class Block:
    __slots__ = ("addr", "size", "req", "real", "seg", "prev", "next", "state", "where",
                 "freed_where", "serial")

    def __init__(self, addr, size, seg, prev, nxt):
        self.addr, self.size, self.seg, self.prev, self.next = addr, size, seg, prev, nxt
        self.state, self.req, self.where, self.freed_where, self.serial = FREE, 0, None, None, 0
        self.real = 0       # a live block: the bytes of its allocation (alloc_bytes(req))


class SubPool:
    """Blocks carved from segments of one granule; free blocks sorted by (size, offset)."""

    def __init__(self, name: str, granule: int):
        self.name, self.granule = name, granule
        self.keys: list[int] = []               # sorted (size << 40 | offset) of free blocks
        self.free: dict[int, Block] = {}        # addr -> free block


class DevicePool:
    """The caching allocator of one device (thread-safe: one lock per device)."""

    def __init__(self, device_id: int, arena: Arena, memcheck: bool = False):
        self.device_id, self.arena = device_id, arena
        self.lock = threading.Lock()
        self.normal, self.huge, self.huge1g = (SubPool("normal", 4 * KiB), SubPool("huge", 2 * MiB),
                                               SubPool("huge1g", GiB))
        self.allocs: dict[int, Block] = {}      # addr -> live block
        self.seg_starts: list[int] = []
        self.segs: dict[int, Segment] = {}
        self.quarantine: deque | None = deque() if memcheck else None
        self.quarantine_bytes = 0
        self.quarantine_limit = max(arena.capacity // 8, 64 * MiB)
        self.c = dict.fromkeys(_COUNTERS, 0)
        self._orders: dict[int, tuple] = {}

    # -- policy ------------------------------------------------------------------------------
    def _order(self, policy: int, size: int) -> tuple:
        kind = int(policy) & ~0x101100          # drop bandwidth / read-only flags
        if kind in (0, 3):
            return (self.huge, self.normal)
        if kind in (1, 4):
            return (self.huge,)
        if kind in (2, 5):
            return (self.normal,)
        if kind in (6, 7):
            return (self.huge1g,)
        return (self.huge,) if size >= 2 * MiB else (self.normal,)   # out of range: by size

    # -- malloc / free -----------------------------------------------------------------------
    def malloc(self, size: int, policy: int = 0) -> DevicePtr:
        policy = int(policy)
        order = self._orders.get(policy)
        if order is None:
            order = self._order(policy, size)
            if policy & ~0x101100 in range(8):      # in range: the order does not depend on size
                self._orders[policy] = order
        real = alloc_bytes(size, order[0] is self.huge1g)
        need = (real + 63) & ~63
        with self.lock:
            for sub in order:
                blk = self._take(sub, need)
                if blk is not None:
                    break
            else:
                blk = self._malloc_slow(order, need, size)
            blk.state = LIVE
            blk.req = size
            blk.real = real
            if _log.DEBUG:
                blk.where = where()
            self.allocs[blk.addr] = blk
            c = self.c
            c["alloc_cur"] += blk.size
            c["alloc_total"] += blk.size
            if c["alloc_cur"] > c["alloc_peak"]:
                c["alloc_peak"] = c["alloc_cur"]
            c["req_cur"] += size
            c["n_cur"] += 1
            c["n_total"] += 1
            blk.serial = c["n_total"]               # tells this allocation from later reuses
            if c["n_cur"] > c["n_peak"]:
                c["n_peak"] = c["n_cur"]
        p = int.__new__(DevicePtr, blk.addr)
        p.device = self.device_id
        p.size = size
        return p

    def _take(self, sub: SubPool, need: int) -> Block | None:
        keys = sub.keys
        i = bisect_left(keys, need << ADDR_SHIFT)
        if i < len(keys):
            blk = sub.free.pop(self.arena.base + (keys.pop(i) & OFF_MASK))
        else:
            blk = self._new_segment(sub, need)
            if blk is None:
                return None
        rest = blk.size - need
        if rest >= 64:
            nb = Block(blk.addr + need, rest, blk.seg, blk, blk.next)
            if blk.next is not None:
                blk.next.prev = nb
            blk.next = nb
            blk.size = need
            sub.free[nb.addr] = nb
            insort(keys, (rest << ADDR_SHIFT) | (nb.addr & OFF_MASK))
        return blk

    def _new_segment(self, sub: SubPool, need: int) -> Block | None:
        g = sub.granule
        size = -(-need // g) * g
        off = self.arena.reserve(size, g)
        if off is None:
            return None
        seg = Segment()
        seg.addr, seg.size, seg.sub = self.arena.base + off, size, sub
        seg.head = Block(seg.addr, size, seg, None, None)
        self.segs[seg.addr] = seg
        insort(self.seg_starts, seg.addr)
        c = self.c
        c["res_cur"] += size
        c["res_total"] += size
        c["seg_cur"] += 1
        c["seg_total"] += 1
        c["res_peak"] = max(c["res_peak"], c["res_cur"])
        return seg.head

    def _malloc_slow(self, order: tuple, need: int, size: int) -> Block:
        if self.quarantine or any(sg.head.next is None and sg.head.state == FREE
                                  for sg in self.segs.values()):
            self.c["num_alloc_retries"] += 1
            self._empty_cache_locked()
            for sub in order:
                blk = self._take(sub, need)
                if blk is not None:
                    return blk
        self.c["num_ooms"] += 1
        a = self.arena
        raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       f"rt.malloc: size must fit in free device memory, got size={size} (reserves "
                       f"{need} bytes in {'/'.join(s.name for s in order)} pages); device "
                       f"{self.device_id} has {a.capacity - a.reserved} of {a.capacity} bytes "
                       f"unreserved (largest run {a.largest_free()}), {self.c['alloc_cur']} "
                       f"allocated. Free buffers or raise ASCEND_EMU_DEVICE_MEMORY.")

    def free(self, addr: int, api: str = "rt.free") -> None:
        with self.lock:
            blk = self.allocs.pop(addr, None)
            if blk is None:
                raise self._free_error(addr, api)
            c = self.c
            c["alloc_cur"] -= blk.size
            c["freed_total"] += blk.size
            c["req_cur"] -= blk.req
            c["n_cur"] -= 1
            c["n_freed"] += 1
            if self.quarantine is not None:
                self._quarantine(blk)
            else:
                self._release(blk)

    def free_block(self, blk: Block, serial: int) -> bool:
        """Free allocation number `serial` held in `blk` if it is still live (for finalizers)."""
        if self.allocs.get(blk.addr) is blk and blk.serial == serial:
            self.free(blk.addr)
            return True
        return False

    def _release(self, blk: Block) -> None:
        sub = blk.seg.sub
        keys, free = sub.keys, sub.free
        prev, nxt = blk.prev, blk.next
        if nxt is not None and nxt.state == FREE:
            del keys[bisect_left(keys, (nxt.size << ADDR_SHIFT) | (nxt.addr & OFF_MASK))]
            del free[nxt.addr]
            blk.size += nxt.size
            blk.next = nxt = nxt.next
            if nxt is not None:
                nxt.prev = blk
        if prev is not None and prev.state == FREE:
            del keys[bisect_left(keys, (prev.size << ADDR_SHIFT) | (prev.addr & OFF_MASK))]
            prev.size += blk.size
            prev.next = nxt
            if nxt is not None:
                nxt.prev = prev
            blk = prev
        else:
            free[blk.addr] = blk
        blk.state = FREE
        blk.where = blk.freed_where = None
        insort(keys, (blk.size << ADDR_SHIFT) | (blk.addr & OFF_MASK))

    def _quarantine(self, blk: Block) -> None:
        blk.state = QUARANTINED
        blk.freed_where = where(3)
        self.quarantine.append(blk)
        self.quarantine_bytes += blk.size
        while self.quarantine_bytes > self.quarantine_limit or len(self.quarantine) > 4096:
            self._unquarantine_one()

    def _unquarantine_one(self) -> None:
        old = self.quarantine.popleft()
        self.quarantine_bytes -= old.size
        self._release(old)

    def _free_error(self, addr: int, api: str) -> AclError:
        blk = self._block_at(addr)
        if blk is None:
            what = "it is not inside any allocation of this device"
        elif blk.state == QUARANTINED and blk.addr == addr:
            what = f"it was already freed (double free; freed at {blk.freed_where})"
        elif blk.state == FREE:
            what = "it points into free memory (double free?)"
        else:
            what = (f"it points {addr - blk.addr} bytes into the allocation at 0x{blk.addr:x}; "
                    f"pass the address malloc returned")
        return AclError(ACL_ERROR_RT_MEMORY_FREE,
                        f"{api}: ptr must be a live address returned by malloc, "
                        f"got ptr=0x{addr:x}: {what}")

    # -- lookup ------------------------------------------------------------------------------
    def block_at(self, addr: int) -> Block | None:
        """The block (live, free or quarantined) containing `addr`, or None."""
        with self.lock:
            return self._block_at(addr)

    def _block_at(self, addr: int) -> Block | None:
        blk = self.allocs.get(addr)
        if blk is not None:
            return blk
        i = bisect_left(self.seg_starts, addr + 1) - 1
        if i < 0:
            return None
        seg = self.segs[self.seg_starts[i]]
        if addr >= seg.addr + seg.size:
            return None
        b = seg.head
        while b is not None and b.addr + b.size <= addr:
            b = b.next
        return b

    # -- cache -------------------------------------------------------------------------------
    def empty_cache(self) -> int:
        """Release the quarantine and every fully free segment; returns the bytes given back."""
        with self.lock:
            return self._empty_cache_locked()

    def _empty_cache_locked(self) -> int:
        while self.quarantine:
            self._unquarantine_one()
        given = 0
        for addr in [a for a, sg in self.segs.items()
                     if sg.head.state == FREE and sg.head.next is None]:
            seg = self.segs.pop(addr)
            sub = seg.sub
            del sub.keys[bisect_left(sub.keys, (seg.size << ADDR_SHIFT) | (addr & OFF_MASK))]
            del sub.free[addr]
            del self.seg_starts[bisect_left(self.seg_starts, addr)]
            self.arena.release(addr - self.arena.base, seg.size)
            self.c["res_cur"] -= seg.size
            self.c["res_freed"] += seg.size
            self.c["seg_cur"] -= 1
            self.c["seg_freed"] += 1
            given += seg.size
        return given

    # -- stats -------------------------------------------------------------------------------
    def stats(self) -> dict:
        """torch.cuda.memory_stats()-style counters."""
        with self.lock:
            c = dict(self.c)
        out = {}
        for key, cur, peak, tot, freed in _STAT_MAP:
            out[f"{key}.all.current"] = c[cur]
            out[f"{key}.all.peak"] = c[peak] if peak else c[cur]
            out[f"{key}.all.allocated"] = c[tot]
            out[f"{key}.all.freed"] = c[freed]
        out["requested_bytes.all.current"] = c["req_cur"]
        out["num_alloc_retries"] = c["num_alloc_retries"]
        out["num_ooms"] = c["num_ooms"]
        return dict(sorted(out.items()))

    def live_blocks(self) -> list[Block]:
        with self.lock:
            return sorted(self.allocs.values(), key=lambda b: b.addr)


_COUNTERS = ("alloc_cur", "alloc_peak", "alloc_total", "freed_total", "req_cur", "n_cur", "n_peak",
             "n_total", "n_freed", "res_cur", "res_peak", "res_total", "res_freed", "seg_cur",
             "seg_total", "seg_freed", "num_alloc_retries", "num_ooms")
_STAT_MAP = (("allocated_bytes", "alloc_cur", "alloc_peak", "alloc_total", "freed_total"),
             ("active_bytes", "alloc_cur", "alloc_peak", "alloc_total", "freed_total"),
             ("allocation", "n_cur", "n_peak", "n_total", "n_freed"),
             ("active", "n_cur", "n_peak", "n_total", "n_freed"),
             ("reserved_bytes", "res_cur", "res_peak", "res_total", "res_freed"),
             ("segment", "seg_cur", None, "seg_total", "seg_freed"))
