"""Compiling the Matmul client/server pair of a MIX kernel (kfc.py) into a kernel's code.

lowering.py calls these while rewriting a Matmul's statements; every piece is a run-time branch
on the core's part (`_KFC.role(_ctx)`: 1 client, 2 server, 0 neither), so one binary serves a
MIX launch and any other. For `mm`:
  mm__pz    empty GM arrays of A's, B's, C's and the bias's dtypes (carried by the MatmulTypes,
            lowering.matmul_type): the server rebuilds the GM operands of a message with them
  at register_matmul, on the server: the loop of kfc.py's module doc, then `return` (the AIC
            leaves the function that registered the Matmul); registered without a tiling, the
            Matmul is initialised by the client's init(tiling) (an INIT message)
  each call (iterate_all, iterate_batch, iterate, get_tensor_c, end), on a client: the message.
"""
from __future__ import annotations

import ast

from . import checks as C
from . import kfc as K
from .kfc import kfc_tile_to_ws, kfc_ws_to_local
from .mmkernel import (mm_get_tensor_c_gm, mm_iterate, mm_iterate_all, mm_iterate_batch,
                       mm_register)

KFC_IMPORT = "from ascendc.adv import kfc as _KFC"
_NOPLAN = "(0, 0, 0, 0, 0, 0)"


def _parse(src):
    return ast.fix_missing_locations(ast.parse(src)).body


def protos(rw, name, has_bias):
    """`mm__pz`: the empty GM arrays of A's, B's, C's and the bias's dtypes, from the Matmul's
    types (lowering.matmul_type's 6th element)."""
    rw.gen.require_import(KFC_IMPORT)
    bias = f"{name}__ty[3][5]" if has_bias else f"_ADV.no_bias({name}__ty[0][5])"
    return _parse(f"{name}__pz = ({name}__ty[0][5], {name}__ty[1][5], {name}__ty[2][5], {bias})")


def queues(name, make):
    """`mm__q`: the cube buffers from the pipe (`make`, a statement), none on a client."""
    head = _parse(f"if _KFC.role(_ctx) == {K.CLIENT}:\n    {name}__q = _KFC.no_queues(_ctx)\n"
                  f"else:\n    pass")[0]
    head.orelse = [make]
    return [head]


def server(rw, name, mm):
    """The server loop at register_matmul (module doc)."""
    from ..lang.surface import OTHER, PIPE, T
    h_reg, _ = rw.helper(mm_register, (PIPE, OTHER, OTHER, OTHER))
    h_all, _ = rw.helper(mm_iterate_all, (OTHER, OTHER, OTHER, T, T, T, T))
    h_batch, _ = rw.helper(mm_iterate_batch, (OTHER, OTHER, OTHER, T, T, T, T, OTHER))
    h_it, _ = rw.helper(mm_iterate, (OTHER, OTHER, OTHER, T, T, T))
    h_gc, _ = rw.helper(mm_get_tensor_c_gm, (OTHER, OTHER, OTHER, T, OTHER, OTHER))
    n = name
    v = {"a": f"_KFC.operand({n}__m, {K.W_A}, {n}__pz[0])",
         "b": f"_KFC.operand({n}__m, {K.W_B}, {n}__pz[1])",
         "bias": f"_KFC.operand({n}__m, {K.W_BIAS}, {n}__pz[3])",
         "c": f"_KFC.operand({n}__m, {K.W_C}, {n}__pz[2])"}
    args = f"_ctx, {n}__q, {n}__t, {n}__s, {v['a']}, {v['b']}, {v['bias']}"
    if "ws" in mm["seen"]:
        from ..lang.surface import GA
        h_ws, _ = rw.helper(kfc_tile_to_ws, (OTHER, OTHER, OTHER, GA, OTHER, OTHER))
        to_ws = (f"            if {n}__more and {n}__m[{2 + K.W_LOCAL}] == 1:\n"
                 f"                {h_ws}(_ctx, {n}__q, {n}__t, {n}__s, "
                 f"_ADV.ws_as({n}__ws, {n}__pz[2]), {n}__m[{2 + K.W_BLK}], {n}__ty[0][2])\n")
    else:
        to_ws = ""
    src = (
        f"if _KFC.role(_ctx) == {K.SERVER}:\n"
        f"    while True:\n"
        f"        {n}__m = _KFC.server_recv(_ctx)\n"
        f"        if {n}__m[0] < 0:\n"
        f"            break\n"
        f"        {n}__s = _KFC.state_of({n}__m)\n"
        f"        {n}__op = {n}__m[{2 + K.W_OP}]\n"
        f"        {n}__v = 0\n"
        f"        if {n}__op == {K.ITERATE_ALL}:\n"
        f"            {h_all}({args}, {v['c']})\n"
        f"        elif {n}__op == {K.ITERATE_BATCH}:\n"
        f"            {h_batch}({args}, {v['c']}, _KFC.plan_of({n}__m))\n"
        f"        elif {n}__op == {K.ITERATE}:\n"
        f"            {n}__more = {h_it}({args})\n"
        f"{to_ws}"
        f"            {n}__v = {n}__s[{C.S_ITER}] if {n}__more else -1\n"
        f"        elif {n}__op == {K.GET_C_GM}:\n"
        f"            {h_gc}(_ctx, {n}__q, {n}__t, {n}__s, {v['c']}, {n}__ty[0][2], "
        f"{n}__m[{2 + K.W_SEQ}] == 1)\n"
        f"        elif {n}__op == {K.INIT}:\n"
        f"            {n}__t = _ADV.tiling_norm(_ADV.tiling_new(_KFC.tiling_of({n}__m)))\n"
        f"            _ADV.mm_check_tiling({n}__t, {n}__ty[0][2], {n}__ty[3][0] >= 0)\n"
        f"            {n}__q = {h_reg}(_ctx, {n}__pipe, {n}__t, {n}__ty[0][2], "
        f"{n}__ty[3][0] >= 0)\n"
        f"        if {n}__op != {K.END}:\n"
        f"            _KFC.server_reply(_ctx, {n}__m[0], {n}__v)\n"
        f"    return\n")
    return _parse(src)


def lazy(name):
    """register_matmul without a tiling: placeholders until the INIT message (`server`)."""
    return _parse(f"if _KFC.role(_ctx) == {K.SERVER}:\n"
                  f"    {name}__t = _ADV.tiling_new(_KFC.no_tiling())\n"
                  f"    {name}__q = _KFC.no_queues(_ctx)")


def init_message(name):
    """`mm.init(tiling)` on a client of a Matmul registered without a tiling: the INIT message."""
    return _parse(f"if _KFC.role(_ctx) == {K.CLIENT}:\n"
                  f"    _KFC.client_call(_ctx, _KFC.init_message(_ctx, {name}, {name}__t), True)")


def client(name, op, api, run, c=None, bias=None, seq="False", plan=_NOPLAN, answer=True):
    """A Matmul call on a client (a message) or elsewhere (`run`, statements; an error on the
    server)."""
    a = f"{name}__a"
    b = f"{name}__b"
    c = c or a
    bias = bias or a
    head = _parse(f"_KFC.check_not_server(_ctx, {api!r})\n"
                  f"if _KFC.role(_ctx) == {K.CLIENT}:\n"
                  f"    _KFC.client_call(_ctx, _KFC.message(_ctx, {op}, {name}, {a}, {b}, "
                  f"{bias}, {c}, {seq}, False, {plan}), {answer})\n"
                  f"else:\n    pass")
    head[1].orelse = run
    return head


def end(name, seen):
    """`mm.end()`: a client posts its End message (no answer)."""
    a = f"{name}__a" if "a" in seen else name
    b = f"{name}__b" if "b" in seen else name
    return _parse(f"if _KFC.role(_ctx) == {K.CLIENT}:\n"
                  f"    _KFC.client_call(_ctx, _KFC.message(_ctx, {K.END}, {name}, {a}, {b}, "
                  f"{a}, {a}, False, False, {_NOPLAN}), False)")


def iterate_value(name, local, bias, run):
    """`mm.iterate()` as a value: the client's call, or `run` (an expression string)."""
    return (f"(_KFC.client_iterate(_ctx, {name}, {name}__a, {name}__b, {bias}, {local}) "
            f"if _KFC.role(_ctx) == {K.CLIENT} else {run})")


def ws_to_local(rw, name, dst):
    """get_tensor_c(local) on a client: its workspace slot -> dst (kfc_ws_to_local)."""
    from ..lang.surface import GA, OTHER, T
    h, _ = rw.helper(kfc_ws_to_local, (OTHER, GA, T))
    return f"{h}(_ctx, {name}__t, _ADV.ws_as({name}__ws, {dst}), {dst})"
