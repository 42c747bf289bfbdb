"""rt.npu's pipe simulator on synthetic instruction lists (issue 9 §2, §5): costs, flags,
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
