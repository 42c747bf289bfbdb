"""A bounded fuzz of kernel launches and runtime call sequences (hypothesis).

Invariants: nothing crashes; every refusal or fault is an `rt.AclError` with an integer CANN
code (the expected one where the input decides it); valid work gives numpy's result; the device
pool's counters return to zero once everything is freed.

CI runs a short, derandomised version (~100 launches and ~1000 runtime calls, well under a
minute once the kernel is compiled). ASCEND_EMU_FUZZ_EXAMPLES=<n> runs n examples per test with
fresh random seeds (e.g. 2000 for a long run).
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rt
from kernels.add import add_kernel
from rt.pool import alloc_bytes

_LONG = int(os.environ.get("ASCEND_EMU_FUZZ_EXAMPLES", "0") or 0)
TILE = 1024


def _settings(short: int):
    return settings(max_examples=_LONG or short, deadline=None, derandomize=not _LONG,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


def _pool_is_empty():
    s = rt.memory_stats(0)
    assert s["allocated_bytes.all.current"] == 0, s
    assert s["allocation.all.current"] == 0, s


# -- kernel launches -------------------------------------------------------------------------------
@st.composite
def launches(draw):
    n = draw(st.integers(1, 3 * TILE + 100))                      # elements of each buffer
    # mostly valid launches; one in ten has a block_dim outside [1, 65535]
    block_dim = draw(st.sampled_from([0, -1, 65536, 70000])) \
        if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, 8))
    total = draw(st.one_of(st.integers(-4, n), st.integers(n + 1, 2 * n + 64)))
    even = -(-max(total, 0) // max(block_dim, 1))
    per_core = draw(st.one_of(st.just(even), st.integers(0, 2 * n)))
    bad = draw(st.sampled_from(["str", 2**40, 1.5j])) if draw(st.integers(0, 9)) == 0 else None
    return dict(n=n, block_dim=block_dim, total=total, per_core=per_core, bad=bad,
                interpret=draw(st.booleans()), own_stream=draw(st.booleans()),
                seed=draw(st.integers(0, 2**32 - 1)))


def _expected(spec, x, y):
    """(z numpy computes, whether some block reads past the buffers' allocations: a block
    reaching past the n elements but inside the allocation, rt.pool.alloc_bytes, runs as on
    hardware, docs/limitations.md)."""
    z = np.zeros_like(x)
    past = False
    reach = alloc_bytes(4 * spec["n"]) // 4
    for b in range(spec["block_dim"]):
        lo = b * spec["per_core"]
        m = min(spec["per_core"], spec["total"] - lo)
        if m <= 0:
            continue
        if lo + m > reach:
            past = True
            continue
        hi = min(lo + m, spec["n"])
        z[lo:hi] = x[lo:hi] + y[lo:hi]
    return z, past


def _launch(spec, stream):
    rng = np.random.default_rng(spec["seed"])
    x = rng.standard_normal(spec["n"]).astype(np.float32)
    y = rng.standard_normal(spec["n"]).astype(np.float32)
    xd, yd, zd = rt.to_device(x), rt.to_device(y), rt.device_zeros(spec["n"])
    total = spec["bad"] if spec["bad"] is not None else spec["total"]
    try:
        try:
            add_kernel[spec["block_dim"], stream](xd, yd, zd, total, spec["per_core"], TILE,
                                                  interpret=spec["interpret"])
            (stream or rt.current_stream()).synchronize(timeout_ms=60_000)
        except rt.AclError as e:
            assert isinstance(e.code, int) and e.code > 0, repr(e)
            return e, None, x, y
        return None, zd.copy_to_host(), x, y
    finally:
        for d in (xd, yd, zd):
            d.free()


@_settings(short=40)
@given(specs=st.lists(launches(), min_size=2, max_size=5))
def test_fuzz_kernel_launches(dev0, specs):
    streams = [rt.Stream()]
    for spec in specs:
        err, z, x, y = _launch(spec, streams[0] if spec["own_stream"] else None)
        if not 1 <= spec["block_dim"] <= 65535:
            assert err is not None and err.code == 107000, (spec, err)
            assert "block_dim must be in [1, 65535]" in str(err)
            continue
        if spec["bad"] is not None:
            assert err is not None and err.code == 100000, (spec, err)
            assert "add_kernel: " in str(err) and "total" in str(err)
            continue
        want, past = _expected(spec, x, y)
        if past:
            assert err is not None and err.code == 507042, (spec, err)
            assert "GM read must stay inside argument" in str(err), str(err)
            continue
        assert err is None, (spec, err)
        np.testing.assert_array_equal(z, want)
    for s in streams:
        s.destroy()
    rt.synchronize_device()
    _pool_is_empty()


# -- runtime call sequences ------------------------------------------------------------------------
_OPS = st.one_of(
    st.tuples(st.just("malloc"), st.integers(-8, 6000)),
    st.tuples(st.just("free"), st.integers(0, 9)),
    st.tuples(st.just("h2d"), st.integers(0, 9), st.integers(0, 3), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("d2h"), st.integers(0, 9), st.integers(0, 3)),
    st.tuples(st.just("memset"), st.integers(0, 9), st.integers(0, 3), st.integers(0, 255)),
    st.tuples(st.just("stream_new")),
    st.tuples(st.just("stream_destroy"), st.integers(1, 3)),
    st.tuples(st.just("event"), st.integers(0, 3)),
    st.tuples(st.just("sync"), st.integers(0, 3)),
    st.tuples(st.just("sync_device")),
)


class _Model:
    """What the device memory must hold if the runtime is right (buffers: [ptr, bytes, mirror,
    live, last stream]; work on a buffer is ordered by syncing its previous stream first)."""

    def __init__(self):
        self.bufs = []
        self.streams = [rt.default_stream()]
        self.dead = set()          # indices of destroyed streams
        self.keep = []             # host sources of queued copies

    def stream(self, j):
        return self.streams[j % len(self.streams)], j % len(self.streams)

    def usable(self, i):
        """Buffer i if it is live (or freed, and its address is not reused by a live one)."""
        if i >= len(self.bufs):
            return None
        b = self.bufs[i]
        if not b[3] and any(o[3] and o[0] == b[0] for o in self.bufs):
            return None
        return b

    def order(self, b, k):
        if b[4] is not None and b[4] != k and b[4] not in self.dead:
            self.streams[b[4]].synchronize()
        b[4] = k


def _expect_acl(fn, codes=None):
    with pytest.raises(rt.AclError) as info:
        fn()
    assert isinstance(info.value.code, int) and info.value.code > 0
    if codes is not None:
        assert info.value.code in codes, repr(info.value)


def _step(m: _Model, op):
    kind = op[0]
    if kind == "malloc":
        if op[1] <= 0:
            _expect_acl(lambda: rt.malloc(op[1]), {100000})
            return
        ptr = rt.malloc(op[1])
        m.bufs.append([ptr, op[1], np.zeros(op[1], np.uint8), True, None])
        # contents are undefined after malloc: define them
        rt.memset(ptr, op[1], 0, op[1])
    elif kind == "free":
        b = m.usable(op[1])
        if b is None:
            return
        if b[3]:
            if b[4] is not None and b[4] not in m.dead:
                m.streams[b[4]].synchronize()
            rt.free(b[0])
            b[3] = False
        else:
            _expect_acl(lambda: rt.free(b[0]), {207002})
    elif kind in ("h2d", "d2h", "memset"):
        b = m.usable(op[1])
        if b is None:
            return
        s, k = m.stream(op[2])
        if k in m.dead:
            if b[3]:
                _expect_acl(lambda: rt.memset_async(b[0], b[1], 1, b[1], s), {107017})
            return
        if not b[3]:                                  # use after free: refused
            _expect_acl(lambda: rt.memset_async(b[0], b[1], 1, b[1], s))
            return
        m.order(b, k)
        if kind == "h2d":
            src = np.random.default_rng(op[3]).integers(0, 256, b[1], dtype=np.uint8)
            m.keep.append(src)
            rt.memcpy_async(b[0], src, b[1], rt.MemcpyKind.HOST_TO_DEVICE, s)
            b[2][:] = src
        elif kind == "memset":
            rt.memset_async(b[0], b[1], op[3], b[1], s)
            b[2][:] = op[3]
        else:
            out = np.empty(b[1], np.uint8)
            rt.memcpy_async(out, b[0], b[1], rt.MemcpyKind.DEVICE_TO_HOST, s)
            s.synchronize()
            np.testing.assert_array_equal(out, b[2])
    elif kind == "stream_new":
        if len(m.streams) < 4:
            m.streams.append(rt.Stream())
    elif kind == "stream_destroy":
        s, k = m.stream(op[1])
        if k == 0:
            _expect_acl(s.destroy, {107000})
        elif k in m.dead:
            _expect_acl(s.synchronize, {107017})
        else:
            s.destroy()
            m.dead.add(k)
    elif kind == "event":
        s, k = m.stream(op[1])
        e = rt.Event()
        if k in m.dead:
            _expect_acl(lambda: e.record(s), {107017})
        else:
            e.record(s)
            e.synchronize()
        e.destroy()
        _expect_acl(e.synchronize, {107017})
    elif kind == "sync":
        s, k = m.stream(op[1])
        if k in m.dead:
            _expect_acl(s.synchronize, {107017})
        else:
            s.synchronize()
    else:
        rt.synchronize_device()


@_settings(short=40)
@given(sizes=st.lists(st.integers(1, 6000), min_size=1, max_size=6),
       ops=st.lists(_OPS, min_size=10, max_size=40))
def test_fuzz_runtime_call_sequences(dev0, sizes, ops):
    m = _Model()
    try:
        for op in [("malloc", n) for n in sizes] + ops:
            _step(m, op)
        rt.synchronize_device()
        for b in m.bufs:                               # everything still holds what was written
            if b[3]:
                np.testing.assert_array_equal(rt.memory.device_view(b[0], b[1]), b[2])
    finally:
        rt.synchronize_device()
        for b in m.bufs:
            if b[3]:
                rt.free(b[0])
        for k, s in enumerate(m.streams):
            if k and k not in m.dead:
                s.destroy()
    _pool_is_empty()
