"""`asc.adv` activations: tanh, sigmoid, gelu, silu, swish, swiglu (pyasc's development line:
adv/math.py `tanh(dst, src, count=None, temp_buffer=None, is_reuse_source=False)`,
adv/activation.py `swiglu(dst_tensor, src_tensor0, src_tensor1, scalar_value=1.0,
shared_tmp_buffer=None, cal_count=None)`; the others take tanh's parameters, swish adds
`scalar_value` (Ascend C's Swish β) after src).

Semantics are Ascend C's advanced APIs (float16 / float32, ND, dst must not overlap a source):
  tanh(x) = 2 / (1 + e^(-2x)) - 1            sigmoid(x) = 1 / (1 + e^(-x))
  gelu(x) = x / (1 + e^(-1.5957691 (x + 0.044715 x^3)))    (Gelu's tanh approximation)
  silu(x) = x / (1 + e^(-x))                 swish(x, β) = x / (1 + e^(-βx))
  swiglu(a, b, β) = a * swish(b, β)
computed on the vector unit with the basic vector instructions (their pipe, V, is what the NPU
view shows; overflow of e^(...) to inf gives the limits 0 / -1 / 1 as the hardware's does), in
the destination as the working buffer (shared_tmp_buffer / temp_buffer are accepted and not
needed). Both modes run the kernel-language helpers below; compiled kernels reach them through
`lower` (adv/lowering.py).
"""
from __future__ import annotations

import ast

from .. import language as asc
from ..lang.surface import OTHER, T

_V = asc.PipeID.PIPE_V


@asc.jit
def _exp_of_scaled(dst, src, scale, n):
    """dst = e^(scale * src)."""
    asc.muls(dst, src, scale, n)
    asc.pipe_barrier(_V)
    asc.exp(dst, dst, n)
    asc.pipe_barrier(_V)


@asc.jit
def _divide_by_one_plus(dst, num, n):
    """dst = num / (1 + dst)."""
    asc.adds(dst, dst, 1.0, n)
    asc.pipe_barrier(_V)
    asc.div(dst, num, dst, n)
    asc.pipe_barrier(_V)


@asc.jit
def _count(dst, n):
    if n < 0:
        return dst.get_size()
    return n


@asc.jit
def act_sigmoid(dst, src, n):
    n = _count(dst, n)
    _exp_of_scaled(dst, src, -1.0, n)
    asc.adds(dst, dst, 1.0, n)
    asc.pipe_barrier(_V)
    asc.reciprocal(dst, dst, n)
    asc.pipe_barrier(_V)


@asc.jit
def act_tanh(dst, src, n):
    n = _count(dst, n)
    _exp_of_scaled(dst, src, -2.0, n)
    asc.adds(dst, dst, 1.0, n)
    asc.pipe_barrier(_V)
    asc.reciprocal(dst, dst, n)
    asc.pipe_barrier(_V)
    asc.muls(dst, dst, 2.0, n)
    asc.pipe_barrier(_V)
    asc.adds(dst, dst, -1.0, n)
    asc.pipe_barrier(_V)


@asc.jit
def act_swish(dst, src, beta, n):
    n = _count(dst, n)
    _exp_of_scaled(dst, src, -beta, n)
    _divide_by_one_plus(dst, src, n)


@asc.jit
def act_silu(dst, src, n):
    act_swish(dst, src, 1.0, n)


@asc.jit
def act_gelu(dst, src, n):
    n = _count(dst, n)
    asc.mul(dst, src, src, n)
    asc.pipe_barrier(_V)
    asc.mul(dst, dst, src, n)
    asc.pipe_barrier(_V)
    asc.muls(dst, dst, 0.044715, n)
    asc.pipe_barrier(_V)
    asc.add(dst, dst, src, n)
    asc.pipe_barrier(_V)
    _exp_of_scaled(dst, dst, -1.5957691216057308, n)
    _divide_by_one_plus(dst, src, n)


@asc.jit
def act_swiglu(dst, src0, src1, beta, n):
    n = _count(dst, n)
    act_swish(dst, src1, beta, n)
    asc.mul(dst, dst, src0, n)
    asc.pipe_barrier(_V)


def _api(name):
    return f"asc.adv.{name}"


_UNARY = ("dst", "src", "count", "temp_buffer", "is_reuse_source")
# name -> (parameters, required, helper, tensor parameters, scalar parameter and its default)
SPECS = {
    "tanh": (_UNARY, 2, act_tanh, ("dst", "src"), None),
    "sigmoid": (_UNARY, 2, act_sigmoid, ("dst", "src"), None),
    "gelu": (_UNARY, 2, act_gelu, ("dst", "src"), None),
    "silu": (_UNARY, 2, act_silu, ("dst", "src"), None),
    "swish": (("dst", "src", "scalar_value", "count", "temp_buffer", "is_reuse_source"), 2,
              act_swish, ("dst", "src"), ("scalar_value", 1.0)),
    "swiglu": (("dst_tensor", "src_tensor0", "src_tensor1", "scalar_value",
                "shared_tmp_buffer", "cal_count"), 3, act_swiglu,
               ("dst_tensor", "src_tensor0", "src_tensor1"), ("scalar_value", 1.0)),
}


def _bind_values(name, args, kwargs):
    params, required, *_ = SPECS[name]
    if len(args) > len(params):
        raise TypeError(f"{_api(name)}: arguments must be ({', '.join(params)}), got "
                        f"{len(args)} positional")
    b = dict(zip(params, args))
    for k, v in kwargs.items():
        if k not in params or k in b:
            raise TypeError(f"{_api(name)}: arguments must be ({', '.join(params)}), got "
                            f"keyword {k!r}")
        b[k] = v
    missing = [p for p in params[:required] if p not in b]
    if missing:
        raise TypeError(f"{_api(name)}: arguments must include {', '.join(missing)}, got none")
    return b


def _count_param(name):
    return "cal_count" if name == "swiglu" else "count"


def _interpreted(name):
    params, _, helper, tensors, scalar = SPECS[name]

    def api(*args, **kwargs):
        b = _bind_values(name, args, kwargs)
        count = b.get(_count_param(name))
        vals = [b[t] for t in tensors]
        if scalar is not None:
            vals.append(float(b.get(scalar[0], scalar[1])))
        vals.append(-1 if count is None else int(count))
        helper(*vals)
    api.__name__ = api.__qualname__ = name
    api.__doc__ = f"pyasc's {_api(name)}({', '.join(params)}) (see the module docstring)."
    return api


tanh = _interpreted("tanh")
sigmoid = _interpreted("sigmoid")
gelu = _interpreted("gelu")
silu = _interpreted("silu")
swish = _interpreted("swish")
swiglu = _interpreted("swiglu")


# ---- compiled kernels ---------------------------------------------------------------------------
def lower(rw, call, name, bind):
    """asc.adv.<name>(...) as a statement: one call of its helper (`bind` is lowering's
    argument binder)."""
    params, required, helper, tensors, scalar = SPECS[name]
    b = bind(rw, call, _api(name), params, required)
    vals = [rw.visit(b[t]) for t in tensors]
    kinds = [T] * len(tensors)
    if scalar is not None:
        node = b.get(scalar[0])
        vals.append(ast.Call(func=ast.Name(id="float", ctx=ast.Load()),
                             args=[rw.visit(node) if node is not None
                                   else ast.Constant(scalar[1])], keywords=[]))
        kinds.append(OTHER)
    count = b.get(_count_param(name))
    none = count is None or (isinstance(count, ast.Constant) and count.value is None)
    vals.append(ast.Constant(-1) if none else
                ast.Call(func=ast.Name(id="int", ctx=ast.Load()), args=[rw.visit(count)],
                         keywords=[]))
    kinds.append(OTHER)
    fn, _ = rw.helper(helper, tuple(kinds))
    return [ast.Expr(value=ast.Call(func=ast.Name(id=fn, ctx=ast.Load()),
                                    args=[ast.Name(id="_ctx", ctx=ast.Load())] + vals,
                                    keywords=[]))]


__all__ = ["tanh", "sigmoid", "gelu", "silu", "swish", "swiglu", "SPECS", "lower"]
