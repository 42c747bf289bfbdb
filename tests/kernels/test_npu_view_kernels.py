"""The NPU view on every kernel of kernels/, interpreted and compiled.

Each kernel runs inside `rt.profile(npu=True)` on a ragged and a tile-multiple shape (shapes and
tilings shared with the kernel tests, so the compiled specialisations come from the disk cache):
its result still matches the numpy reference, one launch is recorded, the two modes record the
same instructions (name, pipe, sizes, source line) and so simulate to the same cycles, and the
pipes the kernel must use are busy."""
import numpy as np
import pytest

import rt
from kernels.add import add, add_reference
from kernels.flash_attention import (FlashAttentionTiling, flash_attention,
                                     flash_attention_reference)
from kernels.matmul import matmul, matmul_reference
from kernels.norm import layernorm, layernorm_reference, rmsnorm, rmsnorm_reference
from kernels.softmax import softmax, softmax_reference
from kernels.tolerances import assert_close


def _rng(seed=0):
    return np.random.default_rng(seed)


def _add(shape):
    x, y = (_rng(i).standard_normal(shape).astype(np.float32) for i in (1, 2))
    return (lambda **kw: add(x, y, **kw)), add_reference(x, y)


def _matmul(shape):
    m, n, k = shape
    a = _rng(1).standard_normal((m, k), np.float32)
    b = _rng(2).standard_normal((k, n), np.float32)
    return (lambda **kw: matmul(a, b, **kw)), matmul_reference(a, b)


def _softmax(shape):
    x = (_rng().standard_normal(shape) * 3).astype(np.float32)
    return (lambda **kw: softmax(x, **kw)), softmax_reference(x)


def _norm(rms):
    def make(shape):
        x = _rng().standard_normal(shape).astype(np.float32)
        g = _rng(1).standard_normal(shape[-1]).astype(np.float32)
        if rms:
            return (lambda **kw: rmsnorm(x, g, **kw)), rmsnorm_reference(x, g)
        b = _rng(2).standard_normal(shape[-1]).astype(np.float32)
        return (lambda **kw: layernorm(x, g, b, **kw)), layernorm_reference(x, g, b)
    return make


def _fa(s):
    rng = _rng(s)
    q, k, v = (rng.standard_normal((1, 2, s, 64)).astype(np.float32) for _ in range(3))
    tiling = FlashAttentionTiling(32, 144, 32)          # as tests/kernels/test_flash_attention.py
    return ((lambda **kw: flash_attention(q, k, v, tiling=tiling, **kw)),
            flash_attention_reference(q, k, v)[0])


# kernel name, factory, shapes (ragged, tile multiple), pipes that must be busy
CASES = [
    ("add_kernel", _add, [37, 3 * 8192 + 5], {"MTE2", "VECTOR", "MTE3"}),
    ("matmul_kernel", _matmul, [(33, 47, 29), (128, 128, 128)],
     {"MTE2", "MTE1", "CUBE", "FIXPIPE"}),
    ("softmax_kernel", _softmax, [(3, 37), (16, 64)], {"MTE2", "VECTOR", "MTE3"}),
    ("norm_kernel", _norm(False), [(3, 37), (16, 64)], {"MTE2", "VECTOR", "MTE3"}),
    ("norm_kernel", _norm(True), [(3, 37), (16, 64)], {"MTE2", "VECTOR", "MTE3"}),
    ("flash_attention_kernel", _fa, [45, 64],
     {"MTE2", "MTE1", "CUBE", "FIXPIPE", "VECTOR", "MTE3"}),
]


def _record(run, interpret):
    with rt.profile(npu=True) as prof:
        out = run(interpret=interpret, checked=True)
    return out, prof.npu_runs()


def _instrs(blocks):
    return [[(i.name, i.pipe, i.bytes, i.elements, i.repeats, i.macs, i.path, i.src,
              i.set_flag, i.wait_flag, i.barrier) for i in blk] for blk in blocks]


@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=[f"{c[0]}{'-rms' if i == 4 else ''}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("which", [0, 1], ids=["ragged", "tile-multiple"])
def test_npu_view_records_the_same_run_in_both_modes(case, which):
    name, make, shapes, pipes = CASES[case]
    run, ref = make(shapes[which])
    timelines, recorded = [], []
    for interpret in (True, False):
        out, runs = _record(run, interpret)
        assert_close(out, ref, np.float32, scale=5)       # the kernel really ran
        assert [r.record.name for r in runs] == [name]
        recorded.append(_instrs(runs[0].blocks))
        timelines.append(runs[0].timeline)
    assert recorded[0] == recorded[1]
    a, b = timelines
    assert a.total_cycles == b.total_cycles > 0
    busy = {p for p in pipes if a.pipe_busy(p) > 0}
    assert busy == pipes
    srcs = {i[7] for blk in recorded[0] for i in blk}
    assert all(s.startswith(f"{rt.__file__.rsplit('/rt/', 1)[0]}/kernels/") for s in srcs if s)


def test_npu_view_off_records_nothing_and_costs_no_binary():
    run, ref = _add(8192)
    with rt.profile() as prof:
        out = run(interpret=False, checked=True)
    np.testing.assert_array_equal(out, ref)
    assert prof.npu_runs() == [] and not rt.npu_view_on()
    with pytest.raises(ValueError, match="export_npu: the profile must hold an NPU-view "
                                         "recording"):
        prof.export_npu("unused")
