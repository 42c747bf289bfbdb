"""`asc.adv.softmax` / `asc.adv.SoftmaxTiling`: Ascend C's SoftMax (pyasc adv/activation.py:
softmax(dst, sum, max, src, tiling, temp_buffer=None, reuse_source=False, basic_block=False,
data_format_nz=False); adv/tiling.py SoftmaxTiling).

The computation, its checks and the in-kernel tiling are the primitive
`ascendc.lang.prims.softmax.softmax_nd` (both modes call it; see its docstring for what CANN
does). src's [m, k] comes from its shape info (`src.set_shape_info(asc.ShapeInfo(...))`), as
SoftMax's default `softmaxShapeInfo = {}` reads it; a `SoftmaxTiling()` built in the kernel (all
fields 0) makes the kernel compute the tiling, as Ascend C does when the tiling's shape differs.
Compiled kernels: adv/lowering.py (the `asc.adv` Extension's lowering) calls lower_softmax /
lower_softmax_tiling below, which turn the calls into the same primitive call.
"""
from __future__ import annotations

import ast

from ..compiler.frontend import keyword_fields
from ..lang import api
from ..lang.record import mark_line
from ..lang.state import TRACE
from ..lang.prims.softmax import TILING_FIELDS, SoftmaxTilingRecord, softmax_nd, tiling_record

_INT32 = (-2**31, 2**31)
ARGS = ("dst", "sum", "max", "src", "tiling", "temp_buffer", "reuse_source", "basic_block",
        "data_format_nz")


class SoftmaxTiling:
    """Mirrors Ascend C `SoftMaxTiling` / pyasc `asc.adv.SoftmaxTiling`: 16 int32 fields, all 0
    by default (then the kernel computes the tiling from the shape and the temporary space)."""

    __slots__ = TILING_FIELDS

    def __init__(self, **fields):
        for f in TILING_FIELDS:
            object.__setattr__(self, f, 0)
        for k, v in fields.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in TILING_FIELDS:
            raise AttributeError(f"SoftmaxTiling: field must be one of {', '.join(TILING_FIELDS)}"
                                 f", got {name}={value!r}")
        if isinstance(value, bool) or not hasattr(value, "__index__") or \
                not _INT32[0] <= int(value) < _INT32[1]:
            raise ValueError(f"SoftmaxTiling: {name} must be an int32, got {name}={value!r}")
        object.__setattr__(self, name, api.KernelInt(int(value)))

    def _kernel_record(self) -> SoftmaxTilingRecord:
        """The value a kernel receives (jit's argument marshalling calls this)."""
        return tiling_record(self)

    def __eq__(self, other):
        return isinstance(other, SoftmaxTiling) and \
            all(getattr(self, f) == getattr(other, f) for f in TILING_FIELDS)

    def __repr__(self):
        set_ = ", ".join(f"{f}={getattr(self, f)}" for f in TILING_FIELDS if getattr(self, f))
        return f"SoftmaxTiling({set_})"


def softmax(dst, sum, max, src, tiling, temp_buffer=None, reuse_source=False,  # noqa: A002
            basic_block=False, data_format_nz=False):
    """pyasc's `asc.adv.softmax` in an interpreted kernel (compiled kernels: lower_softmax)."""
    ctx = api.current_ctx()
    if len(ctx[TRACE]) > 1:     # tracing (NPU view, sanitizer): the rows carry this call's line
        mark_line(ctx)
    work = temp_buffer.data if temp_buffer is not None else src.data
    softmax_nd(ctx, dst.data, sum.data, max.data, src.data, work, temp_buffer is not None,
               tiling_record(tiling), bool(basic_block), bool(data_format_nz))


# ---- compiled kernels ---------------------------------------------------------------------------
_IMPORT = ("from ascendc.lang.prims.softmax import softmax_nd as _asc_softmax_nd, "
           "SoftmaxTilingRecord as _asc_SoftmaxTiling")


def _call(name, args):
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])


def _is_none(node):
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def lower_softmax_tiling(rw, call):
    """asc.adv.SoftmaxTiling(f=v, ...) in a kernel: a record with every other field 0."""
    vals = keyword_fields(rw, call, "SoftmaxTiling", TILING_FIELDS, ", ".join(TILING_FIELDS),
                          wrap=lambda v: _call("int", [v]))
    rw.gen.require_import(_IMPORT)
    return _call("_asc_SoftmaxTiling", vals)


def lower_softmax(rw, b):
    """asc.adv.softmax(...) as a statement, its arguments `b` bound by name (adv/lowering.py)."""
    vals = [rw.visit(b[k]) for k in ("dst", "sum", "max", "src")]
    tmp = b.get("temp_buffer")
    given = not _is_none(tmp)
    vals.append(rw.visit(tmp) if given else rw.visit(b["src"]))
    vals.append(ast.Constant(given))
    vals.append(rw.visit(b["tiling"]))
    for k in ("basic_block", "data_format_nz"):
        vals.append(_call("bool", [rw.visit(b[k])]) if k in b else ast.Constant(False))
    rw.gen.require_import(_IMPORT)
    return [ast.Expr(value=_call("_asc_softmax_nd", [ast.Name(id="_ctx", ctx=ast.Load())] +
                                 vals))]

