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

from ..lang import api, surface as S
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
        return call(f"_P.{form.prim}", [CTX] + vals)
    h = S.HANDLES.get(name)
    if h is not None and h.ctor is not None:
        if h.ctor.prim is None:
            raise rw.err(node, f"asc.{name}() must be assigned to a variable and bound with "
                               f"set_global_buffer")
        form, vals = _bound_values(rw, node, f"asc.{name}", (h.ctor,))
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
                           f"the README's list of supported APIs)")
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
    return call(f"_P.{form.prim}", [CTX] + ([obj] if row.receiver else []) + vals)


def rebinding_statement(rw, stmt, row, target):
    """`t.set_global_buffer(...)` as a statement: `t = _P.gt_bind(_ctx, ...)`."""
    if not isinstance(target, ast.Name):
        raise rw.err(stmt.value, f"{row.name} must be called on a {row.cls} variable")
    form, vals = _bound_values(rw, stmt.value, row.api, row.forms)
    rw.kinds[target.id] = S.HANDLES[row.cls].kind
    return ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())],
                      value=call(f"_P.{form.prim}", [CTX] + vals), lineno=stmt.lineno)


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
