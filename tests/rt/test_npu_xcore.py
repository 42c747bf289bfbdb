"""rt.npu's replay of a MIX launch from its instances' own streams (`simulate(..., roles=...)`,
rt/npu/xcore.py) on synthetic streams: placement of groups on AICs and AIVs, the counting rules
of cross-core flag modes 0/1/2 and ib_set / ib_wait as timed dependencies (a wait starts at the
end of the set that completed its count plus `cross_core_flag_cycles`), sync_all over the
instances that call it, waves, and the errors. Every run is also checked against the plain
reference scan (tests/npu_reference.py, autouse fixture)."""
import pytest

from rt.npu import Instr, pipe_model, simulate

M = pipe_model("Ascend910B2")
LAT = M.cross_core_flag_cycles
ROLES = ("AIC", "AIV", "AIV")


def xset(b, flag, mode, pipe="SCALAR"):
    return Instr(b, pipe, "cross_core_set_flag", cross=("set", flag, mode))


def xwait(b, flag, mode=2, pipe="SCALAR"):
    return Instr(b, pipe, "cross_core_wait_flag", cross=("wait", flag, mode))


def work(b, name="work", pipe="SCALAR"):
    return Instr(b, pipe, name)


def at(tl, name, core):
    """(start, end) of the records of `name` on `core`, in order."""
    return [(r[3], r[4]) for r in tl.records if r[0].name == name and r[1] == core]


def test_groups_go_to_one_aic_and_its_two_aivs():
    blocks = [[work(i)] for i in range(6)]
    tl = simulate(blocks, M, 24, roles=ROLES)
    assert tl.view == "streams" and tl.mix and tl.roles == ROLES
    # AICs are cores 0..23, AIVs 24..71; group g: AIC g, AIVs 24 + 2g, 25 + 2g
    assert [(r[0].block, r[1]) for r in tl.records] == [(0, 0), (3, 1), (1, 24), (2, 25),
                                                        (4, 26), (5, 27)]
    assert tl.core_name(27) == "AIV 3" and tl.makespan == 1


def test_mode_2_aic_set_releases_each_aiv_and_the_aic_waits_for_both_aivs():
    aic = [work(0), work(0), xset(0, 1, 2), xwait(0, 2)]
    aiv0 = [xwait(1, 1), xset(1, 2, 2)]
    aiv1 = [xwait(2, 1)] + [work(2)] * 5 + [xset(2, 2, 2)]
    tl = simulate([aic, aiv0, aiv1], M, 1, roles=ROLES)
    # the AIC's set ends at 3; each AIV's wait starts at 3 + LAT
    assert at(tl, "cross_core_wait_flag", 1) == [(3 + LAT, 4 + LAT)]
    assert at(tl, "cross_core_wait_flag", 2) == [(3 + LAT, 4 + LAT)]
    # AIV 0 sets at 4 + LAT; AIV 1 after 5 more cycles: ends 10 + LAT; the AIC's wait needs both
    assert at(tl, "cross_core_set_flag", 2) == [(9 + LAT, 10 + LAT)]
    assert at(tl, "cross_core_wait_flag", 0) == [(10 + 2 * LAT, 11 + 2 * LAT)]
    w = next(n for n, r in enumerate(tl.records) if r[0].name == "cross_core_wait_flag" and
             r[1] == 0)
    setters = sorted(tl.records[s][1] for s, ww in tl.flows if ww == w)
    assert setters == [1, 2]                          # an arrow from each AIV's set
    assert tl.makespan == 11 + 2 * LAT


def test_a_set_waits_for_its_pipes_copies_and_the_wait_holds_its_pipe():
    copy = Instr(0, "MTE3", "data_copy", bytes=1024, path="UB->GM", gm=(0, 1024))
    aiv = [copy, xset(1, 3, 2, pipe="MTE3")]
    aic = [xwait(0, 3, pipe="MTE2"), Instr(0, "MTE2", "data_copy", bytes=1024, path="GM->L1",
                                           gm=(0, 1024))]
    tl = simulate([aic, aiv], M, 1, roles=("AIC", "AIV"))
    copy_end = next(r[4] for r in tl.records if r[0] is copy)
    (s, e), = at(tl, "cross_core_set_flag", 1)
    assert s == copy_end and e == copy_end + 1
    (ws, we), = at(tl, "cross_core_wait_flag", 0)
    assert ws == e + LAT
    load = next(r for r in tl.records if r[0].path == "GM->L1")
    assert load[3] == we                              # the copy queued behind the wait


def test_mode_1_releases_both_aivs_once_both_have_set():
    aivs = [[xset(1, 4, 1), xwait(1, 4, 1)], [work(2)] * 9 + [xset(2, 4, 1), xwait(2, 4, 1)]]
    tl = simulate([[work(0)]] + aivs, M, 1, roles=ROLES)
    # AIV 1's set ends at 10: both waits start at 10 + LAT
    assert at(tl, "cross_core_wait_flag", 1) == [(10 + LAT, 11 + LAT)]
    assert at(tl, "cross_core_wait_flag", 2) == [(10 + LAT, 11 + LAT)]


def test_mode_0_is_a_barrier_over_every_core_of_the_setters_kind():
    groups = 3
    blocks = []
    for g in range(groups):
        blocks += [[work(3 * g)]]
        blocks += [[work(3 * g + 1)] * (1 + 4 * g + s) + [xset(3 * g + 1 + s, 5, 0),
                                                          xwait(3 * g + 1 + s, 5, 0)]
                   for s in range(2)]
    tl = simulate(blocks, M, 24, roles=ROLES)
    last = max(e for c in range(24, 30) for _, e in at(tl, "cross_core_set_flag", c))
    assert last == (1 + 4 * 2 + 1) + 1               # the slowest AIV: 10 work, then its set
    starts = {s for c in range(24, 30) for s, _ in at(tl, "cross_core_wait_flag", c)}
    assert starts == {last + LAT}


def test_ib_set_and_ib_wait_hand_a_word_between_cores_and_a_set_waits_until_taken():
    def ib(b, kind, blk):
        return Instr(b, "SCALAR", kind, cross=(kind, blk, 0))
    # core 0 sets word 0 twice; core 1 takes it after 20 cycles of work, then again
    blocks = [[ib(0, "ib_set", 0), ib(0, "ib_set", 0)],
              [work(1)] * 20 + [ib(1, "ib_wait", 0), ib(1, "ib_wait", 0)]]
    tl = simulate(blocks, M, 48, roles=("AIV",))
    assert tl.view == "streams" and not tl.mix
    # the first wait: the set's end + LAT (later than the 20 cycles of work); the second set
    # starts once that wait took the word, the second wait LAT after it
    assert at(tl, "ib_set", 0) == [(0, 1), (1 + LAT, 2 + LAT)]
    assert at(tl, "ib_wait", 1) == [(1 + LAT, 2 + LAT), (2 + 2 * LAT, 3 + 2 * LAT)]
    assert tl.makespan == 3 + 2 * LAT


def test_more_groups_than_ai_cores_run_in_waves_with_their_flags():
    blocks = []
    for g in range(3):
        blocks += [[xset(3 * g, 1, 2)], [xwait(3 * g + 1, 1)], [xwait(3 * g + 2, 1)]]
    tl = simulate(blocks, M, 2, roles=ROLES)
    # groups 0 and 1 first (set ends at 1, waits 1 + LAT .. 2 + LAT), group 2 on slot 0 after
    assert at(tl, "cross_core_set_flag", 0) == [(0, 1), (2 + LAT, 3 + LAT)]
    assert tl.makespan == 4 + 2 * LAT


def test_sync_all_counts_only_the_instances_that_call_it():
    sync = Instr(0, "SCALAR", "sync_all", barrier="SYNC_ALL")
    blocks = [[work(0)], [sync, work(1)], [work(2)] * 5 + [sync, work(2)]]
    tl = simulate(blocks, M, 1, roles=ROLES)
    # the AIVs leave together sync_all_cycles after the later arrival (cycle 5)
    assert at(tl, "work", 1) == [(5 + M.sync_all_cycles, 6 + M.sync_all_cycles)]


def test_a_wait_no_set_releases_is_a_deadlock_naming_it():
    blocks = [[xwait(0, 7, 2)], [work(1)], [work(2)]]
    with pytest.raises(ValueError, match=r"simulate: every wait_flag must have a matching "
                                         r"set_flag, got a deadlock at cross_core_wait_flag"
                                         r"\(flag_id=7, mode_id=2, SCALAR\) of block 0"):
        simulate(blocks, M, 1, roles=ROLES)


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match=r"simulate: roles must be one AIC and its AIVs, or one "
                                         r"core kind, got roles=\('AIV', 'AIV'\)"):
        simulate([[work(0)], [work(1)]], M, 1, roles=("AIV", "AIV"))
    with pytest.raises(ValueError, match=r"simulate: the streams must be whole groups of "
                                         r"roles=\('AIC', 'AIV', 'AIV'\), got 4 streams"):
        simulate([[work(0)]] * 4, M, 1, roles=ROLES)
    with pytest.raises(ValueError, match=r"need every group resident at once, got 3 groups on "
                                         r"n_cores=2"):
        simulate([[xset(0, 1, 0)]] * 3, M, 2, roles=("AIC",))
    with pytest.raises(ValueError, match=r"simulate: cross-core flags \(Instr.cross\) need the "
                                         r"launch's roles"):
        simulate([[xset(0, 1, 2)]], M, 1)


def test_a_counter_past_16_pending_sets_is_the_executions_error():
    # the AIC sets flag 3 seventeen times before either AIV takes one: the 17th count of
    # AIV 0 is past CrossCoreSetFlag's limit (the AIVs wait only after long work)
    aic = [xset(0, 3, 2)] * 17
    aivs = [[work(b)] * 50 + [xwait(b, 3)] * 17 for b in (1, 2)]
    with pytest.raises(ValueError, match=r"simulate: asc.cross_core_set_flag: a flag's counter "
                                         r"must hold at most 16 pending sets \(CrossCoreSetFlag's "
                                         r"limit\), got flag_id=3 of AIV 0 \(group 0, sub-block "
                                         r"0\) at 17"):
        simulate([aic] + aivs, M, 1, roles=ROLES)
    # 16 pending, then taken one by one: allowed, and counts taken free the counter again
    aic = [xset(0, 3, 2)] * 16 + [work(0)] * 5000 + [xset(0, 3, 2)] * 16
    aivs = [[work(b)] * 50 + [xwait(b, 3)] * 32 for b in (1, 2)]
    tl = simulate([aic] + aivs, M, 1, roles=ROLES)
    waits = at(tl, "cross_core_wait_flag", 1)
    assert len(waits) == 32 and waits[15][1] < 5000 < waits[16][0]


def test_a_mix_launch_pays_the_mix_head_cost_by_the_aics_it_uses():
    us = M.clock_hz * 1e-6
    blocks = [[work(b)] for b in range(18)]              # 6 groups of AIC + 2 AIVs
    tl = simulate(blocks, M, 24, roles=ROLES)
    # headCost 1 + 7 x usedAIC / coreNum us: 6 of the 910B2's 24 AICs
    assert tl.launch_cycles == round(us) + round(7 * us * 6 / 24)
    assert tl.total_cycles == tl.makespan + tl.launch_cycles
    # more groups than AI Cores: usedAIC is every AIC
    tl = simulate([[work(b)] for b in range(3 * 30)], M, 24, roles=ROLES)
    assert tl.launch_cycles == round(us) + round(7 * us)
    # a launch of one core kind (cross-core flags, not MIX) pays only the launch overhead
    tl = simulate([[work(b)] for b in range(4)], M, 48, roles=("AIV",))
    assert tl.launch_cycles == M.launch_overhead_cycles == round(us)


def test_ib_words_are_keyed_by_their_gm_word_when_recorded_with_it():
    def ib(b, kind, word):
        return Instr(b, "SCALAR", kind, cross=(kind, 0, 0), gm=(word, word + 4))
    # one (block_idx, event_id) in one workspace: the wait takes the set
    tl = simulate([[ib(0, "ib_set", 4096)], [ib(1, "ib_wait", 4096)]], M, 48, roles=("AIV",))
    assert at(tl, "ib_wait", 1) == [(1 + LAT, 2 + LAT)]
    # the same pair in another workspace is another word: nothing sets it
    with pytest.raises(ValueError, match=r"simulate: every wait_flag must have a matching "
                                         r"set_flag, got a deadlock at ib_wait\(block_idx=0, "
                                         r"event_id=0\) of block 1"):
        simulate([[ib(0, "ib_set", 4096)], [ib(1, "ib_wait", 8192)]], M, 48, roles=("AIV",))


def test_mode_3_hands_a_count_to_one_named_core_per_sender():
    """The point-to-point hand-offs of a served Matmul (ascendc/adv/kfc.py): a set names the
    slot of the core it reaches, a wait the slot of the core it waits for."""
    aiv0 = [xset(1, 0, 3), xwait(1, 0, 3)]
    aiv1 = [work(2)] * 4 + [xset(2, 0, 3), xwait(2, 0, 3)]
    aic = [xwait(0, 1, 3), work(0, "mmad", "CUBE"), xset(0, 1, 3, "FIXPIPE"),
           xwait(0, 2, 3), xset(0, 2, 3, "FIXPIPE")]
    tl = simulate([aic, aiv0, aiv1], M, 1, roles=ROLES)
    assert at(tl, "cross_core_wait_flag", 0) == [(1 + LAT, 2 + LAT), (5 + LAT, 6 + LAT)]
    # AIV 0's answer: after the AIC's mmad and its set on FIXPIPE
    (s0, e0), (s1, e1) = at(tl, "cross_core_set_flag", 0)
    assert at(tl, "cross_core_wait_flag", 1) == [(e0 + LAT, e0 + LAT + 1)]
    assert at(tl, "cross_core_wait_flag", 2) == [(e1 + LAT, e1 + LAT + 1)]
    names = sorted((tl.core_name(tl.records[s][1]), tl.core_name(tl.records[w][1]))
                   for s, w in tl.flows if tl.records[s][0].cross)
    assert names == [("AIC 0", "AIV 0"), ("AIC 0", "AIV 1"), ("AIV 0", "AIC 0"),
                     ("AIV 1", "AIC 0")]
