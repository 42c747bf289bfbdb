"""`asc.adv.Matmul`: pyasc's high-level GEMM, built from the cube primitives.

Mirrors Ascend C `Matmul<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE>` (matmul.h) with pyasc's names:
`MatmulType(position, format, dtype, is_trans=False, layout=LayoutMode.NONE)`,
`mm = Matmul(a, b, c, bias=None)`, `register_matmul(pipe, workspace, mm, tiling)` (or the tutorials'
`register_matmul(pipe, mm, tiling)`), `mm.init(tiling)`, `set_tensor_a/b(gm, transpose=False)`,
`set_bias`, `disable_bias`, `set_tail(m, n, k)`, `set_org_shape`, `set_single_shape`,
`iterate_all(c_gm, en_atomic=0)`, `iterate()` + `get_tensor_c(local)` (C in VECCALC/VECIN, one
tile at a time; see mmkernel.py) or `get_tensor_c(c_gm, en_sequential_write=False)` (C in GM:
the tile straight from L0C to its place in C, or with en_sequential_write to the start of c_gm as
a base_m x base_n block), `end()`; `MatmulConfig(...)` is accepted and changes nothing.
A tiling made by hand may leave step_k_a/step_k_b/step_m/step_n/db_l0a/db_l0b/db_l0c at 0
(pyasc's own tests do, and pass on the NPU): init reads them as 1 (tilingops.tiling_norm).

What iterate_all does (the same code in both modes: the helpers of mmkernel.py are written in the
kernel language; compiled kernels get them through the compiler, which turns a Matmul object into
a few local variables, see ascendc/adv/lowering.py): C[m x n] (+ bias) = A[m x k] @ B[k x n] for
this core, m/n/k = the tail (set_tail) or single shape (set_single_shape / tiling.single_core_*),
the GM tensors already offset to this core's block by the kernel. Output tiles of base_m x base_n
are visited in tiling.iterate_order (0: along M first); for each, K goes through L1 in chunks of
min(step_k_a, step_k_b) * base_k and through L0A/L0B in base_k slices:
  GM -> L1   data_copy(Nd2NzParams): A as NZ (C0-wide strips); A^T (is_trans) and B as 16-column
             strips each row-major (k x 16, i.e. C0 x 16 fractals); B^T (is_trans) as NZ, which is
             already ZN. Bias (fp32): GM -> L1 (one-row Nd2Nz) -> BT (data_copy), once per tile.
  L1 -> L0A  load_data NZ -> ZZ (A) or transposing load_data (A^T).
  L1 -> L0B  transposing load_data -> ZN (B) or plain load_data (B^T).
  mmad       into L0C: bias (mmad with bias) or zero on the first K slice, accumulating after.
  fixpipe    L0C -> GM, NZ -> ND, rows org_n apart.
Buffers come from the kernel's TPipe at register_matmul/init (TQue A1 x depth, B1 x depth, A2 x
db_l0a, B2 x db_l0b, CO1 x db_l0c; with a bias an A1 queue and a C2 TBuf of base_n floats), so
the capacity rules and the 64-buffer limit apply and the profiler counts every byte and MAC.

Dtypes (Ascend C's MatmulType combinations of the cube): float16/bfloat16 A and B with float32
or 16-bit C (fixpipe rounds the float32 L0C to float16/bfloat16), float32 A and B with float32
C, int8 A and B with int32 C (L0C holds int32; bias int32; K in C0 = 32 blocks, base_k a multiple
of 32). int8 A/B reach L1 as 16-column strips like float32 B (mmkernel.nd2nz_strips_int8).

CubeFormat.NZ A / B (float16, bfloat16, float32; not transposed): in GM as ceil(cols / C0) strips
of ceil16(rows) rows of C0 elements; GM -> L1 is one strided data_copy of 32-byte rows per tile
(float32 B: one per strip, as B's L1 strips are 16 columns wide), see mmkernel._copy_a/_copy_b.

Fidelity: A, B, bias in GM (TPosition.GM), bias ND; C in GM or VECCALC/VECIN
through the workspace (any C dtype above); of the batch layouts only NORMAL (iterate_batch, C in
GM: iterate_all per batch, mmkernel.mm_iterate_batch), no atomic C accumulation (en_atomic), no
quantisation (int8 -> float16 C with set_quant_vector); the K tail is not zero-padded in L1 (the
emulator's mmad is exact in k); step_m/step_n > 1 are accepted but each base tile is loaded by
itself. The host tiling (ascendc.host) does not take DT_INT8 yet: int8 kernels need a tiling
made by hand.
"""
from __future__ import annotations

from ..lang import api
from ..lang import dtypes as D
from ..lang.enums import CubeFormat, TPosition
from ..lang.errors import KernelError, KernelReturn
from ..lang.params import LayoutMode
from ..lang.record import mark_line
from .tilingops import tiling_new
from .checks import (S_BIAS, S_INIT, S_ITER, S_OKA, S_OKB, S_OM, S_ON, S_SK, S_SM, S_SN, S_TA,
                     S_TB, S_TK, S_TM, S_TN, mm_batch_plan, mm_check_get_c, mm_check_get_c_gm,
                     mm_check_iterate, mm_check_tile, mm_check_tiling, new_state, tiling_norm,
                     ws_as)
from .mmkernel import (mm_get_tensor_c, mm_get_tensor_c_gm, mm_iterate, mm_iterate_all,
                       mm_iterate_batch, mm_register)
from . import kfc as K


def type_error(role: str, position, fmt, layout) -> str | None:
    """Why a MatmulType cannot be used for operand `role` (None if it can). Shared by the
    interpreter and the compiler (which checks it at compile time: these are template arguments
    in Ascend C)."""
    local_c = role == "c" and int(position) in (TPosition.VECCALC, TPosition.VECIN)
    if int(position) != TPosition.GM and not local_c:
        return (f"asc.adv.MatmulType: position must be TPosition.GM (or VECCALC/VECIN for c: "
                f"the other operand positions are not emulated), got "
                f"position={TPosition(int(position)).name} for {role}")
    if int(fmt) not in (CubeFormat.ND, CubeFormat.NZ) or \
            (int(fmt) == CubeFormat.NZ and role not in ("a", "b", "operand")):
        return (f"asc.adv.MatmulType: format must be CubeFormat.ND (or NZ for a and b), got "
                f"format={CubeFormat(int(fmt)).name} for {role}")
    if int(layout) not in (LayoutMode.NONE, LayoutMode.NORMAL):
        return (f"asc.adv.MatmulType: layout must be LayoutMode.NONE or NORMAL (the other batch "
                f"layouts are not emulated), got layout={LayoutMode(int(layout)).name} for {role}")
    return None


def _nz(t) -> int:
    """2 for a CubeFormat.NZ operand (the state's S_TA / S_TB encoding, checks.py), else 0."""
    return 2 if int(t.format) == CubeFormat.NZ else 0


class MatmulType:
    """Mirrors Ascend C `MatmulType<POS, FORMAT, T, ISTRANS, LAYOUT>`: where an operand lives,
    its format, dtype, whether it may be transposed."""

    def __init__(self, position, format, dtype, is_trans=False, layout=LayoutMode.NONE):
        self.position, self.format, self.layout = position, format, layout
        self.dtype = D.as_datatype(dtype)
        self.is_trans = bool(is_trans)

    def as_tuple(self):
        """The form a compiled kernel holds: (position, format, sizeof(dtype), is_trans, layout)."""
        return (int(self.position), int(self.format), self.dtype.sizeof(), self.is_trans,
                int(self.layout))

    def __repr__(self):
        return (f"MatmulType({TPosition(int(self.position)).name}, "
                f"{CubeFormat(int(self.format)).name}, {self.dtype.name}, "
                f"is_trans={self.is_trans})")


class MatmulConfig:
    """Mirrors Ascend C `MatmulConfig` / pyasc `asc.adv.MatmulConfig(do_norm=True, ...)`: the
    Matmul template's configuration. Accepted with any of pyasc's keywords; the emulated Matmul
    is the default (norm) one whatever they say."""

    def __init__(self, **fields):
        self.fields = fields

    def __repr__(self):
        return f"MatmulConfig({', '.join(f'{k}={v!r}' for k, v in self.fields.items())})"


NO_BIAS = (-1, 0, 0, False, 0)
SUPPORTED_METHODS = ("init", "set_tensor_a", "set_tensor_b", "set_bias", "disable_bias",
                     "set_tail", "set_org_shape", "set_single_shape", "iterate_all", "iterate",
                     "get_tensor_c", "end", "iterate_batch")


class _PipeOfKernel(api.TPipe):
    """`mm.init(tiling)` without a pipe: the kernel's TPipe (Ascend C's GetTPipePtr())."""

    def __init__(self):
        pass


class Matmul:
    """Mirrors Ascend C `Matmul<A, B, C, BIAS>` (interpreter form; compiled kernels rewrite the
    same calls into local variables and the same helpers)."""

    def __init__(self, a=None, b=None, c=None, bias=None, matmul_config=None, *, a_type=None,
                 b_type=None, c_type=None, bias_type=None):
        a, b, c = a or a_type, b or b_type, c or c_type
        bias = bias or bias_type
        for role, t in (("a", a), ("b", b), ("c", c), ("bias", bias)):
            if t is None and role != "bias":
                raise TypeError(f"asc.adv.Matmul: {role} must be an asc.adv.MatmulType, got "
                                f"{role}=None")
            if t is not None:
                if not isinstance(t, MatmulType):
                    raise TypeError(f"asc.adv.Matmul: {role} must be an asc.adv.MatmulType, got "
                                    f"{role}={type(t).__name__}")
                msg = type_error(role, t.position, t.format, t.layout)
                if msg:
                    raise KernelError(msg)
        self._types = (a, b, c, bias)
        self._st = new_state()
        self._pipe = self._ws = None
        self._q = self._tiling = self._a = self._b = self._bias = None
        self._lazy = False      # registered without a tiling: a client's init is a message

    def _init(self, pipe, tiling):
        if hasattr(tiling, "_kernel_record"):
            tiling = tiling._kernel_record()
        tiling = tiling_norm(tiling)
        a, bias = self._types[0], self._types[3]
        mm_check_tiling(tiling, a.dtype.sizeof(), bias is not None)
        self._tiling = tiling
        if K.role(api.current_ctx()) != K.CLIENT:      # an AIV client has no L1 / L0 (kfc.py)
            self._q = mm_register(pipe or _PipeOfKernel(), tiling, a.dtype.sizeof(),
                                   bias is not None)
        self._st[S_INIT] = 1

    def init(self, tiling, pipe=None):
        """Mirrors `Matmul::Init(&tiling, pipe)`: takes its buffers from the kernel's TPipe (a
        client of a Matmul registered without a tiling sends it to its server, kfc.py)."""
        self._init(pipe or self._pipe, tiling)
        if self._lazy and self._client("asc.adv.Matmul.init"):
            ctx = api.current_ctx()
            mark_line(ctx)
            K.client_call(ctx, K.init_message(ctx, self._st, self._tiling), True)

    def set_tensor_a(self, gm, transpose=False):
        self._a = gm
        self._st[S_TA] = (1 if transpose else 0) + _nz(self._types[0])

    def set_tensor_b(self, gm, transpose=False):
        self._b = gm
        self._st[S_TB] = (1 if transpose else 0) + _nz(self._types[1])

    def set_bias(self, gm):
        if self._types[3] is None:
            raise KernelError("asc.adv.Matmul.set_bias: the Matmul must be declared with a bias "
                              "MatmulType (Matmul(a, b, c, bias)), got bias=None")
        self._bias = gm
        self._st[S_BIAS] = 1

    def disable_bias(self):
        self._st[S_BIAS] = 0

    def set_tail(self, m=-1, n=-1, k=-1):
        self._st[S_TM], self._st[S_TN], self._st[S_TK] = int(m), int(n), int(k)

    def set_org_shape(self, m, n, k, kb=None, kc=None):
        self._st[S_OM], self._st[S_ON] = int(m), int(n)
        self._st[S_OKA], self._st[S_OKB] = int(k), int(k if kb is None else kb)

    def set_single_shape(self, m, n, k):
        self._st[S_SM], self._st[S_SN], self._st[S_SK] = int(m), int(n), int(k)

    def _operand_types(self, api_name):
        """The A, B, C MatmulTypes as tuples, once set_tensor_a and set_tensor_b have run."""
        if self._a is None or self._b is None:
            raise KernelError(f"{api_name}: set_tensor_a and set_tensor_b must be called first, "
                              f"got a={self._a is not None} b={self._b is not None}")
        return (t.as_tuple() for t in self._types[:3])

    def iterate_all(self, gm, en_atomic=0, sync=True, wait_iterate_all=False, fake_msg=False):
        """Mirrors `Matmul::IterateAll(gm, enAtomic)`: the whole single-core C (see module doc)."""
        a, b, c = self._operand_types("asc.adv.Matmul.iterate_all")
        mm_check_iterate(self._st, self._tiling if self._tiling is not None else _EMPTY,
                         a[2], b[2], c[2], a[3], b[3], self._a.data, self._b.data, gm.data,
                         int(en_atomic))
        if self._client("asc.adv.Matmul.iterate_all"):
            self._post(K.ITERATE_ALL, gm)
            return
        mm_iterate_all(self._q, self._tiling, self._st, self._a, self._b,
                        self._bias if self._bias is not None else gm, gm)

    def iterate_batch(self, tensor, batch_a, batch_b, en_sequential_write, matrix_stride_a=0,
                      matrix_stride_b=0, matrix_stride_c=0, en_partial_sum=False, en_atomic=0,
                      sync=True, wait_iterate_batch=None):
        """Mirrors `Matmul::IterateBatch(gm, batchA, batchB, enSequentialWrite, ...)`: one C of
        single_core_m x single_core_n per batch, for LayoutMode.NORMAL operands and C in GM
        (matrix_stride_c is reserved in Ascend C: C's stride comes from the C layout)."""
        api_name = "asc.adv.Matmul.iterate_batch"
        a, b, c = self._operand_types(api_name)
        if not isinstance(tensor, api.GlobalTensor) or en_partial_sum:
            raise KernelError(f"{api_name}: tensor must be a GlobalTensor and en_partial_sum "
                              f"False (C in UB and partial sums are not emulated), got "
                              f"tensor={type(tensor).__name__} en_partial_sum={en_partial_sum}")
        mm_check_iterate(self._st, self._tiling if self._tiling is not None else _EMPTY,
                         a[2], b[2], c[2], a[3], b[3], self._a.data, self._b.data, tensor.data,
                         int(en_atomic))
        plan = mm_batch_plan(self._tiling, a[4], b[4], c[4], int(batch_a), int(batch_b),
                             bool(en_sequential_write), int(matrix_stride_a),
                             int(matrix_stride_b))
        if self._client(api_name):
            self._post(K.ITERATE_BATCH, tensor, plan=plan)
            return
        mm_iterate_batch(self._q, self._tiling, self._st, self._a, self._b,
                         self._bias if self._bias is not None else tensor, tensor, plan)

    def iterate(self, en_partial_sum=False, sync=True, local_c_matrix=None):
        """Mirrors `Matmul::Iterate()`: computes the next C tile into L0C; True while there is
        one (`while mm.iterate():`; pyasc's `with mm.iterate() as count:` is the same loop)."""
        a, b, c = self._operand_types("asc.adv.Matmul.iterate")
        if en_partial_sum or local_c_matrix is not None:
            raise KernelError("asc.adv.Matmul.iterate: en_partial_sum and local_c_matrix are not "
                              f"supported, got en_partial_sum={en_partial_sum} "
                              f"local_c_matrix={local_c_matrix!r}")
        mm_check_tile(self._st, self._tiling if self._tiling is not None else _EMPTY,
                      a[2], b[2], c[2], a[3], b[3], self._a.data, self._b.data)
        if self._client("asc.adv.Matmul.iterate"):
            local = int(self._types[2].position) != TPosition.GM
            if local and self._ws is None:
                raise KernelError("asc.adv.Matmul.iterate: a workspace must be given to "
                                  "register_matmul(pipe, workspace, mm, ...) (C tiles are staged "
                                  "there on the way to UB), got workspace=None")
            mark_line(api.current_ctx())
            return bool(K.client_iterate(api.current_ctx(), self._st, self._a.data,
                                         self._b.data, self._bias_data(), local))
        return bool(mm_iterate(self._q, self._tiling, self._st, self._a, self._b,
                               self._bias if self._bias is not None else self._a))

    def _iterate_count(self):
        """`count` of `with mm.iterate() as count:` (the current tile's number, from 0)."""
        return api.kernel_value(int(self._st[S_ITER]))

    def get_tensor_c(self, tensor, en_atomic=0, en_sequential_write=False, sync=True,
                     optional_tensor=None):
        """Mirrors `Matmul::GetTensorC(local, enAtomic, enSequentialWrite)`: the tile of the last
        iterate() into a VECCALC/VECIN local tensor (base_m x base_n, rows base_n apart), or
        for C in TPosition.GM `GetTensorC(gm, ...)`: into C in GM (mmkernel.mm_get_tensor_c_gm)."""
        api_name = "asc.adv.Matmul.get_tensor_c"
        c_type = self._types[2]
        c_gm = int(c_type.position) == TPosition.GM
        want = api.GlobalTensor if c_gm else api.LocalTensor
        if not isinstance(tensor, want) or optional_tensor is not None:
            raise KernelError(f"{api_name}: tensor must be a {want.__name__} (MatmulType c is in "
                              f"TPosition.{TPosition(int(c_type.position)).name}; "
                              f"optional_tensor is not supported), got "
                              f"tensor={type(tensor).__name__}")
        if int(en_atomic) != 0:
            raise KernelError(f"{api_name}: en_atomic must be 0 (atomic accumulation is not "
                              f"emulated), got en_atomic={en_atomic}")
        tiling = self._tiling if self._tiling is not None else _EMPTY
        a_isz, c_isz = self._types[0].dtype.sizeof(), c_type.dtype.sizeof()
        client = self._client(api_name)
        if c_gm:
            mm_check_get_c_gm(self._st, c_isz, tensor.data)
            if client:
                self._post(K.GET_C_GM, tensor, seq=bool(en_sequential_write))
                return
            mm_get_tensor_c_gm(self._q, self._tiling, self._st, tensor, a_isz,
                               bool(en_sequential_write))
            return
        if self._ws is None:
            raise KernelError(f"{api_name}: a workspace must be given to register_matmul(pipe, "
                              f"workspace, mm, ...) (C tiles are staged there on the way to "
                              f"UB), got workspace=None")
        ws = ws_as(self._ws.data, tensor.data)
        mm_check_get_c(self._st, tiling, c_isz, ws, tensor.data, tensor.data.size)
        if client:
            mark_line(api.current_ctx())
            K.kfc_ws_to_local(self._tiling, api.wrap(api.GlobalAddress, ws), tensor)
            return
        mm_get_tensor_c(self._q, self._tiling, self._st, api.wrap(api.GlobalAddress, ws), tensor,
                        a_isz)

    def end(self):
        """Mirrors `Matmul::End()` (nothing to release here; a client posts its End message)."""
        if self._client("asc.adv.Matmul.end"):
            self._post(K.END, None, answer=False)

    # ---- the client / server pair of a MIX kernel (kfc.py) --------------------------------------
    def _client(self, api_name) -> bool:
        """Is this core a Matmul client (its calls are messages)? On the serving AIC a call is
        an error."""
        ctx = api.current_ctx()
        K.check_not_server(ctx, api_name)
        return K.role(ctx) == K.CLIENT

    def _bias_data(self):
        if self._bias is not None and self._st[S_BIAS] == 1:
            return self._bias.data
        return self._bias_proto()

    def _bias_proto(self):
        bias, a = self._types[3], self._types[0]
        if bias is not None:
            return K.proto(bias.dtype)
        return K.proto(D.int32 if a.dtype.sizeof() == 1 else D.float32)

    def _post(self, op, c, seq=False, plan=(0, 0, 0, 0, 0, 0), answer=True):
        a = self._a.data if self._a is not None else self._bias_proto()
        b = self._b.data if self._b is not None else self._bias_proto()
        c = c.data if c is not None else a
        ctx = api.current_ctx()
        mark_line(ctx)
        m = K.message(ctx, op, self._st, a, b, self._bias_data(), c, seq, False, tuple(plan))
        K.client_call(ctx, m, answer)

    def _serve(self, ctx):
        """The AIC's server loop (kfc.py): the group's messages until every AIV has ended."""
        pa, pb, pc = (K.proto(t.dtype) for t in self._types[:3])
        pbias = self._bias_proto()
        a_isz = self._types[0].dtype.sizeof()
        q, t = self._q, self._tiling

        def gm(m, w, like):
            return api.wrap(api.GlobalTensor, K.operand(m, w, like))
        while True:
            m = K.server_recv(ctx)
            if m[0] < 0:
                return
            st, op, value = K.state_of(m), int(m[2 + K.W_OP]), 0
            if op == K.END:
                continue
            if op == K.INIT:
                self._init(self._pipe, tiling_new(K.tiling_of(m)))
                q, t = self._q, self._tiling
                K.server_reply(ctx, int(m[0]), 0)
                continue
            a, b, bias = gm(m, K.W_A, pa), gm(m, K.W_B, pb), gm(m, K.W_BIAS, pbias)
            if op == K.ITERATE_ALL:
                mm_iterate_all(q, t, st, a, b, bias, gm(m, K.W_C, pc))
            elif op == K.ITERATE_BATCH:
                mm_iterate_batch(q, t, st, a, b, bias, gm(m, K.W_C, pc), K.plan_of(m))
            elif op == K.ITERATE:
                more = bool(mm_iterate(q, t, st, a, b, bias))
                if more and m[2 + K.W_LOCAL]:
                    ws = api.wrap(api.GlobalAddress, ws_as(self._ws.data, pc))
                    K.kfc_tile_to_ws(q, t, st, ws, int(m[2 + K.W_BLK]), a_isz)
                value = int(st[S_ITER]) if more else -1
            else:
                mm_get_tensor_c_gm(q, t, st, gm(m, K.W_C, pc), a_isz, bool(m[2 + K.W_SEQ]))
            K.server_reply(ctx, int(m[0]), value)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise KernelError(f"asc.adv.Matmul.{name} is not supported (supported Matmul methods: "
                          f"{', '.join(SUPPORTED_METHODS)})")


def register_matmul(pipe, *args):
    """Mirrors `REGIST_MATMUL_OBJ(&pipe, workspace, mm, &tiling)`: pyasc's
    `register_matmul(pipe, workspace, mm, tiling=None)` or the tutorials' `(pipe, mm, tiling)`.
    With a tiling it also runs `mm.init(tiling)`."""
    mms = [i for i, x in enumerate(args) if isinstance(x, Matmul)]
    if len(mms) != 1 or len(args) - mms[0] > 2:
        raise TypeError("asc.adv.register_matmul: arguments must be (pipe, workspace, mm, "
                        f"tiling=None) or (pipe, mm, tiling), got {len(args) + 1} arguments")
    mm = args[mms[0]]
    mm._pipe = pipe
    if mms[0] == 1:
        mm._ws = args[0]
    tiling = args[mms[0] + 1] if len(args) > mms[0] + 1 else None
    if tiling is not None:
        mm._init(pipe, tiling)
    mm._lazy = tiling is None
    ctx = api.current_ctx()
    if K.role(ctx) == K.SERVER:     # the AIC serves its AIVs, then leaves (kfc.py)
        mm._serve(ctx)
        raise KernelReturn()


def _empty_record():
    from .tiling import TCubeTiling
    return TCubeTiling()._kernel_record()


_EMPTY = _empty_record()
