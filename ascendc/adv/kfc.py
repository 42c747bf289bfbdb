"""`asc.adv.Matmul` in a MIX kernel: the AIC serves the Matmul calls of its AIVs (Ascend C's
KfcServer / KfcCommClient, what REGIST_MATMUL_OBJ builds on Atlas A2).

In a MIX_AIC_1_2 / MIX_AIC_1_1 launch of a kernel that registers a Matmul, each core's state
says its part (`CORE_STATE.kfc`, set by ascendc/mix.py): 1 client (an AIV), 2 server (the
group's AIC); 0 elsewhere (the Matmul runs where it is called, as before).

- Server: the AIC runs the kernel up to `register_matmul(pipe, workspace, mm, tiling)`, which
  initialises its Matmul (the L1 / L0A / L0B / L0C / bias-table queues on the AIC's TPipe) and
  then loops: take the group's next message (`server_recv`, blocking), do its cube work with the
  helpers of mmkernel.py on the AIC's own buffers (GM -> L1 copies, load_data, mmad, fixpipe),
  answer the AIV that sent it (`server_reply`). The loop ends once every AIV of the group has
  finished its kernel (each client's End), and the AIC leaves the function that called
  register_matmul (compiled kernels; interpreted ones end the kernel there).
- Client: on an AIV, `iterate_all`, `iterate_batch`, `iterate`, `get_tensor_c(gm)` and `end` are
  messages: the Matmul's state (set_tail / set_org_shape / set_single_shape / transposes / bias
  on) and the GM operands set by set_tensor_a / set_tensor_b / set_bias (their addresses and
  element counts) go with each call, and the AIV waits for the answer (synchronous calls);
  `end` posts its message without waiting. `get_tensor_c(local)` for C in VECCALC / VECIN: the
  AIC fixpipes each tile computed by an iterate message into the AIV's slot of the workspace
  (base_m x base_n, C's dtype, at `block_idx * base_m * base_n` of the AIV) before answering;
  the AIV then copies the slot into its local tensor (MTE2 on the AIV).

A Matmul registered without a tiling is initialised by the client's `init(tiling)`: an INIT
message carrying the tiling's fields. Messages travel through the launch (rt.crossflags:
`kfc_post` / `kfc_recv` / `kfc_reply` / `kfc_wait`), which advances the launch's vector clocks at
each hand-off as a flag does; the AIC takes its AIVs' messages in turn (sub-block 0, 1, 0, ...;
another's only while that one has finished or is blocked), so its stream does not depend on
thread timing. In the NPU view each hand-off is a cross-core flag between
the two cores (`cross_core_set_flag` / `cross_core_wait_flag` rows with mode KFC_MODE: a set
names the slot of the core it reaches, a wait the slot of the core it waits for; the AIC's
answer runs on the FIXPIPE pipe, after its fixpipes), replayed point to point by
rt/npu/xcore.py.
"""
from __future__ import annotations

import ctypes

import numpy as np
from numba import carray
from numba.core import config
from numba.extending import overload
from numba.np import numpy_support

from .. import language as asc
from ..lang import dtypes as D
from ..lang import trace
from ..lang.core import prim
from ..lang.crosscore import KFC_POST, KFC_RECV, KFC_REPLY, KFC_WAIT, OP_KFC, call_xcore
from ..lang.errors import FAULT, KernelError, fault
from ..lang.prims.crosscore import call_status as _status, flush_deferred as _flush
from ..lang.prims.memops import voidptr
from ..lang.state import STATE
from .checks import NSTATE, S_BIAS, S_ITER
from .tilingops import NFIELDS
from .mmkernel import fixpipe_c, mm_tile_pos

__all__ = ["CLIENT", "SERVER", "role", "proto", "message", "client_call", "client_iterate",
           "server_recv", "server_reply", "operand", "state_of", "plan_of", "no_queues",
           "kfc_tile_to_ws", "kfc_ws_to_local", "check_not_server", "ITERATE_ALL",
           "ITERATE_BATCH", "ITERATE", "GET_C_GM", "END", "INIT", "init_message", "tiling_of",
           "no_tiling", "W_A", "W_B", "W_BIAS", "W_C",
           "W_SEQ", "W_LOCAL", "KFC_MODE"]

CLIENT, SERVER = 1, 2                # CORE_STATE.kfc
ITERATE_ALL, ITERATE_BATCH, ITERATE, GET_C_GM, END, INIT = 1, 2, 3, 4, 5, 6   # message ops
# message words: op, the client's block_idx, the Matmul state, (address, elements) of A, B,
# bias and C, en_sequential_write, C in a local tensor (iterate: fixpipe to the workspace), the
# iterate_batch plan (checks.mm_batch_plan); an INIT message (init(tiling) after a
# register_matmul without one) carries the tiling's fields
W_OP, W_BLK, W_STATE = 0, 1, 2
W_A = W_STATE + NSTATE
W_B, W_BIAS, W_C = W_A + 2, W_A + 4, W_A + 6
W_SEQ, W_LOCAL, W_PLAN = W_A + 8, W_A + 9, W_A + 10
W_TILING = W_PLAN + 6
MSG_WORDS = W_TILING + NFIELDS
KFC_MODE = 3          # the mode of the hand-offs' rows in the NPU view (point to point)
_PIPE_S, _PIPE_FIX = 0, 10
_XSET, _XWAIT = trace.op("cross_core_set_flag"), trace.op("cross_core_wait_flag")


@prim
def role(ctx):
    """This core's Matmul part: 0 (not a served launch), CLIENT or SERVER."""
    return ctx[STATE][0].kfc


@prim
def check_not_server(ctx, api):
    """Matmul calls on the AIC of a served launch: Ascend C's AIC only serves (REGIST_MATMUL_OBJ
    runs the server loop and returns), so the calls must come from the AIVs."""
    st = ctx[STATE][0]
    if st.kfc == SERVER:
        fault("{}: in a MIX kernel the AIC serves the Matmul (register_matmul runs its server "
              "loop and returns), so Matmul calls must come from the AIVs, got a call on AIC {}",
              api, st.block_idx)
        raise KernelError(FAULT)


def proto(dt):
    """An empty GM array of dtype `dt` (a DataType or numpy dtype): the type a GM operand is
    rebuilt with on the server."""
    return np.empty(0, D.as_datatype(dt).storage)


@overload(proto)
def _proto_ov(dt):
    return lambda dt: np.empty(0, dt)


@prim
def message(ctx, op, st, a, b, bias, c, seq, local, plan):
    """The words of a client's call (module doc)."""
    m = np.zeros(MSG_WORDS, np.int64)
    m[W_OP] = op
    m[W_BLK] = ctx[STATE][0].block_idx
    for i in range(NSTATE):
        m[W_STATE + i] = st[i]
    m[W_A], m[W_A + 1] = a.ctypes.data, a.size
    m[W_B], m[W_B + 1] = b.ctypes.data, b.size
    if st[S_BIAS] == 1:             # else no bias travels (the server's state says so too)
        m[W_BIAS], m[W_BIAS + 1] = bias.ctypes.data, bias.size
    m[W_C], m[W_C + 1] = c.ctypes.data, c.size
    m[W_SEQ] = 1 if seq else 0
    m[W_LOCAL] = 1 if local else 0
    m[W_PLAN], m[W_PLAN + 1], m[W_PLAN + 2] = plan[0], plan[1], plan[2]
    m[W_PLAN + 3], m[W_PLAN + 4], m[W_PLAN + 5] = plan[3], plan[4], plan[5]
    return m


@prim
def init_message(ctx, st, t):
    """An INIT message: the Matmul is initialised on the server from tiling record `t`."""
    m = np.zeros(MSG_WORDS, np.int64)
    m[W_OP] = INIT
    m[W_BLK] = ctx[STATE][0].block_idx
    for i in range(NSTATE):
        m[W_STATE + i] = st[i]
    for i in range(NFIELDS):
        m[W_TILING + i] = t[i]
    return m


@prim
def tiling_of(m):
    """The tiling fields of a received INIT message (for tilingops.tiling_new)."""
    return m[2 + W_TILING:2 + W_TILING + NFIELDS].copy()


@prim
def no_tiling():
    """The fields of a tiling not received yet (a server waiting for its INIT message)."""
    return np.zeros(NFIELDS, np.int64)


@prim
def client_call(ctx, m, answer):
    """Post message `m` to the group's AIC; with `answer`, wait for its reply (returned)."""
    st = ctx[STATE][0]
    _flush(ctx)
    trace.event(ctx, _XSET, trace.K_OP, 0, KFC_MODE, _PIPE_S)
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_KFC, m.ctypes.data,
                            KFC_POST + 4 * m.size), "asc.adv.Matmul")
    if not answer:
        return 0
    out = np.zeros(1, np.int64)
    trace.event(ctx, _XWAIT, trace.K_OP, 0, KFC_MODE, _PIPE_S)
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_KFC, out.ctypes.data, KFC_WAIT),
            "asc.adv.Matmul")
    _flush(ctx)
    return out[0]


@prim
def client_iterate(ctx, st, a, b, bias, local):
    """Matmul::Iterate() on a client: the AIC computes the next tile (and with C in a local
    tensor fixpipes it to this AIV's workspace slot); True while there is one."""
    m = message(ctx, ITERATE, st, a, b, bias, a, False, local, (0, 0, 0, 0, 0, 0))
    it = client_call(ctx, m, True)
    st[S_ITER] = it
    return it >= 0


@prim
def server_recv(ctx):
    """The AIC's next message: [sender's sub-block, words, message...]; [-1, ...] once every
    AIV of the group has ended."""
    st = ctx[STATE][0]
    m = np.zeros(MSG_WORDS + 2, np.int64)
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_KFC, m.ctypes.data,
                            KFC_RECV + 4 * MSG_WORDS), "asc.adv.register_matmul")
    if m[0] >= 0:
        if m[1] != MSG_WORDS:
            fault("asc.adv.register_matmul: a Matmul message must have {} words, got {}",
                  MSG_WORDS, m[1])
            raise KernelError(FAULT)
        trace.event(ctx, _XWAIT, trace.K_OP, 1 + m[0], KFC_MODE, _PIPE_S)
        _flush(ctx)
    return m


@prim
def server_reply(ctx, sub, value):
    """Answer AIV `sub` of the group with `value` (after the AIC's fixpipes have landed)."""
    st = ctx[STATE][0]
    _flush(ctx)
    trace.event(ctx, _XSET, trace.K_OP, 1 + sub, KFC_MODE, _PIPE_FIX)
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_KFC, value, KFC_REPLY + 4 * sub),
            "asc.adv.register_matmul")


def operand(m, w, like):
    """The GM operand at word `w` of received message `m` (words shifted by 2), typed as
    `like`."""
    n = int(m[3 + w])
    if n == 0:
        return np.empty(0, like.dtype)
    buf = (ctypes.c_char * (n * like.dtype.itemsize)).from_address(int(m[2 + w]))
    return np.frombuffer(buf, like.dtype)


@overload(operand)
def _view_ov(m, w, like):
    dt = numpy_support.as_dtype(like.dtype)     # a constant, as the generated _run's views

    def impl(m, w, like):
        return carray(voidptr(m[2 + w]), m[3 + w], dt)
    return impl


@prim
def state_of(m):
    """The Matmul state carried by received message `m` (a copy the server works on)."""
    return m[2 + W_STATE:2 + W_STATE + NSTATE].copy()


@prim
def plan_of(m):
    return (m[2 + W_PLAN], m[3 + W_PLAN], m[4 + W_PLAN], m[5 + W_PLAN], m[6 + W_PLAN],
            m[7 + W_PLAN])


def no_queues(ctx):
    """A client's Matmul holds no cube buffers (the AIV has no L1 / L0): queue-record
    placeholders of the type mm_register returns."""
    return (None,) * 7


if not config.DISABLE_JIT:
    @overload(no_queues)
    def _no_queues_ov(ctx):
        def impl(ctx):
            q = ctx[STATE][0].queues[0]
            return (q, q, q, q, q, q, q)
        return impl


@asc.jit
def kfc_tile_to_ws(qs, tiling, st, ws, blk, a_isz):
    """The server's half of GetTensorC(local): the tile in L0C -> the client's workspace slot
    (base_m x base_n, rows base_n apart, C's dtype), as mm_get_tensor_c stages it."""
    qc = qs[4]
    bn = tiling.base_n
    it = S_ITER
    pos = mm_tile_pos(tiling, st, st[it])
    cl = qc.deque(asc.float32)
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws + blk * tiling.base_m * bn)
    fixpipe_c(wg, cl, pos[3], pos[2], pos[4], bn, a_isz == 1)
    qc.free_tensor(cl)


@asc.jit
def kfc_ws_to_local(tiling, ws, dst):
    """The client's half of GetTensorC(local): its workspace slot -> the local tensor."""
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws + asc.get_block_idx() * tiling.base_m * tiling.base_n)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)      # (as mm_get_tensor_c: the copy waits for the
    asc.data_copy(dst, wg, tiling.base_m * tiling.base_n)      # tensor's earlier readers)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
