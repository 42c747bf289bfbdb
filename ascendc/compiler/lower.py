"""Lowering of kernel-language calls to primitive calls, derived from `ascendc/lang/surface.py`.

`asc.<fn>(...)`, `asc.<Handle>(...)`, `asc.<Struct>(...)` and `<handle>.<method>(...)` become
``_P.<prim>(_ctx, [receiver,] *values)`` with the values in the selected form's order; the kind
of the result (GA, T, Q, PIPE, OTHER) is read from the row too. Nothing here names an op: adding
a row to the surface table is all it takes to compile it.
"""
from __future__ import annotations

import ast
import re

import numpy as np

from ..lang import api, dtypes as D, surface as S
from ..lang.prims.autotensor import site_id
from .frontend import attr_chain

OTHER = S.OTHER
CTX = ast.Name(id="_ctx", ctx=ast.Load())


def call(func: str, args, keywords=()):
    return ast.Call(func=ast.parse(func, mode="eval").body, args=list(args),
                    keywords=list(keywords))


def const(v):
    if isinstance(v, tuple):
        return ast.Tuple(elts=[const(x) for x in v], ctx=ast.Load())
    if isinstance(v, np.generic):
        v = v.item()
    return ast.Constant(v)


_MEM = ast.parse("_ctx[_C.MEM]", mode="eval").body    # a side-effect-free stand-in tensor
_WRITES = ("dst", "dst_list")


def _simple(v) -> bool:
    """Is lowered expression `v` free of side effects (a name, a constant, a view of one)?"""
    if isinstance(v, (ast.Name, ast.Constant)):
        return True
    if isinstance(v, ast.BinOp):
        return _simple(v.left) and _simple(v.right)
    if isinstance(v, ast.Call) and ast.unparse(v.func) == f"_P.{operator_prim(S.T, '[]')}":
        return all(_simple(a) for a in v.args[1:])
    return False


def auto_sync_values(rw, node, form, vals, pipe):
    """A kernel with LocalTensorAuto (insert_sync): each tensor value of a call passes through
    `_PA.auto_use(_ctx, pipe, t, other, write)` (prims/autotensor.py), which adds the flags
    between the pipe that last used a LocalTensorAuto region and this call's; `dst` is written,
    the others read; a data move's pipe is found from the levels of `t` and `other`."""
    kw = {k.arg: k.value for k in node.keywords}
    nodes = form.order(list(node.args), kw)
    names = [p for p in form.params if p not in form.ignored]
    tens = [i for i, n in enumerate(nodes) if isinstance(n, ast.AST) and rw.kind(n) == S.T]
    if not tens:
        return vals
    p = -1 if pipe == S.BY_DIRECTION else int(pipe)
    out = list(vals)
    for i in tens:
        others = [j for j in tens if j != i]
        other = vals[others[0]] if others and _simple(vals[others[0]]) else _MEM
        out[i] = call("_PA.auto_use", [CTX, const(p), vals[i], other,
                                       const(int(names[i] in _WRITES))])
    return out


def kind_of_result(returns: str | None, receiver_kind: str = OTHER) -> str:
    if returns == "self":
        return receiver_kind
    h = S.HANDLES.get(returns)
    return h.kind if h is not None else OTHER


def _bound_values(rw, node, api, forms):
    try:
        form = S.bind(api, forms, len(node.args), [k.arg for k in node.keywords])
    except TypeError as e:
        raise rw.err(node, str(e)) from None
    args = [rw.visit(a) for a in node.args]
    kw = {k.arg: rw.visit(k.value) for k in node.keywords}
    return form, [v if isinstance(v, ast.AST) else const(v) for v in form.order(args, kw)]


def function_call(rw, node, name):
    """`asc.<name>(...)` for a free function, handle constructor or params struct; None if the
    table has no such name."""
    row = S.FUNCTIONS.get(name)
    if row is not None:
        if row.special == "print_format":
            return printf(rw, node, [rw.visit(a) for a in node.args])
        if row.special == "loop":
            return call("range", [rw.visit(a) for a in node.args])
        if row.special == "ceil_div":
            _, (x, y) = _bound_values(rw, node, f"asc.{name}", row.forms)
            return ceil_div(x, y)
        if row.special == "platform_constant":
            return platform_constant(rw, node, name, row)
        form, vals = _bound_values(rw, node, f"asc.{name}", row.forms)
        if rw.gen.auto_sync:
            vals = auto_sync_values(rw, node, form, vals, row.pipe)
        return call(f"_P.{form.prim}", [CTX] + vals)
    h = S.HANDLES.get(name)
    if h is not None and h.kind == S.DT:
        return dtype_by_name(rw, node, name)
    if h is not None and h.ctor is not None:
        if h.ctor.prim is None:
            raise rw.err(node, f"asc.{name}() must be assigned to a variable and bound with "
                               f"set_global_buffer")
        form, vals = _bound_values(rw, node, f"asc.{name}", (h.ctor,))
        if h.site and not any(k.arg == h.site for k in node.keywords):
            # the allocation site (prims/autotensor.py): file:line:col of the call
            line = rw.src.first_line + node.lineno - 1
            vals[[p for p in form.params if p not in form.ignored].index(h.site)] = \
                const(site_id(rw.src.file, line, node.col_offset))
        return call(f"_P.{form.prim}", [CTX] + vals)
    cls = S.STRUCTS.get(name)
    if cls is not None:
        args = [rw.visit(a) for a in node.args]
        kw = {k.arg: rw.visit(k.value) for k in node.keywords}
        unknown = set(kw) - set(cls._fields)
        if unknown or len(args) > len(cls._fields):
            raise rw.err(node, f"asc.{name}: fields must be {cls._fields}, got "
                               f"{len(args)} positional and {sorted(kw)}")
        vals = list(args)
        for fld in cls._fields[len(args):]:
            vals.append(kw[fld] if fld in kw else const(cls._field_defaults[fld]))
        return call(f"_PR.{name}", vals)
    return None


def dtype_by_name(rw, node, name):
    """`asc.DataType("int32")`: the dtype of that name, a compile-time constant."""
    arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
    if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
        raise rw.err(node, f"asc.{name}(name) must name a dtype with a string literal, got "
                           f"{ast.unparse(node)}")
    try:
        dt = D.DataType(arg.value)
    except TypeError as e:
        raise rw.err(node, str(e)) from None
    return ast.Name(id=rw.gen.dtype_name(dt), ctx=ast.Load())


def function_kind(name: str) -> str:
    row = S.FUNCTIONS.get(name)
    if row is not None:
        return kind_of_result(row.returns)
    h = S.HANDLES.get(name)
    return h.kind if h is not None else OTHER


def method_row(rw, node, kind, m):
    """The surface row of method `m` on a value of compiler kind `kind` (None: not a handle
    method); an error for a method a known handle does not have."""
    row = S.method_for_kind(kind, m)
    if row is None and kind in {h.kind for h in S.HANDLES.values()} and kind != S.DT:
        classes = sorted(h.name for h in S.HANDLES.values() if h.kind == kind)
        raise rw.err(node, f"{'/'.join(classes)}.{m} is not part of the kernel language (see "
                           f"docs/pyasc-surface.md for the supported APIs)")
    return row


def method_call(rw, node, row, obj):
    """`obj.<row.name>(...)` -> the primitive call (or an assignment for rebinding methods)."""
    if row.interpret_only:
        raise rw.err(node, f"{row.api}() is a debugging aid of interpret mode; compiled kernels "
                           f"do not support it (use asc.dump_tensor or asc.printf)")
    if row.native:
        if row.compiled:
            return call(row.compiled, [obj])
        raise rw.err(node, f"{row.api} is an attribute, not a method")
    if row.rebinds:
        raise rw.err(node, f"{row.api} must be a statement of its own")
    form, vals = _bound_values(rw, node, row.api, row.forms)
    if row.touches and rw.gen.auto_sync:     # LocalTensorAuto: the flags insert_sync adds
        obj = call("_PA.auto_use", [CTX, const(int(row.pipe)), obj, _MEM,
                                    const(int(row.touches == "w"))])
    return call(f"_P.{form.prim}", [CTX] + ([obj] if row.receiver else []) + vals)


def rebinding_statement(rw, stmt, row, target):
    """`t.set_global_buffer(...)` as a statement: `t = _P.gt_bind(_ctx, ...)`."""
    if not isinstance(target, ast.Name):
        raise rw.err(stmt.value, f"{row.name} must be called on a {row.cls} variable")
    form, vals = _bound_values(rw, stmt.value, row.api, row.forms)
    rw.kinds[target.id] = S.HANDLES[row.cls].kind
    recv = [ast.Name(id=target.id, ctx=ast.Load())] if row.receiver else []
    return ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())],
                      value=call(f"_P.{form.prim}", [CTX] + recv + vals), lineno=stmt.lineno)


def operator_prim(kind: str, op: str) -> str:
    """The primitive of Python operator `op` ("+", "[]") on a value of compiler kind `kind`."""
    return S.OPERATORS[(kind, op)].forms[0].prim


_CONVERSION = re.compile(r"%%|%[-+ #0]*\d*(?:\.\d+)?(?:ll|l|h)?[dioufFeEgGxXcsp]")


def format_pieces(fmt: str) -> list:
    """The literal text around each conversion of C format `fmt` (`%%` is a literal `%`): one
    more piece than conversions."""
    parts, cur, pos = [], "", 0
    for m in _CONVERSION.finditer(fmt):
        cur += fmt[pos:m.start()]
        if m.group() == "%%":
            cur += "%"
        else:
            parts.append(cur)
            cur = ""
        pos = m.end()
    return parts + [cur + fmt[pos:]]


def printf(rw, node, args):
    """asc.printf(fmt, *args) -> one `print(str)` (Numba's print has no sep=)."""
    if not args or not isinstance(args[0], ast.Constant) or not isinstance(args[0].value, str):
        raise rw.err(node, "asc.printf: the format must be a string literal")
    parts = format_pieces(args[0].value)
    if len(parts) - 1 != len(args) - 1:
        raise rw.err(node, f"asc.printf: the format must have one conversion per argument, "
                           f"got {len(parts) - 1} conversions and {len(args) - 1} arguments")
    out = []
    for i, p in enumerate(parts):
        if p:
            out.append(ast.Constant(p.rstrip("\n") if i == len(parts) - 1 else p))
        if i < len(args) - 1:
            out.append(args[i + 1])
    line = None
    for piece in out:
        if not isinstance(piece, ast.Constant):
            piece = ast.Call(func=ast.Name(id="str", ctx=ast.Load()), args=[piece], keywords=[])
        line = piece if line is None else ast.BinOp(left=line, op=ast.Add(), right=piece)
    return ast.Call(func=ast.Name(id="print", ctx=ast.Load()), args=[line or ast.Constant("")],
                    keywords=[])


def ceil_div(x, y):
    """Integer division rounding up (arith.ceildivsi): -((-x) // y)."""
    neg = ast.BinOp(left=ast.UnaryOp(op=ast.USub(), operand=x), op=ast.FloorDiv(), right=y)
    return ast.UnaryOp(op=ast.USub(), operand=neg)


def platform_constant(rw, node, name, row):
    """asc.property(asc.TOTAL_L1_SIZE): the constant's value on the launch's SoC, inlined."""
    try:
        S.bind(f"asc.{name}", row.forms, len(node.args), [k.arg for k in node.keywords])
    except TypeError as e:
        raise rw.err(node, str(e)) from None
    arg = (list(node.args) + [k.value for k in node.keywords])[0]
    chain = attr_chain(arg)
    try:
        prop = rw.resolve(chain) if chain else None
    except (KeyError, AttributeError):
        prop = None
    if not isinstance(prop, api.Property) or rw.gen.soc is None:
        raise rw.err(node, f"asc.{name}: prop must be a platform constant known at compile "
                           f"time (asc.DEFAULT_C0_SIZE, asc.ONE_BLK_SIZE, asc.TOTAL_L1_SIZE, "
                           f"asc.TOTAL_L0C_SIZE), got {ast.unparse(arg)}")
    return ast.Constant(api.property_value(prop, rw.gen.soc))
