"""rt.memory / rt.pool / rt.hostmem / rt.memcheck: malloc rules, the caching pool, copies,
mem-check."""
import random
import threading

import numpy as np
import pytest

import rt
from rt import memory as M
from rt.errors import (AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID,
                       ACL_ERROR_RT_MEMORY_ALLOCATION, ACL_ERROR_RT_MEMORY_FREE,
                       ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW)
from rt.memory import MemcpyKind as K, MemMallocPolicy as P
from rt.soc import MiB, GiB

from rt_test_helpers import raises


def reservation(size):
    """aclrtMalloc's rule (align32 + 32), rounded to the 64-byte start alignment."""
    return ((((size + 31) // 32) * 32 + 32) + 63) // 64 * 64


def stats():
    return rt.memory_stats()


def small_device(monkeypatch, mem="8M", memcheck=False):
    monkeypatch.setenv("ASCEND_EMU_DEVICE_MEMORY", mem)
    if memcheck:
        monkeypatch.setenv("ASCEND_MEM_CHECK", "1")
    rt.init()
    rt.set_device(0)


# -- malloc rules ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, -5, 1.5, "8", True])
def test_malloc_size_must_be_positive_int(dev0, size):
    with raises(ACL_ERROR_INVALID_PARAM, rf"rt\.malloc: size must be > 0, got size={size!r}"):
        rt.malloc(size)


def test_malloc_size_zero_message_exact(dev0):
    with pytest.raises(AclError) as e:
        rt.malloc(0)
    assert e.value.message == "rt.malloc: size must be > 0, got size=0" and e.value.code == 100000


def test_alignment_and_reservation(dev0):
    rng = random.Random(1)
    sizes = [1, 31, 32, 33, 63, 64, 65, 100, 4096] + [rng.randrange(1, 100_000) for _ in range(40)]
    ptrs = [rt.malloc(s) for s in sizes]
    assert all(int(p) % 64 == 0 for p in ptrs)
    assert [p.size for p in ptrs] == sizes and all(p.device == 0 for p in ptrs)
    # fresh huge segment: blocks are carved back to back, each reserving align32(size) + 32
    for a, b, s in zip(ptrs, ptrs[1:], sizes):
        assert int(b) - int(a) == reservation(s)
    st = stats()
    assert st["allocated_bytes.all.current"] == sum(map(reservation, sizes))
    assert st["requested_bytes.all.current"] == sum(sizes)
    assert st["allocation.all.current"] == len(sizes)
    for p in ptrs:
        rt.free(p)


def test_huge_and_normal_granules(dev0):
    rt.malloc(100, P.NORMAL_ONLY)
    assert stats()["reserved_bytes.all.current"] == 4096
    rt.malloc(5000, P.NORMAL_ONLY_P2P)
    assert stats()["reserved_bytes.all.current"] == 4096 + 8192
    rt.malloc(100, P.HUGE_ONLY)
    assert stats()["reserved_bytes.all.current"] == 12288 + 2 * MiB
    rt.malloc(100, P.HUGE_FIRST | P.TYPE_HIGH_BAND_WIDTH)   # same huge segment, flags ignored
    assert stats()["reserved_bytes.all.current"] == 12288 + 2 * MiB
    p = rt.malloc(3 * MiB, P.HUGE_FIRST)
    assert stats()["reserved_bytes.all.current"] == 12288 + 2 * MiB + 4 * MiB
    assert int(p) % (2 * MiB) == 0                               # huge segments are 2 MiB aligned


def test_out_of_range_policy_picks_by_size(dev0):
    rt.malloc(100, 99)
    assert stats()["reserved_bytes.all.current"] == 4096
    rt.malloc(2 * MiB, 99)
    assert stats()["reserved_bytes.all.current"] == 4096 + 4 * MiB


def test_huge1g_has_no_plus_32(dev0):
    p = rt.malloc(64, P.HUGE1G_ONLY)
    assert int(p) % GiB == 0
    st = stats()
    assert st["allocated_bytes.all.current"] == 64 and st["reserved_bytes.all.current"] == GiB


def test_huge_first_falls_back_to_normal_pages(monkeypatch):
    small_device(monkeypatch, "2060K")          # one 2 MiB granule + 12 KiB
    big = rt.malloc(2 * MiB - 64)               # fills the huge segment exactly
    assert stats()["reserved_bytes.all.current"] == 2 * MiB
    p = rt.malloc(1000)                         # HUGE_FIRST: no huge page left -> normal pages
    assert stats()["reserved_bytes.all.current"] == 2 * MiB + 4096
    with raises(ACL_ERROR_RT_MEMORY_ALLOCATION, r"rt\.malloc: size must fit in free device memory, "
                                                r"got size=1000 .* in huge pages"):
        rt.malloc(1000, P.HUGE_ONLY)
    rt.free(p)
    rt.free(big)


# -- the caching pool -----------------------------------------------------------------------------
def test_free_returns_block_to_pool_and_reuses_it(dev0):
    a, b, c = (rt.malloc(1000) for _ in range(3))
    assert int(b) == int(a) + 1088 and int(c) == int(b) + 1088
    rt.free(b)
    b2 = rt.malloc(1000)                        # best fit: the hole b left
    assert int(b2) == int(b)
    rt.free(b2)
    rt.free(a)                                  # a + hole merge; c still splits the segment
    big = rt.malloc(2000)
    assert int(big) == int(a)                   # the merged 2176-byte block at a's address
    rt.free(big)
    rt.free(c)                                  # everything merges back into one 2 MiB block
    st = stats()
    assert st["reserved_bytes.all.current"] == 2 * MiB and st["segment.all.current"] == 1
    whole = rt.malloc(2 * MiB - 64)             # fits only if the segment is one free block again
    assert int(whole) == int(a) and stats()["segment.all.current"] == 1


def test_empty_cache_gives_segments_back(dev0):
    keep = rt.malloc(10)                        # pins its segment
    ps = [rt.malloc(3 * MiB) for _ in range(4)]
    for p in ps:
        rt.free(p)
    assert stats()["reserved_bytes.all.current"] == 2 * MiB + 4 * 4 * MiB
    assert rt.empty_cache() == 16 * MiB
    st = stats()
    assert st["reserved_bytes.all.current"] == 2 * MiB and st["segment.all.freed"] == 4
    rt.free(keep)
    rt.empty_cache()
    assert stats()["reserved_bytes.all.current"] == 0


def test_released_pages_read_as_zero(dev0):
    p = rt.malloc(3 * MiB)
    M.device_view(p, 3 * MiB)[:] = 7
    rt.free(p)
    rt.empty_cache()
    q = rt.malloc(3 * MiB)
    assert int(q) == int(p) and not M.device_view(q, 3 * MiB).any()


def test_10000_malloc_free_leave_stats_at_zero(dev0):
    rng = random.Random(0)
    live = []
    for i in range(10_000):
        if live and rng.random() < 0.5:
            rt.free(live.pop(rng.randrange(len(live))))
        else:
            live.append(rt.malloc(rng.choice([1, 100, 4096, 70_000, 1 << 20, 3 << 20]),
                                  rng.choice([P.HUGE_FIRST, P.NORMAL_ONLY, P.HUGE_ONLY])))
    assert stats()["allocation.all.peak"] > 10
    for p in live:
        rt.free(p)
    st = stats()
    assert st["allocated_bytes.all.current"] == st["active_bytes.all.current"] == 0
    assert st["allocation.all.current"] == st["requested_bytes.all.current"] == 0
    assert st["allocation.all.allocated"] == st["allocation.all.freed"]
    rt.empty_cache()
    assert stats()["reserved_bytes.all.current"] == 0 and stats()["segment.all.current"] == 0


def test_pool_is_thread_safe(dev0):
    errors = []

    def worker(seed):
        try:
            rt.set_device(0)
            rng = random.Random(seed)
            mine = []
            for _ in range(1500):
                if mine and rng.random() < 0.5:
                    p, tag = mine.pop()
                    assert M.device_view(p, 8)[0] == tag
                    rt.free(p)
                else:
                    p = rt.malloc(rng.choice([8, 300, 5000, 1 << 20]))
                    tag = rng.randrange(256)
                    M.device_view(p, 8)[0] = tag
                    mine.append((p, tag))
            for p, _ in mine:
                rt.free(p)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert stats()["allocated_bytes.all.current"] == 0


def test_oom_leaves_pool_unchanged(monkeypatch):
    small_device(monkeypatch, "8M")
    a = rt.malloc(3 * MiB)                          # 4 MiB of huge granules
    b = rt.malloc(MiB)                              # 2 MiB
    M.device_view(a, 3 * MiB)[:] = 5
    before = stats()
    with raises(ACL_ERROR_RT_MEMORY_ALLOCATION, r"rt\.malloc: size must fit in free device memory, "
                                                r"got size=4194304 .* device 0 has 2097152 "
                                                r"of 8388608 bytes unreserved"):
        rt.malloc(4 * MiB)
    after = stats()
    assert after["num_ooms"] == 1 and after["num_alloc_retries"] == 0
    assert {k: v for k, v in after.items() if k != "num_ooms"} == \
           {k: v for k, v in before.items() if k != "num_ooms"}
    assert (M.device_view(a, 3 * MiB) == 5).all()
    assert rt.get_mem_info() == (2 * MiB, 8 * MiB)
    rt.free(a)
    rt.free(b)


def test_oom_retries_after_emptying_the_cache(monkeypatch):
    small_device(monkeypatch, "8M")
    ps = [rt.malloc(2 * MiB - 64) for _ in range(4)]    # fills all 8 MiB with huge segments
    for p in ps:
        rt.free(p)
    assert stats()["reserved_bytes.all.current"] == 8 * MiB
    q = rt.malloc(5 * MiB, P.NORMAL_ONLY)               # needs the cached huge segments back
    st = stats()
    assert st["num_alloc_retries"] == 1 and st["num_ooms"] == 0
    assert st["reserved_bytes.all.current"] == 5 * MiB + 4096
    rt.free(q)


# -- free errors ----------------------------------------------------------------------------------
def test_double_free_and_unknown_pointers(dev0):
    p = rt.malloc(100)
    rt.free(p)
    with raises(ACL_ERROR_RT_MEMORY_FREE, rf"rt\.free: ptr must be a live address returned by "
                                          rf"malloc, got ptr=0x{int(p):x}: "
                                          rf"it points into free memory"):
        rt.free(p)
    a = rt.malloc(100)
    with raises(ACL_ERROR_RT_MEMORY_FREE, rf"got ptr=0x{int(a) + 16:x}: it points 16 bytes "
                                          rf"into the allocation at 0x{int(a):x}"):
        rt.free(int(a) + 16)
    with raises(ACL_ERROR_RT_MEMORY_FREE, r"it is not inside any allocation of this device"):
        rt.free(int(a) + 10 * GiB)
    with raises(ACL_ERROR_RT_MEMORY_FREE, r"got ptr=0x1234: it is not a device address"):
        rt.free(0x1234)
    with raises(ACL_ERROR_RT_MEMORY_FREE, r"device 7 is not set"):
        rt.free((0x107 << 40) + 64)
    rt.free(int(a))                             # plain ints (pyACL) are accepted


# -- device_view, find_allocation, check_access -------------------------------------------------
def test_device_view_and_lookup(dev0):
    p = rt.malloc(1000)
    v = M.device_view(p, 1000)
    assert v.dtype == np.uint8 and v.size == 1000 and v.flags.writeable
    v[:] = np.arange(1000) % 251
    assert M.device_view(int(p) + 10, 5).tolist() == [10, 11, 12, 13, 14]
    assert M.find_allocation(int(p) + 999) == (p, 1000)
    assert M.find_allocation(int(p) + 1000) is None          # the +32 padding is not the user's
    assert M.is_device_address(int(p)) and not M.is_device_address(v.ctypes.data)
    with raises(ACL_ERROR_RT_PARAM_INVALID, rf"rt\.device_view: ptr range must lie inside one live "
                                            rf"allocation, got ptr=0x{int(p):x}, nbytes=1001: it "
                                            rf"overruns the allocation at 0x{int(p):x} "
                                            rf"\(size 1000\) by 1 bytes"):
        M.device_view(p, 1001)
    with raises(ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW, r"kernel k: ptr range must lie"):
        M.device_view(int(p) + 990, 20, "kernel k", ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"it is a host address"):
        M.check_access(v.ctypes.data, 4, "rt.device_view")
    rt.free(p)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"it points into free memory \(use after free\? set "
                                            r"ASCEND_MEM_CHECK=1 to find out\)"):
        M.device_view(p, 10)


# -- mem-check ------------------------------------------------------------------------------------
def test_memcheck_use_after_free_and_double_free(monkeypatch):
    small_device(monkeypatch, "64M", memcheck=True)
    assert rt.memcheck.enabled()
    p = rt.malloc(256)
    rt.free(p)                                       # line of the free is named below
    q = rt.malloc(256)
    assert int(q) != int(p)                          # quarantined: not reused
    host = np.zeros(256, np.uint8)
    with raises(ACL_ERROR_RT_PARAM_INVALID, rf"rt\.memcpy: src range must lie inside one live "
                                            rf"allocation, got src=0x{int(p):x}, nbytes=256: "
                                            rf"use after free: the allocation at 0x{int(p):x} "
                                            rf"\(size 256\) was freed at .*test_memory\.py:\d+ "
                                            rf"in test_memcheck"):
        rt.memcpy(host, p, 256, K.DEVICE_TO_HOST)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"use after free"):
        M.device_view(int(p) + 8, 8)
    with raises(ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW, r"launch: ptr range .*use after free"):
        M.check_access(p, 4, "launch", ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW)
    with raises(ACL_ERROR_RT_MEMORY_FREE, r"it was already freed \(double free; freed at "
                                          r".*test_memory\.py"):
        rt.free(p)
    assert stats()["allocated_bytes.all.current"] == reservation(256)
    rt.free(q)
    rt.empty_cache()                                 # releases the quarantine
    assert stats()["reserved_bytes.all.current"] == 0


def test_memcheck_quarantine_is_released_before_oom(monkeypatch):
    small_device(monkeypatch, "8M", memcheck=True)
    for _ in range(20):                              # 20 x 3 MiB through an 8 MiB device
        p = rt.malloc(3 * MiB)
        rt.free(p)
    assert stats()["num_ooms"] == 0


# -- memcpy ---------------------------------------------------------------------------------------
def test_memcpy_all_directions(dev0):
    src = np.arange(256, dtype=np.float32)
    n = src.nbytes
    d1, d2 = rt.malloc(n), rt.malloc(n)
    rt.memcpy(d1, src, n, K.HOST_TO_DEVICE)
    rt.memcpy(d2, d1, n, K.DEVICE_TO_DEVICE)
    out = np.empty_like(src)
    rt.memcpy(out, d2, n, K.DEVICE_TO_HOST)
    assert (out == src).all()
    h = np.empty_like(src)
    rt.memcpy(h, out, n, K.HOST_TO_HOST)
    assert (h == src).all()
    # raw host addresses (acl.util.numpy_to_ptr) and DEFAULT inference
    raw = np.zeros_like(src)
    rt.memcpy(raw.ctypes.data, d1, n, K.DEFAULT)
    assert (raw == src).all()
    rt.memcpy(d2, bytes(n), n, K.DEFAULT)
    assert not M.device_view(d2, n).any()
    plan = M.prepare_copy(raw, d1, n, K.DEFAULT)
    assert plan.kind == K.DEVICE_TO_HOST and plan.device_ranges == [(int(d1), n, "r")]
    rt.memcpy(d1, src, 0, K.HOST_TO_DEVICE)          # count 0 is a no-op


def test_memcpy_between_devices(dev0):
    a = rt.to_device(np.arange(10, dtype=np.int64))
    rt.set_device(1)
    b = rt.malloc(80)
    assert int(b) >> 40 == 0x101
    rt.memcpy(b, a, 80, K.INTER_DEVICE_TO_DEVICE)
    assert M.device_view(b, 80).view(np.int64).tolist() == list(range(10))


def test_memcpy_kind_must_match_pointers(dev0):
    d = rt.malloc(64)
    h = np.zeros(64, np.uint8)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: kind must match where the pointers "
                                            r"live, got kind=HOST_TO_DEVICE with dst on host, "
                                            r"src on device; "
                                            r"use MemcpyKind\.DEVICE_TO_HOST or DEFAULT"):
        rt.memcpy(h, d, 64, K.HOST_TO_DEVICE)
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"got kind=HOST_TO_HOST with dst on device, src on host"):
        rt.memcpy(d, h, 64, K.HOST_TO_HOST)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: kind must be a MemcpyKind in \[0, 7\], "
                                            r"got kind=9"):
        rt.memcpy(d, h, 64, 9)


def test_memcpy_bounds_and_operand_errors(dev0):
    d = rt.malloc(64)
    with raises(ACL_ERROR_RT_PARAM_INVALID, rf"rt\.memcpy: dst range must lie inside one live "
                                            rf"allocation, got dst=0x{int(d):x}, nbytes=100: it "
                                            rf"overruns the allocation at 0x{int(d):x} \(size "
                                            rf"64, 96 bytes as allocated\) by 4 bytes"):
        rt.memcpy(d, np.zeros(100, np.uint8), 100, K.HOST_TO_DEVICE)
    rt.memcpy(d, np.zeros(96, np.uint8), 96, K.HOST_TO_DEVICE)   # CANN's align32(64) + 32
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: count must be <= src's size in bytes, "
                                            r"got count=64, src size=32"):
        rt.memcpy(d, np.zeros(8, np.float32), 64, K.HOST_TO_DEVICE)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: count must be >= 0, got count=-1"):
        rt.memcpy(d, np.zeros(8, np.float32), -1, K.HOST_TO_DEVICE)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: src array must be C-contiguous"):
        rt.memcpy(d, np.zeros((8, 8), np.uint8)[:, ::2], 32, K.HOST_TO_DEVICE)
    ro = np.zeros(64, np.uint8)
    ro.flags.writeable = False
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: dst must be writable"):
        rt.memcpy(ro, d, 64, K.DEVICE_TO_HOST)
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"rt\.memcpy: src must be a valid pointer, got src=0x0"):
        rt.memcpy(d, 0, 8, K.HOST_TO_DEVICE)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: dst must be a device pointer, "
                                            r"DeviceArray, HostPtr, host address or numpy array, "
                                            r"got dst=list"):
        rt.memcpy([0] * 8, d, 8, K.DEVICE_TO_HOST)


def test_memset(dev0):
    d = rt.malloc(100)
    rt.memset(d, 100, 0xAB, 60)
    rt.memset(int(d) + 60, 40, 0, 40)
    v = M.device_view(d, 100)
    assert (v[:60] == 0xAB).all() and not v[60:].any()
    host = np.ones(10, np.uint8)
    rt.memset(host, 10, 3, 10)
    assert (host == 3).all()
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memset: count must be in \[0, max_count\], got "
                                            r"count=20, max_count=10"):
        rt.memset(d, 10, 1, 20)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memset: value must be a byte value in "
                                            r"\[0, 255\], got value=256"):
        rt.memset(d, 100, 256, 1)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memset: dst range .* overruns"):
        rt.memset(d, 200, 1, 200)


def test_memcpy_2d(dev0):
    host = np.arange(6 * 10, dtype=np.uint8).reshape(6, 10)
    d = rt.malloc(6 * 16)
    rt.memset(d, 96, 0xFF, 96)
    # copy the 6x4 block at column 3 into rows of pitch 16
    rt.memcpy_2d(d, 16, host.ctypes.data + 3, 10, 4, 6, K.HOST_TO_DEVICE)
    got = M.device_view(d, 96).reshape(6, 16)
    assert (got[:, :4] == host[:, 3:7]).all() and (got[:, 4:] == 0xFF).all()
    back = np.zeros((6, 4), np.uint8)
    rt.memcpy_2d(back, 4, d, 16, 4, 6, K.DEVICE_TO_HOST)
    assert (back == host[:, 3:7]).all()
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy_2d: width must be <= dpitch and "
                                            r"<= spitch, got width=20, dpitch=16, spitch=10"):
        rt.memcpy_2d(d, 16, host, 10, 20, 2, K.HOST_TO_DEVICE)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy_2d: dst range .* overruns"):
        rt.memcpy_2d(d, 16, np.zeros(200, np.uint8), 10, 10, 9, K.HOST_TO_DEVICE)


# -- pinned host memory ---------------------------------------------------------------------------
def test_malloc_host_pinned(dev0):
    h = rt.malloc_host(4096)
    assert isinstance(h, rt.HostPtr) and h.size == 4096
    assert M.is_pinned(h) and M.is_pinned(int(h) + 100) and M.is_pinned(h.as_array()[10:])
    assert not M.is_pinned(np.zeros(10)) and not M.is_pinned(12345)
    a = h.as_array(np.float32)
    a[:] = np.arange(1024)
    d = rt.malloc(4096)
    rt.memcpy(d, h, 4096, K.HOST_TO_DEVICE)
    plan = M.prepare_copy(d, h, 4096, K.HOST_TO_DEVICE)
    assert plan.pageable is False
    assert M.prepare_copy(d, np.zeros(4096, np.uint8), 4096, K.DEFAULT).pageable is True
    assert M.prepare_copy(d, d, 64, K.DEFAULT).pageable is False
    assert (M.device_view(d, 4096).view(np.float32) == np.arange(1024)).all()
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.memcpy: count must fit in the pinned buffer at "
                                            rf"0x{int(h):x} \(size 4096\)"):
        rt.memcpy(d, int(h) + 8, 4096, K.HOST_TO_DEVICE)
    rt.free_host(h)
    assert not M.is_pinned(int(h))
    with raises(ACL_ERROR_RT_MEMORY_FREE, rf"rt\.free_host: ptr must be a live address returned by "
                                          rf"malloc_host, got ptr=0x{int(h):x}"):
        rt.free_host(h)
    with raises(ACL_ERROR_INVALID_PARAM, r"rt\.malloc_host: size must be > 0, got size=0"):
        rt.malloc_host(0)


# -- stats & summary ------------------------------------------------------------------------------
def test_memory_stats_keys_and_summary(dev0):
    p = rt.malloc(MiB)
    st = rt.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
                "reserved_bytes.all.current", "reserved_bytes.all.peak", "active_bytes.all.current",
                "allocation.all.current", "segment.all.current", "num_alloc_retries", "num_ooms"):
        assert key in st
    assert st["allocated_bytes.all.peak"] == reservation(MiB)
    assert rt.memory_stats(0) == st
    text = rt.memory_summary()
    assert "Allocated memory" in text and "Reserved memory" in text and "1.00 MiB" in text
    rt.free(p)
