"""asc.sync_all is a real barrier across the blocks of a launch (Ascend C SyncAll): every block
runs at once, nothing after the barrier runs before all blocks reached it, a failing block
aborts it, and block_dim beyond the SoC's cores is refused (it would hang the NPU)."""
import threading

import numpy as np
import pytest

import ascendc as asc
import rt

SLOT = 8            # floats per block slot (32 bytes)


@pytest.fixture(autouse=True)
def _device():
    rt.ensure_device()


@asc.jit
def exchange_kernel(slots: asc.GlobalAddress, out: asc.GlobalAddress, rounds: int, what: int):
    """Round r: block b writes total(r-1) + b + 1 into its slot, sync_all, then sums every
    block's slot into total(r), sync_all (so no slot is rewritten before all have read it).

    what=1: block 2 breaks a rule before the first barrier; what=2: block 1 skips the barrier.
    """
    b = asc.get_block_idx()
    n = asc.get_block_num()
    sg = asc.GlobalTensor()
    sg.set_global_buffer(slots, n * SLOT)
    og = asc.GlobalTensor()
    og.set_global_buffer(out, n * SLOT)
    if what == 1 and b == 2:
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)      # no set_flag: a hardware hang, an error here
    total = 0.0
    for r in range(rounds):
        sg.set_value(b * SLOT, total + b + 1)
        if not (what == 2 and b == 1):
            asc.sync_all()
            s = 0.0
            for j in range(n):
                s += sg.get_value(j * SLOT)
            total = s
            asc.sync_all()
    og.set_value(b * SLOT, total)


@asc.jit
def _plain(x: asc.GlobalAddress):
    asc.get_block_idx()


def _expected(n, rounds):
    total = 0.0
    for _ in range(rounds):
        total = sum(total + b + 1 for b in range(n))
    return total


def _launch(n, rounds, what, interpret, stream, **kw):
    slots = rt.device_zeros(n * SLOT, np.float32)
    out = rt.device_zeros(n * SLOT, np.float32)
    exchange_kernel[n, stream](slots, out, rounds, what, interpret=interpret, **kw)
    return out


def _in_thread(fn, timeout=120.0):
    """Run fn() (a synchronize) in a watchdog thread: a hang fails the test instead of hanging
    it (the stuck daemon thread is abandoned)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:          # noqa: BLE001 - re-raised in the test's thread
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"launch did not finish within {timeout} s (a barrier hang)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.mark.parametrize("n", [5, 12])
def test_blocks_exchange_data_through_gm_across_sync_all(interpret, n):
    s = rt.Stream()
    out = _launch(n, 3, 0, interpret, s)       # returns at once (it only compiles)
    _in_thread(s.synchronize)
    got = out.copy_to_host().reshape(n, SLOT)[:, 0]
    np.testing.assert_array_equal(got, np.full(n, _expected(n, 3), np.float32))


def test_launch_is_asynchronous_and_profiled_per_block(interpret):
    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(gate.wait)             # the kernel queues behind this
    with rt.profile() as prof:
        out = _launch(6, 2, 0, interpret, s)
        assert not s.query()                  # returned before any block ran
        gate.set()
        _in_thread(s.synchronize)
    np.testing.assert_array_equal(out.copy_to_host().reshape(6, SLOT)[:, 0], _expected(6, 2))
    rec = [r for r in prof.records if r.kind == "kernel"][-1]
    assert rec.block_dim == 6
    assert sorted((r[1], r[2]) for r in rec.ranges) == [(b, b + 1) for b in range(6)]
    starts, ends = [r[3] for r in rec.ranges], [r[4] for r in rec.ranges]
    assert max(starts) < min(ends)            # all resident at once: every block started
    #                                           before any ended (they wait for each other)


def test_failing_block_aborts_the_barrier_and_is_the_error_reported(interpret):
    s = rt.Stream()
    _launch(4, 1, 1, interpret, s)
    with pytest.raises(rt.AclError, match=r"synchronize: kernel 'exchange_kernel' on stream \d+ "
                                          r"failed in block_idx=2/4: asc.wait_flag: a matching "
                                          r"set_flag must come first") as e:
        _in_thread(s.synchronize)
    assert e.value.code == 507015
    assert "asc.sync_all:" not in str(e.value)     # not a waiting block's consequence
    out = _launch(4, 1, 0, interpret, s)
    _in_thread(s.synchronize)
    assert out.copy_to_host()[0] == _expected(4, 1)   # the stream and threads still work


def test_block_skipping_sync_all_is_an_error_not_a_hang(interpret):
    s = rt.Stream()
    _launch(3, 1, 2, interpret, s)
    with pytest.raises(rt.AclError, match=r"asc.sync_all: every block must call sync_all the same "
                                          r"number of times \(the NPU would hang\), got block_idx="
                                          r"[02] waiting at its call #1 after 1 of 3 block\(s\)"):
        _in_thread(s.synchronize)


@pytest.mark.parametrize("soc, limit, what", [
    ("Ascend910B2", 48, "vector core \\(AIV\\)"), ("Ascend310P3", 8, "AI Core")])
def test_block_dim_beyond_resident_cores_is_refused(interpret, soc, limit, what):
    x = np.zeros((limit + 1) * SLOT, np.float32)
    with pytest.raises(rt.AclError, match=rf"exchange_kernel\[\]: block_dim must be <= {limit}, "
                                          rf"the {soc}'s {what} count, for a kernel that calls "
                                          rf"asc.sync_all .*got block_dim={limit + 1}") as e:
        exchange_kernel[limit + 1](x, x, 1, 0, interpret=interpret, soc=soc)
    assert e.value.code == 107000


def test_cube_kernels_count_ai_cores():
    from ascendc.lang.barrier import resident_limit
    soc = rt.get_soc("Ascend910B2")
    assert resident_limit(soc, {"sync_all", "mmad"})[0] == soc.ai_core_num
    assert resident_limit(soc, {"sync_all", "adv.Matmul"})[0] == soc.ai_core_num
    assert resident_limit(soc, {"sync_all", "add"})[0] == soc.vector_core_num


def test_only_kernels_calling_sync_all_are_resident():
    from ascendc.compiler.frontend import asc_calls

    @asc.jit
    def helper():
        asc.sync_all()

    @asc.jit
    def via_helper(x: asc.GlobalAddress):
        helper()

    assert "sync_all" in asc_calls(via_helper.fn)
    assert "sync_all" in asc_calls(exchange_kernel.fn)
    assert "sync_all" not in asc_calls(_plain.fn)


def test_rt_binary_protocol_barrier():
    """rt level: a plain binary with needs_all_resident gets one thread per block and a barrier."""
    seen = []

    class Binary:
        name = "phases"
        needs_all_resident = True
        shuffle_blocks = False
        counters = ()
        last_counters = {}

        def run_blocks(self, first, last, block_dim, args, barrier=None):
            seen.append(("a", first))
            assert barrier.wait() == 0
            seen.append(("b", first))

    s = rt.Stream()
    rt.launch(Binary(), 7, (), s)
    _in_thread(s.synchronize)
    assert sorted(seen[:7]) == [("a", b) for b in range(7)]   # all arrived before any passed
    assert sorted(seen[7:]) == [("b", b) for b in range(7)]
