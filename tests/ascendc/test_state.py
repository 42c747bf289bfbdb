"""A core's named state (lang/state.py) and the table of positions and levels
(lang/positions.py)."""
import numpy as np
import pytest
from numba import njit

import ascendc as asc
import rt
from ascendc.lang import core, positions as P
from ascendc.lang import prims
from ascendc.lang.errors import KernelError
from ascendc.lang.state import CORE_STATE, KIND_QUE, STATE


def _ctx(flags=0):
    return core.new_ctx(rt.get_soc(), flags)


def test_positions_table_covers_the_enum():
    members = {m.value: m.name for m in asc.TPosition if m.name not in ("MAX", "LCM")}
    assert P.POSITION_NAMES == tuple(members[v] for v in range(P.NPOS))
    assert P.NPOS == asc.TPosition.MAX
    assert P.POS_LEVEL[asc.TPosition.VECCALC] == P.UB
    assert P.POS_LEVEL[asc.TPosition.CO2] == P.GM_LEVEL      # CO2 is GM on 910B
    assert P.TQUE_POSITIONS_TEXT == "VECIN, VECOUT, VECCALC, A1, A2, B1, B2, CO1, CO2"
    assert P.TBUF_DEFAULT == asc.TPosition.VECCALC


def test_layout_reads_level_capacities_from_the_soc():
    soc = rt.get_soc()
    offs, sizes, total = core.layout(soc)
    assert sizes == [soc.ub_bytes, soc.l1_bytes, soc.l0a_bytes, soc.l0b_bytes, soc.l0c_bytes,
                     P.BT_BYTES]
    assert offs[0] == 0 and total == sum(sizes)
    st = core.state(_ctx())
    assert list(st.level_base) == offs and list(st.level_size) == sizes


def test_begin_block_resets_per_block_fields_and_keeps_counters():
    ctx = _ctx()
    st = core.state(ctx)
    st.src_line, st.nque, st.npending = 12, 3, 2
    st.events[4, 1] = 1
    st.counters[core.C_MTE2] = 64
    core.begin_block(ctx, 5, 8)
    assert (st.block_idx, st.block_num, st.src_line, st.nque, st.npending) == (5, 8, 0, 0, 0)
    assert not st.events.any()
    assert core.read_counters(ctx)["mte2_bytes"] == 64
    core.reset_counters(ctx)
    assert not any(core.read_counters(ctx).values())


def test_queue_handle_is_a_view_of_the_core_state():
    ctx = _ctx()
    core.begin_block(ctx, 0, 1)
    q = prims.tque_new(ctx, int(asc.TPosition.VECIN), 2)
    prims.init_buffer_que(ctx, q, 2, 100)
    rec = core.state(ctx).queues[0]
    assert (rec.kind, rec.depth, rec.num, rec.slot_bytes, rec.level) == (KIND_QUE, 2, 2, 128, P.UB)
    t = prims.que_alloc_tensor(ctx, q, np.float32)
    prims.que_enque(ctx, q, t)
    assert rec.fifo_n == 1 and q["fifo_n"] == 1
    prims.que_free_tensor(ctx, q, prims.que_deque(ctx, q, np.float32))
    assert rec.fifo_n == 0 and rec.alloc == 0
    assert core.state(ctx).level_used[P.UB] == 256


@njit
def _new_queue_in_njit(ctx, pos):
    q = prims.tque_new(ctx, pos, 3)
    q.next_slot = 7                 # writes the core's state, not a copy
    return q.id


def test_tque_new_in_njit_code_returns_a_view():
    ctx = _ctx()
    core.begin_block(ctx, 0, 1)
    k = _new_queue_in_njit(ctx, int(asc.TPosition.VECOUT))
    rec = core.state(ctx).queues[k]
    assert (rec.depth, rec.next_slot, rec.pos) == (3, 7, asc.TPosition.VECOUT)


@pytest.mark.parametrize("make, message", [
    (lambda ctx: prims.tque_new(ctx, int(asc.TPosition.GM), 1),
     r"asc.TQue: pos must be one of VECIN, VECOUT, VECCALC, A1, A2, B1, B2, CO1, CO2, "
     r"got pos=GM"),
    (lambda ctx: prims.tque_new(ctx, int(asc.TPosition.CO2), 1),
     r"asc.TQue: pos CO2 is global memory on 910B \(fixpipe writes GM directly\), got pos=CO2"),
    (lambda ctx: prims.tque_new(ctx, 12, 1),
     r"asc.TQue: pos must be one of .*got pos=TPosition\(12\)"),
    (lambda ctx: prims.tbuf_new(ctx, int(asc.TPosition.GM)),
     r"asc.TBuf: pos must be a local position .*got pos=GM"),
])
def test_position_errors(make, message):
    ctx = _ctx()
    core.begin_block(ctx, 0, 1)
    with pytest.raises(KernelError, match=message):
        make(ctx)


def test_errors_name_levels_and_positions_from_the_table():
    e = KernelError("{:level} {:level} {:pos} {:pos}", P.L0C, -1, int(asc.TPosition.B2), 99)
    assert str(e) == "L0C GM B2 TPosition(99)"
    assert prims.position_name(int(asc.TPosition.VECCALC)) == "VECCALC"
    assert core.level_name(P.BT) == "BT" and core.level_name(-1) == "GM"


@asc.jit
def tque_at_kernel(x: asc.GlobalAddress, pos: int):
    pipe = asc.TPipe()
    q = asc.TQue(pos, 1)
    pipe.init_buffer(q, 1, 256)


@asc.jit
def veccalc_queue_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, n: int):
    gx = asc.GlobalTensor()
    gx.set_global_buffer(x, n)
    gy = asc.GlobalTensor()
    gy.set_global_buffer(y, n)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECCALC, 1)
    qo = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(qi, 1, n * 4)
    pipe.init_buffer(qo, 1, n * 4)
    a = qi.alloc_tensor(x.dtype)
    asc.data_copy(a, gx, n)
    qi.enque(a)
    a = qi.deque(x.dtype)
    # a VECCALC queue has no pipe pair: its steps are no flags on the NPU, so the copies are
    # ordered by flags of their own
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    b = qo.alloc_tensor(y.dtype)
    asc.adds(b, a, 1.5, n)
    qo.enque(b)
    qi.free_tensor(a)
    b = qo.deque(y.dtype)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(gy, b, n)
    qo.free_tensor(b)


def test_tque_at_veccalc_is_a_ub_queue(interpret):
    # pyasc's NPU tests declare TQue(TPosition.VECCALC, ...): a UB queue, like VECIN/VECOUT
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    veccalc_queue_kernel[1](x, y, 64, interpret=interpret)
    np.testing.assert_array_equal(y, x + 1.5)
    ctx = _ctx()
    core.begin_block(ctx, 0, 1)
    q = prims.tque_new(ctx, int(asc.TPosition.VECCALC), 1)
    assert (q["kind"], q["level"]) == (KIND_QUE, P.UB)


def test_tque_at_co2_is_rejected_in_a_kernel(interpret):
    x = np.zeros(8, np.float32)
    with pytest.raises(rt.AclError, match=r"block_idx=0/1: asc.TQue: pos CO2 is global memory"):
        tque_at_kernel[1](x, int(asc.TPosition.CO2), interpret=interpret)
    tque_at_kernel[1](x, int(asc.TPosition.A1), interpret=interpret)


def test_state_is_one_record_of_core_state():
    ctx = _ctx()
    assert ctx[STATE].dtype == CORE_STATE and ctx[STATE].shape == (1,)
    assert "src_line" in CORE_STATE.names
