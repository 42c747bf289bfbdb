"""Cross-core flags counted natively: in an unchecked launch whose flags stay inside groups, the
primitives count sets (modes 1 and 2) and take waits with atomic operations, calling into the
launch (rt.crossflags) only to block; checked launches count in the launch as before. Both must
give the same ordering, the same results and the same deadlock reports, on real threads."""
import numpy as np
import pytest

import ascendc as asc
import rt
import rt.crossflags as CF
from ascendc.compiler.syncscope import sync_scope
from rt.futex import futex_available

import mix_kernels as K

GO, DONE, SIB = 1, 2, 3         # flag ids
MODE2 = 2                       # a global mode: as good as the literal 2


@asc.jit(kernel_type="MIX_AIC_1_2")
def pingpong_kernel(z: asc.GlobalAddress, rounds: int):
    """`rounds` times: the AIC sets GO (mode 2), each AIV writes the round into its word of the
    group, the two AIVs meet on SIB (mode 1) and each checks its sibling's word, then both set
    DONE (mode 2) and the AIC, once both have, adds the two words. Per group z holds the AIC's
    sum (2 * (1 + ... + rounds)) and each AIV's count of sibling words it found wrong. Scalar GM
    accesses are ordered as the hardware needs: a PIPE_ALL barrier before a set, waits on PIPE_S."""
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    if asc.ascend_is_aic():
        g = asc.get_block_idx()
        acc = 0
        for r in range(rounds):
            asc.pipe_barrier(asc.PipeID.PIPE_ALL)     # last round's scalar reads done
            asc.cross_core_set_flag(GO, MODE2, asc.PipeID.PIPE_FIX)
            asc.cross_core_wait_flag(DONE, MODE2, asc.PipeID.PIPE_S)    # scalar reads follow
            acc += zg.get_value(g * 8 + 1) + zg.get_value(g * 8 + 2)
        zg.set_value(g * 8, acc)
    else:
        g = asc.get_block_idx() // 2
        sub = asc.get_sub_block_idx()
        bad = 0
        for r in range(rounds):
            asc.cross_core_wait_flag(GO, 2, asc.PipeID.PIPE_S)
            zg.set_value(g * 8 + 1 + sub, r + 1)
            asc.pipe_barrier(asc.PipeID.PIPE_ALL)     # the scalar write done before MTE3's set
            asc.cross_core_set_flag(SIB, 1, asc.PipeID.PIPE_MTE3)
            asc.cross_core_wait_flag(SIB, 1, asc.PipeID.PIPE_S)
            if zg.get_value(g * 8 + 2 - sub) != r + 1:
                bad += 1
            asc.pipe_barrier(asc.PipeID.PIPE_ALL)
            asc.cross_core_set_flag(DONE, 2, asc.PipeID.PIPE_MTE3)
        zg.set_value(g * 8 + 3 + sub, bad)


def _pingpong(groups, rounds, interpret, checked):
    z = np.full(groups * 8, -1, np.int32)
    pingpong_kernel[groups](z, rounds, interpret=interpret, checked=checked)
    z = z.reshape(groups, 8)
    np.testing.assert_array_equal(z[:, 0], rounds * (rounds + 1))
    np.testing.assert_array_equal(z[:, 3:5], 0)


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("groups", [1, 5, 30])
def test_every_round_of_a_ping_pong_is_ordered(interpret, checked, groups):
    _pingpong(groups, 40 if interpret else 400, interpret, checked)


def _count_launch_calls(monkeypatch):
    calls = {"set": 0, "wait": 0, "block": 0}
    for name, key in (("set_flag", "set"), ("wait_flag", "wait"), ("wait_native", "block")):
        orig = getattr(CF.CrossCoreLaunch, name)

        def counted(self, *a, _orig=orig, _key=key, **k):
            calls[_key] += 1
            return _orig(self, *a, **k)
        monkeypatch.setattr(CF.CrossCoreLaunch, name, counted)
    return calls


def test_unchecked_flags_within_groups_are_counted_natively(monkeypatch):
    calls = _count_launch_calls(monkeypatch)
    _pingpong(3, 200, False, False)
    # every set and every wait that found its counter above 0 stayed in native code; only
    # waits that had to block reached the launch
    assert calls["set"] == 0 and calls["wait"] == 0
    assert calls["block"] <= 3 * 200 * 5
    calls.update(set=0, wait=0, block=0)
    _pingpong(3, 20, False, True)        # checked: the launch counts (limit, GM order)
    assert calls["set"] == 3 * 20 * 5 and calls["wait"] == 3 * 20 * 5 and calls["block"] == 0


def test_an_unchecked_wait_nothing_can_release_is_still_a_fault(interpret):
    with pytest.raises(rt.AclError) as ei:
        K.stuck_kernel[2](np.zeros(8, np.float32), interpret=interpret, checked=False)
    msg = str(ei.value)
    assert "cross-core deadlock: a wait must be released by a core that can still run" in msg
    assert "waits on cross_core_wait_flag(flag_id=1, mode_id=2) at " in msg
    assert "waits on cross_core_wait_flag(flag_id=3, mode_id=1) at " in msg


def test_an_unchecked_mode_1_set_by_the_aic_is_still_an_error(interpret):
    with pytest.raises(rt.AclError, match=r"AIC 0: asc.cross_core_set_flag: mode_id=1 must be "
                                          r"set by an AIV \(it syncs the AIVs of a group\), got "
                                          r"AIC 0 setting it"):
        aic_mode_1_kernel[1](np.zeros(8, np.float32), interpret=interpret, checked=False)


@asc.jit(kernel_type="MIX_AIC_1_2")
def aic_mode_1_kernel(x: asc.GlobalAddress):
    if asc.ascend_is_aic():
        asc.cross_core_set_flag(GO, 1, asc.PipeID.PIPE_FIX)


# ---- which launches synchronise across groups (the AST of the kernel) -------------------------

def _global_mode():
    asc.cross_core_set_flag(GO, MODE2, asc.PipeID.PIPE_FIX)


def _shadowed_mode(x):
    MODE2 = x
    asc.cross_core_set_flag(GO, MODE2, asc.PipeID.PIPE_FIX)


def _argument_mode(MODE2):
    asc.cross_core_set_flag(GO, MODE2, asc.PipeID.PIPE_FIX)


def _literal_mode_0():
    asc.cross_core_set_flag(GO, 0, asc.PipeID.PIPE_FIX)


def _attribute_mode():
    asc.cross_core_set_flag(GO, K.FREE, asc.PipeID.PIPE_FIX)       # 2


def _expression_mode():
    asc.cross_core_set_flag(GO, CF.PASSED + 2, asc.PipeID.PIPE_FIX)


def test_a_mode_named_by_a_global_int_is_that_mode():
    assert not sync_scope(_global_mode).across_groups
    assert not sync_scope(_attribute_mode).across_groups
    # a name the function binds itself, or an expression, could be any mode: across groups
    assert sync_scope(_shadowed_mode).across_groups
    assert sync_scope(_argument_mode).across_groups
    assert sync_scope(_expression_mode).across_groups
    assert sync_scope(_literal_mode_0).across_groups
    assert sync_scope(_global_mode).cross_core


@pytest.mark.parametrize("s,causal", [(256, False), (200, True)])
def test_unchecked_flash_attention_counts_natively_and_matches_numpy(s, causal):
    """The MIX FlashAttention forward and backward, unchecked (their flags counted natively),
    against the float64 references on a tile-multiple and a ragged causal shape."""
    from kernels.flash_attention import flash_attention_reference, flash_attention_with_stats
    from kernels.flash_attention_backward import (flash_attention_backward,
                                                  flash_attention_backward_reference)
    native = []
    orig = CF.CrossCoreLaunch.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        native.append(self.native)
    CF.CrossCoreLaunch.__init__ = init
    try:
        rng = np.random.default_rng(s)
        q, k, v, do = (rng.standard_normal((1, 2, s, 64)).astype(np.float32) for _ in range(4))
        o, mx, sm = flash_attention_with_stats(q, k, v, causal=causal, checked=False)
        grads = flash_attention_backward(do, q, k, v, o, mx, sm, causal=causal, checked=False)
    finally:
        CF.CrossCoreLaunch.__init__ = orig
    assert native == [True, True, True]     # the forward's launch, the backward's prep and fused
    np.testing.assert_allclose(o, flash_attention_reference(q, k, v, causal=causal)[0],
                               rtol=1e-4, atol=1e-5)
    for got, want in zip(grads, flash_attention_backward_reference(do, q, k, v, causal=causal)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- native blocking: futex sleeps (Linux) -----------------------------------------------------

def _keep_launches(monkeypatch):
    launches = []
    orig = CF.CrossCoreLaunch.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        launches.append(self)
    monkeypatch.setattr(CF.CrossCoreLaunch, "__init__", init)
    return launches


@pytest.mark.skipif(not futex_available(), reason="needs Linux futexes")
def test_unchecked_blocking_waits_sleep_on_futexes_without_python(monkeypatch):
    calls = _count_launch_calls(monkeypatch)
    launches = _keep_launches(monkeypatch)
    _pingpong(3, 300, False, False)
    (launch,) = launches
    sleeps, wakes, fallbacks = (int(launch.nat.glob[k]) for k in (1, 2, 3))
    # the AIVs wait for the AIC's GO on every round, so some waits find their counter at 0;
    # they sleep on futexes and setters wake them; a wait reaches the launch's Python side
    # only after sleeping FUTEX_SLICES slices (none of these is that long, bar a starved CPU)
    assert sleeps > 0 and wakes > 0 and wakes <= sleeps + 3 * 3
    assert calls["block"] == fallbacks and fallbacks * 10 <= sleeps
    assert calls["set"] == 0 and calls["wait"] == 0


def test_without_futexes_blocking_waits_block_in_the_launch(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_FUTEX", "0")
    calls = _count_launch_calls(monkeypatch)
    launches = _keep_launches(monkeypatch)
    _pingpong(3, 200, False, False)
    (launch,) = launches
    assert int(launch.nat.glob[1]) == 0 and int(launch.nat.glob[2]) == 0
    assert calls["block"] > 0 and calls["block"] == int(launch.nat.glob[3])
    assert calls["set"] == 0 and calls["wait"] == 0


@asc.jit(kernel_type="MIX_AIC_1_2")
def abort_kernel(x: asc.GlobalAddress, bad: int):
    """The AIC waits for GO, which nobody sets; AIV 0 of the group fails (a flag id out of
    range), which aborts the launch."""
    if asc.ascend_is_aic():
        asc.cross_core_wait_flag(GO, 2, asc.PipeID.PIPE_FIX)
    elif asc.get_sub_block_idx() == 0:
        asc.cross_core_set_flag(bad, 2, asc.PipeID.PIPE_MTE3)


@pytest.mark.skipif(not futex_available(), reason="needs Linux futexes")
def test_an_aborted_launch_wakes_a_core_asleep_on_its_futex(monkeypatch):
    launches = _keep_launches(monkeypatch)
    with pytest.raises(rt.AclError, match=r"asc.cross_core_set_flag: flag_id must be in \[0, "
                                          r"10\] on Atlas A2, got flag_id=11"):
        abort_kernel[1](np.zeros(8, np.float32), 11, checked=False)
    (launch,) = launches
    assert launch.broken and launch.nat.glob[0] == 1
    # the AIC ended its wait on the abort (the abort's wake, or the launch seen aborted before
    # sleeping), not after its futex slices in the launch's Python side
    assert int(launch.nat.glob[3]) == 0


def _pinned_slots():
    import os
    return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2


@pytest.mark.skipif(not futex_available() or not _pinned_slots(),
                    reason="needs Linux futexes, sched_setaffinity and 2 CPUs")
@pytest.mark.parametrize("lazy", ["1", "0"])
def test_pinned_groups_defer_their_wakes_until_the_setter_sleeps_or_ends(monkeypatch, lazy):
    import importlib
    from rt.crossnative import CTL_DEFER
    launch_mod = importlib.import_module("rt.launch")
    monkeypatch.setenv("ASCEND_EMU_LAZY_WAKE", lazy)
    launches = _keep_launches(monkeypatch)
    launch_mod.set_core_count(2)            # 2 slots, each pinned to its CPU
    try:
        _pingpong(5, 300, False, False)
    finally:
        launch_mod.set_core_count()
    (launch,) = launches
    sleeps, wakes, deferred, at_end = (int(launch.nat.glob[k]) for k in (1, 2, 4, 5))
    assert {int(i.ctl[CTL_DEFER]) for i in launch.instances} == {int(lazy)}
    # every wake a pinned set owed went through the setter's word, made when it slept or ended
    # (none left over); with ASCEND_EMU_LAZY_WAKE=0 every wake is made at once
    assert sleeps > 0 and wakes > 0
    assert deferred == (wakes + at_end if lazy == "1" else 0)
    assert not launch.nat.pend.any()


@pytest.mark.skipif(not futex_available(), reason="needs Linux futexes")
def test_a_launch_that_is_not_pinned_wakes_at_once(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_PIN_GROUPS", "0")
    launches = _keep_launches(monkeypatch)
    _pingpong(5, 100, False, False)
    (launch,) = launches
    assert int(launch.nat.glob[4]) == 0 and int(launch.nat.glob[5]) == 0
    assert not launch.nat.pend.any()
