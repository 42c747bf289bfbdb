"""Checked mode's per-pipe visibility of GM->local copies: a wait_flag orders the two pipes its
HardEvent names, so a consumer on another pipe is reported (as the NPU would read stale data),
and a chain of waits through another pipe reaches it."""
import numpy as np
import pytest

import ascendc as asc
import rt

N = 64

# how the GM->UB copy is ordered before its readers
MTE2_V_THEN_MTE3, MTE2_MTE3, V_WRITES_THEN_V_MTE3, CHAIN_V_MTE3, MTE2_MTE3_THEN_V, \
    MTE2_V_THEN_SCALAR, MTE2_S_THEN_SCALAR, VECIN_THEN_MTE3, VECIN_VECOUT = range(9)


@asc.jit
def visibility_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, how: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, N)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, N)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, N * 4)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(tmp, N * 4)
    a = buf.get(asc.float32)
    b = tmp.get(asc.float32)
    asc.data_copy(a, xg, N)
    if how == MTE2_V_THEN_MTE3:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.data_copy(zg, a, N)
    elif how == MTE2_MTE3:
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.data_copy(zg, a, N)
    elif how == V_WRITES_THEN_V_MTE3:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.adds(a, a, 1.0, N)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, a, N)
    elif how == CHAIN_V_MTE3:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, a, N)
    elif how == MTE2_MTE3_THEN_V:
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.adds(b, a, 1.0, N)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, b, N)
    elif how == MTE2_V_THEN_SCALAR or how == MTE2_S_THEN_SCALAR:
        if how == MTE2_V_THEN_SCALAR:
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        else:
            asc.set_flag(asc.HardEvent.MTE2_S, 0)
            asc.wait_flag(asc.HardEvent.MTE2_S, 0)
        v = a.get_value(3)
        asc.set_flag(asc.HardEvent.MTE2_V, 1)
        asc.wait_flag(asc.HardEvent.MTE2_V, 1)
        asc.duplicate(b, v, N)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, b, N)
    elif how == VECIN_THEN_MTE3 or how == VECIN_VECOUT:
        # the same data through queues: a VECIN deque orders MTE2 before V (and, in this
        # emulator, makes the dequeued tensor visible to every pipe); a VECOUT deque orders V
        # before MTE3
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(qi, 1, N * 4)
        pipe.init_buffer(qo, 1, N * 4)
        t = qi.alloc_tensor(asc.float32)
        asc.data_copy(t, xg, N)
        qi.enque(t)
        t2 = qi.deque(asc.float32)
        o = qo.alloc_tensor(asc.float32)
        asc.adds(o, t2, 2.0, N)
        qo.enque(o)
        o2 = qo.deque(asc.float32)
        if how == VECIN_THEN_MTE3:
            asc.data_copy(zg, t2, N)
        else:
            asc.data_copy(zg, o2, N)
        qi.free_tensor(t2)
        qo.free_tensor(o2)
        # the TBuf copy above was never ordered before anyone: make it visible for the next use
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)


def _run(how, interpret, checked=True):
    x = np.arange(N, dtype=np.float32) + 0.5
    z = np.zeros_like(x)
    visibility_kernel[1](x, z, how, interpret=interpret, checked=checked)
    return x, z


@pytest.mark.parametrize("how, expect", [
    (MTE2_MTE3, lambda x: x),
    (V_WRITES_THEN_V_MTE3, lambda x: x + 1),
    (CHAIN_V_MTE3, lambda x: x),
    (MTE2_S_THEN_SCALAR, lambda x: np.full_like(x, x[3])),
    (VECIN_THEN_MTE3, lambda x: x),
    (VECIN_VECOUT, lambda x: x + 2),
])
def test_ordered_consumers_read_the_copy(interpret, how, expect):
    x, z = _run(how, interpret)
    np.testing.assert_array_equal(z, expect(x))


@pytest.mark.parametrize("how, message", [
    (MTE2_V_THEN_MTE3, r"data_copy: src must be ordered after the MTE2 copy that wrote it, "
                       r"by wait_flag\(HardEvent.MTE2_MTE3\) or a chain of flags through another "
                       r"pipe \(the NPU reads stale data\), got a read by MTE3 of UB bytes "
                       r"\[0, 256\) "
                       r"that the copy's waits made visible to V, MTE2 only"),
    (MTE2_MTE3_THEN_V, r"adds: src must be ordered after the MTE2 copy that wrote it, by "
                       r"wait_flag\(HardEvent.MTE2_V\) .* got a read by V of UB bytes \[0, 256\) "
                       r"that the copy's waits made visible to MTE2, MTE3 only"),
    (MTE2_V_THEN_SCALAR, r"get_value: the element must be ordered after the MTE2 "
                         r"copy that wrote it, by wait_flag\(HardEvent.MTE2_S\) .* got a read by S "
                         r"of UB bytes \[12, 16\) that the copy's waits made visible to V, MTE2"),
])
def test_unordered_consumer_is_reported(interpret, how, message):
    with pytest.raises(rt.AclError, match=r"kernel 'visibility_kernel'\[1\]: block_idx=0/1: "
                                          + message):
        _run(how, interpret)


def test_unchecked_mode_keeps_the_fast_path(interpret):
    """Without checked mode nothing is deferred or recorded: the copy is simply there."""
    x, z = _run(MTE2_V_THEN_MTE3, interpret, checked=False)
    np.testing.assert_array_equal(z, x)

