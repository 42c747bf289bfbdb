"""asc.LocalTensorAuto (pyasc): local tensors the compiler allocates, one fixed UB region per
allocation site, and the set_flag/wait_flag pairs `insert_sync` adds between the pipes using them
(prims/autotensor.py); in both modes, checked (GM->UB copies become visible only at a wait)."""
import numpy as np
import pytest

import ascendc as asc
import rt

MODES = [pytest.param(True, id="interpret"), pytest.param(False, id="compiled")]


@asc.jit
def copy_in(i: int, xg: asc.GlobalTensor, yg: asc.GlobalTensor, xl: asc.LocalTensorAuto,
            yl: asc.LocalTensorAuto, tile: asc.ConstExpr[int], n: int):
    asc.data_copy(xl, xg[i * tile:], count=n)
    asc.data_copy(yl, yg[i * tile:], count=n)


@asc.jit
def compute(xl: asc.LocalTensorAuto, yl: asc.LocalTensorAuto, zl: asc.LocalTensorAuto, n: int):
    asc.mul(zl, xl, yl, n)
    asc.adds(zl, zl, 1.5, n)


@asc.jit
def auto_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, total: int,
                tile: asc.ConstExpr[int]):
    """z = x * y + 1.5 over `total` elements in tiles of `tile` (the last one may be shorter:
    a smaller allocation at the same sites)."""
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    yg.set_global_buffer(y)
    zg.set_global_buffer(z)
    for i in range(asc.ceildiv(total, tile)):
        n = min(tile, total - i * tile)
        xl = asc.LocalTensorAuto(x.dtype, n)
        yl = asc.LocalTensorAuto(y.dtype, n)
        zl = asc.LocalTensorAuto(z.dtype, n)
        copy_in(i, xg, yg, xl, yl, tile, n)
        compute(xl, yl, zl, n)
        asc.data_copy(zg[i * tile:], zl, count=n)


@pytest.mark.parametrize("interpret", MODES)
@pytest.mark.parametrize("total", [1024, 1000], ids=["tile-multiple", "ragged"])
def test_tiles_in_auto_tensors_match_numpy(interpret, total):
    rng = np.random.default_rng(7)
    x = rng.random(total, dtype=np.float32)
    y = rng.random(total, dtype=np.float32)
    z = np.zeros_like(x)
    auto_kernel[1](x, y, z, total, 256, interpret=interpret)
    np.testing.assert_allclose(z, x * y + np.float32(1.5), rtol=1e-6)


@asc.jit(insert_sync=True)
def scalar_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """insert_sync=True spelled out; shapes as tuples; a scalar read after an MTE2 copy."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    xl = asc.LocalTensorAuto(x.dtype, (2, n // 2))
    asc.data_copy(xl, xg, count=n)
    first = xl.get_value(0)
    zl = asc.LocalTensorAuto(z.dtype, n)
    asc.duplicate(zl, first, n)
    asc.add(zl, zl, xl, n)
    zl.set_value(1, first)
    asc.data_copy(zg, zl, count=n)


@pytest.mark.parametrize("interpret", MODES)
def test_scalar_reads_and_writes_are_ordered(interpret):
    x = np.arange(64, dtype=np.float32) + 3
    z = np.zeros_like(x)
    scalar_kernel[1](x, z, 64, interpret=interpret)
    want = x + x[0]
    want[1] = x[0]
    np.testing.assert_array_equal(z, want)


@asc.jit
def mixed_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """A TPipe queue and LocalTensorAuto together (they share UB); a deque inside an argument
    of an op on a LocalTensorAuto runs once."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, n * 4)
    t = q.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, count=n)
    q.enque(t)
    a = asc.LocalTensorAuto(z.dtype, n)
    asc.adds(a, q.deque(x.dtype), 1.0, n)
    q.free_tensor(t)
    asc.data_copy(zg, a, count=n)


@pytest.mark.parametrize("interpret", MODES)
def test_queues_and_auto_tensors_together(interpret):
    x = np.arange(128, dtype=np.float32)
    z = np.zeros_like(x)
    mixed_kernel[1](x, z, 128, interpret=interpret)
    np.testing.assert_array_equal(z, x + 1)


@asc.jit
def address_kernel(out: asc.GlobalAddress, n: int):
    """The physical addresses of two sites over three loop turns."""
    og = asc.GlobalTensor()
    og.set_global_buffer(out)
    for i in range(3):
        a = asc.LocalTensorAuto(asc.float32, n)
        b = asc.LocalTensorAuto(asc.float16, n)
        og.set_value(2 * i, a.get_phy_addr(0))
        og.set_value(2 * i + 1, b.get_phy_addr(0))


@pytest.mark.parametrize("interpret", MODES)
def test_each_site_has_one_fixed_region(interpret):
    out = np.zeros(6, np.int64)
    address_kernel[1](out, 20, interpret=interpret)
    a, b = out[0::2], out[1::2]
    assert (a == a[0]).all() and (b == b[0]).all()          # a loop reuses its site's region
    assert b[0] - a[0] == 96                                 # 20 float32 -> 80 -> 96 bytes


@asc.jit
def big_kernel(x: asc.GlobalAddress, n: int):
    a = asc.LocalTensorAuto(asc.float32, 1024)
    b = asc.LocalTensorAuto(asc.float32, n)
    asc.duplicate(a, 1.0, 64)
    asc.duplicate(b, 1.0, 64)


@asc.jit
def pipe_and_auto_kernel(x: asc.GlobalAddress, n: int):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 128 * 1024)
    b = asc.LocalTensorAuto(asc.float32, n)
    asc.duplicate(b, 1.0, 64)


@asc.jit
def growing_kernel(x: asc.GlobalAddress):
    for i in range(2):
        a = asc.LocalTensorAuto(asc.float32, 64 * (i + 1))
        asc.duplicate(a, 1.0, 64)


@asc.jit
def empty_kernel(x: asc.GlobalAddress, n: int):
    a = asc.LocalTensorAuto(asc.float32, (4, n))
    asc.duplicate(a, 1.0, 64)


@pytest.mark.parametrize("interpret", MODES)
def test_capacity_and_site_errors(interpret):
    x = np.zeros(8, np.float32)
    ub = rt.get_soc().ub_bytes
    with pytest.raises(rt.AclError, match=rf"asc.LocalTensorAuto: the automatically allocated "
                                          rf"tensors and TPipe buffers must fit the {ub} bytes "
                                          rf"of VECCALC \(UB\), got {ub} bytes asked with 4096 "
                                          rf"bytes in use"):
        big_kernel[1](x, ub // 4, interpret=interpret)
    big_kernel[1](x, (ub - 4096) // 4, interpret=interpret)       # exactly full: fine
    with pytest.raises(rt.AclError, match=rf"must fit the {ub} bytes of VECCALC \(UB\), got "
                                          rf"{ub - 128 * 1024 + 32} bytes asked with "
                                          rf"{128 * 1024} bytes in use"):
        pipe_and_auto_kernel[1](x, (ub - 128 * 1024) // 4 + 8, interpret=interpret)
    with pytest.raises(rt.AclError, match=r"asc.LocalTensorAuto: an allocation must fit the 256 "
                                          r"bytes its site was given at its first allocation, "
                                          r"got 512 bytes"):
        growing_kernel[1](x, interpret=interpret)
    with pytest.raises(rt.AclError, match=r"asc.LocalTensorAuto: shape must have at least one "
                                          r"element, got 0 elements"):
        empty_kernel[1](x, 0, interpret=interpret)


# ---- the NPU view: the flags insert_sync adds -----------------------------------------------
@asc.jit
def trace_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    for i in range(2):
        xl = asc.LocalTensorAuto(x.dtype, n)
        zl = asc.LocalTensorAuto(z.dtype, n)
        asc.data_copy(xl, xg[i * n:], count=n)
        asc.muls(zl, xl, 2.0, n)
        asc.data_copy(zg[i * n:], zl, count=n)


def _traced(interpret):
    x = np.arange(512, dtype=np.float32)
    z = np.zeros_like(x)
    with rt.profile(npu=True) as prof:
        trace_kernel[1](x, z, 256, interpret=interpret)
        rt.current_stream().synchronize()
    np.testing.assert_array_equal(z, x * 2)
    return prof.npu_runs("trace_kernel")[-1]


def test_trace_records_the_inserted_flags():
    runs = [_traced(True), _traced(False)]
    issued = [[(i.name, i.pipe, i.set_flag or i.wait_flag) for i in r.blocks[0]
               if i.name in ("set_flag", "wait_flag", "data_copy", "muls")] for r in runs]
    assert issued[0] == issued[1]                       # the same rows in both modes
    assert runs[0].timeline.total_cycles == runs[1].timeline.total_cycles
    cp, mu, st, wt = "data_copy", "muls", "set_flag", "wait_flag"
    mte2_v, v_mte3 = ("MTE2", "VECTOR", 7), ("VECTOR", "MTE3", 7)
    v_mte2, mte3_v = ("VECTOR", "MTE2", 7), ("MTE3", "VECTOR", 7)
    assert issued[0] == [
        # turn 1: x in (MTE2), wait for it on V; z out (MTE3) waits for V
        (cp, "MTE2", None), (st, "MTE2", mte2_v), (wt, "VECTOR", mte2_v), (mu, "VECTOR", None),
        (st, "VECTOR", v_mte3), (wt, "MTE3", v_mte3), (cp, "MTE3", None),
        # turn 2: the same regions again: MTE2 overwrites x after V read it, V overwrites z
        # after MTE3 read it (write after read), then as in turn 1
        (st, "VECTOR", v_mte2), (wt, "MTE2", v_mte2), (cp, "MTE2", None),
        (st, "MTE3", mte3_v), (wt, "VECTOR", mte3_v), (st, "MTE2", mte2_v),
        (wt, "VECTOR", mte2_v), (mu, "VECTOR", None),
        (st, "VECTOR", v_mte3), (wt, "MTE3", v_mte3), (cp, "MTE3", None)]
    # the simulated timeline orders each vector op after the copy it waits for
    tl = runs[0].timeline
    spans = {}
    for ins, _core, pipe, start, end in tl.records:
        if ins.name in (cp, mu):
            spans.setdefault((ins.name, pipe), []).append((start, end))
    ins_ = sorted(spans[(cp, "MTE2")])
    muls = sorted(spans[(mu, "VECTOR")])
    outs = sorted(spans[(cp, "MTE3")])
    for k in range(2):
        assert muls[k][0] >= ins_[k][1] and outs[k][0] >= muls[k][1]
    assert tl.total_cycles == pytest.approx(TRACE_CYCLES, rel=1e-12)


# simulated cycles of trace_kernel (rt/npu: deterministic; changes with the NPU model constants)
TRACE_CYCLES = 2418.1346782363917
