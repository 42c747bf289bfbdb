"""Which cores a kernel synchronises, read from its AST (and the @asc.jit helpers it calls): the
launcher runs a kernel using cross-core or inter-block flags with its cores at once
(rt.mixlaunch), and all of its groups at once only when it synchronises across groups.

Across groups: `sync_all`, `ib_set` / `ib_wait`, and `cross_core_set_flag` with mode 0 (or a
mode that is not a literal 1 or 2, or a global name holding 1 or 2: Numba freezes a global int
at compile time as it does a literal). Modes 1 and 2 stay inside an AI Core group.
"""
from __future__ import annotations

import ast
import inspect

from ..lang.kernel import is_kernel_function, source_text
from ..lang.surface import ACROSS_GROUP_OPS, CROSS_CORE_OPS, MODE_SCOPED_SET
from .frontend import attr_chain, is_asc_module

__all__ = ["SyncScope", "sync_scope"]



class SyncScope:
    """`cross_core`: the kernel calls cross-core / inter-block flags; `across_groups`: it
    synchronises between AI Core groups (or blocks)."""
    __slots__ = ("cross_core", "across_groups")

    def __init__(self, cross_core=False, across_groups=False):
        self.cross_core, self.across_groups = cross_core, across_groups


def _local_names(tree) -> set:
    """Names the function binds itself (arguments, assignments, loop targets, imports...)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def _mode_literal(call: ast.Call, globs):
    node = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode_id"), None)
    if isinstance(node, ast.Constant):
        return node.value
    chain = (attr_chain(node) if isinstance(node, ast.Attribute) else
             [node.id] if isinstance(node, ast.Name) else None)
    if not chain or chain[0] not in globs:      # a local or an argument: any mode
        return None
    v = globs[chain[0]]
    for a in chain[1:]:
        v = getattr(v, a, None)
    return v if type(v) is int else None


def sync_scope(fn, _seen=None) -> SyncScope:
    seen = set() if _seen is None else _seen
    out = SyncScope()
    if fn in seen:
        return out
    seen.add(fn)
    try:
        tree = ast.parse(source_text(fn))
    except (OSError, TypeError, SyntaxError):
        return out
    globs = dict(getattr(fn, "__globals__", {}))
    if getattr(fn, "__closure__", None):
        globs.update(inspect.getclosurevars(fn).nonlocals)
    local = _local_names(tree)          # a name the function binds is not the global's value
    consts = {k: v for k, v in globs.items() if k not in local}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        chain = attr_chain(node.func) if isinstance(node.func, ast.Attribute) else None
        if chain and is_asc_module(globs.get(chain[0])):
            name = ".".join(chain[1:])
            if name in CROSS_CORE_OPS:
                out.cross_core = True
            if name in ACROSS_GROUP_OPS or (name == MODE_SCOPED_SET and
                                   _mode_literal(node, consts) not in (1, 2)):
                out.across_groups = True
        elif isinstance(node.func, ast.Name):
            g = globs.get(node.func.id)
            if is_kernel_function(g):
                sub = sync_scope(g.fn, seen)
                out.cross_core |= sub.cross_core
                out.across_groups |= sub.across_groups
    return out
