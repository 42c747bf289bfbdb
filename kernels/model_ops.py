"""AI Core implementations of model ops, registered into `rt.model`'s op registry.

Loaded by `rt.model` through the `ascend_emu.op_libraries` entry point (pyproject.toml), or by
importing this module. Each implementation accepts a node only in the cases its kernel covers
(dtype, rank, attributes); every other node runs on the AI CPU (`rt.graph.aicpu`).

| device op | kernel |
|---|---|
| Conv (2-D, group 1, float32), fused Add/Sum/Relu | kernels.conv2d: img2col + conv matmul |
|   | (bias, ReLU in the fixpipe) + a residual epilogue; 3x3/1: taps |
|   | read in place from a zero-padded x (kernels.convtap) |
| MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (float32, 4-D) | kernels.pool |
| MatMul (A: ... x K, B: K x N 2-D; float32/float16 in, float32 out) | kernels.matmul |
| Gemm (normalised by ATC: A @ B + bias) | kernels.matmul + kernels.eltwise row broadcast; |
|   | one row of A, constant B: a 1x1 conv (kernels.conv2d, bias in the matmul) |
| Add (same shapes) | kernels.add |
| Add/Sub/Mul/Div/Max/Min, two-input Sum (same shapes or a last-axis row vector) | kernels.eltwise |
| Relu, Exp, Abs, Sqrt, Log, Reciprocal | kernels.eltwise unary |
| Softmax (last axis) | kernels.softmax |
| LayerNormalization (last axis, scale and bias) | kernels.norm |
| Aipp (rt.atc --insert_op_conf; YUV420SP_U8 in, 3 float channels out) | kernels.aipp |
"""
from __future__ import annotations

import math

import numpy as np

import ascendc as asc
import rt

from . import add as _add
from . import aipp as _aipp
from . import conv2d as _conv
from . import eltwise as _elt
from . import matmul as _mm
from . import norm as _norm
from . import pool as _pool
from . import softmax as _sm

F32 = "float32"


REPLAY = True      # False: every execution launches through kernel[...](...) again (A/B runs)


def _zeros(n: int) -> rt.DeviceArray:
    return rt.device_zeros((max(n, 16),), np.float32)


class _Op:
    def prepare(self, node, specs):
        return None


class Conv(_Op):
    """Conv on the cube; also a Conv fused with the Add/Sum and Relu after it (rt.model's
    load-time fusion: `node["fusion"]`), which the convolution's epilogue applies."""

    def supports(self, node, specs):
        a = node["attrs"]
        x, w = specs.inputs[0], specs.inputs[1]
        # 1x1 / stride 1 / no padding needs no img2col workspace (the matmul reads x in place)
        direct = tuple(w[0][2:]) == (1, 1) and all(v == 1 for v in a.get("strides", [1])) and \
            not any(a.get("pads", [0]))
        ok = (a.get("group", 1) == 1 and len(x[0]) == 4 and x[1] == F32 and w[1] == F32 and
              1 in specs.consts and (len(specs.inputs) < 3 or specs.inputs[2] is None or
                                     2 in specs.consts) and
              (specs.workspace_bytes > 0 or direct) and
              a.get("auto_pad", "NOTSET") in ("NOTSET", "VALID"))
        fusion = node.get("fusion")
        if ok and fusion:
            out = specs.outputs[0]
            ok = len(specs.outputs) == 2 and specs.outputs[1] == out and out[1] == F32 and \
                (not fusion["residual"] or specs.inputs[3] == out)
        return ok

    def prepare(self, node, specs):
        a = node["attrs"]
        t = _conv.conv2d_tiling(specs.inputs[0][0], specs.inputs[1][0], a.get("strides", 1),
                                a.get("pads", 0), a.get("dilations", 1))
        if not t.direct and t.col_elems * 4 > specs.workspace_bytes:
            raise ValueError(f"workspace {specs.workspace_bytes} < img2col {t.col_elems * 4}")
        wmat = _conv.conv_weights(specs.consts[1], specs.consts.get(2), t)
        return t, rt.to_device(wmat), _zeros(t.mm.zeros_len), node.get("fusion") or {}

    def launch(self, node, state, ins, outs, workspace, stream):
        t, wmat, zeros, fusion = state
        col = None if workspace is None else \
            rt.DeviceArray((workspace.nbytes // 4,), np.float32, workspace.ptr)
        _conv.launch_conv2d(ins[0], wmat, outs[0], col, zeros, t, stream,
                            residual=ins[3] if fusion.get("residual") else None,
                            relu=fusion.get("relu", False), out=outs[-1])


class Pool(_Op):
    def __init__(self, mode, global_):
        self.mode, self.global_ = mode, global_

    def _tiling(self, node, specs):
        shape = specs.inputs[0][0]
        if self.global_:
            return _pool.pool_tiling(shape, (shape[2], shape[3]), 1, 0)
        a = node["attrs"]
        # ONNX's default stride is 1 (pool_tiling's is the kernel size, as in PyTorch)
        return _pool.pool_tiling(shape, a["kernel_shape"], a.get("strides") or [1, 1],
                                 a.get("pads", 0))

    def supports(self, node, specs):
        a = node["attrs"]
        if len(specs.inputs[0][0]) != 4 or specs.inputs[0][1] != F32 or a.get("ceil_mode", 0) \
                or a.get("storage_order", 0) or len(node["outputs"]) > 1 or \
                a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID") or \
                any(d != 1 for d in a.get("dilations", [1, 1])):
            return False
        t = self._tiling(node, specs)
        return _pool.kh_bucket(t.kh) * t.w_pad * 4 * _pool.BUFFER_NUM <= rt.get_soc().ub_bytes

    def prepare(self, node, specs):
        return self._tiling(node, specs)

    def launch(self, node, t, ins, outs, workspace, stream):
        _pool.launch_pool(ins[0], outs[0], self.mode, t, stream,
                          node["attrs"].get("count_include_pad", 0))


class MatMul(_Op):
    def supports(self, node, specs):
        (ash, adt), (bsh, bdt) = specs.inputs[:2]
        return (len(bsh) == 2 and len(ash) >= 2 and adt == bdt and adt in (F32, "float16") and
                specs.outputs[0][1] == F32 and ash[-1] == bsh[0])

    def prepare(self, node, specs):
        (ash, adt), (bsh, _) = specs.inputs[:2]
        m = math.prod(ash[:-1])
        t = _mm.matmul_tiling(m, bsh[1], bsh[0], np.dtype(adt))
        return t, rt.device_zeros((t.zeros_len,), adt)

    def launch(self, node, state, ins, outs, workspace, stream):
        t, zeros = state
        a = rt.DeviceArray((t.m, t.k), ins[0].dtype, ins[0].ptr)
        c = rt.DeviceArray((t.m, t.n), np.float32, outs[0].ptr)
        _mm.matmul_kernel[t.block_dim, stream](
            a, ins[1], c, zeros, np.int64(t.m), np.int64(t.n), np.int64(t.k), t.base_m,
            t.base_n, t.base_k, t.l0_n, t.depth_l1, t.depth_l0a, t.depth_l0b)


class Gemm(MatMul):
    """A @ B + bias. With one row of A (a batch-1 classifier), float32 and a constant B (and
    bias), it runs as a 1x1 convolution instead (`_vector_state`): y^T = [B^T | bias] @ [a^T; 1]
    on `kernels.convmm.conv_matmul_kernel`, B^T laid out once in the cube's L0A order (as the
    Conv weights: no Nd2Nz or transposing load of the K x N weights per execution) and the
    bias as its ones-row K term (no separate row-broadcast add launch)."""

    def supports(self, node, specs):
        if node["attrs"]:                       # not normalised by ATC
            return False
        ok = super().supports(node, specs) and len(specs.inputs[0][0]) == 2
        if len(specs.inputs) > 2 and specs.inputs[2] is not None:
            ok = ok and specs.inputs[2][0] == (specs.inputs[1][0][1],) and \
                specs.inputs[2][1] == F32
        return ok

    def prepare(self, node, specs):
        vec = _vector_state(specs)
        return ("vector", vec) if vec is not None else ("matmul", super().prepare(node, specs))

    def launch(self, node, state, ins, outs, workspace, stream):
        kind, inner = state
        if kind == "vector":
            t, wmat, zeros = inner
            _conv.launch_conv2d(ins[0], wmat, outs[0], None, zeros, t, stream)
            return
        super().launch(node, inner, ins, outs, workspace, stream)
        if len(ins) > 2 and ins[2] is not None:
            _elt.binary("add", outs[0], ins[2], stream=stream, out=outs[0])


def _vector_state(specs):
    """(conv tiling, cube weights, zeros) running A (1 x K) @ B (K x N) + bias as the 1x1
    convolution of a K x 1 x 1 image with N output channels (Gemm's doc), or None when A has
    more than one row, B or the bias is not a constant, or the dtype is not float32."""
    (ash, adt), (bsh, _) = specs.inputs[:2]
    has_bias = len(specs.inputs) > 2 and specs.inputs[2] is not None
    if math.prod(ash[:-1]) != 1 or adt != F32 or 1 not in specs.consts or \
            (has_bias and 2 not in specs.consts):
        return None
    k, n = bsh
    t = _conv.conv2d_tiling((1, k, 1, 1), (n, k, 1, 1))
    w = np.ascontiguousarray(np.asarray(specs.consts[1], np.float32).T).reshape(n, k, 1, 1)
    wmat = _conv.conv_weights(w, specs.consts[2] if has_bias else None, t)
    return t, rt.to_device(wmat), _zeros(t.mm.zeros_len)


def _bcast_shape(x, y):
    """True if y is a row vector over x's last axis (shape (..., 1, cols))."""
    return len(y) >= 1 and y[-1] == x[-1] and math.prod(y) == y[-1] and len(y) <= len(x)


class Binary(_Op):
    def __init__(self, op):
        self.op = op

    def supports(self, node, specs):
        if len(specs.inputs) != 2 or None in specs.inputs or \
                not math.prod(specs.outputs[0][0]):              # Max/Min are variadic
            return False
        (xs, xd), (ys, yd) = specs.inputs
        out = specs.outputs[0][0]
        if xd != yd or xd not in (F32, "float16"):
            return False
        if xs == ys:
            return True
        if _bcast_shape(xs, ys) and out == xs:
            return True
        return self.op in ("add", "mul", "max", "min") and _bcast_shape(ys, xs) and out == ys

    def launch(self, node, state, ins, outs, workspace, stream):
        x, y = ins[0], ins[1]
        if x.shape != y.shape and x.size < y.size:
            x, y = y, x
        z = outs[0]
        if x.shape == y.shape:
            if self.op == "add":
                t = _add.add_tiling(x.size, x.dtype)
                _add.add_kernel[t.block_dim, stream](x, y, z, t.total, t.per_core, t.tile)
            else:
                _elt.binary(self.op, x, y, stream=stream, out=z)
            return
        cols = x.shape[-1]
        _elt.binary(self.op, rt.DeviceArray((x.size // cols, cols), x.dtype, x.ptr),
                    rt.DeviceArray((cols,), y.dtype, y.ptr), stream=stream,
                    out=rt.DeviceArray((x.size // cols, cols), z.dtype, z.ptr))


class Unary(_Op):
    def __init__(self, op):
        self.op = op

    def supports(self, node, specs):
        return specs.inputs[0][1] in (F32, "float16") and math.prod(specs.inputs[0][0]) > 0

    def launch(self, node, state, ins, outs, workspace, stream):
        _elt.unary(self.op, ins[0], stream=stream, out=outs[0])


def _rows(shape):
    return math.prod(shape[:-1]), shape[-1]


class Softmax(_Op):
    def supports(self, node, specs):
        shape, dt = specs.inputs[0]
        ax = node["attrs"].get("axis", -1)
        return dt in (F32, "float16") and len(shape) >= 1 and ax % len(shape) == len(shape) - 1

    def prepare(self, node, specs):
        shape, dt = specs.inputs[0]
        return _sm.softmax_tiling(*_rows(shape), np.dtype(dt))

    def launch(self, node, t, ins, outs, workspace, stream):
        x = rt.DeviceArray((ins[0].size,), ins[0].dtype, ins[0].ptr)
        y = rt.DeviceArray((outs[0].size,), outs[0].dtype, outs[0].ptr)
        wide = np.dtype(x.dtype).itemsize < 4
        if t.chunked:
            _sm.softmax_long_kernel[t.block_dim, stream](x, y, t.rows, t.cols, t.rows_per_core,
                                                         t.chunk, t.tmp_elems, wide)
        else:
            _sm.softmax_kernel[t.block_dim, stream](x, y, t.rows, t.cols, t.rows_per_core,
                                                    t.tile_rows, t.stride, t.tmp_elems, wide)


class LayerNorm(_Op):
    def supports(self, node, specs):
        shape, dt = specs.inputs[0]
        ax = node["attrs"].get("axis", -1)
        params = specs.inputs[1:3]
        return (dt in (F32, "float16") and len(shape) >= 1 and ax % len(shape) == len(shape) - 1
                and len(params) == 2 and all(p is not None and p == ((shape[-1],), dt)
                                             for p in params)
                and len(node["outputs"]) == 1)

    def prepare(self, node, specs):
        shape, dt = specs.inputs[0]
        return _norm.layernorm_tiling(*_rows(shape), np.dtype(dt))

    def launch(self, node, t, ins, outs, workspace, stream):
        x = rt.DeviceArray((ins[0].size,), ins[0].dtype, ins[0].ptr)
        y = rt.DeviceArray((outs[0].size,), outs[0].dtype, outs[0].ptr)
        eps = float(node["attrs"].get("epsilon", 1e-5))
        wide = np.dtype(x.dtype).itemsize < 4
        kernel = _norm.norm_long_kernel if t.chunked else _norm.norm_kernel
        size = (t.chunk,) if t.chunked else (t.tile_rows, t.stride)
        kernel[t.block_dim, stream](x, ins[1], ins[2], y, t.rows, t.cols, t.rows_per_core,
                                    *size, t.tmp_elems, eps, False, wide)


class Replayed(_Op):
    """`impl` whose launches a node records at its first execution (`asc.
    record_launches`: each kernel's binary and argument tuple, bound once) and replays at the
    next ones with the same device buffers (the model's views, keyed by address and size),
    queueing each with rt.launch directly: the host's Python per inference shrinks to a loop
    of cheap calls. Only for implementations whose launches allocate nothing per call and
    depend on nothing but the node, its state and the buffers' addresses."""

    def __init__(self, impl):
        self.impl = impl

    def supports(self, node, specs):
        return self.impl.supports(node, specs)

    def prepare(self, node, specs):
        return self.impl.prepare(node, specs), {}

    def launch(self, node, state, ins, outs, workspace, stream):
        inner, plans = state
        if not REPLAY:
            self.impl.launch(node, inner, ins, outs, workspace, stream)
            return
        key = tuple(None if a is None else (int(a.ptr), a.nbytes)
                    for a in (*ins, *outs, workspace))
        plan = plans.get(key)
        if plan is not None:
            for p in plan:
                p(stream)
            return
        with asc.record_launches() as rec:
            self.impl.launch(node, inner, ins, outs, workspace, stream)
        if rec.replayable:
            if len(plans) >= 8:         # callers' own output buffers, each call new ones
                plans.clear()
            plans[key] = rec.launches


IMPLS = {
    "Conv": Replayed(Conv()),
    "MaxPool": Replayed(Pool("max", False)), "AveragePool": Replayed(Pool("avg", False)),
    "GlobalAveragePool": Replayed(Pool("avg", True)),
    "GlobalMaxPool": Replayed(Pool("max", True)),
    "MatMul": Replayed(MatMul()), "Gemm": Replayed(Gemm()),
    "Add": Binary("add"), "Sub": Binary("sub"), "Mul": Binary("mul"), "Div": Binary("div"),
    "Max": Binary("max"), "Min": Binary("min"), "Sum": Binary("add"),     # Sum: two inputs
    "Relu": Unary("relu"), "Exp": Unary("exp"), "Abs": Unary("abs"), "Sqrt": Unary("sqrt"),
    "Log": Unary("ln"), "Reciprocal": Unary("reciprocal"),
    "Softmax": Softmax(), "LayerNormalization": LayerNorm(),
    "Aipp": _aipp.AippOp(),         # inserted by rt.atc --insert_op_conf (YUV420SP configs)
}


def register() -> None:
    """Register every AI Core implementation above (the entry point's target)."""
    for op, impl in IMPLS.items():
        rt.model.register_aicore(op, impl)


register()
