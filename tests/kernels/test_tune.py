"""kernels.tune: ranking by simulated time, ties, skipped candidates with their reasons,
determinism; on fake run functions and on kernels/add.py's kernel (interpreted, cheap)."""
import os

import numpy as np
import pytest

import rt
from kernels.add import AddTiling, add
from kernels.tune import (TuneResult, best, format_ranking, npu_timeline, npu_timelines,
                          pipe_ratios, tune)


def test_ranks_by_time_and_breaks_ties_by_the_key():
    times = {"c": 3.0, "a": 1.0, "b": 1.0, "d": 0.5}
    res = tune(["c", "a", "b", "d"], times.__getitem__)
    assert [r.candidate for r in res] == ["d", "a", "b", "c"]      # a == b: by repr
    assert [r.rank for r in res] == [1, 2, 3, 4] and all(r.ok for r in res)
    assert res[0].us == 0.5 and best(res) == "d"
    res = tune(["b", "a"], times.__getitem__, key=lambda c: -ord(c))
    assert [r.candidate for r in res] == ["b", "a"]


def test_value_errors_skip_with_the_reason_other_errors_propagate():
    def run(c):
        if c == "bad":
            raise ValueError("bad: UB must hold the tiles, asked 9 bytes, got capacity 8")
        return {"x": 2.0, "y": 1.0}[c]

    calls = []
    res = tune(["x", "bad", "y", "x"], lambda c: calls.append(c) or run(c))
    assert calls == ["x", "bad", "y"]                               # duplicates run once
    assert [(r.candidate, r.rank) for r in res] == [("y", 1), ("x", 2), ("bad", None)]
    assert not res[-1].ok and "UB must hold the tiles" in res[-1].skipped
    res = tune(["x", "y"], run, validate=lambda c: c == "y" and int("no"))
    assert [r.candidate for r in res if r.ok] == ["x"]
    assert "invalid literal" in res[-1].skipped
    with pytest.raises(KeyError):
        tune(["zz"], run)
    assert best([TuneResult("q", skipped="why")]) is None


def test_format_ranking_marks_the_default_and_lists_skipped():
    res = tune([AddTiling(8, 1, 8, 8), AddTiling(8, 1, 8, 16), "bad"],
               lambda c: (_ for _ in ()).throw(ValueError("no fit")) if c == "bad"
               else float(c.tile))
    text = format_ranking(res, mark=AddTiling(8, 1, 8, 16), label="simulated X")
    lines = text.splitlines()
    assert "simulated X us" in lines[0]
    assert "tile=8" in lines[2] and "1.00x" in lines[2]
    assert "tile=16" in lines[3] and "2.00x" in lines[3] and lines[3].endswith("<- default")
    assert lines[-1] == "skipped  'bad': no fit"
    assert "was not among the candidates" in format_ranking(res, mark="other")
    assert "1 more ranked" in format_ranking(res, top=1)


def _add_run(x, y, interpret=True):
    def run(t):
        tl = npu_timeline(lambda: add(x, y, tiling=t, interpret=interpret), "add_kernel")
        return tl
    return run


def _ub_fits(t):
    need = 3 * 2 * t.tile * 4          # three double-buffered fp32 queues
    if need > rt.get_soc().ub_bytes:
        raise ValueError(f"AddTiling: UB must hold 3 x 2 tiles, asked {need} bytes, got "
                         f"capacity {rt.get_soc().ub_bytes}")


def test_add_kernel_tiles_ranked_by_simulated_time_deterministically():
    rt.ensure_device()
    n, cores = 8 * 2048, 8
    rng = np.random.default_rng(0)
    x, y = (rng.random(n, dtype=np.float32) for _ in range(2))
    cands = [AddTiling(n, cores, n // cores, t) for t in (64, 512, 2048, 16384)]
    res = tune(cands, _add_run(x, y), validate=_ub_fits)
    ranked = [r for r in res if r.ok]
    assert len(ranked) == 3 and [r.rank for r in ranked] == [1, 2, 3]
    assert [r.us for r in ranked] == sorted(r.us for r in ranked) and ranked[0].us > 0
    assert ranked[-1].candidate.tile == 64                 # 64-element tiles: overhead-bound
    assert ranked[0].cycles > 0 and "VECTOR" in ranked[0].pipes
    (skipped,) = [r for r in res if not r.ok]
    assert skipped.candidate.tile == 16384 and "UB must hold" in skipped.skipped
    again = tune(list(reversed(cands)), _add_run(x, y), validate=_ub_fits)
    assert [(r.candidate, r.us) for r in again] == [(r.candidate, r.us) for r in res]


@pytest.mark.parametrize("interpret", [True, False], ids=["interpret", "compiled"])
def test_a_block_too_long_for_the_npu_view_is_skipped_with_the_reason(monkeypatch, interpret):
    """A candidate whose blocks issue more instructions than the NPU view records (64-element
    tiles: 32 tiles per block) is skipped with the launch's message; the others are ranked. The
    launch's error is rt's synchronize error caused by an rt.NpuTraceLimitError."""
    rt.ensure_device()
    n, cores = 8 * 2048, 8
    x = y = np.ones(n, np.float32)
    cands = [AddTiling(n, cores, n // cores, t) for t in (64, 2048)]
    monkeypatch.setenv("ASCEND_EMU_NPU_TRACE_ROWS", "64")
    res = tune(cands, _add_run(x, y, interpret))
    assert [(r.candidate.tile, r.ok) for r in res] == [(2048, True), (64, False)]
    assert "must issue at most 64 instructions" in res[1].skipped
    assert "raise ASCEND_EMU_NPU_TRACE_ROWS" in res[1].skipped
    with pytest.raises(rt.AclError) as info:
        _add_run(x, y, interpret)(cands[0])
    lim = rt.NpuTraceLimitError.in_chain(info.value)
    assert lim is not None and lim.code == 507015 and (lim.rows, lim.issued) == (64, 512)
    with pytest.raises(KeyError):                       # other errors still propagate
        tune(cands, lambda t: {}[t])


def test_only_the_npu_view_limit_is_skipped_not_an_error_naming_it():
    """The tuner skips a launch by the limit's type, not by its text: another runtime error that
    happens to name ASCEND_EMU_NPU_TRACE_ROWS propagates."""
    def run(t):
        raise rt.AclError(507015, "kernel 'k' failed: bad (raise ASCEND_EMU_NPU_TRACE_ROWS)")
    with pytest.raises(rt.AclError, match="kernel 'k' failed"):
        tune(["a"], run)

    def run_limited(t):
        err = rt.AclError(507015, "synchronize: kernel 'k' failed")
        err.__cause__ = rt.NpuTraceLimitError(507015, "a block must issue at most 8", 0,
                                              rows=8, issued=9)
        raise err
    (r,) = tune(["a"], run_limited)
    assert not r.ok and r.skipped.startswith("synchronize: kernel 'k' failed")


def test_an_op_of_several_launches_is_ranked_by_their_sum_with_its_longest_launch_pipes():
    """`run` giving every launch's Timeline (npu_timelines): the time is their sum, the cycles
    too, the pipes those of the longest launch."""
    rt.ensure_device()
    n, cores = 8 * 2048, 8
    x = np.ones(n, np.float32)
    short, long_ = AddTiling(n, cores, n // cores, 2048), AddTiling(n, cores, n // cores, 64)

    def two_launches(t):
        return npu_timelines(lambda: (add(x, x, tiling=short, interpret=True),
                                      add(x, x, tiling=t, interpret=True)), "add_kernel")
    tls = two_launches(long_)
    assert len(tls) == 2 and tls[1].total_cycles > tls[0].total_cycles
    (r,) = tune([long_], two_launches)
    assert r.us == pytest.approx(tls[0].us + tls[1].us, rel=1e-12)
    assert r.cycles == tls[0].total_cycles + tls[1].total_cycles
    assert r.pipes == pipe_ratios(tls[1]) != pipe_ratios(tls[0])
    with pytest.raises(ValueError, match=r"must give at least one Timeline, got \[\]"):
        tune(["a"], lambda t: [])
    with pytest.raises(RuntimeError, match=r"npu_timelines: launch\(\) must launch a kernel named"):
        npu_timelines(lambda: None, "add_kernel")


def test_pipe_ratios_keep_a_mix_launchs_aic_and_aiv_pipes_apart():
    """A launch on AICs and AIVs: each pipe per kind, over the cores of that kind that ran it
    (the AICs' MTE2 is not averaged with the AIVs'); one kind of core: plain pipe names."""
    from rt.npu import Timeline
    busy = {0: {"MTE2": 50.0, "CUBE": 0.0}, 1: {"MTE2": 10.0, "VECTOR": 80.0},
            2: {"VECTOR": 40.0, "MTE2": 0.0}, 3: {"VECTOR": 0.0}}
    tl = Timeline("Ascend910B2", 1, 1e9, busy=busy, makespan=100.0,
                  core_kinds={0: "AIC", 1: "AIV", 2: "AIV", 3: "AIV"})
    assert pipe_ratios(tl) == {"AIC MTE2": 0.5, "AIV MTE2": 0.1, "AIV VECTOR": 0.6}
    assert TuneResult("c", 1.0, pipes=pipe_ratios(tl)).bound_pipe == "AIV VECTOR"
    tl.core_kinds = {0: "AIV", 1: "AIV", 2: "AIV", 3: "AIV"}
    assert pipe_ratios(tl) == {"MTE2": 0.3, "VECTOR": 0.6}


def test_a_candidates_timelines_are_not_kept_while_the_next_one_runs():
    """A Timeline holds every simulated instruction (gigabytes at the goal shapes): tune keeps
    only its numbers, so the previous candidate's Timelines are freed before the next run."""
    import gc
    import weakref
    from rt.npu import Timeline
    refs, alive_at_next = [], []

    def run(c):
        gc.collect()
        alive_at_next.append(sum(r() is not None for r in refs))
        tls = [Timeline("Ascend910B2", 1, 1e9, busy={0: {"MTE2": 1.0}}, makespan=10.0 * c)
               for _ in range(2)]
        refs.extend(weakref.ref(t) for t in tls)
        return tls if c % 2 else tls[0]
    res = tune([1, 2, 3], run)
    assert alive_at_next == [0, 0, 0]
    assert [r.candidate for r in res] == [1, 2, 3] and res[0].us == pytest.approx(0.02)


# ---- the default FlashAttention tiling is the tuner's choice for the main job's shape ----------

MAIN_SHAPE = dict(b=1, n=8, s=2048, d=64, dtype=np.float32)      # bench.flash_attention's default


def test_default_fa_tiling_is_the_measured_tuner_choice():
    """The cheap half: the rule of `flash_attention_tiling` picks, for the main job's shape, the
    tiling `tune` ranked first over `flash_attention_tiling_candidates` (measured, simulated
    Ascend910B2, over six of the candidates; the ranking is in flash_attention_tiling's
    docstring; ASCEND_EMU_TUNE_CHECK=1 ranks them all below). Simulated times are
    deterministic, so the pin is exact."""
    from kernels.flash_attention import (FlashAttentionTiling, flash_attention_tiling,
                                         flash_attention_tiling_candidates)
    s, d, dt = MAIN_SHAPE["s"], MAIN_SHAPE["d"], MAIN_SHAPE["dtype"]
    default = flash_attention_tiling(d, dt, s, s)
    assert default == FlashAttentionTiling(128, 512, 64)
    assert default in flash_attention_tiling_candidates(d, dt, s, s)


# (D, dtype, S) -> the tiling ranked first or within 1 % of the first there (simulated
# Ascend910B2; the rankings are in docs/performance.md)
RANKED_DEFAULTS = {
    (64, "float32", 1024): (128, 256, 64), (64, "float32", 4096): (128, 512, 64),
    (128, "float32", 1024): (96, 256, 32), (128, "float32", 4096): (96, 512, 32),
    (128, "bfloat16", 1024): (128, 256, 128), (128, "bfloat16", 2048): (128, 512, 128),
    (128, "bfloat16", 4096): (128, 1024, 128), (128, "float16", 1024): (128, 512, 128),
    (128, "float16", 2048): (128, 1024, 128), (128, "float16", 8192): (128, 1024, 128),
}


def test_default_fa_tiling_away_from_the_main_shape():
    """The rule's S2 block (S2 / SLOTS past SPLIT_S2 keys, S2 / (SLOTS / 2) for float16, up to
    the itemsize's cap) gives, at every shape ranked away from the main one, the tiling that
    ranked first or within 1 % of the first."""
    import ml_dtypes

    from kernels.flash_attention import FlashAttentionTiling, flash_attention_tiling
    dtypes = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
    got = {key: flash_attention_tiling(key[0], dtypes[key[1]], key[2], key[2])
           for key in RANKED_DEFAULTS}
    assert got == {key: FlashAttentionTiling(*t) for key, t in RANKED_DEFAULTS.items()}


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("ASCEND_EMU_TUNE_CHECK"),
                    reason="compiles 26 FlashAttention specialisations (~25 min cold, ~5 min "
                           "warm); set ASCEND_EMU_TUNE_CHECK=1 to run")
def test_default_fa_tiling_is_the_tuners_top_choice():
    """The full check: tune every candidate at the main job's shape (compiled, unchecked, like
    the bench) and compare the top with the default."""
    from kernels.flash_attention import (flash_attention_tiling, flash_attention_tiling_candidates,
                                         flash_attention_with_stats)
    rt.ensure_device()
    b, n, s, d, dt = (MAIN_SHAPE[k] for k in ("b", "n", "s", "d", "dtype"))
    q = np.random.default_rng(0).standard_normal((b, n, s, d)).astype(dt)
    res = tune(flash_attention_tiling_candidates(d, dt, s, s),
               lambda t: npu_timeline(lambda: flash_attention_with_stats(
                   q, q, q, tiling=t, interpret=False, checked=False), "flash_attention_kernel"))
    assert best(res) == flash_attention_tiling(d, dt, s, s), format_ranking(res)
