"""rt.host_empty: large numpy results reuse the pages of dropped ones, never two live at once."""
import gc
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import rt
from rt import hostcache

BIG = (1 << 20) // 4 + 3          # float32 elements: just over MIN_BYTES, not a page multiple


@pytest.fixture(autouse=True)
def clean_cache():
    rt.empty_host_cache()
    yield
    rt.empty_host_cache()


def test_shape_dtype_and_layout():
    a = rt.host_empty((3, BIG), np.float16)
    assert a.shape == (3, BIG) and a.dtype == np.float16
    assert a.flags.c_contiguous and a.flags.writeable
    a[...] = 1.5
    assert float(a.sum(dtype=np.float64)) == 1.5 * a.size
    assert rt.host_empty(BIG).shape == (BIG,)


def test_extension_dtype_survives():
    import ml_dtypes
    bf16 = np.dtype(ml_dtypes.bfloat16)
    a = rt.host_empty((2, BIG), bf16)      # over MIN_BYTES: a cached lease, not np.empty
    assert a.dtype == bf16 and a.shape == (2, BIG)
    a[...] = 1.5
    assert float(a.astype(np.float32).sum(dtype=np.float64)) == 1.5 * a.size


def test_dropped_result_is_reused():
    a = rt.host_empty(BIG)
    addr = a.ctypes.data
    del a
    gc.collect()
    assert rt.host_cache_stats()["idle_buffers"] == 1
    b = rt.host_empty(BIG)
    assert b.ctypes.data == addr
    assert rt.host_cache_stats()["idle_buffers"] == 0


def test_live_results_never_share_a_buffer():
    a = rt.host_empty(BIG)
    b = rt.host_empty(BIG)
    assert not np.may_share_memory(a, b)


def test_a_view_keeps_the_buffer_leased():
    a = rt.host_empty(BIG)
    view = a[10:20]
    view[:] = 7
    del a
    gc.collect()
    assert rt.host_cache_stats()["idle_buffers"] == 0
    b = rt.host_empty(BIG)
    b[...] = 0
    assert (view == 7).all()
    del view
    gc.collect()
    assert rt.host_cache_stats()["idle_buffers"] == 1


def test_small_results_come_from_malloc():
    a = rt.host_empty(16, np.float32)
    assert a.base is None and a.flags.owndata
    del a
    assert rt.host_cache_stats()["idle_buffers"] == 0


def test_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(hostcache, "MAX_CACHED_BYTES", 3 << 20)
    arrays = [rt.host_empty(BIG) for _ in range(4)]     # ~1 MiB + 1 page each
    del arrays
    gc.collect()
    st = rt.host_cache_stats()
    assert st["idle_buffers"] == 2 and st["idle_bytes"] <= 3 << 20
    assert rt.empty_host_cache() == st["idle_bytes"]
    assert rt.host_cache_stats() == {"idle_bytes": 0, "idle_buffers": 0}


def test_bad_shape_names_it():
    with pytest.raises(ValueError, match=r"rt.host_empty: shape must be non-negative, "
                                         r"got shape=\(4, -1\)"):
        rt.host_empty((4, -1))


def test_threads_never_see_each_others_results():
    errors = []

    def worker(k):
        for i in range(40):
            a = rt.host_empty(BIG, np.int32)
            a.fill(k * 1000 + i)
            if not (a == k * 1000 + i).all():
                errors.append((k, i))
            del a

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert rt.host_cache_stats()["idle_buffers"] <= 4


GC_IN_LOCK = r"""
import gc, sys
import rt
BIG = (1 << 20) // 4 + 3
class Cycle:
    pass
for th in (700, 3, 5, 7, 11):            # gen0 thresholds: collections start at varied points
    gc.set_threshold(th, 1, 1)
    for i in range(300):
        c = Cycle(); c.self = c; c.a = rt.host_empty(BIG)   # a result only the GC frees
        del c
        rt.host_cache_stats()            # allocates while holding the cache's lock
        b = rt.host_empty(BIG)
        del b
print("ok")
"""


def test_a_lease_freed_by_the_gc_while_the_lock_is_held_does_not_deadlock():
    # a collection started by an allocation made under hostcache._lock runs the __del__ of a
    # lease in a reference cycle on the same thread: it must not wait for that lock
    r = subprocess.run([sys.executable, "-c", GC_IN_LOCK], capture_output=True, text=True,
                       timeout=60, cwd=pathlib.Path(rt.__file__).parents[1])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
