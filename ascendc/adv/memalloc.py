"""`asc.LocalMemAllocator` (pyasc core/memory_allocator.py; Ascend C's LocalMemAllocator<hard>):
static-tensor programming without TPipe / TQue. An allocator hands out consecutive regions of
one local memory (`hard`: Hardware.UB by default, or L1, L0A, L0B, L0C, BIAS) from byte 0:
`alloc(pos, data_type, tile_size)` is `asc.LocalTensor(data_type, pos, cur_addr, tile_size)`
(pos must lie in that memory), and moves `cur_addr` past it, rounded up to 32 bytes;
`get_cur_addr()` is the next free byte. Running out of the memory is the LocalTensor
constructor's fault ("addr + tile_size * sizeof must fit ..."). As in Ascend C, it must not be
mixed with a TPipe (nothing stops the TPipe's buffers overlapping its tensors) and ordering the
pipes is the kernel's own set_flag / wait_flag.

Compiled kernels: the allocator is an int variable (its cur_addr); `t = a.alloc(...)` becomes the
LocalTensor constructor and `a = a + <rounded bytes>` (`assign` below, an Extension hook).
"""
from __future__ import annotations

import ast

from .. import language as asc
from ..lang import dtypes as D
from ..lang.enums import Hardware
from ..lang.positions import POS_LEVEL

KIND = "LMA"
KINDS = frozenset({KIND})
_HW_LEVEL = {Hardware.UB: 0, Hardware.L1: 1, Hardware.L0A: 2, Hardware.L0B: 3,
             Hardware.L0C: 4, Hardware.BIAS: 5}
_API = "asc.LocalMemAllocator"


def _level(hard) -> int:
    try:
        return _HW_LEVEL[Hardware(int(hard))]
    except (KeyError, ValueError):
        raise ValueError(f"{_API}: hard must be one of Hardware.UB, L1, L0A, L0B, L0C, BIAS, "
                         f"got hard={hard!r}") from None


def _check_pos(level, pos) -> None:
    if int(pos) < 0 or int(pos) >= len(POS_LEVEL) or POS_LEVEL[int(pos)] != level:
        raise ValueError(f"{_API}.alloc: pos must be a TPosition in the allocator's memory "
                         f"({_level_name(level)}), got pos={asc.TPosition(int(pos)).name}")


def _level_name(level) -> str:
    return next(h.name for h, lv in _HW_LEVEL.items() if lv == level)


class LocalMemAllocator:
    """`asc.LocalMemAllocator(hard=asc.Hardware.UB)` in an interpreted kernel."""

    def __init__(self, hard=Hardware.UB):
        self.level = _level(hard)
        self.cur_addr = 0

    def get_cur_addr(self) -> int:
        return self.cur_addr

    def alloc(self, pos, data_type, tile_size):
        _check_pos(self.level, pos)
        t = asc.LocalTensor(data_type, pos, self.cur_addr, int(tile_size))
        self.cur_addr += (int(tile_size) * D.sizeof(data_type) + 31) // 32 * 32
        return t


# ---- compiled kernels (an Extension's lowering: assign / statement / expression hooks) --------
def _is_ctor(rw, node):
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or \
            node.func.attr != "LocalMemAllocator" or not isinstance(node.func.value, ast.Name):
        return False
    v = rw.global_value(node.func.value.id)
    return getattr(v, "__kernel_language__", False)


def _const(rw, node, what):
    try:
        chain = []
        n = node
        while isinstance(n, ast.Attribute):
            chain.append(n.attr)
            n = n.value
        if isinstance(node, ast.Constant):
            return node.value
        return rw.resolve([n.id] + chain[::-1])
    except (KeyError, AttributeError):
        raise rw.err(node, f"{_API}: {what} must be a compile-time constant (a template "
                           f"argument in Ascend C), got {ast.unparse(node)}") from None


def _state(rw):
    return rw._ext_state.setdefault(KIND, {})


def assign(rw, node):
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return None
    name, v = node.targets[0].id, node.value
    if _is_ctor(rw, v):
        hard = v.args[0] if v.args else next((k.value for k in v.keywords if k.arg == "hard"),
                                             None)
        try:
            level = _level(_const(rw, hard, "hard") if hard is not None else Hardware.UB)
        except ValueError as e:
            raise rw.err(v, str(e)) from None
        rw.kinds[name] = KIND
        _state(rw)[name] = level
        return [ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                             value=ast.Constant(0)), node)]
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
            isinstance(v.func.value, ast.Name) and rw.kinds.get(v.func.value.id) == KIND:
        return _alloc(rw, node, name, v, v.func.value.id)
    return None


def _alloc(rw, node, target, call, alloc):
    if call.func.attr != "alloc":
        return None
    names = ("pos", "data_type", "tile_size")
    b = dict(zip(names, call.args))
    b.update({k.arg: k.value for k in call.keywords})
    missing = [n for n in names if n not in b]
    if missing:
        raise rw.err(call, f"{_API}.alloc: arguments must be (pos, data_type, tile_size), got "
                           f"none for {', '.join(missing)}")
    pos = _const(rw, b["pos"], "pos")
    try:
        _check_pos(_state(rw)[alloc], pos)
    except ValueError as e:
        raise rw.err(call, str(e)) from None
    ctor = ast.Call(func=ast.Attribute(value=ast.Name(id=_asc_name(rw), ctx=ast.Load()),
                                       attr="LocalTensor", ctx=ast.Load()),
        args=[b["data_type"], b["pos"], ast.Name(id=alloc, ctx=ast.Load()), b["tile_size"]],
        keywords=[])
    ast.copy_location(ctor, call)
    ast.fix_missing_locations(ctor)
    made = ast.copy_location(ast.Assign(targets=[ast.Name(id=target, ctx=ast.Store())],
                                        value=ctor), node)
    out = rw.visit_Assign(made)
    size = ast.parse(f"{alloc} = {alloc} + (int(_N_n) * _D.sizeof(_N_dt) + 31) // 32 * 32").body[0]

    class Sub(ast.NodeTransformer):
        def visit_Name(self, n):
            return {"_N_n": rw.visit(b["tile_size"]),
                    "_N_dt": rw.visit(b["data_type"])}.get(n.id, n)
    size = ast.fix_missing_locations(ast.copy_location(Sub().visit(size), node))
    return (out if isinstance(out, list) else [out]) + [size]


def _asc_name(rw):
    """A global name of the kernel bound to the kernel language (`asc`)."""
    for n, v in rw.globs.items():
        if getattr(v, "__kernel_language__", False) and hasattr(v, "LocalTensor"):
            return n
    raise KeyError("asc")


def statement(rw, node):
    return None


def expression(rw, call, chain):
    raise rw.err(call, f"asc.{'.'.join(chain)} is not supported in compiled kernels")


def method_value(rw, call, kind, m):
    if m == "get_cur_addr":
        return ast.copy_location(ast.Name(id=call.func.value.id, ctx=ast.Load()), call)
    raise rw.err(call, f"{_API}.{m}: must be get_cur_addr() as a value, or "
                       f"`t = allocator.alloc(pos, data_type, tile_size)` as an assignment")


__all__ = ["LocalMemAllocator", "assign", "statement", "expression", "method_value", "KINDS"]
