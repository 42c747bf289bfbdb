"""`asc.adv.rmsnorm` / `asc.adv.RmsNormTiling` (pyasc adv/normalization.py:
rmsnorm(dst, src, gamma, epsilon, tiling, temp_buffer=None, basic_block=False); adv/tiling.py
RmsNormTiling, Ascend C's RmsNormTiling) and `asc.adv.layernorm` / `asc.adv.LayerNormTiling`
(Ascend C's LayerNorm(output, outputMean, outputVariance, inputX, gamma, beta, sharedTmpBuffer,
epsilon, tiling) as layernorm(output, output_mean, output_variance, input_x, gamma, beta,
epsilon, tiling, shared_tmp_buffer=None, is_reuse_source=False); LayerNormTiling's leading
fields b_length, s_length, h_length, original_h_length, the rest accepted and not needed).

src is [b, s, h] (tiling.b_length, s_length, h_length: h the row stride, 32-byte aligned) of
which the first original_h_length elements of each row are data; each row is normalised as
Ascend C's RmsNorm does:
    dst[r, :oh] = src[r, :oh] / sqrt(sum(src[r, :oh]^2) * reciprocal_of_h_length + epsilon)
                  * gamma[:oh]
(reciprocal_of_h_length 0 means 1 / original_h_length). On the vector unit, per row: the squares
into the temporary buffer, ReduceSum, the scalar factor (a V->S flag before the scalar reads the
sum), Muls, Mul by gamma. The tiling's main/tail chunk fields (CANN's split of a row block into
temporary-buffer-sized loops) are accepted and not needed: each row is one chunk here.
temp_buffer (uint8) must be given and hold 2 * h_length + 32 bytes' worth of src elements; the
form whose temporary space the framework reserves is not supported.

LayerNorm, per row r of [b * s] rows (H = original_h_length):
    mean[r] = sum(x[r, :H]) / H;  variance[r] = sum((x[r, :H] - mean[r])^2) / H
    output[r, :H] = (x[r, :H] - mean[r]) / sqrt(variance[r] + epsilon) * gamma + beta
mean and variance hold one element per row ([b, s]); same vector steps and temporary buffer.
"""
from __future__ import annotations

import ast
from collections import namedtuple

from .. import language as asc
from ..compiler.frontend import keyword_fields
from ..lang import api

FIELDS = ("b_length", "s_length", "h_length", "original_h_length", "reciprocal_of_h_length",
          "main_bsh_length", "main_bs_length", "main_bs_length_align", "loop_round",
          "input_tail_pos", "tail_bsh_length", "tail_bs_length")
RmsNormTilingRecord = namedtuple("RmsNormTilingRecord", FIELDS)
_FLOAT = "reciprocal_of_h_length"
_INT32 = (-2**31, 2**31)
ARGS = ("dst", "src", "gamma", "epsilon", "tiling", "temp_buffer", "basic_block")


class RmsNormTiling:
    """Mirrors Ascend C `RmsNormTiling` / pyasc `asc.adv.RmsNormTiling`: int32 fields and the
    float `reciprocal_of_h_length`, all 0 by default."""

    __slots__ = FIELDS

    def __init__(self, **fields):
        for f in FIELDS:
            object.__setattr__(self, f, 0.0 if f == _FLOAT else 0)
        for k, v in fields.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in FIELDS:
            raise AttributeError(f"RmsNormTiling: field must be one of {', '.join(FIELDS)}, got "
                                 f"{name}={value!r}")
        if name == _FLOAT:
            object.__setattr__(self, name, float(value))
            return
        if isinstance(value, bool) or not hasattr(value, "__index__") or \
                not _INT32[0] <= int(value) < _INT32[1]:
            raise ValueError(f"RmsNormTiling: {name} must be an int32, got {name}={value!r}")
        object.__setattr__(self, name, api.KernelInt(int(value)))

    def _kernel_record(self) -> RmsNormTilingRecord:
        return RmsNormTilingRecord(*(float(getattr(self, f)) if f == _FLOAT
                                     else int(getattr(self, f)) for f in FIELDS))

    def __repr__(self):
        return f"RmsNormTiling({', '.join(f'{f}={getattr(self, f)}' for f in FIELDS[:5])})"


def _as_object(record) -> RmsNormTiling:
    return RmsNormTiling(**record._asdict())


RmsNormTilingRecord._kernel_object = staticmethod(_as_object)


@asc.jit
def rms_norm_rows(dst, src, gamma, tmp, eps, rows, h, oh, recip):
    """The kernel-language body of asc.adv.rmsnorm (both modes run it)."""
    work = tmp.reinterpret_cast(src.dtype)
    sq = work[0:]
    total = work[h:]
    scratch = work[h + 32 // src.dtype.sizeof():]
    if recip == 0.0:
        recip = 1.0 / oh
    for r in range(rows):
        asc.mul(sq, src[r * h:], src[r * h:], oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.reduce_sum(total, sq, scratch, oh)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        factor = 1.0 / (total.get_value(0) * recip + eps) ** 0.5
        asc.muls(dst[r * h:], src[r * h:], factor, oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.mul(dst[r * h:], dst[r * h:], gamma, oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)


@asc.jit
def layer_norm_rows(out, mean, var, src, gamma, beta, tmp, eps, rows, h, oh):
    """The kernel-language body of asc.adv.layernorm (both modes run it)."""
    work = tmp.reinterpret_cast(src.dtype)
    sq = work[0:]
    total = work[h:]
    scratch = work[h + 32 // src.dtype.sizeof():]
    for r in range(rows):
        asc.reduce_sum(total, src[r * h:], scratch, oh)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        mu = float(total.get_value(0)) / oh
        asc.adds(out[r * h:], src[r * h:], -mu, oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.mul(sq, out[r * h:], out[r * h:], oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.reduce_sum(total, sq, scratch, oh)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        v = float(total.get_value(0)) / oh
        asc.muls(out[r * h:], out[r * h:], 1.0 / (v + eps) ** 0.5, oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.mul(out[r * h:], out[r * h:], gamma, oh)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.add(out[r * h:], out[r * h:], beta, oh)
        asc.duplicate(mean[r:], mu, 1)
        asc.duplicate(var[r:], v, 1)
        asc.pipe_barrier(asc.PipeID.PIPE_V)


LN_FIELDS = ("b_length", "s_length", "h_length", "original_h_length", "input_x_size",
             "mean_var_size", "number_of_tmp_buf", "mean_tmp_tensor_pos",
             "mean_tmp_tensor_size", "variance_tmp_tensor_pos", "variance_tmp_tensor_size",
             "tmp_buf_size", "one_tmp_size", "first_tmp_start_pos", "second_tmp_start_pos",
             "third_tmp_start_pos", "loop_round", "input_round_size", "input_tail_size",
             "input_tail_pos", "mean_var_round_size", "mean_var_tail_size", "mean_var_tail_pos",
             "bsh_cur_length", "bs_cur_length", "last_dim_value_back")
LayerNormTilingRecord = namedtuple("LayerNormTilingRecord", LN_FIELDS)
LN_ARGS = ("output", "output_mean", "output_variance", "input_x", "gamma", "beta", "epsilon",
           "tiling", "shared_tmp_buffer", "is_reuse_source")


class LayerNormTiling:
    """Mirrors Ascend C `LayerNormTiling` (snake_case fields, int32 but last_dim_value_back,
    a float), all 0 by default."""

    __slots__ = LN_FIELDS

    def __init__(self, **fields):
        for f in LN_FIELDS:
            object.__setattr__(self, f, 0)
        for k, v in fields.items():
            if k not in LN_FIELDS:
                raise AttributeError(f"LayerNormTiling: field must be one of "
                                     f"{', '.join(LN_FIELDS)}, got {k}={v!r}")
            object.__setattr__(self, k, float(v) if k == "last_dim_value_back" else int(v))

    def _kernel_record(self) -> LayerNormTilingRecord:
        return LayerNormTilingRecord(*(getattr(self, f) for f in LN_FIELDS))


def _ln_object(record) -> LayerNormTiling:
    return LayerNormTiling(**record._asdict())


LayerNormTilingRecord._kernel_object = staticmethod(_ln_object)


def layernorm(output, output_mean, output_variance, input_x, gamma, beta, epsilon, tiling,
              shared_tmp_buffer=None, is_reuse_source=False):
    """Ascend C's LayerNorm in an interpreted kernel (compiled kernels: lower_layernorm)."""
    if shared_tmp_buffer is None:
        raise _no_temp("layernorm", "shared_tmp_buffer")
    t = tiling
    layer_norm_rows(output, output_mean, output_variance, input_x, gamma, beta,
                    shared_tmp_buffer, float(epsilon), int(t.b_length) * int(t.s_length),
                    int(t.h_length), int(t.original_h_length))


def _no_temp(api="rmsnorm", arg="temp_buffer"):
    return NotImplementedError(f"asc.adv.{api}: {arg} must be given (the form whose "
                               f"temporary space the framework reserves is not supported)")


def rmsnorm(dst, src, gamma, epsilon, tiling, temp_buffer=None, basic_block=False):
    """pyasc's `asc.adv.rmsnorm` in an interpreted kernel (compiled kernels: lower_rmsnorm)."""
    if temp_buffer is None:
        raise _no_temp()
    t = tiling
    rms_norm_rows(dst, src, gamma, temp_buffer, float(epsilon),
                  int(t.b_length) * int(t.s_length), int(t.h_length),
                  int(t.original_h_length), float(t.reciprocal_of_h_length))


# ---- compiled kernels ---------------------------------------------------------------------------
_IMPORT = "from ascendc.adv.norm import RmsNormTilingRecord as _asc_RmsNormTiling"


def lower_tiling(rw, call):
    """asc.adv.RmsNormTiling(f=v, ...) in a kernel: a record with every other field 0."""
    vals = keyword_fields(rw, call, "RmsNormTiling", FIELDS, ", ".join(FIELDS))
    vals = [ast.Call(func=ast.Name(id="float" if f == _FLOAT else "int", ctx=ast.Load()),
                     args=[v], keywords=[]) for f, v in zip(FIELDS, vals)]
    rw.gen.require_import(_IMPORT)
    return ast.Call(func=ast.Name(id="_asc_RmsNormTiling", ctx=ast.Load()), args=vals,
                    keywords=[])


def lower_layernorm(rw, call, b, kinds):
    """asc.adv.layernorm(...) as a statement, its arguments `b` bound by name."""
    tmp = b.get("shared_tmp_buffer")
    if tmp is None or (isinstance(tmp, ast.Constant) and tmp.value is None):
        raise rw.err(call, str(_no_temp("layernorm", "shared_tmp_buffer")))
    tname = f"_asc_ln{call.lineno}_{call.col_offset}"
    helper, _ = rw.helper(layer_norm_rows, kinds)
    src = f"{tname} = _N_t\n{helper}(_ctx, _N_o, _N_m, _N_v, _N_x, _N_g, _N_b, _N_tmp, " \
          f"float(_N_eps), {tname}.b_length * {tname}.s_length, {tname}.h_length, " \
          f"{tname}.original_h_length)"
    nodes = dict(t=rw.visit(b["tiling"]), o=rw.visit(b["output"]), m=rw.visit(b["output_mean"]),
                 v=rw.visit(b["output_variance"]), x=rw.visit(b["input_x"]),
                 g=rw.visit(b["gamma"]), b=rw.visit(b["beta"]), tmp=rw.visit(tmp),
                 eps=rw.visit(b["epsilon"]))
    return _substitute(src, nodes)


def lower_layernorm_tiling(rw, call):
    vals = keyword_fields(rw, call, "LayerNormTiling", LN_FIELDS, ", ".join(LN_FIELDS))
    vals = [ast.Call(func=ast.Name(id="float" if f == "last_dim_value_back" else "int",
                                   ctx=ast.Load()), args=[v], keywords=[])
            for f, v in zip(LN_FIELDS, vals)]
    rw.gen.require_import("from ascendc.adv.norm import LayerNormTilingRecord as "
                          "_asc_LayerNormTiling")
    return ast.Call(func=ast.Name(id="_asc_LayerNormTiling", ctx=ast.Load()), args=vals,
                    keywords=[])


def _substitute(src, nodes):
    class Sub(ast.NodeTransformer):
        def visit_Name(self, n):
            return nodes[n.id[3:]] if n.id.startswith("_N_") else n
    return [ast.fix_missing_locations(Sub().visit(s)) for s in ast.parse(src).body]


def lower_rmsnorm(rw, call, b, kinds):
    """asc.adv.rmsnorm(...) as a statement, its arguments `b` bound by name."""
    tmp = b.get("temp_buffer")
    if tmp is None or (isinstance(tmp, ast.Constant) and tmp.value is None):
        raise rw.err(call, str(_no_temp()))
    t = rw.visit(b["tiling"])
    tname = f"_asc_rms{call.lineno}_{call.col_offset}"
    helper, _ = rw.helper(rms_norm_rows, kinds)
    src = f"{tname} = _N_t\n{helper}(_ctx, _N_dst, _N_src, _N_gamma, _N_tmp, float(_N_eps), " \
          f"{tname}.b_length * {tname}.s_length, {tname}.h_length, " \
          f"{tname}.original_h_length, float({tname}.reciprocal_of_h_length))"
    nodes = dict(t=t, dst=rw.visit(b["dst"]), src=rw.visit(b["src"]),
                 gamma=rw.visit(b["gamma"]), tmp=rw.visit(tmp), eps=rw.visit(b["epsilon"]))
    return _substitute(src, nodes)


__all__ = ["RmsNormTiling", "RmsNormTilingRecord", "rmsnorm", "rms_norm_rows", "lower_tiling",
           "lower_rmsnorm", "ARGS", "FIELDS", "LayerNormTiling", "LayerNormTilingRecord",
           "layernorm", "layer_norm_rows", "lower_layernorm", "lower_layernorm_tiling",
           "LN_ARGS", "LN_FIELDS"]
