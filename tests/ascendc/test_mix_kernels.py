"""MIX kernels as the NPU runs them: the AIC and AIV instances of each block at once (real
threads), A2 block numbering, cross-core flags in modes 1 and 2, inter-block flags, and the
errors (deadlock, bad flag id, counter overflow) by their messages, in both modes."""
import numpy as np
import pytest

import rt

import mix_kernels as K


def _rows(out, n):
    return [tuple(int(v) for v in out[r * 8:(r + 1) * 8]) for r in range(n)]


@pytest.mark.parametrize("block_dim", [1, 5])
def test_mix_aic_1_2_numbers_its_cores_as_a2_does(interpret, block_dim):
    out = np.full(3 * block_dim * 8, -1, np.int32)
    K.numbering_kernel[block_dim](out, interpret=interpret)
    rows = _rows(out, 3 * block_dim)
    # AIC g: block_idx g, block_num n, sub-block 0, sub-block num 1, ratio 1, is_aic
    assert rows[:block_dim] == [(g, block_dim, 0, 1, 1, 1, 0, 7) for g in range(block_dim)]
    # AIV v = 2g + s: block_idx v in [0, 2n), sub-block v % 2, sub-block num 2, ratio 2
    assert rows[block_dim:] == [(v, block_dim, v % 2, 2, 2, 0, 1, 7)
                                for v in range(2 * block_dim)]


def test_mix_aic_1_1_runs_one_aiv_per_group(interpret):
    out = np.full(3 * 4 * 8, -1, np.int32)
    K.numbering_kernel[4](out, interpret=interpret, kernel_type="MIX_AIC_1_1")
    rows = _rows(out, 8)
    assert rows[:4] == [(g, 4, 0, 1, 1, 1, 0, 7) for g in range(4)]
    assert rows[4:] == [(g, 4, 0, 1, 1, 0, 1, 7) for g in range(4)]
    assert (out[8 * 8:] == -1).all()


@pytest.mark.parametrize("block_dim", [1, 3, 24])
def test_mode_1_orders_the_two_aivs_of_each_group(interpret, block_dim):
    n = 2 * block_dim * K.TILE
    x = np.random.default_rng(block_dim).standard_normal(n).astype(np.float32)
    ws = np.full(n, np.nan, np.float32)
    z = np.zeros(n, np.float32)
    K.peer_sum_kernel[block_dim](x, ws, z, interpret=interpret)
    t = x.reshape(block_dim, 2, K.TILE)
    want = (2 * t + 2 * t[:, ::-1]).reshape(-1)
    np.testing.assert_allclose(z, want, rtol=1e-6)


def test_a_wait_nothing_can_release_is_a_fault_naming_every_blocked_core(interpret):
    with pytest.raises(rt.AclError) as ei:
        K.stuck_kernel[2](np.zeros(8, np.float32), interpret=interpret)
    msg = str(ei.value)
    assert "cross-core deadlock: a wait must be released by a core that can still run (the " \
           "NPU would hang), got every core of the group" in msg
    assert "AIC " in msg and "waits on cross_core_wait_flag(flag_id=1, mode_id=2) at " in msg
    assert "waits on cross_core_wait_flag(flag_id=3, mode_id=1) at " in msg
    assert "mix_kernels.py:" in msg and "(asc.cross_core_wait_flag(FULL, 2, " in msg
    assert "ended: AIV" in msg and "sub-block 1)" in msg


def test_a_flag_id_outside_0_to_10_is_an_error(interpret):
    with pytest.raises(rt.AclError, match=r"asc.cross_core_set_flag: flag_id must be in "
                                          r"\[0, 10\] on Atlas A2, got flag_id=11"):
        K.bad_flag_kernel[1](np.zeros(8, np.float32), 11, interpret=interpret)


def test_a_flag_counter_past_16_pending_sets_is_an_error(interpret):
    K.overflow_kernel[1](np.zeros(8, np.float32), 16, interpret=interpret)
    with pytest.raises(rt.AclError, match=r"AIC 0: asc.cross_core_set_flag: a flag's counter "
                                          r"must hold at most 16 pending sets \(CrossCoreSetFlag"
                                          r"'s limit\), got flag_id=1 of AIV 0 \(group 0, "
                                          r"sub-block 0\) at 17"):
        K.overflow_kernel[1](np.zeros(8, np.float32), 17, interpret=interpret)


def test_ib_set_and_ib_wait_serialise_blocks(interpret):
    n = 8
    x = np.arange(1, n + 1, dtype=np.float32)
    ws = np.zeros(8 * n, np.int32)
    z = np.zeros(n, np.float32)
    K.ib_chain_kernel[n](x, ws, z, interpret=interpret)
    np.testing.assert_array_equal(z, np.cumsum(x))
    assert (ws == 0).all()          # every set was waited for


def _matmul_case(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0).astype(np.float32)
    return a, b, bias, want


# (m, n, k): tile multiples and ragged m / k
MATMUL_SHAPES = [(64, 32, 32), (75, 48, 40)]


@pytest.mark.parametrize("m,n,k", MATMUL_SHAPES)
def test_matmul_with_its_epilogue_on_the_aivs(interpret, m, n, k):
    a, b, bias, want = _matmul_case(m, n, k, m)
    groups = -(-m // K.BM)
    y = np.zeros((m, n), np.float32)
    ws = np.full(groups * K.BM * n, np.nan, np.float32)
    zeros = np.zeros(K.BM * 16, np.float16)
    K.matmul_relu_kernel[groups](a, b, bias, y, ws, zeros, m, n, k, interpret=interpret)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m,n,k,groups", [(192, 32, 32, 2), (203, 48, 40, 3)])
def test_producer_consumer_ring_with_two_flags_and_double_buffered_workspace(interpret, m, n, k,
                                                                             groups):
    a, b, bias, want = _matmul_case(m, n, k, m)
    y = np.zeros((m, n), np.float32)
    ws = np.full(groups * 2 * K.BM * n, np.nan, np.float32)
    zeros = np.zeros(K.BM * 16, np.float16)
    K.matmul_ring_kernel[groups](a, b, bias, y, ws, zeros, m, n, k, interpret=interpret)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode0", [0, 1])
def test_sync_all_and_mode_0_order_the_aivs_of_every_group(interpret, mode0):
    groups = 6
    x = np.arange(2 * groups, dtype=np.float32)
    z = np.zeros(4 * groups, np.float32)
    K.phases_kernel[groups](x, z, mode0, interpret=interpret)
    np.testing.assert_array_equal(z[:2 * groups], x + 1)
    np.testing.assert_array_equal(z[2 * groups:], (x + 1) + np.roll(x + 1, -1))


def test_synchronising_across_groups_needs_every_group_resident(interpret):
    with pytest.raises(rt.AclError, match=r"phases_kernel\[\]: block_dim must be <= 20, the "
                                          r"Ascend910B3's AI Core count, for a kernel that "
                                          r"synchronises across blocks .* got block_dim=21"):
        K.phases_kernel[21](np.zeros(42, np.float32), np.zeros(84, np.float32), 0,
                            interpret=interpret, soc="Ascend910B3")


def test_48_groups_with_flags_both_ways_run_on_a_few_reused_threads(mode):
    """block_dim 48 > the SoC's 24 AI Cores, flags AIC -> AIV and back: groups run a few at a
    time (slots of 3 threads, as many slots as core-pool workers), never one thread per core."""
    import threading
    from rt.launch import core_pool
    m, n, k, groups = 48 * 32, 32, 32, 48
    a, b, bias, want = _matmul_case(m, n, k, 7)
    y = np.zeros((m, n), np.float32)
    ws = np.full(groups * K.BM * n, np.nan, np.float32)
    before = {t.ident for t in threading.enumerate() if t.name.startswith("rt-resident")}
    K.matmul_relu_kernel[groups](a, b, bias, y, ws, np.zeros(K.BM * 16, np.float16), m, n, k,
                                 interpret=mode == "interpret")
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    new = {t.ident for t in threading.enumerate() if t.name.startswith("rt-resident")} - before
    assert len(new) <= 3 * core_pool().n < 3 * groups


def test_an_op_execute_timeout_stops_a_mix_launch_blocked_on_a_flag():
    rt.set_op_execute_timeout(300)
    try:
        with pytest.raises(rt.AclError, match=r"507014|op execute timeout"):
            K.spin_kernel[2](np.zeros(8, np.float32), interpret=True)
    finally:
        rt.set_op_execute_timeout(0)


# ---- unordered GM workspace (checked mode): the message names both sides ----------------------

def test_a_handoff_waited_for_is_clean_and_one_not_waited_for_is_reported(interpret):
    x = np.arange(4, dtype=np.float32)
    z = np.zeros(8, np.float32)
    K.handoff_maybe_kernel[4](x, z, 1, interpret=interpret)
    np.testing.assert_array_equal(z, np.concatenate([x + 1, 2 * (x + 1)]))
    with pytest.raises(rt.AclError) as ei:
        K.handoff_maybe_kernel[4](x, np.zeros(8, np.float32), 0, interpret=interpret)
    msg = str(ei.value)
    assert "GM one core writes and another reads must be ordered by a cross-core flag " \
           "(cross_core_set_flag after the write, cross_core_wait_flag before the read), " \
           "ib_set -> ib_wait or sync_all (unordered GM workspace), got AIC " in msg
    assert " writing GM bytes [0x" in msg or " writing [0x" in msg
    assert "with no flag between them" in msg
    # both sides' source lines: the AIC's write and the AIV's read
    assert "(zg.set_value(g, xg.get_value(g) + 1.0))" in msg
    assert "(zg.set_value(n + g, zg.get_value(g) * 2.0))" in msg
    assert "and AIV " in msg and "reading" in msg


def test_an_aiv_reading_its_siblings_tile_without_the_mode_1_wait_is_reported(interpret):
    n = 2 * 3 * K.TILE
    x = np.ones(n, np.float32)
    with pytest.raises(rt.AclError, match=r"asc.data_copy: GM one core writes and another reads "
                                          r"must be ordered .* got AIV \d+ \(group \d, sub-block "
                                          r"\d\) writing .*mix_kernels.py:\d+ .* and AIV \d+ "
                                          r"\(group \d, sub-block \d\) reading .*mix_kernels.py:"):
        K.peer_nowait_kernel[3](x, np.zeros(n, np.float32), np.zeros(n, np.float32),
                                interpret=interpret)


def test_unchecked_launches_do_not_track_gm_order(interpret):
    x = np.arange(4, dtype=np.float32)
    z = np.zeros(8, np.float32)
    K.handoff_maybe_kernel[4](x, z, 0, interpret=interpret, checked=False)
    np.testing.assert_array_equal(z[:4], x + 1)


@pytest.mark.parametrize("buf,what", [(0, r"VECIN TQue #0"), (1, r"VECCALC TBuf #0")])
def test_an_aic_allocating_unified_buffer_is_an_error(interpret, buf, what):
    with pytest.raises(rt.AclError, match=r"AIC 0: TPipe.init_buffer: an AIC of a MIX kernel "
                                          r"must not allocate Unified Buffer \(the cube core has "
                                          r"no UB on Atlas A2: vector work runs on the AIVs, "
                                          r"under asc.ascend_is_aiv\(\)\), got init_buffer for "
                                          + what + r" on AIC 0"):
        K.aic_ub_kernel[1](np.zeros(8, np.float32), buf, interpret=interpret)


def test_an_aic_allocating_a_local_tensor_auto_is_an_error(interpret):
    with pytest.raises(rt.AclError, match=r"AIC 0: asc.LocalTensorAuto: an AIC of a MIX kernel "
                                          r"must not allocate Unified Buffer .* got an allocation "
                                          r"of 256 bytes on AIC 0"):
        K.aic_ub_kernel[1](np.zeros(8, np.float32), 2, interpret=interpret)


def test_two_cores_writing_one_range_unordered_is_reported_and_interleaved_rows_are_not(
        interpret):
    rows, half, groups = K.ROWS, K.HALF, 3
    x = np.arange(2 * rows * 2 * half, dtype=np.float32)
    z = np.zeros(groups * rows * 2 * half, np.float32)
    # interleaved column blocks (one strided copy each; their spans overlap, their rows don't)
    K.shared_rows_kernel[groups](x, z, 0, interpret=interpret)
    # sub-block s: the first rows * half elements it loaded (x[s * 2 * rows * half:]), a
    # half-row each
    per = [x[s * 2 * rows * half:][:rows * half].reshape(rows, half) for s in (0, 1)]
    want = np.concatenate(per, axis=1).ravel()
    np.testing.assert_array_equal(z, np.tile(want, groups))
    # both whole rows, the second ordered after the first by a mode-1 flag round: clean, and
    # sub-block 1's rows are the ones left
    K.shared_rows_kernel[groups](x, z, 2, interpret=interpret)
    np.testing.assert_array_equal(z, np.tile(x[rows * 2 * half:], groups))
    with pytest.raises(rt.AclError, match=r"asc.data_copy: GM two cores write must be ordered "
                                          r"by a cross-core flag .*no atomic accumulation.* got "
                                          r"AIV \d+ \(group \d, sub-block \d\) writing \[0x.* at "
                                          r".*mix_kernels.py:\d+ .* and AIV \d+ \(group \d, "
                                          r"sub-block \d\) writing GM bytes .*with no flag "
                                          r"between them"):
        K.shared_rows_kernel[groups](x, np.zeros_like(z), 1, interpret=interpret)


def test_ib_words_are_the_gm_words_of_block_and_event_in_their_workspace(interpret):
    ws, ws2 = np.zeros(16, np.int32), np.zeros(16, np.int32)
    z = np.zeros(2, np.float32)
    K.ib_word_kernel[2](ws, ws2, z, 0, interpret=interpret)
    assert list(z) == [5.0, 5.0] and ws[0] == 0         # the set was taken by the wait
    # the same (block_idx, event_id) in another workspace is another word: nothing sets it
    with pytest.raises(rt.AclError, match=r"cross-core deadlock: .* got every core of the launch "
                                          r"blocked or finished:\n    AIV 1 waits on "
                                          r"ib_wait\(block_idx=0, event_id=0\) at .*"
                                          r"mix_kernels.py:\d+"):
        K.ib_word_kernel[2](np.zeros(16, np.int32), np.zeros(16, np.int32),
                            np.zeros(2, np.float32), 1, interpret=interpret)
    # the word is what GM holds: a workspace not initialised to 0 makes the set wait for ever
    ws = np.zeros(16, np.int32)
    ws[0] = 1
    with pytest.raises(rt.AclError, match=r"AIV 0 waits on ib_set\(block_idx=0, event_id=0\) "
                                          r"\(the word is 1: its previous set not yet waited "
                                          r"for, or the workspace not initialised to 0\)"):
        K.ib_word_kernel[2](ws, np.zeros(16, np.int32), np.zeros(2, np.float32), 2,
                            interpret=interpret)
