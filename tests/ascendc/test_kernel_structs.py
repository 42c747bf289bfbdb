"""Kernel arguments grouped by meaning: a NamedTuple launch argument is a record read by field
(nested, passed to helpers), and a ConstExpr's fields are compile-time values, in both modes."""
from typing import NamedTuple

import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc.lang.errors import CompileError


class Span(NamedTuple):
    start: int
    count: int


class Job(NamedTuple):
    src: Span           # nested records
    dst: Span
    scale: float


class Tiling(NamedTuple):
    tile: int
    add_one: bool


@asc.jit
def _scale_tile(xg, zg, que, job, off, n, add_one):
    """A helper reading the record it is given."""
    t = que.alloc_tensor(asc.float32)
    asc.data_copy(t, xg[job.src.start + off:], n)
    que.enque(t)
    t = que.deque(asc.float32)
    asc.muls(t, t, job.scale, n)
    if add_one:
        asc.adds(t, t, 1.0, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg[job.dst.start + off:], t, n)
    asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
    asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
    que.free_tensor(t)


@asc.jit
def span_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, job: Job,
                cfg: asc.ConstExpr[Tiling]):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, job.src.start + job.src.count)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, job.dst.start + job.dst.count)
    pipe = asc.TPipe()
    que = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(que, 1, cfg.tile * 4)
    for off in range(0, job.src.count, cfg.tile):
        n = min(cfg.tile, job.src.count - off)
        _scale_tile(xg, zg, que, job, off, n, cfg.add_one)


@asc.jit
def missing_field_kernel(x: asc.GlobalAddress, cfg: asc.ConstExpr[Tiling]):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, cfg.tile_len)


def test_records_and_constexpr_fields_in_both_modes(mode):
    x = np.arange(200, dtype=np.float32)
    z = np.zeros(240, np.float32)
    job = Job(src=Span(8, 128), dst=Span(40, 128), scale=0.5)
    span_kernel[1](x, z, job, Tiling(48, True), interpret=mode == "interpret")
    expect = np.zeros(240, np.float32)
    expect[40:168] = x[8:136] * np.float32(0.5) + 1
    np.testing.assert_array_equal(z, expect)


def test_record_fields_are_checked_as_scalar_arguments():
    x = np.zeros(64, np.float32)
    job = Job(src=Span(0, 2**40), dst=Span(0, 8), scale=1.0)
    with pytest.raises(rt.AclError, match=r"int argument must fit int32 .*got job\.src\.count="
                                          r"1099511627776"):
        span_kernel[1](x, x, job, Tiling(64, False))
    with pytest.raises(rt.AclError, match=r"argument must be an array, rt\.DeviceArray, int, "
                                          r"float, numpy scalar or NamedTuple of those, got "
                                          r"job\.scale=str"):
        span_kernel[1](x, x, Job(Span(0, 8), Span(0, 8), "1.0"), Tiling(64, False))


def test_a_missing_constexpr_field_is_a_compile_error():
    with pytest.raises(CompileError, match=r"ConstExpr cfg must have a field 'tile_len' "
                                           r"\(Tiling\), got Tiling=Tiling\(tile=64"):
        missing_field_kernel[1](np.zeros(8, np.float32), Tiling(64, False), interpret=False)
