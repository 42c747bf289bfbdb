"""Which cores a kernel synchronises, read from its AST (and the @asc.jit helpers it calls): the
launcher runs a kernel using cross-core or inter-block flags with its cores at once
(rt.mixlaunch), and all of its groups at once only when it synchronises across groups.

Across groups: `sync_all`, `ib_set` / `ib_wait`, and `cross_core_set_flag` with mode 0 (or a
mode that is not a literal 1 or 2). Modes 1 and 2 stay inside an AI Core group.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from ..lang.kernel import is_kernel_function
from ..lang.surface import ACROSS_GROUP_OPS, CROSS_CORE_OPS, MODE_SCOPED_SET
from .frontend import attr_chain, is_asc_module

__all__ = ["SyncScope", "sync_scope"]



class SyncScope:
    """`cross_core`: the kernel calls cross-core / inter-block flags; `across_groups`: it
    synchronises between AI Core groups (or blocks)."""
    __slots__ = ("cross_core", "across_groups")

    def __init__(self, cross_core=False, across_groups=False):
        self.cross_core, self.across_groups = cross_core, across_groups


def _mode_literal(call: ast.Call):
    node = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode_id"), None)
    return node.value if isinstance(node, ast.Constant) else None


def sync_scope(fn, _seen=None) -> SyncScope:
    seen = set() if _seen is None else _seen
    out = SyncScope()
    if fn in seen:
        return out
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return out
    globs = dict(getattr(fn, "__globals__", {}))
    if getattr(fn, "__closure__", None):
        globs.update(inspect.getclosurevars(fn).nonlocals)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        chain = attr_chain(node.func) if isinstance(node.func, ast.Attribute) else None
        if chain and is_asc_module(globs.get(chain[0])):
            name = ".".join(chain[1:])
            if name in CROSS_CORE_OPS:
                out.cross_core = True
            if name in ACROSS_GROUP_OPS or (name == MODE_SCOPED_SET and
                                   _mode_literal(node) not in (1, 2)):
                out.across_groups = True
        elif isinstance(node.func, ast.Name):
            g = globs.get(node.func.id)
            if is_kernel_function(g):
                sub = sync_scope(g.fn, seen)
                out.cross_core |= sub.cross_core
                out.across_groups |= sub.across_groups
    return out
