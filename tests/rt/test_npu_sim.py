"""rt.npu's pipe simulator on synthetic instruction lists (docs/design.md): costs, flags,
bandwidth sharing, waves and determinism, asserted exactly where the model is arithmetic."""
import pytest

from rt.npu import Instr, pipe_model, simulate

M = pipe_model("Ascend910B2")


def copy(b=0, nbytes=2048, path="GM->UB", pipe="MTE2"):
    return Instr(b, pipe, "data_copy", bytes=nbytes, path=path)


def rec(tl, name):
    return [r for r in tl.records if r[0].name == name]


def test_a_copy_costs_issue_plus_latency_plus_bytes_over_bandwidth():
    tl = simulate([[copy()]], M, 1)
    (_, core, pipe, start, end), = tl.records
    assert (core, pipe, start) == (0, "MTE2", M.scalar_issue_cycles)
    bw = M.dma_bytes_per_cycle["GM->UB"]
    assert end == pytest.approx(1 + M.dma_latency["GM->UB"] + 2048 / bw)
    assert tl.total_cycles == pytest.approx(end + M.launch_overhead_cycles)
    assert tl.us == pytest.approx(tl.total_cycles / 1.8e9 * 1e6)


def test_vector_cost_is_head_plus_slope_per_repeat_and_head_is_hidden_back_to_back():
    add = Instr(0, "VECTOR", "add", bytes=2048, repeats=8)
    tl = simulate([[add, add]], M, 1)
    (_, _, _, s0, e0), (_, _, _, s1, e1) = tl.records
    assert e0 - s0 == 10 + 2 * 8                  # vadd: head 10, 2 cycles per repeat
    assert (s1, e1 - s1) == (e0, 2 * 8)           # issued back to back: no head


def test_wait_flag_with_no_matching_work_before_it_stalls_its_pipe():
    key = ("MTE2", "VECTOR", 0)
    block = [Instr(0, "VECTOR", "wait_flag", wait_flag=key),
             Instr(0, "VECTOR", "add", bytes=2048, repeats=8),
             copy(), Instr(0, "MTE2", "set_flag", set_flag=key)]
    tl = simulate([block], M, 1)
    (_, _, _, _, set_end), = rec(tl, "set_flag")
    (_, _, _, wait_start, wait_end), = rec(tl, "wait_flag")
    (_, _, _, add_start, _), = rec(tl, "add")
    assert wait_start == set_end and add_start == wait_end == set_end + M.flag_latency_cycles
    # without the wait the add runs at once, in parallel with the copy
    free = simulate([block[1:3]], M, 1)
    assert rec(free, "add")[0][3] == M.scalar_issue_cycles


def test_a_wait_that_never_gets_its_set_is_a_deadlock():
    block = [Instr(0, "VECTOR", "wait_flag", wait_flag=("MTE2", "VECTOR", 3), src="k.py:7")]
    with pytest.raises(ValueError, match=r"simulate: every wait_flag must have a matching "
                                         r"set_flag, got a deadlock at wait_flag\(MTE2->VECTOR, "
                                         r"id=3\) of block 0 at k.py:7"):
        simulate([block], M, 1)


def test_flags_match_first_in_first_out():
    key = ("MTE2", "VECTOR", 0)
    block = [copy(), Instr(0, "MTE2", "set_flag", set_flag=key), copy(nbytes=65536),
             Instr(0, "MTE2", "set_flag", set_flag=key),
             Instr(0, "VECTOR", "wait_flag", wait_flag=key),
             Instr(0, "VECTOR", "wait_flag", wait_flag=key)]
    tl = simulate([block], M, 1)
    sets, waits = rec(tl, "set_flag"), rec(tl, "wait_flag")
    assert [w[3] for w in waits] == [sets[0][4], sets[1][4]]


def test_a_bandwidth_bound_kernel_scales_with_bytes():
    kib = [64, 128, 192]
    t = [simulate([[copy(nbytes=k << 10) for _ in range(8)]], M, 1).makespan for k in kib]
    slope = 8 * 65536 / M.dma_bytes_per_cycle["GM->UB"]     # cycles per extra 64 KiB per copy
    assert t[1] - t[0] == pytest.approx(slope) and t[2] - t[1] == pytest.approx(slope)
    assert 1.8 < t[1] / t[0] < 2                  # linear in bytes plus the fixed start-ups


def test_cores_share_hbm_fairly():
    n = M.aiv_cores                               # 48 x 58.6 B/cycle > 889 B/cycle of HBM
    nbytes = 1 << 20
    tl = simulate([[copy(b, nbytes)] for b in range(n)], M, n)
    share = M.hbm_bytes_per_cycle / n
    assert share < M.dma_bytes_per_cycle["GM->UB"]
    for _, _, _, start, end in tl.records:
        assert end - start == pytest.approx(M.dma_latency["GM->UB"] + nbytes / share)
    alone = simulate([[copy(0, nbytes)]], M, n).makespan
    assert tl.makespan > 3 * alone              # 58.6 / (889 / 48) = 3.2x slower streams


def test_more_blocks_than_cores_run_in_waves():
    t = {b: simulate([[copy(i)] for i in range(b)], M, 4).makespan for b in (1, 4, 5, 8, 9)}
    assert t[1] == t[4] and t[5] == t[8] and t[5] == pytest.approx(2 * t[4]) and \
        t[9] == pytest.approx(3 * t[4])


def test_pipe_barrier_all_drains_the_core_before_the_scalar_unit_goes_on():
    block = [copy(), Instr(0, "SCALAR", "pipe_barrier", barrier="ALL"),
             Instr(0, "VECTOR", "add", bytes=256, repeats=1)]
    tl = simulate([block], M, 1)
    assert rec(tl, "pipe_barrier")[0][3] == rec(tl, "data_copy")[0][4]
    assert rec(tl, "add")[0][3] > rec(tl, "pipe_barrier")[0][4]


def test_same_inputs_give_identical_cycles():
    def blocks():
        key = ("MTE2", "VECTOR", 0)
        return [[copy(b, 4096 * (b + 1)), Instr(b, "MTE2", "set_flag", set_flag=key),
                 Instr(b, "VECTOR", "wait_flag", wait_flag=key),
                 Instr(b, "VECTOR", "exp", bytes=4096, repeats=16),
                 copy(b, 4096, "UB->GM", "MTE3")] for b in range(60)]
    a, b = simulate(blocks(), M, 48), simulate(blocks(), M, 48)
    assert a.total_cycles == b.total_cycles
    assert [r[1:] for r in a.records] == [r[1:] for r in b.records]
    assert a.busy == b.busy


def test_errors_name_the_bad_argument():
    with pytest.raises(ValueError, match="simulate: n_cores must be >= 1, got n_cores=0"):
        simulate([], M, 0)
    with pytest.raises(ValueError, match="simulate: pipe must be one of"):
        simulate([[Instr(0, "V", "add")]], M, 1)


# --- the model's behaviours: waves, stalls, bounds, the AIC/AIV split, sync_all, plots ----------

BW = M.dma_bytes_per_cycle
XLAT = M.cross_core_flag_cycles


def flag(b, pipe, kind, key):
    """A set_flag (on the key's source pipe) or wait_flag (on its destination pipe)."""
    return Instr(b, pipe, kind, **{kind: key})


def fix_out(b, lo, nbytes=65536):
    return Instr(b, "FIXPIPE", "fixpipe", bytes=nbytes, path="L0C->GM", gm=(lo, lo + nbytes))


def gm_read(b, lo, nbytes=4096, path="GM->UB"):
    return Instr(b, "MTE2", "data_copy", bytes=nbytes, path=path, gm=(lo, lo + nbytes))


def one(tl, name):
    (r,) = rec(tl, name)
    return r


def test_twice_the_cores_in_blocks_run_in_two_waves_exactly():
    nbytes = 8192
    alone = M.scalar_issue_cycles + M.dma_latency["GM->UB"] + nbytes / BW["GM->UB"]
    t1 = simulate([[copy(b, nbytes)] for b in range(4)], M, 4)
    t2 = simulate([[copy(b, nbytes)] for b in range(8)], M, 4)
    assert t1.makespan == pytest.approx(alone, rel=1e-12)       # 4 x 58.6 B/cycle < HBM
    assert t2.makespan == pytest.approx(2 * alone, rel=1e-12)
    second = sorted(r[3] for r in t2.records)[4:]               # wave 2 starts as wave 1 ends
    assert second == pytest.approx([alone + M.scalar_issue_cycles] * 4, rel=1e-12)
    assert sorted({r[1] for r in t2.records}) == [0, 1, 2, 3]


def test_mix_blocks_run_in_waves_of_ai_cores():
    def block(b):
        return [fix_out(b, b << 20), gm_read(b, b << 20)]
    t1 = simulate([block(b) for b in range(2)], M, 2)
    t2 = simulate([block(b) for b in range(4)], M, 2)
    assert t1.mix and t2.mix
    assert t2.makespan == pytest.approx(2 * t1.makespan, rel=1e-12)
    per_core = {}
    for ins, core, _, _, _ in t2.records:
        per_core.setdefault(core, set()).add(ins.block)
    assert per_core == {0: {0, 2}, 1: {1, 3}, 2: {0, 2}, 3: {1, 3}}   # AIC k with AIV k


def test_a_wait_flag_stalls_vector_until_the_long_copy_and_its_set_are_done():
    key = ("MTE2", "VECTOR", 0)
    block = [copy(0, 1 << 20), flag(0, "MTE2", "set_flag", key),
             flag(0, "VECTOR", "wait_flag", key), Instr(0, "VECTOR", "add", bytes=256, repeats=1)]
    tl = simulate([block], M, 1)
    copy_end = one(tl, "data_copy")[4]
    assert copy_end == pytest.approx(1 + M.dma_latency["GM->UB"] + (1 << 20) / BW["GM->UB"])
    assert one(tl, "wait_flag")[3] == copy_end + M.flag_latency_cycles      # after the set
    assert one(tl, "add")[3] == copy_end + 2 * M.flag_latency_cycles
    assert all(r[3] >= copy_end for r in tl.records if r[2] == "VECTOR")


def test_a_scalar_loop_makes_scalar_the_busiest_pipe():
    from rt.npu import pipe_busy_ratios
    block = [copy(0, 4096)]
    for _ in range(2000):                         # loop bookkeeping: 2000 scalar instructions
        block.append(Instr(0, "SCALAR", "get_value"))
    block += [Instr(0, "VECTOR", "adds", bytes=4096, repeats=16), copy(0, 4096, "UB->GM", "MTE3")]
    tl = simulate([block], M, 1)
    ratios = pipe_busy_ratios(tl)
    assert list(ratios) == ["AIV"]
    r = ratios["AIV"]
    assert max(r, key=r.get) == "SCALAR"
    assert r["SCALAR"] > 0.9 and all(r["SCALAR"] > 4 * v for p, v in r.items() if p != "SCALAR")
    assert tl.busy[0]["SCALAR"] == 2000 * M.scalar_issue_cycles + 3 * M.scalar_issue_cycles


def test_a_bandwidth_bound_copy_scales_with_bytes_beyond_its_start_up_exactly():
    fixed = M.scalar_issue_cycles + M.dma_latency["GM->UB"]
    t = {n: simulate([[copy(0, n)]], M, 1).makespan for n in (1 << 20, 2 << 20)}
    assert t[1 << 20] - fixed == pytest.approx((1 << 20) / BW["GM->UB"], rel=1e-12)
    assert (t[2 << 20] - fixed) == pytest.approx(2 * (t[1 << 20] - fixed), rel=1e-12)


def mmad_stream(n, m=128, dtype_bytes=2):
    """`n` m x m x m mmads fed by double-buffered L1->L0A/L0B loads (ping-pong event ids)."""
    out = []
    for i in range(n):
        e = i % 2
        if i >= 2:
            out.append(flag(0, "MTE1", "wait_flag", ("CUBE", "MTE1", e)))
        out += [Instr(0, "MTE1", "load_data", bytes=m * m * dtype_bytes, path="L1->L0A"),
                Instr(0, "MTE1", "load_data", bytes=m * m * dtype_bytes, path="L1->L0B"),
                flag(0, "MTE1", "set_flag", ("MTE1", "CUBE", e)),
                flag(0, "CUBE", "wait_flag", ("MTE1", "CUBE", e)),
                Instr(0, "CUBE", "mmad", macs=m ** 3, shape=(m, m, m), dtype_bytes=dtype_bytes),
                flag(0, "CUBE", "set_flag", ("CUBE", "MTE1", e))]
    return out


def test_a_long_double_buffered_mmad_stream_approaches_the_cube_peak():
    peak = M.cube_macs_per_cycle[2]
    tl = simulate([mmad_stream(64)], M, 1)
    assert tl.core_kinds == {0: "AIC"} and not tl.mix
    mmads = rec(tl, "mmad")
    assert [e - s for _, _, _, s, e in mmads] == pytest.approx(     # 8 x 8 x 8 fractals + head
        [512 + M.cube_head_cycles] * 64)
    achieved = 64 * 128 ** 3 / tl.makespan
    assert 0.95 * peak <= achieved <= peak
    small = simulate([mmad_stream(64, m=16)], M, 1)          # 1-cycle mmads: overhead-bound
    assert 64 * 16 ** 3 / small.makespan < 0.1 * peak


def test_split_block_puts_each_instruction_on_its_side():
    from rt.npu import split_block
    key = ("MTE2", "MTE1", 0)
    blk = [Instr(0, "SCALAR", "s0"),                             # next: GM->L1 -> AIC
           Instr(0, "MTE2", "a1", bytes=64, path="GM->L1"),
           flag(0, "MTE2", "set_flag", key),                     # after a GM->L1 copy -> AIC
           flag(0, "MTE2", "wait_flag", ("VECTOR", "MTE2", 0)),  # guards the GM->UB copy -> AIV
           Instr(0, "SCALAR", "s1"),                             # next: GM->UB -> AIV
           Instr(0, "MTE2", "u1", bytes=64, path="GM->UB"),
           Instr(0, "SCALAR", "pipe_barrier", barrier="ALL"),    # both
           flag(0, "SCALAR", "set_flag", ("SCALAR", "CUBE", 1)),  # its other pipe: CUBE -> AIC
           Instr(0, "VECTOR", "add", bytes=256, repeats=1),
           Instr(0, "SCALAR", "s2")]                             # last: previous side -> AIV
    (aic, aic_deps), (aiv, aiv_deps) = split_block(blk)
    assert [i.name for i in aic] == ["s0", "a1", "set_flag", "pipe_barrier", "set_flag"]
    assert [i.name for i in aiv] == ["wait_flag", "s1", "u1", "pipe_barrier", "add", "s2"]
    assert aic_deps == aiv_deps == {}


def test_a_vector_read_of_a_cube_write_waits_for_it_plus_the_cross_core_flag():
    wait = simulate([[fix_out(0, 0), gm_read(0, 60000)]], M, 1)
    assert wait.mix and wait.core_kinds == {0: "AIC", 1: "AIV"}
    (_, wc, _, _, w_end), (_, rc, _, r_start, _) = one(wait, "fixpipe"), one(wait, "data_copy")
    assert (wc, rc) == (0, 1) and r_start == w_end + XLAT
    assert wait.handoffs == [(wait.records.index(one(wait, "fixpipe")),
                              wait.records.index(one(wait, "data_copy")))]
    free = simulate([[fix_out(0, 0), gm_read(0, 65536)]], M, 1)     # [65536, ...): no overlap
    assert one(free, "data_copy")[3] == M.scalar_issue_cycles and free.handoffs == []
    assert one(free, "data_copy")[4] < one(free, "fixpipe")[4]       # the AIV ran in parallel


def test_write_after_read_and_write_after_write_across_the_sides_wait_too():
    big = gm_read(0, 0, 1 << 20)                                     # AIV reads 1 MiB
    war = simulate([[big, fix_out(0, 4096)]], M, 1)
    assert one(war, "fixpipe")[3] == one(war, "data_copy")[4] + XLAT
    out = Instr(0, "MTE3", "data_copy", bytes=1 << 20, path="UB->GM", gm=(0, 1 << 20))
    waw = simulate([[out, fix_out(0, 4096)]], M, 1)
    assert one(waw, "fixpipe")[3] == one(waw, "data_copy")[4] + XLAT
    raw = simulate([[gm_read(0, 0, 4096, "GM->L1"), gm_read(0, 0)]], M, 1)   # read after read
    assert [r[3] for r in raw.records] == [M.scalar_issue_cycles] * 2


def test_a_flag_between_the_sides_is_a_cross_core_flag():
    key = ("FIXPIPE", "VECTOR", 0)
    blk = [fix_out(0, 0), flag(0, "FIXPIPE", "set_flag", key),
           flag(0, "VECTOR", "wait_flag", key), Instr(0, "VECTOR", "exp", bytes=256, repeats=1)]
    tl = simulate([blk], M, 1)
    (_, sc, _, _, s_end), (_, wc, _, w_start, _) = one(tl, "set_flag"), one(tl, "wait_flag")
    assert (sc, wc) == (0, 1) and w_start == s_end + XLAT
    assert tl.flows == [(tl.records.index(one(tl, "set_flag")),
                         tl.records.index(one(tl, "wait_flag")))]
    one_core = simulate([blk], M, 1, mix=False)                     # not split: same core
    assert one_core.core_kinds == {0: "AI Core"} and not one_core.mix
    assert one(one_core, "wait_flag")[3] == one(one_core, "set_flag")[4]


def test_a_coupled_soc_never_splits_and_mix_errors_name_the_argument():
    m310 = pipe_model("Ascend310P3")
    blk = [fix_out(0, 0), gm_read(0, 0)]
    tl = simulate([blk], m310, 1)
    assert not tl.mix and tl.core_kinds == {0: "AI Core"}
    with pytest.raises(ValueError, match=r"simulate: mix=True needs a separated SoC \(AIC \+ AIV "
                                         r"cores\), got Ascend310P3 with separated=False"):
        simulate([blk], m310, 1, mix=True)
    with pytest.raises(ValueError, match=r"simulate: a MIX launch places each block on one AIC "
                                         r"and one AIV, so n_cores must be <= 24 \(the AICs of "
                                         r"Ascend910B2\), got n_cores=25"):
        simulate([blk], M, 25)
    with pytest.raises(ValueError, match=r"simulate: gm must be \(\) or \(start, end\) with 0 <= "
                                         r"start <= end, got gm=\(8, 4\) for data_copy of block"):
        simulate([[Instr(0, "MTE2", "data_copy", path="GM->UB", gm=(8, 4))]], M, 1)


def sync_blocks(n):
    """Block b copies (b + 1) x 64 KiB in, then sync_all, then a vector add."""
    return [[copy(b, (b + 1) << 16), Instr(b, "SCALAR", "sync_all", barrier="SYNC_ALL"),
             Instr(b, "VECTOR", "add", bytes=256, repeats=1)] for b in range(n)]


def test_sync_all_releases_every_block_after_the_last_arrives():
    blocks = sync_blocks(3)
    tl = simulate(blocks, M, 4)
    copies = sorted(r[4] for r in rec(tl, "data_copy"))
    syncs = rec(tl, "sync_all")
    assert len(syncs) == 3
    assert {(s, e) for _, _, _, s, e in syncs} == {(copies[-1], copies[-1] + M.sync_all_cycles)}
    assert all(r[3] >= copies[-1] + M.sync_all_cycles for r in rec(tl, "add"))
    # a MIX launch: the AICs and the AIVs of every block take part
    mixed = [[fix_out(b, b << 20), Instr(b, "SCALAR", "sync_all", barrier="SYNC_ALL"),
              gm_read(b, 0)] for b in range(2)]
    tm = simulate(mixed, M, 2)
    syncs = rec(tm, "sync_all")
    assert tm.mix and sorted(r[1] for r in syncs) == [0, 1, 2, 3]
    last_fix = max(r[4] for r in rec(tm, "fixpipe"))
    assert {r[3] for r in syncs} == {last_fix}


def test_sync_all_deadlocks_are_reported_before_running():
    with pytest.raises(ValueError, match=r"simulate: sync_all needs every block resident at once, "
                                         r"got 5 blocks on n_cores=4: the blocks of the first "
                                         r"wave would wait for blocks that never start"):
        simulate(sync_blocks(5), M, 4)
    blocks = sync_blocks(2)
    blocks[1] = [i for i in blocks[1] if i.barrier != "SYNC_ALL"]
    with pytest.raises(ValueError, match=r"simulate: every block must call sync_all the same "
                                         r"number of times, got \{0: 1, 1: 0\}"):
        simulate(blocks, M, 4)


def test_a_mix_launch_is_deterministic():
    def blocks():
        key = ("FIXPIPE", "VECTOR", 0)
        return [[Instr(b, "MTE2", "data_copy", bytes=32768, path="GM->L1", gm=(0, 32768)),
                 Instr(b, "CUBE", "mmad", macs=128 ** 3, shape=(128, 128, 128), dtype_bytes=2),
                 fix_out(b, (b + 1) << 20), flag(b, "FIXPIPE", "set_flag", key),
                 Instr(b, "SCALAR", "sync_all", barrier="SYNC_ALL"),
                 flag(b, "VECTOR", "wait_flag", key), gm_read(b, (b + 1) << 20, 65536),
                 Instr(b, "VECTOR", "exp", bytes=65536, repeats=256),
                 Instr(b, "MTE3", "data_copy", bytes=65536, path="UB->GM",
                       gm=((b + 1) << 20, ((b + 1) << 20) + 65536))] for b in range(20)]
    a, b = simulate(blocks(), M, 20), simulate(blocks(), M, 20)
    assert a.mix and a.total_cycles == b.total_cycles
    assert [r[1:] for r in a.records] == [r[1:] for r in b.records]
    assert a.busy == b.busy and a.flows == b.flows and a.handoffs == b.handoffs


def test_roofline_point_sums_cube_flops_vector_ops_and_gm_bytes():
    from rt.npu import roofline_point
    blk = [gm_read(0, 0, 32768, "GM->L1"),
           Instr(0, "CUBE", "mmad", macs=128 ** 3, shape=(128, 128, 128), dtype_bytes=2),
           fix_out(0, 0), Instr(0, "VECTOR", "exp", bytes=8192, repeats=32, elements=4096),
           Instr(0, "MTE1", "load_data", bytes=32768, path="L1->L0A")]
    tl = simulate([blk], M, 1)
    p = roofline_point(tl, "k")
    assert p == ("k", 2 * 128 ** 3 + 4096, 32768 + 65536, tl.us * 1e-6)


def test_the_plots_are_pngs_labelled_simulated(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from rt.npu import roofline_point, write_pipe_chart_png, write_roofline_png
    from rt.npu import plots
    tl = simulate([mmad_stream(8) + [fix_out(0, 0), gm_read(0, 0)]], M, 1)
    vec = simulate([[copy(0, 65536), Instr(0, "VECTOR", "add", bytes=65536, repeats=256,
                                           elements=16384)]], M, 1)
    roof = write_roofline_png([roofline_point(tl, "mix"), vec, ("empty", 0, 0, 1.0)],
                              tmp_path / "roof.png", M)
    chart = write_pipe_chart_png(tl, tmp_path / "pipes.png")
    for p in (roof, chart):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(plots.pipe_busy_ratios(tl)) == {"AIC", "AIV"}
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(__import__("sys").modules, name, None)
    with pytest.raises(ImportError, match=r"rt.npu.plots needs matplotlib, got it missing; "
                                          r"install the bench extra: pip install -e '\.\[bench\]'"):
        write_pipe_chart_png(tl, tmp_path / "x.png")


# --- L2 (docs/npu-model.md §1.5 (e)): cold at launch, LRU, hits stream through the L2 pool ------

def slow_hbm(**kw):
    """M with a 10 B/cycle HBM pool (far below a core's 58.6 B/cycle GM->UB) and M's L2 pool."""
    from dataclasses import replace
    return replace(M, hbm_bytes_per_cycle=10.0, **kw)


def ub_write(b, lo, nbytes=65536):
    return Instr(b, "MTE3", "data_copy", bytes=nbytes, path="UB->GM", gm=(lo, lo + nbytes))


def test_the_model_has_the_socs_l2():
    assert M.l2_bytes == 192 << 20 and pipe_model("Ascend910B4").l2_bytes == 96 << 20
    assert M.l2_bytes_per_cycle == pytest.approx(5.2 / 1.8 * M.hbm_bytes_per_cycle)
    assert M.l2_line_bytes == 128


def test_a_second_read_of_the_same_range_hits_l2_and_skips_hbm():
    m = slow_hbm()
    tl = simulate([[gm_read(0, 0, 65536), gm_read(0, 0, 65536)]], m, 1)
    (_, _, _, s0, e0), (_, _, _, s1, e1) = rec(tl, "data_copy")
    lat = M.dma_latency["GM->UB"]
    assert (s0, e0) == (1, pytest.approx(1 + lat + 65536 / 10.0, rel=1e-12))      # miss: HBM
    # the second starts once the first's bytes have moved (its latency overlaps), hits the
    # data the first is still bringing in, and ends no earlier than that fill
    assert s1 == pytest.approx(1 + 65536 / 10.0, rel=1e-12) and s1 == 1 + tl.held[0]
    assert e1 - s1 == pytest.approx(lat + 65536 / BW["GM->UB"], rel=1e-12)
    assert (tl.l2_hit_bytes, tl.l2_miss_bytes, tl.l2_hit_ratio) == (65536, 65536, 0.5)
    off = simulate([[gm_read(0, 0, 65536), gm_read(0, 0, 65536)]], slow_hbm(l2_bytes=0), 1)
    assert rec(off, "data_copy")[1][4] == pytest.approx(2 * e0 - 1 - lat, rel=1e-12)  # L2 off
    assert (off.l2_hit_bytes, off.l2_miss_bytes) == (0, 2 * 65536)


def test_a_working_set_larger_than_l2_misses_again():
    reads = [gm_read(0, 0, 65536), gm_read(0, 1 << 20, 65536), gm_read(0, 0, 65536)]
    small = simulate([reads], slow_hbm(l2_bytes=65536), 1)      # holds one 64 KiB range
    assert (small.l2_hit_bytes, small.l2_miss_bytes) == (0, 3 * 65536)
    fits = simulate([reads], slow_hbm(l2_bytes=2 * 65536), 1)
    assert (fits.l2_hit_bytes, fits.l2_miss_bytes) == (65536, 2 * 65536)
    hit, miss = (M.dma_latency["GM->UB"] + 65536 / r for r in (BW["GM->UB"], 10.0))
    assert [r[4] - r[3] for r in rec(small, "data_copy")] == pytest.approx([miss] * 3)
    assert [r[4] - r[3] for r in rec(fits, "data_copy")] == pytest.approx([miss, miss, hit])


def test_writes_allocate_in_l2_then_reads_hit_and_dirty_evictions_pay_hbm():
    key = ("MTE3", "MTE2", 0)
    blk = [ub_write(0, 0), flag(0, "MTE3", "set_flag", key), flag(0, "MTE2", "wait_flag", key),
           gm_read(0, 0, 65536)]
    tl = simulate([blk], slow_hbm(), 1)
    (_, _, _, ws, we), (_, _, _, rs, re) = rec(tl, "data_copy")
    assert we - ws == pytest.approx(M.dma_latency["UB->GM"] + 65536 / BW["UB->GM"], rel=1e-12)
    assert re - rs == pytest.approx(M.dma_latency["GM->UB"] + 65536 / BW["GM->UB"], rel=1e-12)
    assert (tl.l2_write_bytes, tl.l2_hit_bytes, tl.l2_miss_bytes) == (65536, 65536, 0)
    assert tl.l2_writeback_bytes == 0                       # still dirty in L2 at the end
    # a 64 KiB L2: reading another range evicts the dirty write, written back through HBM
    blk[3] = gm_read(0, 1 << 20, 65536)
    wb = simulate([blk], slow_hbm(l2_bytes=65536), 1)
    (_, _, _, rs, re) = rec(wb, "data_copy")[1]
    assert re - rs == pytest.approx(M.dma_latency["GM->UB"] + 2 * 65536 / 10.0, rel=1e-12)
    assert (wb.l2_writeback_bytes, wb.l2_miss_bytes) == (65536, 65536)


def test_many_cores_reading_one_tile_miss_once_and_wait_for_that_fill():
    m = slow_hbm()
    lat, n = M.dma_latency["GM->UB"], 8
    tl = simulate([[gm_read(b, 0, 65536)] for b in range(2 * n)], m, n)    # two waves
    first = sorted(rec(tl, "data_copy"), key=lambda r: r[3])[:n]
    fill_end = 1 + lat + 65536 / 10.0                # core 0 misses alone: all of HBM
    assert [r[4] for r in first] == pytest.approx([fill_end] * n, rel=1e-12)   # merged misses
    second = sorted(rec(tl, "data_copy"), key=lambda r: r[3])[n:]
    assert [r[4] - r[3] for r in second] == pytest.approx([lat + 65536 / BW["GM->UB"]] * n)
    assert (tl.l2_miss_bytes, tl.l2_hit_bytes) == (65536, (2 * n - 1) * 65536)
    assert tl.l2_hit_ratio == pytest.approx(15 / 16)


def test_strided_copies_touch_only_their_rows():
    from rt.npu.l2 import rows_of as _rows
    # a 128 x 128 fp16 tile of a 2048-wide matrix (rows 256 B, 4096 B apart), as matmul's A
    span = 127 * 4096 + 256
    assert _rows(32768, 0, span) == (128, 256, 4096)
    assert _rows(4096, 0, 4096) == (1, 4096, 4096)
    k0 = Instr(0, "MTE2", "data_copy", bytes=32768, path="GM->L1", gm=(0, span))
    k1 = Instr(0, "MTE2", "data_copy", bytes=32768, path="GM->L1", gm=(256, 256 + span))
    tl = simulate([[k0, k1, k0]], M, 1)          # k1 shares k0's span, not its bytes
    assert (tl.l2_miss_bytes, tl.l2_hit_bytes) == (2 * 32768, 32768)


def test_l2_decisions_are_deterministic():
    def blocks():
        out = []
        for b in range(40):                      # shared and private tiles, reads and writes
            out.append([gm_read(b, (b % 3) << 16, 65536),
                        gm_read(b, (b % 5) << 20, 32768, "GM->L1"),
                        ub_write(b, (64 + b) << 16),
                        gm_read(b, (64 + (b + 1) % 40) << 16, 65536)])
        return out
    m = slow_hbm(l2_bytes=1 << 20)
    a, b = simulate(blocks(), m, 24), simulate(blocks(), m, 24)
    assert [r[1:] for r in a.records] == [r[1:] for r in b.records]
    assert (a.l2_hit_bytes, a.l2_miss_bytes, a.l2_writeback_bytes) == \
        (b.l2_hit_bytes, b.l2_miss_bytes, b.l2_writeback_bytes)
    assert 0 < a.l2_hit_ratio < 1 and a.l2_writeback_bytes > 0


def test_copies_on_one_pipe_overlap_their_latency_and_a_set_flag_waits_for_the_last():
    """docs/npu-model.md §1.5 (f): a copy holds its pipe for its bytes only; its start-up latency
    runs after, so a stream of copies pays it once, and the pipe's set_flag waits for the last
    copy to land. dma_latency_on_pipe=True is the older rule (latency + bytes on the pipe)."""
    from dataclasses import replace
    n, nbytes, key = 4, 8192, ("FIXPIPE", "MTE2", 0)
    block = [Instr(0, "FIXPIPE", "fixpipe", bytes=nbytes, path="L0C->GM") for _ in range(n)]
    block += [Instr(0, "FIXPIPE", "set_flag", set_flag=key),
              Instr(0, "MTE2", "wait_flag", wait_flag=key)]
    x, lat = nbytes / BW["L0C->GM"], M.dma_latency["L0C->GM"]
    tl = simulate([block], M, 1)
    copies = rec(tl, "fixpipe")
    assert [r[3] for r in copies] == pytest.approx([1 + k * x for k in range(n)], rel=1e-12)
    assert [r[4] for r in copies] == pytest.approx([1 + (k + 1) * x + lat for k in range(n)],
                                                   rel=1e-12)
    assert tl.held[:n] == pytest.approx([x] * n, rel=1e-12)
    (_, _, _, s, e), = rec(tl, "set_flag")
    assert s == copies[-1][4] and e == s + M.flag_latency_cycles
    assert tl.busy[0]["FIXPIPE"] == pytest.approx(n * x + M.flag_latency_cycles, rel=1e-12)
    old = simulate([block], replace(M, dma_latency_on_pipe=True), 1)
    assert rec(old, "fixpipe")[-1][4] == pytest.approx(1 + n * (lat + x), rel=1e-12)
    assert old.makespan - tl.makespan == pytest.approx((n - 1) * lat, rel=1e-12)


# --- the reference scan and the issue-queue depth ------------------------------------------

def test_every_simulation_is_checked_against_the_plain_reference_scan():
    """tests/conftest.py runs tests/npu_reference.py's scan next to every simulate() of the suite;
    the check notices a difference, and the scan alone gives the model's exact numbers."""
    from npu_reference import reference_simulate, same_run

    from rt.npu import sim
    assert sim.Simulator.__name__ == "CheckedSimulator"
    key = ("MTE2", "VECTOR", 0)
    block = [copy(), flag(0, "MTE2", "set_flag", key), flag(0, "VECTOR", "wait_flag", key),
             Instr(0, "VECTOR", "add", bytes=2048, repeats=8)]
    ref = reference_simulate([block], M, 1)
    (_, _, _, s, e), = rec(ref, "data_copy")
    assert (s, e) == (1, pytest.approx(1 + M.dma_latency["GM->UB"] + 2048 / BW["GM->UB"]))
    assert rec(ref, "add")[0][3] == rec(ref, "set_flag")[0][4] + M.flag_latency_cycles
    tl = simulate([block], M, 1)
    assert same_run(tl, ref) == []
    tl.records[-1] = tl.records[-1][:4] + (tl.records[-1][4] + 1,)
    tl.busy[0]["SCALAR"] += 1
    assert same_run(tl, ref) == ["records", "busy"]


def test_an_issue_queue_depth_stalls_the_scalar_unit_until_its_pipe_takes_one():
    """docs/npu-model.md §1.6: with `issue_queue_depth` = d the SCALAR unit cannot issue to a pipe
    whose queue holds d instructions; 0 (the default) keeps the queues unbounded."""
    from dataclasses import replace
    add = Instr(0, "VECTOR", "add", bytes=2048, repeats=8)    # 26 cycles idle, 16 back to back
    block = [add, add, add, copy()]
    starts = {}
    for depth in (0, 1, 2):
        tl = simulate([block], replace(M, issue_queue_depth=depth), 1)
        starts[depth] = ([r[3] for r in rec(tl, "add")], rec(tl, "data_copy")[0][3],
                         tl.makespan)
    x = M.dma_latency["GM->UB"] + 2048 / BW["GM->UB"]          # a copy's bytes and latency
    # unbounded: the scalar unit issues all four in cycles 0-4, the copy starts at 4
    assert starts[0] == ([1, 27, 43], 4, pytest.approx(4 + x, rel=1e-12))
    # depth 1: the third add waits until the first ends (27) and the second leaves the queue;
    # it is issued in cycle 27, the copy in cycle 28 and starts at 29
    assert starts[1] == ([1, 27, 43], 29, pytest.approx(29 + x, rel=1e-12))
    assert starts[2] == starts[0]                 # two queued adds fit: nothing stalls


def test_an_issue_queue_depth_that_blocks_the_set_a_wait_needs_is_a_deadlock():
    from dataclasses import replace
    key = ("MTE2", "VECTOR", 0)
    block = [flag(0, "VECTOR", "wait_flag", key), Instr(0, "VECTOR", "add", bytes=256),
             copy(), flag(0, "MTE2", "set_flag", key)]
    assert simulate([block], replace(M, issue_queue_depth=2), 1).makespan > 0
    with pytest.raises(ValueError, match=r"simulate: a full VECTOR queue must drain for the "
                                         r"SCALAR unit to go on, got a deadlock at wait_flag\("
                                         r"MTE2->VECTOR, id=0\) of block 0 \(the queue's head\) "
                                         r"with add of block 0 waiting to be issued "
                                         r"\(issue_queue_depth=1\)"):
        simulate([block], replace(M, issue_queue_depth=1), 1)
    with pytest.raises(ValueError, match="simulate: issue_queue_depth must be >= 0 "
                                         r"\(0: unbounded\), got issue_queue_depth=-1"):
        simulate([block], replace(M, issue_queue_depth=-1), 1)
