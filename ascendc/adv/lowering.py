"""Compiling `asc.adv.Matmul`: a Matmul object becomes a few local variables of the kernel.

For `mm = asc.adv.Matmul(a_type, b_type, c_type, bias_type)` the generated code holds
  mm__ty    the MatmulTypes as tuples (position, format, sizeof(dtype), is_trans, layout)
  mm        its int64 state (tails, org / single shapes, transposes, bias on; ascendc/adv/checks.py)
  mm__pipe, mm__t, mm__q   the pipe, the tiling record, the tuple of its local buffers (queues)
  mm__a, mm__b, mm__bias   the GM tensors given by set_tensor_a / set_tensor_b / set_bias
and each method call is a statement rewritten into assignments, a run-time check
(`_ADV.mm_check_*`) and a call of the kernel-language helpers of ascendc/adv/matmul.py
(`mm_register` at register_matmul/init, `mm_iterate_all` at iterate_all) that the interpreter
runs too. Position, format and layout of a MatmulType are template arguments in Ascend C: they
must be compile-time constants here and are checked while compiling.
"""
from __future__ import annotations

import ast

from ..compiler.frontend import attr_chain as _chain, is_asc_module, keyword_fields
from ..lang.enums import TPosition
from ..lang.surface import GA, OTHER, PIPE, T
from . import checks as C
from .matmul import NO_BIAS, SUPPORTED_METHODS, type_error
from .mmkernel import (mm_get_tensor_c, mm_get_tensor_c_gm, mm_iterate, mm_iterate_all,
                       mm_iterate_batch, mm_register)
from .quant import quant_per_tensor
from . import activation, flashsoftmax, kfclower, norm
from .mmconfig import CONFIG_CALLS
from .names import PROVIDED, unsupported_message
from .softmax import ARGS as _SOFTMAX_ARGS, lower_softmax, lower_softmax_tiling
from .tiling import FIELDS
from .tilingops import INDEX

MM = "MM"
KINDS = frozenset({MM})
_ADV_IMPORT = "from ascendc.adv import checks as _ADV"


def is_adv_call(rw, node, name):
    """Is `node` a call of asc.adv.<name>?"""
    if not isinstance(node, ast.Call):
        return False
    ch = _chain(node.func)
    if not ch or len(ch) != 3 or ch[1:] != ["adv", name]:
        return False
    return is_asc_module(rw.global_value(ch[0]))


def _expr(src):
    return ast.parse(src, mode="eval").body


def _stmt(src, **nodes):
    """A statement from source; names `_N_<key>` are replaced by the given AST nodes."""
    tree = ast.parse(src).body[0]

    class Sub(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id.startswith("_N_"):
                return nodes[n.id[3:]]
            return n
    return ast.fix_missing_locations(Sub().visit(tree))


def _bind(rw, call, api, names, required):
    """Arguments of `call` by parameter name (positional or keyword; aliases `x_type` of x)."""
    if len(call.args) > len(names):
        raise rw.err(call, f"{api}: arguments must be ({', '.join(names)}), got "
                           f"{len(call.args)} positional")
    out = dict(zip(names, call.args))
    for k in call.keywords:
        key = k.arg[:-5] if k.arg and k.arg.endswith("_type") and k.arg[:-5] in names else k.arg
        if key not in names or key in out:
            raise rw.err(call, f"{api}: arguments must be ({', '.join(names)}), got keyword "
                               f"{k.arg!r}")
        out[key] = k.value
    missing = [n for n in names[:required] if n not in out]
    if missing:
        raise rw.err(call, f"{api}: arguments must include {', '.join(missing)}, got none")
    return out


def _constant(rw, node):
    """The compile-time value of `node`, or raise KeyError."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in rw.consts:
        return rw.consts[node.id]
    ch = _chain(node)
    if ch is None:
        raise KeyError(node)
    try:
        return rw.resolve(ch)
    except AttributeError:
        raise KeyError(node) from None


def matmul_type(rw, call, role="operand"):
    """asc.adv.MatmulType(...) -> a tuple (position, format, sizeof(dtype), is_trans, layout,
    an empty GM array of the dtype: what a MIX kernel's AIC types the GM operands with, kfc.py)."""
    b = _bind(rw, call, "asc.adv.MatmulType", ("position", "format", "dtype", "is_trans",
                                                "layout"), 3)
    try:
        pos, fmt = _constant(rw, b["position"]), _constant(rw, b["format"])
        layout = _constant(rw, b["layout"]) if "layout" in b else 0
    except KeyError:
        raise rw.err(call, "asc.adv.MatmulType: position, format and layout must be compile-time "
                           "constants (template arguments in Ascend C), got a run-time value") \
            from None
    msg = type_error(role, pos, fmt, layout)
    if msg:
        raise rw.err(call, msg)
    trans = rw.visit(b["is_trans"]) if "is_trans" in b else ast.Constant(False)
    dtype = rw.visit(b["dtype"])
    size = ast.Call(func=_expr("_D.sizeof"), args=[dtype], keywords=[])
    rw.gen.require_import(kfclower.KFC_IMPORT)
    return ast.Tuple(elts=[ast.Constant(int(pos)), ast.Constant(int(fmt)), size,
                           ast.Call(func=ast.Name(id="bool", ctx=ast.Load()), args=[trans],
                                    keywords=[]),
                           ast.Constant(int(layout)),
                           ast.Call(func=_expr("_KFC.proto"), args=[dtype], keywords=[])],
                     ctx=ast.Load())


def expression(rw, call, chain):
    """asc.adv.<name>(...) used as a value."""
    if chain == ["MatmulType"]:
        return matmul_type(rw, call)
    if chain == ["MatmulConfig"] or chain[0] in CONFIG_CALLS:
        return ast.Constant(0)     # accepted, changes nothing (see matmul.MatmulConfig)
    if chain == ["TCubeTiling"]:
        return _new_tiling(rw, call)
    if chain == ["QuantConfig"]:
        return _quant_config(rw, call)
    if chain == ["SoftmaxTiling"]:
        return lower_softmax_tiling(rw, call)
    if chain == ["RmsNormTiling"]:
        return norm.lower_tiling(rw, call)
    if chain == ["LayerNormTiling"]:
        return norm.lower_layernorm_tiling(rw, call)
    if chain == ["SoftMaxShapeInfo"]:
        return flashsoftmax.lower_shape_info(rw, call)
    if chain == ["SoftmaxConfig"]:
        return flashsoftmax.lower_config(rw, call)
    if chain[0] not in PROVIDED:
        raise rw.err(call, unsupported_message(chain[0]))
    raise rw.err(call, f"asc.adv.{'.'.join(chain)}(...) must be used as pyasc does (Matmul "
                       f"assigned to a variable, register_matmul as a statement); other asc.adv "
                       f"APIs are not supported in compiled kernels")


def assign(rw, node):
    """`mm = asc.adv.Matmul(...)`, or None if `node` is another assignment."""
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
        return _tiling_write(rw, node)
    if not is_adv_call(rw, node.value, "Matmul"):
        return None
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        raise rw.err(node, "asc.adv.Matmul(...) must be assigned to one plain variable")
    name = node.targets[0].id
    b = _bind(rw, node.value, "asc.adv.Matmul", ("a", "b", "c", "bias", "matmul_config"), 3)
    elts, has_bias, c_gm = [], False, False
    for role in ("a", "b", "c", "bias"):
        v = b.get(role)
        if v is None or (isinstance(v, ast.Constant) and v.value is None):
            elts.append(ast.Tuple(elts=[ast.Constant(x) for x in NO_BIAS], ctx=ast.Load()))
            continue
        has_bias = has_bias or role == "bias"
        if role == "c":
            c_gm = _c_in_gm(rw, v)
        elts.append(matmul_type(rw, v, role) if is_adv_call(rw, v, "MatmulType")
                    else rw.visit(v))
    rw.gen.require_import(_ADV_IMPORT)
    pz = kfclower.protos(rw, name, has_bias)
    rw.ext_state("adv")[name] = {"bias": has_bias, "seen": set(), "c_gm": c_gm}
    rw.kinds[name] = MM
    return [_stmt(f"{name}__ty = _N_t", t=ast.Tuple(elts=elts, ctx=ast.Load())),
            _stmt(f"{name} = _ADV.new_state()")] + pz


def _c_in_gm(rw, v):
    """Is C declared in TPosition.GM (an inline MatmulType with a constant position)? Then
    get_tensor_c takes a GlobalTensor (Ascend C's GetTensorC(gm)); otherwise a local tensor."""
    if not is_adv_call(rw, v, "MatmulType"):
        return False
    pos = v.args[0] if v.args else {k.arg: k.value for k in v.keywords}.get("position")
    try:
        return pos is not None and int(_constant(rw, pos)) == TPosition.GM
    except (KeyError, TypeError, ValueError):
        return False


def statement(rw, node):
    """An expression statement on a Matmul (or register_matmul); None for anything else."""
    v = node.value
    if not isinstance(v, ast.Call):
        return None
    if is_adv_call(rw, v, "register_matmul"):
        return _register(rw, v)
    if is_adv_call(rw, v, "quant"):
        return _quant(rw, v)
    if is_adv_call(rw, v, "softmax"):
        return lower_softmax(rw, _bind(rw, v, "asc.adv.softmax", _SOFTMAX_ARGS, 5))
    if is_adv_call(rw, v, "softmax_flash_v2"):
        return flashsoftmax.lower(rw, v, _bind(rw, v, flashsoftmax.API, flashsoftmax.ARGS, 8),
                                  (T,) * 8 + (OTHER,) * 5)
    if is_adv_call(rw, v, "layernorm"):
        return norm.lower_layernorm(rw, v, _bind(rw, v, "asc.adv.layernorm", norm.LN_ARGS, 8),
                                    (T,) * 7 + (OTHER,) * 4)
    if is_adv_call(rw, v, "rmsnorm"):
        return norm.lower_rmsnorm(rw, v, _bind(rw, v, "asc.adv.rmsnorm", norm.ARGS, 5),
                                  (T, T, T, T, OTHER, OTHER, OTHER, OTHER, OTHER))
    for name in activation.SPECS:
        if is_adv_call(rw, v, name):
            return activation.lower(rw, v, name, _bind)
    f = v.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
            rw.kinds.get(f.value.id) == MM:
        return _method(rw, v, f.value.id, f.attr)
    return None


def _register(rw, call):
    mms = [i for i, a in enumerate(call.args)
           if isinstance(a, ast.Name) and rw.kinds.get(a.id) == MM]
    kw = {k.arg: k.value for k in call.keywords}
    if not mms and isinstance(kw.get("matmul"), ast.Name) and \
            rw.kinds.get(kw["matmul"].id) == MM:
        mm_node, tiling = kw["matmul"], kw.get("tiling")
    elif len(mms) == 1 and mms[0] in (1, 2) and len(call.args) <= mms[0] + 2:
        mm_node = call.args[mms[0]]
        tiling = call.args[mms[0] + 1] if len(call.args) > mms[0] + 1 else kw.get("tiling")
    else:
        raise rw.err(call, "asc.adv.register_matmul: arguments must be (pipe, workspace, mm, "
                           "tiling=None) or (pipe, mm, tiling) with mm an asc.adv.Matmul "
                           "variable")
    name = mm_node.id
    pipe = call.args[0] if call.args else kw.get("pipe")
    if pipe is None:
        raise rw.err(call, "asc.adv.register_matmul: pipe must be given, got none")
    out = [_stmt(f"{name}__pipe = _N_p", p=rw.visit(pipe))]
    rw.ext_state("adv")[name]["seen"].add("pipe")
    ws = call.args[1] if mms and mms[0] == 2 else kw.get("workspace")
    if ws is not None:      # get_tensor_c stages C tiles there (mmkernel.py)
        out.append(_stmt(f"{name}__ws = _N_w", w=rw.visit(ws)))
        rw.ext_state("adv")[name]["seen"].add("ws")
    if tiling is not None and not (isinstance(tiling, ast.Constant) and tiling.value is None):
        out += _init(rw, name, tiling, ast.Name(id=f"{name}__pipe", ctx=ast.Load()))
        return out + kfclower.server(rw, name, rw.ext_state("adv")[name])
    rw.ext_state("adv")[name]["lazy"] = True
    return out + kfclower.lazy(name) + kfclower.server(rw, name, rw.ext_state("adv")[name])


def _init(rw, name, tiling, pipe):
    helper, _ = rw.helper(mm_register, (PIPE, OTHER, OTHER, OTHER))
    rw.ext_state("adv")[name]["seen"].add("init")
    has_bias = f"{name}__ty[3][0] >= 0"
    return [_stmt(f"{name}__t = _ADV.tiling_norm(_N_t)", t=rw.visit(tiling)),
            _stmt(f"_ADV.mm_check_tiling({name}__t, {name}__ty[0][2], {has_bias})"),
            *kfclower.queues(name, _stmt(f"{name}__q = {helper}(_ctx, _N_p, {name}__t, "
                                         f"{name}__ty[0][2], {has_bias})", p=pipe)),
            _stmt(f"{name}[{C.S_INIT}] = 1")]


def _arg(rw, call, i, names, default=None):
    kw = {k.arg: k.value for k in call.keywords}
    if i < len(call.args):
        return rw.visit(call.args[i])
    for n in names:
        if n in kw:
            return rw.visit(kw[n])
    return default


def _set(name, slot, value):
    return _stmt(f"{name}[{slot}] = int(_N_v)", v=value)


def _method(rw, call, name, m):
    mm = rw.ext_state("adv")[name]
    api = f"asc.adv.Matmul.{m}"
    if m == "init":
        tiling = call.args[0] if call.args else {k.arg: k.value for k in call.keywords}.get(
            "tiling")
        if tiling is None:
            raise rw.err(call, f"{api}: tiling must be given, got none")
        pipe = _arg(rw, call, 1, ("pipe",))
        if pipe is None:
            pipe = ast.Name(id=f"{name}__pipe", ctx=ast.Load()) if "pipe" in mm["seen"] \
                else ast.Constant(0)
        return _init(rw, name, tiling, pipe) + (kfclower.init_message(name) if mm.get("lazy")
                                                else [])
    if m in ("set_tensor_a", "set_tensor_b"):
        w = m[-1]
        t = _arg(rw, call, 0, ("gm", "tensor", f"tensor_{w}"))
        if t is None:
            raise rw.err(call, f"{api}: a GlobalTensor must be given, got none")
        tr = _arg(rw, call, 1, ("transpose", f"is_transpose_{w}", "is_trans"),
                  ast.Constant(False))
        mm["seen"].add(w)
        nz = _expr(f"2 * int({name}__ty[{0 if w == 'a' else 1}][1] == 1)")   # CubeFormat.NZ
        flag = ast.Call(func=ast.Name(id="int", ctx=ast.Load()),
                        args=[ast.Call(func=ast.Name(id="bool", ctx=ast.Load()), args=[tr],
                                       keywords=[])], keywords=[])
        return [_stmt(f"{name}__{w} = _N_t", t=t),
                _set(name, C.S_TA if w == "a" else C.S_TB,
                     ast.BinOp(left=flag, op=ast.Add(), right=nz))]
    if m == "set_bias":
        if not mm["bias"]:
            raise rw.err(call, "asc.adv.Matmul.set_bias: the Matmul must be declared with a bias "
                               "MatmulType (Matmul(a, b, c, bias)), got bias=None")
        mm["seen"].add("bias")
        return [_stmt(f"{name}__bias = _N_t", t=_arg(rw, call, 0, ("gm", "bias"))),
                _set(name, C.S_BIAS, ast.Constant(1))]
    if m == "disable_bias":
        return [_set(name, C.S_BIAS, ast.Constant(0))]
    if m in ("set_tail", "set_single_shape", "set_org_shape"):
        slots = {"set_tail": (C.S_TM, C.S_TN, C.S_TK), "set_single_shape": (C.S_SM, C.S_SN, C.S_SK),
                 "set_org_shape": (C.S_OM, C.S_ON, C.S_OKA, C.S_OKB)}[m]
        keys = (("m", "tail_m", "single_m", "org_m"), ("n", "tail_n", "single_n", "org_n"),
                ("k", "ka", "tail_k", "single_k", "org_k", "org_ka"), ("kb", "org_kb"))
        out = []
        for i, slot in enumerate(slots):
            v = _arg(rw, call, i, keys[i])
            if v is None and m == "set_org_shape" and i == 3:
                v = _arg(rw, call, 2, keys[2])          # Kb = K
            if v is None and m != "set_tail":
                raise rw.err(call, f"{api}: m, n and k must be given, got {len(call.args)} "
                                   f"arguments")
            out.append(_set(name, slot, v if v is not None else ast.Constant(-1)))
        return out
    if m in ("iterate_all", "iterate_batch"):
        return _iterate_all(rw, call, name, mm, m)
    if m == "end":
        return kfclower.end(name, mm["seen"])
    if m == "get_tensor_c":
        return _get_tensor_c(rw, call, name, mm)
    if m == "iterate":          # one tile, the result unused
        return [ast.Expr(value=method_value(rw, call, MM, m))]
    raise rw.err(call, f"{api} is not supported (supported Matmul methods: "
                       f"{', '.join(SUPPORTED_METHODS)})")


def _iterate_all(rw, call, name, mm, m="iterate_all"):
    api = f"asc.adv.Matmul.{m}"
    if "a" not in mm["seen"] or "b" not in mm["seen"]:
        raise rw.err(call, f"{api}: set_tensor_a and set_tensor_b must be called first, got "
                           f"a={'a' in mm['seen']} b={'b' in mm['seen']}")
    if "init" not in mm["seen"]:
        raise rw.err(call, f"{api}: the Matmul must be initialised first (register_matmul(pipe, "
                           f"workspace, mm, tiling) or mm.init(tiling)), got no tiling")
    c = _arg(rw, call, 0, ("gm", "tensor_c", "c"))
    if c is None:
        raise rw.err(call, f"{api}: a GlobalTensor for C must be given, got none")
    if m == "iterate_batch":
        atomic = _arg(rw, call, 8, ("en_atomic",), ast.Constant(0))
        partial = _arg(rw, call, 7, ("en_partial_sum",), ast.Constant(False))
        if not (isinstance(partial, ast.Constant) and not partial.value):
            raise rw.err(call, f"{api}: en_partial_sum must be False (partial sums are not "
                               f"emulated), got en_partial_sum={ast.unparse(partial)}")
        plan_args = [_arg(rw, call, i, keys, default) for i, (keys, default) in enumerate((
            (("batch_a",), None), (("batch_b",), None), (("en_sequential_write",), None),
            (("matrix_stride_a",), ast.Constant(0)), (("matrix_stride_b",), ast.Constant(0))),
            start=1)]
        if any(a is None for a in plan_args):
            raise rw.err(call, f"{api}: tensor, batch_a, batch_b and en_sequential_write must "
                               f"be given, got {len(call.args)} arguments")
        helper, _ = rw.helper(mm_iterate_batch, (OTHER, OTHER, OTHER, T, T, T, T, OTHER))
    else:
        atomic = _arg(rw, call, 1, ("en_atomic",), ast.Constant(0))
        helper, _ = rw.helper(mm_iterate_all, (OTHER, OTHER, OTHER, T, T, T, T))
    bias = f"{name}__bias" if "bias" in mm["seen"] else f"{name}__c"
    # set_bias under `if <ConstExpr False>:` is dropped by CPython; keep the name defined, with
    # the bias's own type (fp32, int32 for int8 A; C may be 16-bit, and Numba cannot unify the
    # two array types)
    fallback = [_stmt(f"if {name}[{C.S_BIAS}] != 1:\n    {name}__bias = _ADV.no_bias({name}__a)")] \
        if "bias" in mm["seen"] else []
    check = _stmt(f"_ADV.mm_check_iterate({name}, {name}__t, {name}__ty[0][2], {name}__ty[1][2], "
                  f"{name}__ty[2][2], {name}__ty[0][3], {name}__ty[1][3], {name}__a, {name}__b, "
                  f"{name}__c, _N_e)", e=atomic)
    if m == "iterate_batch":
        plan = _stmt(f"{name}__plan = _ADV.mm_batch_plan({name}__t, {name}__ty[0][4], "
                     f"{name}__ty[1][4], {name}__ty[2][4], int(_N_ba), int(_N_bb), bool(_N_sw), "
                     f"int(_N_sa), int(_N_sb))", ba=plan_args[0], bb=plan_args[1],
                     sw=plan_args[2], sa=plan_args[3], sb=plan_args[4])
        run = _stmt(f"{helper}(_ctx, {name}__q, {name}__t, {name}, {name}__a, {name}__b, {bias}, "
                    f"{name}__c, {name}__plan)")
        run = kfclower.client(name, 2, api, [run], f"{name}__c", bias, plan=f"{name}__plan")
        return [_stmt(f"{name}__c = _N_c", c=c)] + fallback + [check, plan] + run
    run = _stmt(f"{helper}(_ctx, {name}__q, {name}__t, {name}, {name}__a, {name}__b, {bias}, "
                f"{name}__c)")
    run = kfclower.client(name, 1, api, [run], f"{name}__c", bias)
    return [_stmt(f"{name}__c = _N_c", c=c)] + fallback + [check] + run


def method_value(rw, call, kind, m):
    """A Matmul method used as a value: `while mm.iterate():` (also what `with mm.iterate() as
    count:` becomes, with `count = mm._iterate_count()`); the other calls are statements."""
    name = call.func.value.id
    mm = rw.ext_state("adv")[name]
    if m == "_iterate_count":
        return _expr(f"{name}[{C.S_ITER}]")
    if m != "iterate":
        raise rw.err(call, f"asc.adv.Matmul.{m} must be called as a statement of its own, got "
                           f"its result used in an expression")
    api = "asc.adv.Matmul.iterate"
    _need(rw, call, api, mm, not mm["c_gm"])
    if call.args or any(k.arg in ("en_partial_sum", "local_c_matrix") for k in call.keywords):
        raise rw.err(call, f"{api}: only iterate() / iterate(sync=...) is supported "
                           f"(en_partial_sum and local_c_matrix are not), got "
                           f"{len(call.args)} positional arguments")
    helper, _ = rw.helper(mm_iterate, (OTHER, OTHER, OTHER, T, T, T))
    bias = f"{name}__bias" if "bias" in mm["seen"] else f"{name}__a"
    # the checks run first (arguments are evaluated left to right), then the tile (a client:
    # the server's, kfc.py)
    run = kfclower.iterate_value(name, not mm["c_gm"], bias,
                                 f"{helper}(_ctx, {name}__q, {name}__t, {name}, {name}__a, "
                                 f"{name}__b, {bias})")
    return _expr(f"_ADV.second(_ADV.mm_check_tile({name}, {name}__t, {name}__ty[0][2], "
                 f"{name}__ty[1][2], {name}__ty[2][2], {name}__ty[0][3], {name}__ty[1][3], "
                 f"{name}__a, {name}__b), _ADV.second(_KFC.check_not_server(_ctx, "
                 f"'asc.adv.Matmul.iterate'), {run}))")


def _need(rw, call, api, mm, ws=True):
    if "a" not in mm["seen"] or "b" not in mm["seen"]:
        raise rw.err(call, f"{api}: set_tensor_a and set_tensor_b must be called first, got "
                           f"a={'a' in mm['seen']} b={'b' in mm['seen']}")
    if "init" not in mm["seen"]:
        raise rw.err(call, f"{api}: the Matmul must be initialised first (register_matmul(pipe, "
                           f"workspace, mm, tiling) or mm.init(tiling)), got no tiling")
    if ws and "ws" not in mm["seen"]:
        raise rw.err(call, f"{api}: a workspace must be given to register_matmul(pipe, "
                           f"workspace, mm, ...) (C tiles are staged there on the way to UB), "
                           f"got workspace=None")


def _get_tensor_c(rw, call, name, mm):
    api = "asc.adv.Matmul.get_tensor_c"
    c_gm = mm["c_gm"]
    _need(rw, call, api, mm, not c_gm)
    dst = _arg(rw, call, 0, ("tensor",))
    if dst is None:
        raise rw.err(call, f"{api}: a {'GlobalTensor' if c_gm else 'LocalTensor'} for C must be "
                           f"given, got none")
    if rw.kind(call.args[0] if call.args else dst) != T or \
            any(k.arg == "optional_tensor" for k in call.keywords) or len(call.args) > 4:
        got = ast.unparse(call.args[0] if call.args else dst)
        want = "GlobalTensor (MatmulType c is in TPosition.GM" if c_gm else \
            "LocalTensor (MatmulType c is in TPosition.VECCALC/VECIN"
        raise rw.err(call, f"{api}: tensor must be a {want}; optional_tensor is not "
                           f"supported), got tensor={got}")
    atomic = _arg(rw, call, 1, ("en_atomic",), ast.Constant(0))
    check_atomic = _stmt("_ADV.mm_check_get_c_atomic(_N_e)", e=atomic)
    if c_gm:
        seq = _arg(rw, call, 2, ("en_sequential_write",), ast.Constant(False))
        helper, _ = rw.helper(mm_get_tensor_c_gm, (OTHER, OTHER, OTHER, T, OTHER, OTHER))
        rw.gen.require_import(kfclower.KFC_IMPORT)
        return [check_atomic, _stmt(f"{name}__d = _N_d", d=dst), _stmt(f"{name}__sq = _N_s", s=seq),
                _stmt(f"_ADV.mm_check_get_c_gm({name}, {name}__ty[2][2], {name}__d)")] + \
            kfclower.client(name, 4, api, [
                _stmt(f"{helper}(_ctx, {name}__q, {name}__t, {name}, {name}__d, "
                      f"{name}__ty[0][2], bool({name}__sq))")], f"{name}__d",
                seq=f"bool({name}__sq)")
    helper, _ = rw.helper(mm_get_tensor_c, (OTHER, OTHER, OTHER, GA, T, OTHER))
    rw.gen.require_import(kfclower.KFC_IMPORT)
    local = _stmt(f"if _KFC.role(_ctx) == 1:\n    {kfclower.ws_to_local(rw, name, '_N_d')}\n"
                  f"else:\n    {helper}(_ctx, {name}__q, {name}__t, {name}, "
                  f"_ADV.ws_as({name}__ws, _N_d), _N_d, {name}__ty[0][2])", d=dst)
    return [check_atomic,
            _stmt(f"_ADV.mm_check_get_c({name}, {name}__t, {name}__ty[2][2], "
                  f"_ADV.ws_as({name}__ws, _N_d), _N_d, _N_d.size)", d=dst),
            _stmt(f"_KFC.check_not_server(_ctx, {api!r})"), local]


def _new_tiling(rw, call):
    """asc.adv.TCubeTiling(f=v, ...) in a kernel: a record with every other field 0."""
    vals = keyword_fields(rw, call, "TCubeTiling", FIELDS, "snake_case, e.g. single_core_m")
    rw.gen.require_import(_ADV_IMPORT)
    return ast.Call(func=_expr("_ADV.tiling_new"), args=[ast.Tuple(elts=vals, ctx=ast.Load())],
                    keywords=[])


def _tiling_write(rw, node):
    """`tiling.f = v` (f a TCubeTiling field): the record is rebuilt with f = v."""
    t = node.targets[0]
    if not (isinstance(t.value, ast.Name) and t.attr in INDEX and
            rw.kind(t.value) == OTHER and t.value.id in rw.kinds):
        return None
    rw.gen.require_import(_ADV_IMPORT)
    return [_stmt(f"{t.value.id} = _ADV.tiling_set({t.value.id}, {INDEX[t.attr]}, _N_v)",
                  v=rw.visit(node.value))]


# ---- asc.adv.quant (quant.py): a run-time check, then the kernel-language helper ---------------
_QUANT_ARGS = ("dst", "src", "scale", "offset", "count", "temp_buffer", "reuse_source", "config")
_QCFG_ARGS = ("calc_count", "offset_count", "scale_count", "work_local_size")


def _quant_config(rw, call):
    """asc.adv.QuantConfig(...) -> (calc_count, offset_count, scale_count, work_local_size)."""
    b = _bind(rw, call, "asc.adv.QuantConfig", _QCFG_ARGS, 0)
    for k in ("offset_count", "scale_count"):
        if k in b and not (isinstance(b[k], ast.Constant) and b[k].value == 0):
            raise rw.err(call, f"asc.adv.QuantConfig: {k} must be 0 (the per-channel forms are "
                               f"not supported), got {ast.unparse(b[k])}")
    return ast.Tuple(elts=[rw.visit(b[k]) if k in b else ast.Constant(0) for k in _QCFG_ARGS],
                     ctx=ast.Load())


def _quant(rw, call):
    b = _bind(rw, call, "asc.adv.quant", _QUANT_ARGS, 4)
    if b.get("temp_buffer") is None:
        raise rw.err(call, "asc.adv.quant: temp_buffer must be given (the form whose temporary "
                           "space the framework reserves is not supported)")
    args = {k: rw.visit(b[k]) for k in ("dst", "src", "scale", "offset", "temp_buffer")}
    args["count"] = rw.visit(b["count"]) if "count" in b else ast.Constant(-1)
    cfg = b.get("config")
    args["cfg"] = rw.visit(cfg) if cfg is not None and not (
        isinstance(cfg, ast.Constant) and cfg.value is None) else _expr("(0, 0, 0, 0)")
    rw.gen.require_import(_ADV_IMPORT)
    helper, _ = rw.helper(quant_per_tensor, (T, T, T, OTHER, OTHER, OTHER, OTHER, OTHER))
    # per call site: two quant calls may take tensors of different dtypes
    names = {k: f"_aq{call.lineno}_{call.col_offset}_{k}" for k in args}
    out = [_stmt(f"{names[k]} = _N_v", v=v) for k, v in args.items()]
    n = names
    out.append(_stmt(f"_ADV.quant_check({n['dst']}.itemsize, {n['src']}.itemsize, "
                     f"{n['dst']}.size, {n['src']}.size, "
                     f"{n['temp_buffer']}.size * {n['temp_buffer']}.itemsize, {n['count']}, "
                     f"{n['cfg']}[0], {n['cfg']}[3])"))
    out.append(_stmt(f"{helper}(_ctx, {n['dst']}, {n['src']}, {n['temp_buffer']}, {n['scale']}, "
                     f"{n['offset']}, {n['count']}, {n['cfg']}[0], {n['cfg']}[3])"))
    return out
