"""The kernel language's public surface, declared once.

Every name a kernel can use is one row of this table: free functions (`asc.add`), constructors
(`asc.TQue(...)`, parameter structs) and methods (`TQue.alloc_tensor`), each with its signature
(one or more `Form`s, chosen as pyasc's dispatcher chooses: by the keywords given and the number of
positional arguments), the primitive in `ascendc.lang.prims` that implements it, and what the NPU
does for it: the pipe that issues it (`PipeID`: S, V, M, MTE1, MTE2, MTE3, FIX; data movement is
`BY_DIRECTION`, see `DIRECTION_PIPES`) and the kind of work (`Work`).

Both modes are derived from these rows: the interpreter's classes and functions
(`ascendc/lang/api.py`) and the compiler's lowering (`ascendc/compiler/lower.py`). A primitive is
called as ``prim(ctx, [receiver,] *values)`` with the values in the form's order: tensors as
storage arrays, queues as their records, params structs as namedtuples, dtypes as storage dtypes,
enums as ints. Adding an op = one row here + one primitive. Namespaces such as `asc.adv` register
an `Extension` (their own classes and lowering) instead of hooks in the generic code.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from . import params as P
from .enums import HardEvent, PipeID
from .positions import TBUF_DEFAULT


class Work(enum.Enum):
    """What an instruction does, for the profiler and the NPU simulator."""
    ELEMENTWISE = "elementwise"   # vector op over elements (count or mask + repeats)
    REDUCE = "reduce"             # vector reduction
    COPY = "copy"                 # data movement between memory levels
    MMAD = "mmad"                 # cube multiply-accumulate
    FIXPIPE = "fixpipe"           # L0C -> GM/L1 with conversion
    SYNC = "sync"                 # flags, barriers, queue hand-offs
    SCALAR = "scalar"             # scalar-unit work: indices, element access, bookkeeping
    ALLOC = "alloc"               # buffer management (no data moved)
    DEBUG = "debug"               # printf / dumps (not an NPU instruction worth timing)


# how the compiler holds a value (Handle.kind): a GM address, a tensor view, a queue/buffer
# record, the pipe, a dtype, or anything else
GA, T, Q, PIPE, DT, OTHER = "GA", "T", "Q", "PIPE", "DT", "OTHER"

BY_DIRECTION = "by-direction"     # the pipe depends on where the data goes (see DIRECTION_PIPES)

# (source, destination) memory -> the pipe that moves the data (Ascend C programming guide,
# "hardware architecture": MTE2 brings data in from GM, MTE3 writes it out, MTE1 feeds L0A/L0B,
# FIXPIPE drains L0C; a UB -> UB copy runs on the vector unit).
DIRECTION_PIPES = {
    ("GM", "UB"): PipeID.PIPE_MTE2, ("GM", "L1"): PipeID.PIPE_MTE2,
    ("GM", "L0A"): PipeID.PIPE_MTE2, ("GM", "L0B"): PipeID.PIPE_MTE2,
    ("UB", "GM"): PipeID.PIPE_MTE3, ("UB", "L1"): PipeID.PIPE_MTE3,
    ("L1", "L0A"): PipeID.PIPE_MTE1, ("L1", "L0B"): PipeID.PIPE_MTE1,
    ("L1", "UB"): PipeID.PIPE_MTE1, ("L1", "BT"): PipeID.PIPE_MTE1,
    ("L0C", "GM"): PipeID.PIPE_FIX, ("L0C", "L1"): PipeID.PIPE_FIX,
    ("UB", "UB"): PipeID.PIPE_V,
}

_S, _V, _M = PipeID.PIPE_S, PipeID.PIPE_V, PipeID.PIPE_M


@dataclass(frozen=True)
class Form:
    """One signature of an op: parameter names (pyasc spelling and order), defaults, primitive.

    `ignored` parameters are accepted for pyasc compatibility and not passed to the primitive."""
    params: tuple
    prim: str | None
    defaults: dict = field(default_factory=dict)
    ignored: tuple = ()

    def accepts(self, npos: int, keys) -> bool:
        if npos > len(self.params) or any(k not in self.params for k in keys):
            return False
        given = set(self.params[:npos]) | set(keys)
        if set(self.params[:npos]) & set(keys):
            return False
        return all(p in given or p in self.defaults for p in self.params)

    def order(self, args, kwargs) -> list:
        """Values (or AST nodes) in parameter order, defaults filled in, ignored ones dropped."""
        vals = list(args) + [kwargs[p] if p in kwargs else self.defaults[p]
                             for p in self.params[len(args):]]
        return [v for p, v in zip(self.params, vals) if p not in self.ignored]


@dataclass(frozen=True)
class Function:
    """`asc.<name>(...)`. `special` names a call both modes implement by hand (printf, range)."""
    name: str
    forms: tuple
    pipe: object
    work: Work
    doc: str = ""
    special: str | None = None
    returns: str | None = None     # "int", "bool", a handle class name, or None
    unit: str = "any"              # "AIC": runs on the cube core of a separated SoC (910B)


@dataclass(frozen=True)
class Method:
    """`<cls>.<name>(...)` on a kernel handle. The primitive receives the receiver first unless
    `receiver` is False. `returns`: None, "int", "bool", "str", a handle class, or "self" (the
    receiver's class). `rebinds`: the result replaces the receiver (set_global_buffer).
    `native`: the handle's own attribute in interpret mode (a numpy array's `.dtype`, DataType's
    `.sizeof()`), no primitive; compiled kernels call `compiled` (a function of the generated
    module's namespace, without ctx) or read the attribute. `interpret_only`: a debugging aid
    compiled kernels refuse."""
    cls: str
    name: str
    forms: tuple
    pipe: object = _S
    work: Work = Work.SCALAR
    returns: str | None = None
    receiver: bool = True
    rebinds: bool = False
    native: bool = False
    compiled: str | None = None
    interpret_only: bool = False
    doc: str = ""
    touches: str = ""       # "r" / "w": reads / writes the receiver's elements (insert_sync)

    @property
    def api(self) -> str:
        return f"{self.cls}.{self.name}"


@dataclass(frozen=True)
class Handle:
    """A class of kernel objects: `kind` is how the compiler holds it (GA: a GM address, T: a
    tensor view, Q: a queue/buffer record, PIPE: the pipe, DT: a dtype); `ctor` its constructor
    (None: not constructed in kernels; prim None: created unbound, e.g. GlobalTensor())."""
    name: str
    kind: str
    ctor: Form | None
    doc: str = ""
    base: str | None = None   # the handle class it extends (its methods, its kind)
    site: str | None = None   # ctor parameter both modes fill with the call's allocation site


@dataclass(frozen=True)
class Extension:
    """A namespace of the kernel language with its own objects (`asc.adv`; the interpreter runs
    its Python classes as they are): `lowering` is an object with `assign(rw, node)`,
    `statement(rw, node)` and `expression(rw, node, chain)` hooks that return None for what is not
    theirs, `method_value(rw, node, kind, m)`, and the compiler kinds it owns (`KINDS`)."""
    namespace: str
    lowering: object


def _f(*params, prim, **defaults):
    return Form(tuple(params), prim, defaults)


FUNCTIONS: dict[str, Function] = {}


def _fn(name, pipe, work, *forms, doc="", special=None, returns=None, unit="any"):
    FUNCTIONS[name] = Function(name, tuple(forms), pipe, work, doc, special, returns, unit)


# ---- vector: element-wise (count form and mask + repeat form) ----------------------------------
REP = ("mask", "repeat_times", "repeat_params")
_VEC_DOC = {
    "add": "dst = src0 + src1", "sub": "dst = src0 - src1", "mul": "dst = src0 * src1",
    "div": "dst = src0 / src1 (ints: truncating, x/0 = 0)", "max": "element-wise maximum",
    "min": "element-wise minimum", "add_relu": "dst = max(src0 + src1, 0)",
    "sub_relu": "dst = max(src0 - src1, 0)", "bitwise_and": "integer And",
    "bitwise_or": "integer Or", "exp": "e**x (float)", "ln": "natural log (float)",
    "sqrt": "square root (float)", "rsqrt": "1/sqrt(x) (float)", "reciprocal": "1/x (float)",
    "abs": "absolute value", "relu": "max(x, 0)", "bitwise_not": "integer Not",
    "adds": "dst = src + scalar", "muls": "dst = src * scalar", "maxs": "max(src, scalar)",
    "mins": "min(src, scalar)", "leaky_relu": "x if x >= 0 else x * scalar",
    "axpy": "dst += src * scalar",
}
BINARY = ("add", "sub", "mul", "div", "max", "min", "add_relu", "sub_relu", "bitwise_and",
          "bitwise_or")
UNARY = ("exp", "ln", "sqrt", "rsqrt", "reciprocal", "abs", "relu", "bitwise_not")
SCALAR = ("adds", "muls", "maxs", "mins", "leaky_relu", "axpy")
for _n in BINARY:
    _fn(_n, _V, Work.ELEMENTWISE, _f("dst", "src0", "src1", "count", prim=f"{_n}_count"),
        _f("dst", "src0", "src1", *REP, "is_set_mask", prim=f"{_n}_rep", is_set_mask=True),
        doc=_VEC_DOC[_n])
for _n in UNARY:
    _fn(_n, _V, Work.ELEMENTWISE, _f("dst", "src", "count", prim=f"{_n}_count"),
        _f("dst", "src", *REP, "is_set_mask", prim=f"{_n}_rep", is_set_mask=True),
        doc=_VEC_DOC[_n])
for _n in SCALAR:
    _fn(_n, _V, Work.ELEMENTWISE, _f("dst", "src", "scalar", "count", prim=f"{_n}_count"),
        _f("dst", "src", "scalar", *REP, "is_set_mask", prim=f"{_n}_rep", is_set_mask=True),
        doc=_VEC_DOC[_n])
_fn("duplicate", _V, Work.ELEMENTWISE, _f("dst", "scalar", "count", prim="duplicate_count"),
    _f("dst", "scalar", "mask", "repeat_times", "dst_block_stride", "dst_repeat_stride",
       "is_set_mask", prim="duplicate_rep", dst_block_stride=1, dst_repeat_stride=8,
       is_set_mask=True), doc="fill dst with a scalar")
_fn("cast", _V, Work.ELEMENTWISE, _f("dst", "src", "round_mode", "count", prim="cast_count"),
    _f("dst", "src", "round_mode", *REP, "is_set_mask", prim="cast_rep", is_set_mask=True),
    doc="convert dtypes with a RoundMode")
for _n in ("compare", "compare_scalar"):
    _fn(_n, _V, Work.ELEMENTWISE,
        _f("dst", "src0", "src1", "cmp_mode", "count", prim=f"{_n}_count"),
        _f("dst", "src0", "src1", "cmp_mode", *REP, "is_set_mask", prim=f"{_n}_rep",
           is_set_mask=True), doc="compare into a bit mask (CMPMODE)")
_fn("select", _V, Work.ELEMENTWISE,
    _f("dst", "sel_mask", "src0", "src1", "sel_mode", "count", prim="select_count"),
    _f("dst", "sel_mask", "src0", "src1", "sel_mode", *REP, "is_set_mask", prim="select_rep",
       is_set_mask=True), doc="pick src0 or src1 by a bit mask (SELMODE)")
_fn("brcb", _V, Work.ELEMENTWISE, _f("dst", "src0", "repeat_times", "repeat_params", prim="brcb"),
    doc="broadcast 8 elements each to a 32-byte block")
_fn("copy", _V, Work.ELEMENTWISE,
    _f("dst", "src", "mask", "repeat_time", "repeat_params", "is_set_mask", prim="copy_rep",
       is_set_mask=True), doc="UB -> UB copy in the repeat form (CopyRepeatParams strides)")
_fn("transpose", _V, Work.ELEMENTWISE, _f("dst", "src", prim="transpose16"),
    _f("dst", "src", "shared_tmp_buffer", "params", prim="transpose_ext"),
    doc="transpose one 16 x 16 block of 2-byte elements, or (TransposeParamsExt) convert "
        "between [N,C,H,W] and [N,H,W,C]")
_fn("trans_data_to_5hd", _V, Work.ELEMENTWISE,
    _f("dst_list", "src_list", "params", prim="trans_data_to_5hd"),
    doc="NCHW -> NC1HWC0 block transposes: 16 blocks of 16-bit elements per repeat")
_fn("bilinear_interpolation", _V, Work.ELEMENTWISE,
    _f("dst", "src0", "src0_offset", "src1", "mask", "h_repeat", "repeat_mode", "dst_blk_stride",
       "v_r_offset", "v_repeat", "shared_tmp_buffer", prim="bilinear_interpolation"),
    doc="gathered float16 blocks times src1, accumulated over horizontal iterations")
_fn("gather_mask", _V, Work.ELEMENTWISE,
    _f("dst", "src0", "src1_pattern", "reduce_mode", "mask", "params", "gather_mask_mode",
       prim="gather_mask", gather_mask_mode=0), returns="int",
    doc="Mirrors GatherMask: the src0 elements a built-in (1..7) or user bit pattern picks, "
        "packed into dst; returns how many (rsvdCnt)")

# ---- vector: reductions --------------------------------------------------------------------------
_fn("reduce_sum", _V, Work.REDUCE,
    _f("dst", "src", "shared_tmp_buffer", "count", prim="reduce_sum_count"),
    _f("dst", "src", "shared_tmp_buffer", "mask", "repeat_time", "src_rep_stride",
       prim="reduce_sum_rep"))
for _n in ("reduce_max", "reduce_min"):
    _fn(_n, _V, Work.REDUCE,
        _f("dst", "src", "shared_tmp_buffer", "count", "cal_index", prim=f"{_n}_count",
           cal_index=False),
        _f("dst", "src", "shared_tmp_buffer", "mask", "repeat_time", "src_rep_stride",
           "cal_index", prim=f"{_n}_rep", cal_index=False))
_WR = ("dst", "src", "mask", "repeat_time", "dst_rep_stride", "src_blk_stride", "src_rep_stride")
_fn("whole_reduce_sum", _V, Work.REDUCE,
    _f(*_WR, "is_set_mask", prim="whole_reduce_sum", is_set_mask=True))
for _n in ("whole_reduce_max", "whole_reduce_min"):
    _fn(_n, _V, Work.REDUCE, _f(*_WR, "order", "is_set_mask", prim=_n, order=0, is_set_mask=True))

# ---- data movement (the third argument's type picks the variant inside the primitive) ---------
_fn("data_copy", BY_DIRECTION, Work.COPY, _f("dst", "src", "count", prim="data_copy"),
    _f("dst", "src", "repeat_params", prim="data_copy"),
    _f("dst", "src", "intri_params", prim="data_copy"))
_fn("data_copy_pad", BY_DIRECTION, Work.COPY,
    _f("dst", "src", "copy_params", "pad_params", prim="data_copy_pad", pad_params=None))

# ---- cube path -----------------------------------------------------------------------------------
_fn("load_data", BY_DIRECTION, Work.COPY, _f("dst", "src", "load_data_params", prim="load_data"),
    unit="AIC")
_fn("mmad", _M, Work.MMAD, _f("dst", "fm", "filter", "mmad_params", prim="mmad"),
    _f("dst", "fm", "filter", "bias", "mmad_params", prim="mmad_bias"), unit="AIC")
_fn("fixpipe", PipeID.PIPE_FIX, Work.FIXPIPE,
    _f("dst", "src", "intri_params", "config", prim="fixpipe", config=0), unit="AIC")
# atomic accumulation of fixpipe's GM writes (prims/atomic.py)
_fn("set_atomic_add", _S, Work.SCALAR, _f("dtype", prim="set_atomic_add"),
    doc="Mirrors SetAtomicAdd<T>(): later fixpipes to GM add into it (float32)")
_fn("set_atomic_none", _S, Work.SCALAR, _f(prim="set_atomic_none"),
    doc="Mirrors SetAtomicNone()")

# ---- AIPP: image pre-processing on the way GM -> L1 (prims/aipp.py) ------------------------------
_fn("set_aipp_functions", _S, Work.SCALAR,
    _f("src0", "input_format", "config", prim="set_aipp_functions"),
    _f("src0", "src1", "input_format", "config", prim="set_aipp_functions_yuv"),
    doc="Mirrors SetAippFunctions: configure the core's AIPP unit (source image, AippParams)")
_fn("load_image_to_local", BY_DIRECTION, Work.COPY,
    _f("dst", "load_data_params", prim="load_image_to_local"), unit="AIC",
    doc="Mirrors LoadImageToLocal: the configured image's crop window GM -> L1 through AIPP")

# ---- synchronisation, system values, debugging ---------------------------------------------------
_fn("pipe_barrier", _S, Work.SYNC, _f("pipe", prim="pipe_barrier"))
_fn("set_flag", _S, Work.SYNC, _f("event", "event_id", prim="set_flag", event_id=0))
_fn("wait_flag", _S, Work.SYNC, _f("event", "event_id", prim="wait_flag", event_id=0))
_fn("sync_all", _S, Work.SYNC, _f("is_aiv_only", prim="sync_all", is_aiv_only=True))
# cross-core flags between the AIC and AIVs of a MIX kernel, inter-block flags (prims/crosscore)
_fn("cross_core_set_flag", _S, Work.SYNC,
    _f("flag_id", "mode_id", "pipe", prim="cross_core_set_flag"),
    doc="Mirrors CrossCoreSetFlag<mode_id, pipe>(flag_id)")
_fn("cross_core_wait_flag", _S, Work.SYNC,
    _f("flag_id", "mode_id", "pipe", prim="cross_core_wait_flag", mode_id=0, pipe=0),
    doc="Mirrors CrossCoreWaitFlag(flag_id)")
_fn("ib_set", _S, Work.SYNC,
    Form(("gm_workspace", "ub_workspace", "block_idx", "event_id", "is_aiv_only"), "ib_set",
         {"is_aiv_only": True}, ignored=("is_aiv_only",)), doc="Mirrors IBSet")
_fn("ib_wait", _S, Work.SYNC,
    Form(("gm_workspace", "ub_workspace", "block_idx", "event_id", "is_aiv_only"), "ib_wait",
         {"is_aiv_only": True}, ignored=("is_aiv_only",)), doc="Mirrors IBWait")
# which cores a kernel synchronises (read by compiler/syncscope.py): cross-core / inter-block
# flags make a launch run its cores at once; these also synchronise across AI Core groups;
# and the set whose mode argument decides it (modes 1 and 2 stay inside a group)
CROSS_CORE_OPS = frozenset(("cross_core_set_flag", "cross_core_wait_flag", "ib_set", "ib_wait"))
ACROSS_GROUP_OPS = frozenset(("sync_all", "ib_set", "ib_wait"))
MODE_SCOPED_SET = "cross_core_set_flag"
_fn("get_tpipe_ptr", _S, Work.SCALAR, _f(prim="get_tpipe_ptr"), returns="TPipe",
    doc="Mirrors GetTPipePtr: the kernel's TPipe")
# system values: what they return depends on the kernel type (AIV_ONLY, AIC_ONLY, MIX_AIC_1_2, ...;
# see ascendc/lang/prims/ktype.py for the Ascend C documentation they follow)
for _n in ("get_block_idx", "get_block_num", "get_sub_block_idx", "get_sub_block_num",
           "get_data_block_size_in_bytes", "get_task_ratio"):
    _fn(_n, _S, Work.SCALAR, _f(prim=_n), returns="int")
for _n in ("ascend_is_aic", "ascend_is_aiv"):
    _fn(_n, _S, Work.SCALAR, _f(prim=_n), returns="bool",
        doc="ASCEND_IS_AIC / ASCEND_IS_AIV: is this instance running on a cube (AIC) / vector "
            "(AIV) core of the kernel type")
_fn("ceildiv", _S, Work.SCALAR, Form(("x", "y"), None), special="ceil_div", returns="int",
    doc="pyasc's asc.ceildiv(x, y): integer division rounding up (also the method "
        "`x.ceildiv(y)` of kernel integers)")
_fn("property", _S, Work.SCALAR, Form(("prop",), None), special="platform_constant",
    returns="int", doc="pyasc's asc.property(p): the value of an Ascend C platform constant "
                       "(asc.TOTAL_L1_SIZE, ...) for the launch's SoC; a compile-time constant")
_fn("dump_tensor", _S, Work.DEBUG,
    Form(("tensor", "desc", "dump_size", "shape_info"), "dump_tensor", {"shape_info": None},
         ignored=("shape_info",)), doc="Mirrors AscendC::DumpTensor")
_fn("printf", _S, Work.DEBUG, Form(("fmt",), None), special="print_format",
    doc="Mirrors AscendC::printf (C format string; one argument per conversion)")
_fn("range", _S, Work.SCALAR, Form(("start",), None), special="loop",
    doc="pyasc's asc.range: a run-time loop")
_fn("static_range", _S, Work.SCALAR, Form(("start",), None), special="loop",
    doc="unrolled at compile time in pyasc; a plain loop here")

# ---- shape information (Ascend C ShapeInfo; pyasc core/array.py, core/types.py): prims/shapeinfo
_fn("array", _S, Work.SCALAR,
    _f("dtype", "length_or_values", "fill_value", prim="array_new", fill_value=None),
    returns="Array", doc="pyasc's asc.array(dtype, length, fill_value=None) / (dtype, values): a "
                         "small array of dtype in the kernel")
_fn("ShapeInfo", _S, Work.SCALAR,
    _f("shape", "original_shape", "data_format", prim="shape_info_new", shape=None,
       original_shape=None, data_format=0),
    returns="ShapeInfo", doc="Mirrors AscendC::ShapeInfo: the dims (an asc.array) of a tensor, "
                             "its original dims (default: the same) and DataFormat (0 = ND)")
_fn("get_shape_size", _S, Work.SCALAR, _f("shape_info", prim="get_shape_size"), returns="int",
    doc="Mirrors AscendC::GetShapeSize: the product of a ShapeInfo's dims")

# ---- handles: the classes of kernel objects and their constructors -------------------------------
HANDLES: dict[str, Handle] = {h.name: h for h in (
    Handle("GlobalAddress", "GA", None, "a GM pointer argument; `addr + n` offsets by n elements"),
    Handle("GlobalTensor", "T", Form((), None),
           "Mirrors AscendC::GlobalTensor: created empty, bound with set_global_buffer"),
    Handle("LocalTensor", "T",
           _f("dtype", "pos", "addr", "tile_size", prim="local_tensor_new", addr=0, tile_size=0),
           "Mirrors AscendC::LocalTensor: a view of a core's local memory (UB, L1, L0A/B/C); "
           "constructed as LocalTensor(dtype, pos, addr, tile_size) it is the static tensor of "
           "`tile_size` elements at byte `addr` of pos's memory (no TPipe)"),
    Handle("LocalTensorAuto", "T",
           _f("dtype", "shape", "site", prim="local_tensor_auto_new", site=0),
           "pyasc's LocalTensorAuto(dtype, shape): a LocalTensor in UB (VECCALC) the compiler "
           "allocates (one fixed region per allocation site; TPipe buffers share UB with it) "
           "and orders with the set_flag/wait_flag pairs insert_sync adds",
           base="LocalTensor", site="site"),
    Handle("TPipe", "PIPE", _f(prim="tpipe_new"),
           "Mirrors AscendC::TPipe (one per kernel): hands out local memory with init_buffer"),
    Handle("TQue", "Q", _f("pos", "depth", prim="tque_new", depth=1),
           "Mirrors AscendC::TQue<pos, depth>: alloc_tensor / enque / deque / free_tensor"),
    Handle("TBuf", "Q", _f("pos", prim="tbuf_new", pos=int(TBUF_DEFAULT)),
           "Mirrors AscendC::TBuf<pos>: a scratch buffer without queue semantics"),
    Handle("DataType", "DT", None, "a dtype: `x.dtype.sizeof()`; `asc.DataType(\"int32\")` "
                                   "names one (a compile-time constant)"),
)}

METHODS: dict[tuple, Method] = {}


def _m(cls, name, *forms, **kw):
    for c in (cls if isinstance(cls, tuple) else (cls,)):
        METHODS[(c, name)] = Method(c, name, tuple(forms), **kw)


_TENSORS = ("GlobalAddress", "GlobalTensor", "LocalTensor")
# pyasc's TPipe.init_buffer spells the TBuf form's byte length `num` (fwk/tpipe.py: buf=TBuf,
# num=RuntimeInt -> InitBuffer(buf, num)); TBufPool's spells it `len`: both are accepted
_m("TPipe", "init_buffer", _f("que", "num", "len", prim="init_buffer_que"),
   _f("buf", "len", prim="init_buffer_buf"), _f("buf", "num", prim="init_buffer_buf"),
   receiver=False, work=Work.ALLOC,
   doc="Mirrors TPipe::InitBuffer(que, num, len) / (buf, len); pyasc's (buf, num=bytes)")
# TPipe's lifecycle and event ids (prims/pipe.py); pyasc's default event is HardEvent.V_S
_m("TPipe", "destroy", _f(prim="tpipe_destroy"), receiver=False, work=Work.ALLOC,
   doc="Mirrors TPipe::Destroy: releases the pipe's buffers; init() re-creates the pipe")
_m("TPipe", "init", _f(prim="tpipe_init"), receiver=False, work=Work.ALLOC,
   doc="Mirrors TPipe::Init: re-creates a destroyed pipe (its buffers and event ids free)")
_m("TPipe", "reset", _f(prim="tpipe_reset"), receiver=False, work=Work.ALLOC,
   doc="Mirrors TPipe::Reset: releases the buffers and event ids; init_buffer may follow")
_m("TPipe", "alloc_event_id", _f("event", prim="alloc_event_id", event=int(HardEvent.V_S)),
   receiver=False, returns="int", work=Work.SYNC,
   doc="Mirrors TPipe::AllocEventID<event>: takes a free id of the event's pool of 8")
_m("TPipe", "fetch_event_id", _f("event", prim="fetch_event_id", event=int(HardEvent.V_S)),
   receiver=False, returns="int", work=Work.SYNC,
   doc="Mirrors TPipe::FetchEventID<event>: the id alloc_event_id would take, not taken")
_m("TPipe", "release_event_id",
   _f("id", "event", prim="release_event_id", event=int(HardEvent.V_S)), receiver=False,
   work=Work.SYNC, doc="Mirrors TPipe::ReleaseEventID<event>(id)")
_m("TQue", "alloc_tensor", _f("dtype", prim="que_alloc_tensor"), returns="LocalTensor",
   work=Work.ALLOC)
_m("TQue", "enque", _f("tensor", prim="que_enque"), work=Work.SYNC,
   doc="hand a tensor to the consumer pipe (set_flag on hardware)")
_m("TQue", "deque", _f("dtype", prim="que_deque"), returns="LocalTensor", work=Work.SYNC,
   doc="take the oldest tensor (wait_flag on hardware)")
_m("TQue", "free_tensor", _f("tensor", prim="que_free_tensor"), work=Work.ALLOC)
_m("TQue", "vacant_in_que", _f(prim="que_vacant"), returns="bool")
_m("TQue", "has_tensor_in_que", _f(prim="que_has_tensor"), returns="bool")
_m("TQue", "get_tensor_count_in_que", _f(prim="que_tensor_count"), returns="int")
_m("TQue", "has_idle_buffer", _f(prim="que_has_idle_buffer"), returns="bool")
_m("TBuf", "get", _f("dtype", "len", prim="tbuf_get", len=-1), returns="LocalTensor",
   work=Work.ALLOC)
_m("TBuf", "get_with_offset", _f("size", "buf_offset", "dtype", prim="tbuf_get_with_offset"),
   returns="LocalTensor", work=Work.ALLOC)
# pyasc's TBuf inherits TQueBind.alloc_tensor / free_tensor: its one buffer, allocated and
# freed as a queue's (the same primitives as TQue's, so a helper's queue-or-buffer argument
# resolves to one method)
_m("TBuf", "alloc_tensor", _f("dtype", prim="que_alloc_tensor"), returns="LocalTensor",
   work=Work.ALLOC)
_m("TBuf", "free_tensor", _f("tensor", prim="que_free_tensor"), work=Work.ALLOC)
_m("GlobalTensor", "set_global_buffer", _f("addr", "size", prim="gt_bind", size=-1),
   receiver=False, rebinds=True, doc="Mirrors GlobalTensor::SetGlobalBuffer(addr, size)")
# LocalTensor.get_phy_addr: its address as trans_data_to_5hd's address form takes it
_m(("GlobalTensor", "LocalTensor"), "get_phy_addr", _f("offset", prim="phy_addr", offset=0),
   returns="int")
_m(_TENSORS, "__getitem__", _f("index", prim="sub_view"), returns="self",
   doc="t[i] / t[i:]: a view from element i")
_m("GlobalAddress", "__add__", _f("n", prim="ga_add"), returns="GlobalAddress")
_m(("GlobalTensor", "LocalTensor"), "get_value", _f("index", prim="get_value"), returns="scalar",
   touches="r")
_m(("GlobalTensor", "LocalTensor"), "set_value", _f("index", "value", prim="set_value"),
   touches="w")
_m(("GlobalTensor", "LocalTensor"), "get_size", _f(prim="tensor_size"), returns="int")
_m("LocalTensor", "get_length", _f(prim="tensor_length"), returns="int")
_m("LocalTensor", "reinterpret_cast", _f("dtype", prim="reinterpret_cast"), returns="LocalTensor")
_m("LocalTensor", "get_position_level", _f(prim="position_level"), returns="str")
_m("LocalTensor", "get_position", _f(prim="tensor_position"), returns="int",
   doc="Mirrors LocalTensor::GetPosition: the TPosition of the TQue/TBuf holding the tensor")
# Ascend C keeps a LocalTensor's length (dataLen) in the tensor: these rebind the view
_m("LocalTensor", "set_size", _f("size", prim="set_size", size=0), rebinds=True,
   doc="Mirrors LocalTensor::SetSize: `size` elements from the same address")
_m("LocalTensor", "set_buffer_len", _f("data_len", prim="set_buffer_len"), rebinds=True,
   doc="Mirrors LocalTensor::SetBufferLen: `data_len` bytes from the same address")
_m("LocalTensor", "set_addr_with_offset", _f("src", "offset", prim="set_addr_with_offset"),
   rebinds=True, doc="Mirrors LocalTensor::SetAddrWithOffset: src's address + offset elements "
                     "of src, src's length in bytes")
_m("LocalTensor", "set_user_tag", _f("tag", prim="set_user_tag", tag=0),
   doc="Mirrors LocalTensor::SetUserTag: an int32 tag kept with the tensor's buffer")
_m("LocalTensor", "get_user_tag", _f(prim="get_user_tag"), returns="int",
   doc="Mirrors LocalTensor::GetUserTag: the buffer's tag (-1 until set)")
_m("LocalTensor", "set_shape_info", _f("shape_info", prim="set_shape_info"),
   doc="Mirrors LocalTensor::SetShapeInfo (read by asc.adv.softmax)")
_m("LocalTensor", "get_shape_info", _f(prim="get_shape_info"), returns="ShapeInfo",
   doc="Mirrors LocalTensor::GetShapeInfo (shapeDim 0 if none was set)")
_m(_TENSORS, "dtype", Form((), None), native=True, returns="DataType",
   doc="the element dtype (a property)")
_m("LocalTensor", "print", _f("n", prim=None, n=None), interpret_only=True, work=Work.DEBUG)
_m(_TENSORS, "numpy", Form((), None), interpret_only=True, work=Work.DEBUG)
_m("DataType", "sizeof", Form((), None), native=True, compiled="_D.sizeof", returns="int")

# methods of kernel integers (pyasc's PlainValue): `x.<name>(y)` is `asc.<name>(x, y)`
INT_METHODS = ("ceildiv",)

# Python operators on handles: (compiler kind, operator) -> the method row that implements it
OPERATORS = {("GA", "+"): METHODS[("GlobalAddress", "__add__")],
             ("GA", "[]"): METHODS[("GlobalAddress", "__getitem__")],
             ("T", "[]"): METHODS[("LocalTensor", "__getitem__")]}

STRUCTS: dict[str, type] = dict(P.BY_NAME)   # asc.<Struct>(fields...): namedtuples of params.py

EXTENSIONS: dict[str, Extension] = {}


def register_extension(ext: Extension) -> None:
    """Add a namespace (`asc.<ext.namespace>.*`) to the language."""
    EXTENSIONS[ext.namespace] = ext


# ---- lookups -------------------------------------------------------------------------------------

def bind(api: str, forms, nargs: int, keys) -> Form:
    """The form a call with `nargs` positional arguments and keywords `keys` selects."""
    keys = tuple(keys)
    for f in forms:
        if f.accepts(nargs, keys):
            return f
    sigs = " | ".join(f"{api}({', '.join(f.params)})" for f in forms)
    raise TypeError(f"{api}: arguments must match one of {sigs}, "
                    f"got {nargs} positional and keywords {list(keys)}")


def methods_of(cls: str) -> list[Method]:
    return [m for (c, _), m in METHODS.items() if c == cls]


def method_for_kind(kind: str, name: str) -> Method | None:
    """The method `name` of a handle held as compiler kind `kind` ("OTHER": of any handle)."""
    found = [m for (c, n), m in METHODS.items() if n == name and
             (kind == OTHER or HANDLES[c].kind == kind)]
    prims = {tuple(f.prim for f in m.forms) for m in found}
    if len(prims) > 1 and kind == OTHER:
        return None      # ambiguous without knowing the receiver's class
    return found[0] if found else None

