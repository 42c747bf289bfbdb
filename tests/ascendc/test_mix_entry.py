"""A MIX launch's instances call the compiled kernel through its entry point, the argument types
looked up once per launch (binaries.CompiledBinary._entry) instead of by Numba's dispatcher at
each instance: launches whose NamedTuple fields change type between them still get the
specialisation of their own types, in both modes."""
from typing import NamedTuple

import numpy as np
import pytest

import ascendc as asc
from ascendc.binaries import _arg_key


class Coef(NamedTuple):
    a: int
    b: int


@asc.jit(kernel_type="MIX_AIC_1_2")
def affine_rows_kernel(out: asc.GlobalAddress, c):
    """Each AIV v writes c.a * v + c.b at out[v]; the AICs write nothing."""
    og = asc.GlobalTensor()
    og.set_global_buffer(out)
    if asc.ascend_is_aiv():
        v = asc.get_block_idx()
        og.set_value(v, c.a * v + c.b)


def _expect(block_dim, a, b):
    v = np.arange(2 * block_dim, dtype=np.int64)
    return v * np.int64(a) + np.int64(b)


@pytest.mark.parametrize("block_dim", [3, 8])
def test_field_types_changing_between_launches_get_their_own_specialisation(interpret,
                                                                           block_dim):
    wide = np.int64(2**40 + 7)          # truncated to int32 it would read 7
    # a launch of types seen before runs through the entry point its first launch compiled
    for c in (Coef(np.int32(3), np.int32(5)), Coef(wide, np.int64(-9)),
              Coef(np.int32(-4), np.int32(11)), Coef(-wide, np.int64(2))):
        out = np.full(2 * block_dim, -1, np.int64)
        affine_rows_kernel[block_dim](out, c, interpret=interpret)
        np.testing.assert_array_equal(out, _expect(block_dim, c.a, c.b))
    if not interpret:
        (binary,) = [b for b in affine_rows_kernel._cache.values() if hasattr(b, "_entries")]
        assert len(binary._entries) == 2    # one entry point per field typing, both used


def test_arg_key_tells_apart_what_numba_types_apart():
    assert _arg_key((1, 2.0, True)) == (int, float, bool)
    assert _arg_key((np.int32(1),)) != _arg_key((np.int64(1),))
    assert _arg_key((Coef(np.int32(1), np.int32(2)),)) == \
        ((Coef, (np.int32, np.int32)),)
    assert _arg_key(((1, 2), (1, 2.0))) == ((tuple, (int, int)), (tuple, (int, float)))
    assert _arg_key((2**63,)) is None           # Numba types it uint64
    assert _arg_key((-2**63 - 1,)) is None
    assert _arg_key((np.datetime64(1, "s"),)) is None
    assert _arg_key((object(),)) is None
    assert _arg_key(((1, object()),)) is None


def test_a_finished_mix_launch_keeps_no_device_buffer_alive(interpret):
    """The flattened arguments kept on a MIX launch for its instances are dropped when it ends:
    its object lives on in a reference cycle until the garbage collector runs (off here)."""
    import gc

    import rt
    rt.ensure_device()
    stream = rt.Stream()
    gc.collect()
    gc.disable()
    try:
        before = rt.memory_stats()["allocated_bytes.all.current"]
        out = rt.device_empty((16,), np.int64)
        affine_rows_kernel[8, stream](out, Coef(np.int32(2), np.int32(1)), interpret=interpret)
        stream.synchronize()
        np.testing.assert_array_equal(out.copy_to_host(), _expect(8, 2, 1))
        del out
        assert rt.memory_stats()["allocated_bytes.all.current"] == before
    finally:
        gc.enable()
