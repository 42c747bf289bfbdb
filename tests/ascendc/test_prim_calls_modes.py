"""Both link modes of compiled kernels (docs/compile-time.md): the larger primitives called
(the default) and everything inlined (ASCEND_EMU_PRIM_CALLS=0, the linking before calls, kept
to compare compile and run times against and as a fallback).

- A call of more than 30 arguments is compiled by CPython as `f(*args)`; Numba's closure
  inliner rejects it, so such helpers (and such a kernel inside `_run`) are called instead of
  inlined (codegen.call_spreads_args). FlashAttention's AIV pipeline takes 34.
- The disk cache keys every compiled entry by the link mode (numba_link.link_mode): the two
  modes give different object code for the same source, so processes in different modes keep
  separate entries.
"""
import numpy as np
import pytest
from numba import types
from numba.core import config

import ascendc as asc
from ascendc.compiler import codegen
from ascendc.lang import numba_link, prims
from mix_kernels import TILE, _scale_to

MODES = ("1", "0")


@asc.jit
def _scale_by_sum(dst, src, q_in, q_out, n, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11,
                  c12, c13, c14, c15, c16, c17, c18, c19, c20, c21, c22, c23, c24, c25, c26):
    """dst[:n] = src[:n] * (c0 + ... + c26) through UB (mix_kernels' `_scale_to`): 32
    parameters (33 with the core context), a call CPython compiles as f(*args)."""
    s = (c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11 + c12 + c13 + c14 + c15 +
         c16 + c17 + c18 + c19 + c20 + c21 + c22 + c23 + c24 + c25 + c26)
    _scale_to(dst, src, q_in, q_out, s, n)


@asc.jit(kernel_type="MIX_AIC_1_2")
def wide_call_kernel(x: asc.GlobalAddress, ws: asc.GlobalAddress, z: asc.GlobalAddress):
    """Each AIV v: ws[v] = x[v] * (0 + 1 + ... + 26) = 351 x[v] (the wide helper), then
    z[v] = 2 x[v] (`_scale_to` called directly: a narrow helper, inlined when everything is);
    the AIC of its group waits for both AIVs' flag. The set-up of mix_kernels' peer_sum_kernel."""
    if asc.ascend_is_aiv():
        v = asc.get_block_idx()
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x)
        wg = asc.GlobalTensor()
        wg.set_global_buffer(ws)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z)
        pipe = asc.TPipe()
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(qi, 1, TILE * 4)
        pipe.init_buffer(qo, 1, TILE * 4)
        _scale_by_sum(wg[v * TILE:], xg[v * TILE:], qi, qo, TILE, 0.0, 1.0, 2.0, 3.0, 4.0,
                      5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0,
                      18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0)
        asc.cross_core_set_flag(1, 2, asc.PipeID.PIPE_MTE3)
        _scale_to(zg[v * TILE:], xg[v * TILE:], qi, qo, 2.0, TILE)
    else:
        asc.cross_core_wait_flag(1, 2, asc.PipeID.PIPE_MTE2)


@asc.jit
def wide_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, c0: float, c1: float,
                c2: float, c3: float, c4: float, c5: float, c6: float, c7: float, c8: float,
                c9: float, c10: float, c11: float, c12: float, c13: float, c14: float,
                c15: float, c16: float, c17: float, c18: float, c19: float, c20: float,
                c21: float, c22: float, c23: float, c24: float, c25: float, c26: float,
                c27: float):
    """z = x * (c0 + ... + c27), n elements per block, tile by tile through mix_kernels'
    `_scale_to`: a kernel of 31 parameters (32 with the core context), whose call inside
    `_run` CPython compiles as f(*args)."""
    s = (c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11 + c12 + c13 + c14 + c15 +
         c16 + c17 + c18 + c19 + c20 + c21 + c22 + c23 + c24 + c25 + c26 + c27)
    base = asc.get_block_idx() * n
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + base, n)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, TILE * 4)
    pipe.init_buffer(qo, 1, TILE * 4)
    for t in range(n // TILE):
        _scale_to(zg[t * TILE:], xg[t * TILE:], qi, qo, s, TILE)


def test_cpython_spreads_calls_of_more_than_30_arguments():
    assert not codegen.call_spreads_args(30)
    assert codegen.call_spreads_args(31)
    assert codegen.call_spreads_args(35)


@pytest.fixture(params=MODES, ids=("prim_calls", "inlined"))
def link(request, monkeypatch, tmp_path):
    """A link mode, with the kernels below compiled afresh in it (their in-memory binaries
    dropped, an empty kernel cache directory)."""
    monkeypatch.setenv("ASCEND_EMU_PRIM_CALLS", request.param)
    monkeypatch.setenv("ASCENDC_CACHE_DIR", str(tmp_path))
    for k in (wide_call_kernel, wide_kernel):
        monkeypatch.setattr(k, "_cache", {})
    return request.param


@pytest.mark.parametrize("interpret", [False, True], ids=("compiled", "interpret"))
def test_a_mix_kernel_calling_a_helper_of_33_arguments_runs_in_both_link_modes(link, interpret):
    blocks = 2
    x = np.random.default_rng(1).standard_normal(2 * blocks * TILE).astype(np.float32)
    ws = np.zeros_like(x)
    z = np.zeros_like(x)
    wide_call_kernel[blocks](x, ws, z, interpret=interpret)
    np.testing.assert_allclose(ws, 351 * x, rtol=1e-6)
    np.testing.assert_allclose(z, 2 * x, rtol=1e-6)


@pytest.mark.parametrize("interpret", [False, True], ids=("compiled", "interpret"))
def test_a_kernel_of_31_parameters_runs_in_both_link_modes(link, interpret):
    n, blocks = 3 * TILE, 2
    x = np.random.default_rng(2).standard_normal(n * blocks).astype(np.float32)
    z = np.zeros_like(x)
    cs = [0.5 * i for i in range(28)]
    wide_kernel[blocks](x, z, n, *cs, interpret=interpret)
    np.testing.assert_allclose(z, x * np.float32(sum(cs)), rtol=1e-6)


def test_only_helpers_with_spread_calls_leave_inlining(link):
    sig = (("GA", "float32"), ("GA", "float32"), ("GA", "float32"))
    src = codegen.kernel_module(wide_call_kernel, {}, sig)
    called = "@njit(nogil=True, cache=True)\ndef _h0__scale_by_sum("
    assert called in src, src[:2000]        # 33 arguments: called in both modes
    narrow = "def _h1__scale_to("                # 6 arguments, its own and the kernel's calls
    assert src.count(narrow) == 1, src[:2000]
    inlined = "@njit(nogil=True, cache=True, inline='always')\n" + narrow
    assert (inlined in src) == (link == "0")   # inlined only when everything is


def test_cache_keys_carry_the_link_mode(monkeypatch):
    cg = prims.que_deque.targetctx.codegen()
    sig = (types.int64,)
    for cache in (prims.que_deque._cache, numba_link.CheckedFunctionCache(_plain)):
        keys = {}
        for mode in MODES:
            monkeypatch.setenv("ASCEND_EMU_PRIM_CALLS", mode)
            keys[mode] = cache._index_key(sig, cg)
        on, off = keys["1"], keys["0"]
        assert on[0] == off[0] and on[2] == off[2]     # same signature and code
        assert on[1][-1] == "calls" and off[1][-1] == "inlined"
        assert on[1][:-1] == off[1][:-1]


def _plain(x):
    return x + 1


def test_processes_in_the_two_modes_keep_separate_cache_entries(monkeypatch, tmp_path):
    """The same function compiled in each mode: two entries in its index; a fresh dispatcher
    (as in a new process) loads the entry of its own mode, never the other's."""
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))

    def fresh():
        return numba_link.cached_njit()(_plain)

    def run(mode):
        monkeypatch.setenv("ASCEND_EMU_PRIM_CALLS", mode)
        f = fresh()
        assert f(41) == 42
        return sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values())

    assert run("1") == (0, 1)       # compiled, saved
    assert run("0") == (0, 1)       # the other mode: not the first entry, compiled, saved
    assert run("1") == (1, 0)
    assert run("0") == (1, 0)
    index = fresh()._cache._cache_file._load_index()
    modes = sorted(key[1][-1] for key in index)
    assert modes == ["calls", "inlined"]
