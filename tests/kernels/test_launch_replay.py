"""asc.record_launches / asc.PreparedLaunch: a launch recorded once and queued again with
the same binary and argument tuple (what rt.Model's AI Core nodes do after their first
execution, kernels.model_ops.Replayed)."""
import numpy as np
import pytest

import rt
from ascendc import record_launches
from kernels.add import add_kernel, add_tiling


@pytest.mark.parametrize("n", [4096, 1000 * 8 + 3])
def test_a_recorded_launch_replays_on_the_buffers_current_values(interpret, n):
    rt.ensure_device()
    rng = np.random.default_rng(0)
    t = add_tiling(n, np.float32)
    x, y = (rt.to_device(rng.standard_normal(n).astype(np.float32)) for _ in "xy")
    z = rt.device_empty((n,), np.float32)
    s = rt.Stream()
    with record_launches() as rec:
        add_kernel[t.block_dim, s](x, y, z, t.total, t.per_core, t.tile, interpret=interpret)
    assert rec.replayable and len(rec.launches) == 1
    s.synchronize()
    np.testing.assert_array_equal(z.copy_to_host(), x.copy_to_host() + y.copy_to_host())
    (p,) = rec.launches
    for _ in range(2):
        xv, yv = (rng.standard_normal(n).astype(np.float32) for _ in "xy")
        x.copy_from_host(xv)
        y.copy_from_host(yv)
        z.copy_from_host(np.full(n, np.nan, np.float32))
        task = p(s)
        s.synchronize()
        assert task.block_dim == t.block_dim
        np.testing.assert_array_equal(z.copy_to_host(), xv + yv)


def test_a_launch_with_host_arrays_is_not_replayable(interpret):
    rt.ensure_device()
    n = 1024
    t = add_tiling(n, np.float32)
    x = np.arange(n, dtype=np.float32)
    z = np.zeros(n, np.float32)
    yd = rt.to_device(np.ones(n, np.float32))
    zd = rt.device_empty((n,), np.float32)
    with record_launches() as outer:
        with record_launches() as rec:
            add_kernel[t.block_dim](x, x, z, t.total, t.per_core, t.tile, interpret=interpret)
        add_kernel[t.block_dim](yd, yd, zd, t.total, t.per_core, t.tile, interpret=interpret)
    np.testing.assert_array_equal(z, 2 * x)             # the launch itself ran
    assert rec.launches == [None] and not rec.replayable
    assert len(outer.launches) == 1 and outer.replayable   # nested: each its own launches
    rt.current_stream().synchronize()
    np.testing.assert_array_equal(zd.copy_to_host(), np.full(n, 2, np.float32))


class _ReadOnly:
    """A binary seen through a view that refuses writes: a launch that sets an attribute on the
    binary it launches (shared by every thread launching that kernel) raises here."""

    def __init__(self, binary):
        object.__setattr__(self, "_b", binary)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_b"), name)

    def __setattr__(self, name, value):
        raise AttributeError(f"a launch wrote {name}={value!r} onto the shared binary")


def test_replays_from_two_threads_never_write_to_their_shared_binary(interpret):
    """Two threads replay launches of one binary at once, each on its own stream and buffers:
    nothing is written onto the binary (its `mix` / `kfc` are fixed when it is built), and each
    thread gets its own sums."""
    import threading
    rt.ensure_device()
    n = 1000 * 8 + 3
    t = add_tiling(n, np.float32)
    rng = np.random.default_rng(1)
    plans = []
    for _ in range(2):
        x, y = (rt.to_device(rng.standard_normal(n).astype(np.float32)) for _ in "xy")
        z = rt.device_empty((n,), np.float32)
        s = rt.Stream()
        with record_launches() as rec:
            add_kernel[t.block_dim, s](x, y, z, t.total, t.per_core, t.tile, interpret=interpret)
        (p,) = rec.launches
        s.synchronize()
        plans.append((p, s, x, y, z))
    assert plans[0][0].binary is plans[1][0].binary          # one binary, shared
    for p, *_ in plans:
        p.binary = _ReadOnly(p.binary)
    start, errors = threading.Barrier(2), []

    def replay(p, s, x, y, z):
        try:
            start.wait()
            for _ in range(20):
                z.copy_from_host(np.full(n, np.nan, np.float32))
                p(s)
                s.synchronize()
                np.testing.assert_array_equal(z.copy_to_host(), x.copy_to_host() + y.copy_to_host())
        except BaseException as exc:    # noqa: BLE001 - reported by the main thread
            errors.append(exc)
    threads = [threading.Thread(target=replay, args=plan) for plan in plans]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]

