"""`asc.adv.softmax_flash_v2` with `asc.adv.SoftMaxShapeInfo`, `asc.adv.SoftmaxConfig` and
`asc.adv.SoftmaxMode` (pyasc's development line, adv/activation.py: softmax_flash_v2(dst_tensor,
exp_sum_tensor, max_tensor, src_tensor, exp_max_tensor, in_exp_sum_tensor, in_max_tensor,
tiling, softmax_shape_info=None, shared_tmp_buffer=None, out_reduce_max=None, is_update=False,
is_reuse_source=False, is_basic_block=False, is_data_format_nz=False, config=None)).

Ascend C's SoftmaxFlashV2 (FlashAttention-2's online softmax), ND format, row by row over the
[src_m, src_k] source (SoftMaxShapeInfo; without one, the tiling's src_m / src_k), the first
ori_src_k elements of each row being data:
  is_update=False: max = rowmax(x); dst = e^(x - max); exp_sum = rowsum(dst)
  is_update=True:  max = max(in_max, rowmax(x)); dst = e^(x - max);
                   exp_max = e^(in_max - max); exp_sum = exp_max * in_exp_sum + rowsum(dst)
dst is NOT divided by the sum (the caller rescales its running output by exp_max). max,
exp_sum and exp_max hold each row's value broadcast over one 32-byte block (8 floats / 16
halfs per row), or one element per row with SoftmaxConfig(mode=SOFTMAX_OUTPUT_WITHOUT_BRC).
On the vector unit: ReduceMax, Adds, Exp, ReduceSum and Duplicate, with a V->S flag before the
scalar reads a reduction. shared_tmp_buffer (uint8) must be given (32 bytes plus ReduceSum's
work for one row); out_reduce_max, NZ format and the framework-reserved temporary space are
not supported (each refused by message).
"""
from __future__ import annotations

import ast
import math
from collections import namedtuple
from enum import IntEnum

from .. import language as asc

ShapeInfoRecord = namedtuple("ShapeInfoRecord", ("src_m", "src_k", "ori_src_m", "ori_src_k"))
ARGS = ("dst_tensor", "exp_sum_tensor", "max_tensor", "src_tensor", "exp_max_tensor",
        "in_exp_sum_tensor", "in_max_tensor", "tiling", "softmax_shape_info",
        "shared_tmp_buffer", "out_reduce_max", "is_update", "is_reuse_source", "is_basic_block",
        "is_data_format_nz", "config")
API = "asc.adv.softmax_flash_v2"


class SoftmaxMode(IntEnum):
    SOFTMAX_NORMAL = 0
    SOFTMAX_OUTPUT_WITHOUT_BRC = 1


def SoftMaxShapeInfo(src_m=0, src_k=0, ori_src_m=0, ori_src_k=0):  # noqa: N802 (pyasc's name)
    """Mirrors Ascend C `SoftMaxShapeInfo{srcM, srcK, oriSrcM, oriSrcK}`."""
    return ShapeInfoRecord(int(src_m), int(src_k), int(ori_src_m), int(ori_src_k))


class SoftmaxConfig:
    """Mirrors Ascend C `SoftmaxConfig{isCheckTiling, oriSrcM, oriSrcK, mode}` (a template
    constant there)."""
    __slots__ = ("is_check_tiling", "ori_src_m", "ori_src_k", "mode")

    def __init__(self, is_check_tiling=True, ori_src_m=0, ori_src_k=0,
                 mode=SoftmaxMode.SOFTMAX_NORMAL):
        self.is_check_tiling, self.ori_src_m = bool(is_check_tiling), int(ori_src_m)
        self.ori_src_k, self.mode = int(ori_src_k), SoftmaxMode(mode)

    def as_tuple(self):
        return (self.is_check_tiling, self.ori_src_m, self.ori_src_k, int(self.mode))


_V = asc.PipeID.PIPE_V


@asc.jit
def flash_v2_rows(dst, exp_sum, max_t, src, exp_max, in_sum, in_max, tmp, m, k, ok, update,
                  brc):
    """The kernel-language body of softmax_flash_v2 (both modes run it)."""
    work = tmp.reinterpret_cast(src.dtype)
    red = work[0:]
    scratch = work[32 // src.dtype.sizeof():]
    bs = 1
    if brc:
        bs = 32 // exp_sum.dtype.sizeof()
    for r in range(m):
        asc.reduce_max(red, src[r * k:], scratch, ok)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        mx = float(red.get_value(0))
        em = 1.0
        if update:
            old = float(in_max.get_value(r * bs))
            if old > mx:
                mx = old
            em = math.exp(old - mx)
        asc.adds(dst[r * k:], src[r * k:], -mx, ok)
        asc.pipe_barrier(_V)
        asc.exp(dst[r * k:], dst[r * k:], ok)
        asc.pipe_barrier(_V)
        asc.reduce_sum(red, dst[r * k:], scratch, ok)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        s = float(red.get_value(0))
        if update:
            s = s + em * float(in_sum.get_value(r * bs))
            asc.duplicate(exp_max[r * bs:], em, bs)
        asc.duplicate(max_t[r * bs:], mx, bs)
        asc.duplicate(exp_sum[r * bs:], s, bs)
        asc.pipe_barrier(_V)


def _refusal(b) -> str:
    """The message for an unsupported form, or ''."""
    if b.get("shared_tmp_buffer") is None:
        return (f"{API}: shared_tmp_buffer must be given (the form whose temporary space the "
                f"framework reserves is not supported)")
    if b.get("out_reduce_max") is not None:
        return f"{API}: out_reduce_max must be None (not supported by ascend-emu)"
    if b.get("is_data_format_nz"):
        return f"{API}: is_data_format_nz must be False (NZ is not supported by ascend-emu)"
    return ""


def _shape(tiling, shape):
    if shape is not None and int(shape[0]) > 0:
        m, k = int(shape[0]), int(shape[1])
        ok = int(shape[3]) if int(shape[3]) > 0 else k
    else:
        m, k = int(tiling.src_m), int(tiling.src_k)
        ok = k
    if m <= 0 or k <= 0:
        raise ValueError(f"{API}: the shape must come from softmax_shape_info or the tiling's "
                         f"src_m / src_k, got src_m={m} src_k={k}")
    return m, k, ok


def softmax_flash_v2(*args, **kwargs):
    """pyasc's asc.adv.softmax_flash_v2 in an interpreted kernel (compiled: lower)."""
    if len(args) > len(ARGS) or any(k not in ARGS for k in kwargs):
        raise TypeError(f"{API}: arguments must be ({', '.join(ARGS)})")
    b = dict(zip(ARGS, args))
    b.update(kwargs)
    why = _refusal(b)
    if why:
        raise NotImplementedError(why)
    m, k, ok = _shape(b["tiling"], b.get("softmax_shape_info"))
    cfg = b.get("config")
    brc = cfg is None or cfg.mode == SoftmaxMode.SOFTMAX_NORMAL
    flash_v2_rows(*(b[n] for n in ARGS[:7]), b["shared_tmp_buffer"], m, k, ok,
                  bool(b.get("is_update", False)), brc)


# ---- compiled kernels ---------------------------------------------------------------------------
def _is_none(node):
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def lower_shape_info(rw, call):
    """asc.adv.SoftMaxShapeInfo(m, k, ori_m, ori_k) in a kernel: a 4-tuple of ints."""
    names = ("src_m", "src_k", "ori_src_m", "ori_src_k")
    vals = dict(zip(names, call.args))
    vals.update({kw.arg: kw.value for kw in call.keywords})
    return ast.Tuple(elts=[ast.Call(func=ast.Name(id="int", ctx=ast.Load()),
                                    args=[rw.visit(vals[n])], keywords=[]) if n in vals
                           else ast.Constant(0) for n in names], ctx=ast.Load())


def lower_config(rw, call):
    """asc.adv.SoftmaxConfig(...) in a kernel: (is_check_tiling, ori_m, ori_k, mode)."""
    names = ("is_check_tiling", "ori_src_m", "ori_src_k", "mode")
    vals = dict(zip(names, call.args))
    vals.update({kw.arg: kw.value for kw in call.keywords})
    defaults = (True, 0, 0, 0)
    return ast.Tuple(elts=[rw.visit(vals[n]) if n in vals else ast.Constant(d)
                           for n, d in zip(names, defaults)], ctx=ast.Load())


def lower(rw, call, b, kinds):
    """asc.adv.softmax_flash_v2(...) as a statement, its arguments `b` bound by name."""
    present = {n: v for n, v in b.items() if not _is_none(v)}
    flags = {n: isinstance(v, ast.Constant) and bool(v.value) for n, v in present.items()}
    why = _refusal({**present, "is_data_format_nz": flags.get("is_data_format_nz", False)})
    if why:
        raise rw.err(call, why)
    p = f"_asc_fv2_{call.lineno}_{call.col_offset}"
    t = rw.visit(b["tiling"])
    shape = rw.visit(present["softmax_shape_info"]) if "softmax_shape_info" in present else \
        ast.Tuple(elts=[ast.Constant(0)] * 4, ctx=ast.Load())
    cfg = rw.visit(present["config"]) if "config" in present else \
        ast.Tuple(elts=[ast.Constant(True), ast.Constant(0), ast.Constant(0), ast.Constant(0)],
                  ctx=ast.Load())
    upd = rw.visit(present["is_update"]) if "is_update" in present else ast.Constant(False)
    helper, _ = rw.helper(flash_v2_rows, kinds)
    src = (f"{p}t = _N_t\n{p}s = _N_s\n{p}c = _N_c\n"
           f"{p}m = {p}s[0] if {p}s[0] > 0 else {p}t.src_m\n"
           f"{p}k = {p}s[1] if {p}s[0] > 0 else {p}t.src_k\n"
           f"{p}o = {p}s[3] if {p}s[0] > 0 and {p}s[3] > 0 else {p}k\n"
           f"{helper}(_ctx, _N_a0, _N_a1, _N_a2, _N_a3, _N_a4, _N_a5, _N_a6, _N_tmp, {p}m, {p}k, "
           f"{p}o, bool(_N_u), {p}c[3] == 0)")
    nodes = dict(t=t, s=shape, c=cfg, u=upd, tmp=rw.visit(present["shared_tmp_buffer"]),
                 **{f"a{i}": rw.visit(b[n]) for i, n in enumerate(ARGS[:7])})

    class Sub(ast.NodeTransformer):
        def visit_Name(self, n):
            return nodes[n.id[3:]] if n.id.startswith("_N_") else n
    return [ast.fix_missing_locations(Sub().visit(s)) for s in ast.parse(src).body]


__all__ = ["softmax_flash_v2", "SoftMaxShapeInfo", "SoftmaxConfig", "SoftmaxMode",
           "flash_v2_rows", "lower", "lower_shape_info", "lower_config", "ARGS"]
