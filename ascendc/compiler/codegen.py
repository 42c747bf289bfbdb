"""Kernel AST -> Python source for Numba: one `@njit(nogil=True)` function per AI Core.

The rewrite is syntactic plus a light kind analysis (which names hold GM addresses, tensors,
queues). Tensors become numpy views (GM arguments or slices of the core's local memory), queues
become int64 records, and every `asc.<op>` becomes a call of its primitive with the core context
`_ctx` first. ConstExpr parameters and module-level constants are inlined as literals.
"""
from __future__ import annotations

import ast
import dis
import enum
import functools
import hashlib
import inspect
import os
import types as pytypes

import numpy as np

from ..lang import dtypes as D
from ..lang import surface as S
from ..lang.numba_link import prim_calls_enabled
from ..lang.kernel import is_kernel_function as _is_jit, source_text
from ..lang.trace import NCOL
from . import lower as L
from .frontend import KernelSource, attr_chain as _attr_chain, is_asc_module as _is_asc_module

GA, T, Q, PIPE, OTHER = S.GA, S.T, S.Q, S.PIPE, S.OTHER
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
BUILTINS = {"range", "min", "max", "int", "float", "len", "abs", "bool", "print", "round"}
_call, _const, CTX = L.call, L.const, L.CTX


@functools.lru_cache(maxsize=None)
def call_spreads_args(nargs: int) -> bool:
    """Whether CPython compiles a call with `nargs` positional arguments as `f(*args)`
    (CALL_FUNCTION_EX; 3.11 does above 30), which Numba's closure inliner rejects ("Calling a
    closure with *args is unsupported") while its typing of a call accepts it."""
    src = f"f({', '.join(f'a{i}' for i in range(nargs))})"
    return any(i.opname == "CALL_FUNCTION_EX"
               for i in dis.get_instructions(compile(src, "<call>", "eval")))


class Generator:
    """Generates the module for one specialisation of a kernel (and the helpers it calls)."""

    def __init__(self, soc=None):
        self.soc = soc      # the launch's SoC profile (asc.property constants), None: unknown
        self.functions: list[str] = []
        self.dtype_globals: dict[str, str] = {}
        self.helpers: dict[tuple, tuple[str, str]] = {}  # (fn, kinds) -> (name, return kind)
        self.imports: list[str] = []  # extra import lines that extensions' lowerings need
        self.source_lines: dict[tuple, int] = {}  # (file, line) -> id written to st.src_line
        # kernel functions compile as GLUE, calling the larger primitives (gluejit.py): the
        # module's `njit` is then glue_jit, Numba's njit marked GLUE
        self.glue = prim_calls_enabled()
        # the kernel uses LocalTensorAuto (insert_sync): calls pass their tensors through
        # _PA.auto_use (lower.auto_sync_values)
        self.auto_sync = False

    def line_id(self, file: str, line: int) -> int:
        """The id generated code stores in the core state before running kernel `file:line`
        (0 is "no line yet", as begin_block leaves it)."""
        return self.source_lines.setdefault((file, line), len(self.source_lines) + 1)

    def require_import(self, line: str) -> None:
        if line not in self.imports:
            self.imports.append(line)

    def dtype_name(self, dt: D.DataType) -> str:
        name = f"_dt_{dt.name}"
        self.dtype_globals[name] = dt.name
        return name

    def function(self, fn, gen_name, arg_kinds: dict, consts: dict, inline=False,
                 helper=None) -> str:
        """Generate `fn` as `gen_name`; helpers are inlined into their callers at the Numba IR
        level (`inline=True`): optimised once, in place, instead of once alone and again inside
        every caller (a FlashAttention split into helpers compiled ~1.5x slower without it)."""
        src = KernelSource(fn)
        src.check(helper=inline if helper is None else helper)
        src.fdef.args.defaults = []       # helpers: every call passes every argument
        globs = dict(fn.__globals__)
        if fn.__closure__:
            globs.update(inspect.getclosurevars(fn).nonlocals)
        tr = _Rewriter(self, src, globs, arg_kinds, consts)
        fdef = src.fdef
        fdef.name = gen_name
        params = [a for a in fdef.args.args if a.arg not in consts]
        for a in params:
            a.annotation = None
        fdef.args.args = [ast.arg(arg="_ctx")] + params
        body = tr.block(fdef.body)
        # the CORE_STATE record, read once per function: line markers are one store each
        head = ast.parse("_asc_state = _ctx[_C.STATE][0]").body[0]
        fdef.body = [head] + body if body else [ast.Pass()]
        fdef.returns = None
        ast.fix_missing_locations(fdef)
        deco = "@njit(nogil=True, cache=True, inline='always')" if inline else \
            "@njit(nogil=True, cache=True)"
        code = deco + "\n" + ast.unparse(fdef)
        self.functions.append(code)
        return tr.return_kind

    def helper(self, jf, kinds: tuple) -> tuple[str, str]:
        key = (jf.fn, kinds)
        if key not in self.helpers:
            name = f"_h{len(self.helpers)}_{jf.fn.__name__}"
            self.helpers[key] = (name, OTHER)
            params = KernelSource(jf.fn).fdef.args.args
            # as GLUE a helper is compiled once per signature and called (its primitives are
            # called too, so LLVM inlines only the glue): Numba's IR inlining re-ran the
            # untyped passes of a helper at every call site (12 of 17 s of an adv.Matmul kernel)
            # Numba's IR inliner refuses a call CPython compiles as f(*args) (more than 30
            # arguments, _ctx included): such a helper is compiled and called instead
            inline = not self.glue and not call_spreads_args(len(params) + 1)
            rk = self.function(jf.fn, name, {p.arg: k for p, k in zip(params, kinds)}, {},
                               inline=inline, helper=True)
            self.helpers[key] = (name, rk)
        return self.helpers[key]

    def module(self, header: str) -> str:
        lines = [f"# {header}", "# Generated by ascendc; do not edit (a cache file).",
                 "import math", "import numpy as np",
                 "from ascendc.compiler.gluejit import glue_jit as njit" if self.glue else
                 "from ascendc.lang.numba_link import cached_njit as njit",
                 "from ascendc.lang import prims as _P, params as _PR, dtypes as _D, core as _C"]
        lines += self.imports
        table = "".join(f", ({str(f)!r}, {int(n)})" for f, n in self.source_lines)
        lines.append(f"_LINES = (('', 0){table})  # st.src_line -> (file, line)")
        for g, name in sorted(self.dtype_globals.items()):
            lines.append(f"{g} = _D.{name}.storage")
        return "\n".join(lines) + "\n\n\n" + "\n\n\n".join(self.functions) + "\n"


class _Rewriter(ast.NodeTransformer):
    def __init__(self, gen: Generator, src: KernelSource, globs: dict, arg_kinds: dict,
                 consts: dict):
        self.gen, self.src, self.globs, self.consts = gen, src, globs, consts
        self.kinds = dict(arg_kinds)
        # helpers of the ascendc package (asc.adv ...) keep their caller's line, as interpret
        # mode names the innermost frame outside the package (errors, NPU-view source lines)
        self.library = os.path.abspath(src.file).startswith(_PACKAGE_DIR)
        self.return_kind = OTHER
        self._ext_state: dict = {}

    # -- helpers ---------------------------------------------------------------------------------
    def err(self, node, msg):
        return self.src.error(node, msg)

    def block(self, stmts):
        """Rewritten statements; each that calls something is preceded by a store of its source
        line into the core state, so run-time errors of compiled kernels name file:line."""
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            r = r if isinstance(r, list) else [r]
            if not self.library and any(isinstance(n, ast.Call) for x in r
                                        for n in _own_nodes(x)):
                out.append(self._line_marker(s))
            out.extend(r)
        return out

    def _line_marker(self, stmt):
        k = self.gen.line_id(self.src.file, self.src.first_line + stmt.lineno - 1)
        return ast.parse(f"_asc_state.src_line = {k}").body[0]

    def kind(self, node) -> str:
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id, OTHER)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            if GA in (self.kind(node.left), self.kind(node.right)):
                return GA
        if isinstance(node, ast.Subscript) and self.kind(node.value) in (T, GA):
            return self.kind(node.value)
        if isinstance(node, ast.Call):
            f = node.func
            chain = _attr_chain(f)
            if chain and len(chain) == 2 and _is_asc_module(self._global(chain[0])):
                return L.function_kind(chain[1])
            if isinstance(f, ast.Attribute):
                row = S.method_for_kind(self.kind(f.value), f.attr)
                if row is not None:
                    return L.kind_of_result(row.returns, self.kind(f.value))
            if isinstance(f, ast.Name):
                jf = self._global(f.id)
                if _is_jit(jf):
                    kinds = tuple(self.kind(a) for a in self._helper_args(node, jf))
                    return self.gen.helper(jf, kinds)[1]
        return OTHER

    def _helper_args(self, node, jf):
        """The arguments of a call of helper `jf` in parameter order (AST nodes): positional,
        keyword, then the defaults of the ones not given (compile-time constants)."""
        params = list(inspect.signature(jf.fn).parameters.values())
        names = [p.name for p in params]
        if len(node.args) > len(params):
            raise self.err(node, f"helper {jf.__name__}() takes {len(params)} arguments "
                                 f"({', '.join(names)}), got {len(node.args)} positional")
        kw = {}
        for k in node.keywords:
            if k.arg is None or k.arg not in names:
                raise self.err(node, f"helper {jf.__name__}() got an unexpected keyword "
                                     f"argument {k.arg!r} (parameters: {', '.join(names)})")
            if names.index(k.arg) < len(node.args) or k.arg in kw:
                raise self.err(node, f"helper {jf.__name__}() got multiple values for "
                                     f"argument {k.arg!r}")
            kw[k.arg] = k.value
        out = list(node.args)
        for p in params[len(node.args):]:
            if p.name in kw:
                out.append(kw[p.name])
            elif p.default is not inspect.Parameter.empty:
                out.append(self._value_node(p.default, node))
            else:
                raise self.err(node, f"helper {jf.__name__}() missing a required argument: "
                                     f"{p.name!r}")
        return out

    def _global(self, name):
        if name in self.kinds or name in self.consts:
            return None
        if name in self.globs:
            return self.globs[name]
        return getattr(__builtins__, name, None) if not isinstance(__builtins__, dict) \
            else __builtins__.get(name)

    def _resolve(self, chain):
        """Python value of a global attribute chain (`asc.TPosition.VECIN`), or raise KeyError."""
        if chain[0] in self.kinds or chain[0] in self.consts or chain[0] not in self.globs:
            raise KeyError(chain[0])
        v = self.globs[chain[0]]
        for a in chain[1:]:
            v = getattr(v, a)
        return v

    def _value_node(self, v, node):
        """AST for a compile-time Python value used in a kernel."""
        if isinstance(v, enum.IntEnum):
            return ast.Constant(int(v))
        if isinstance(v, (bool, int, float, str, np.generic)) or v is None:
            return _const(v)
        if isinstance(v, tuple) and all(isinstance(x, (bool, int, float)) for x in v):
            return _const(v)
        if isinstance(v, D.DataType):
            return ast.Name(id=self.gen.dtype_name(v), ctx=ast.Load())
        if isinstance(v, type) and issubclass(v, np.generic):
            return ast.Name(id=self.gen.dtype_name(D.from_numpy(v)), ctx=ast.Load())
        if isinstance(v, pytypes.ModuleType) and v.__name__ in ("numpy", "math"):
            return ast.Name(id="np" if v.__name__ == "numpy" else "math", ctx=ast.Load())
        if callable(v) and getattr(v, "__module__", "") in ("numpy", "math"):
            root = "np" if v.__module__ == "numpy" else "math"
            return ast.Attribute(value=ast.Name(id=root, ctx=ast.Load()), attr=v.__name__,
                                 ctx=ast.Load())
        raise self.err(node, f"global {ast.unparse(node)!r} must be a constant (int, float, bool, "
                             f"dtype, enum) or an @asc.jit helper, got {type(v).__name__}")

    # -- statements ------------------------------------------------------------------------------
    def visit_Assign(self, node):
        for ext in S.EXTENSIONS.values():     # e.g. mm = asc.adv.Matmul(...)
            out = ext.lowering.assign(self, node)
            if out is not None:
                return out
        v = node.value
        chain = _attr_chain(v.func) if isinstance(v, ast.Call) else None
        h = S.HANDLES.get(chain[-1]) if chain and len(chain) == 2 and \
            _is_asc_module(self._global(chain[0])) else None
        if h is not None and h.ctor is not None and h.ctor.prim is None and not v.args:
            for t in node.targets:      # x = asc.GlobalTensor(): bound by set_global_buffer
                if isinstance(t, ast.Name):
                    self.kinds[t.id] = h.kind
            return None
        k = self.kind(v)
        node.value = self.visit(v)
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.kinds[t.id] = k
                if t.id in self.consts:
                    raise self.err(t, f"ConstExpr parameter {t.id!r} must not be assigned")
            elif isinstance(t, ast.Tuple):
                for e in t.elts:
                    if isinstance(e, ast.Name):
                        self.kinds[e.id] = OTHER
        return node

    def visit_Expr(self, node):
        for ext in S.EXTENSIONS.values():     # e.g. mm.iterate_all(c), asc.adv.register_matmul
            out = ext.lowering.statement(self, node)
            if out is not None:
                return out
        v = node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute):
            row = S.method_for_kind(self.kind(v.func.value), v.func.attr)
            if row is not None and row.rebinds:    # t.set_global_buffer(addr, n)
                return L.rebinding_statement(self, node, row, v.func.value)
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return None  # docstring
        node.value = self.visit(v)
        return node

    def visit_Return(self, node):
        if node.value is not None:
            self.return_kind = self.kind(node.value)
            node.value = self.visit(node.value)
        return node

    def visit_For(self, node):
        node.iter = self.visit(node.iter)
        if isinstance(node.target, ast.Name):
            self.kinds[node.target.id] = OTHER
        node.body = self.block(node.body) or [ast.Pass()]
        node.orelse = self.block(node.orelse)
        return node

    def visit_While(self, node):
        node.test = self.visit(node.test)
        node.body = self.block(node.body) or [ast.Pass()]
        node.orelse = self.block(node.orelse)
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        node.body = self.block(node.body) or [ast.Pass()]
        node.orelse = self.block(node.orelse)
        return node

    # -- expressions -----------------------------------------------------------------------------
    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id in self.consts:
                return self._value_node(self.consts[node.id], node)
            if node.id not in self.kinds and node.id in self.globs:
                v = self.globs[node.id]
                if _is_asc_module(v):
                    raise self.err(node, "the ascendc module itself cannot be used as a value")
                return self._value_node(v, node)
        return node

    def visit_Attribute(self, node):
        chain = _attr_chain(node)
        if chain and chain[0] in self.consts and isinstance(node.ctx, ast.Load):
            return self._value_node(self._const_field(chain, node), node)   # tiling.s1_block
        if chain and isinstance(node.ctx, ast.Load):
            try:
                v = self._resolve(chain)
            except (KeyError, AttributeError):
                v = KeyError
            if v is not KeyError:
                return self._value_node(v, node)
        node.value = self.visit(node.value)
        return node

    def _const_field(self, chain, node):
        """The value of field chain `p.f.g` of ConstExpr parameter p (a NamedTuple, dataclass or
        other record): inlined as a literal, so branches on it stay compile-time."""
        v = self.consts[chain[0]]
        for i, a in enumerate(chain[1:], 1):
            if a.startswith("_") or not hasattr(v, a):
                raise self.err(node, f"ConstExpr {'.'.join(chain[:i])} must have a field {a!r} "
                                     f"({type(v).__name__}), got {type(v).__name__}={v!r}")
            v = getattr(v, a)
        return v

    def visit_BinOp(self, node):
        lk, rk = self.kind(node.left), self.kind(node.right)
        node.left, node.right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Add) and lk == GA:
            return _call(f"_P.{L.operator_prim(GA, '+')}",
                         [CTX, node.left, node.right])
        if isinstance(node.op, ast.Add) and rk == GA:
            return _call(f"_P.{L.operator_prim(GA, '+')}",
                         [CTX, node.right, node.left])
        if GA in (lk, rk):
            raise self.err(node, "GlobalAddress only supports `addr + n` (n elements)")
        return node

    def visit_Subscript(self, node):
        k = self.kind(node.value)
        if k not in (T, GA):
            return self.generic_visit(node)
        base = self.visit(node.value)
        sl = node.slice
        if isinstance(sl, ast.Slice):
            if sl.upper is not None or sl.step is not None:
                raise self.err(node, "tensor slices must be t[i:] (a view from element i); "
                                     "stop and step are not supported")
            start = self.visit(sl.lower) if sl.lower is not None else ast.Constant(0)
        else:
            start = self.visit(sl)
        return _call(f"_P.{L.operator_prim(k, '[]')}", [CTX, base, start])

    def visit_List(self, node):
        return ast.Tuple(elts=[self.visit(e) for e in node.elts], ctx=ast.Load())

    def visit_Call(self, node):
        f = node.func
        chain = _attr_chain(f)
        if chain and len(chain) >= 2:
            root = self._global(chain[0])
            if _is_asc_module(root):
                dt = getattr(root, chain[1], None)
                if isinstance(dt, D.DataType) and len(chain) == 3 and not node.args and \
                        not node.keywords and not chain[2].startswith("_"):
                    return self._dtype_method(node, dt, chain[2])   # asc.int8.sizeof()
                return self._asc_call(node, chain[1:])
        if isinstance(f, ast.Attribute):
            return self._method(node, f.attr, f.value)
        if isinstance(f, ast.Name):
            g = self._global(f.id)
            if _is_jit(g):
                args = self._helper_args(node, g)
                kinds = tuple(self.kind(a) for a in args)
                name, _ = self.gen.helper(g, kinds)
                return _call(name, [CTX] + [self.visit(a) for a in args])
            if f.id in BUILTINS and f.id not in self.kinds:
                return self.generic_visit(node)
            if f.id not in self.kinds and callable(g):
                raise self.err(node, f"function {f.id!r} must be an @asc.jit helper to be called "
                                     f"from a kernel")
        return self.generic_visit(node)

    def _dtype_method(self, node, dt, name):
        """A no-argument method of a dtype constant, evaluated at compile time (pyasc's
        `asc.uint64.sizeof()`, `asc.float16.is_float()`)."""
        method = getattr(dt, name, None)
        value = method() if callable(method) else None
        if not isinstance(value, (bool, int)):
            raise self.err(node, f"asc.{dt.name}.{name}() must be a dtype method with a constant "
                                 f"int or bool result to be used in a compiled kernel, got "
                                 f"{type(value).__name__}")
        return ast.copy_location(_const(value), node)

    def _asc_call(self, node, chain):
        ext = S.EXTENSIONS.get(chain[0]) if len(chain) > 1 else None
        if ext is not None:
            return ext.lowering.expression(self, node, chain[1:])
        out = L.function_call(self, node, chain[0]) if len(chain) == 1 else None
        if out is None:
            raise self.err(node, f"asc.{'.'.join(chain)} is not supported in compiled kernels "
                                 f"(see docs/pyasc-surface.md for the supported APIs)")
        return out

    def _method(self, node, m, obj_node):
        obj_kind = self.kind(obj_node)
        for ext in S.EXTENSIONS.values():
            if obj_kind in ext.lowering.KINDS:
                return ext.lowering.method_value(self, node, obj_kind, m)
        if obj_kind == OTHER and m in S.INT_METHODS:     # n.ceildiv(d) = asc.ceildiv(n, d)
            call = ast.Call(func=node.func, args=[obj_node] + list(node.args),
                            keywords=node.keywords)
            ast.copy_location(call, node)
            return L.function_call(self, call, m)
        row = L.method_row(self, node, obj_kind, m)
        obj = self.visit(obj_node)
        if row is not None:
            return L.method_call(self, node, row, obj)
        node.func = ast.Attribute(value=obj, attr=m, ctx=ast.Load())
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [ast.keyword(arg=k.arg, value=self.visit(k.value)) for k in node.keywords]
        return node

    # -- the interface extensions' lowerings use ------------------------------------------------
    def global_value(self, name):
        """The Python value a global name of the kernel refers to (None for locals)."""
        return self._global(name)

    def resolve(self, chain):
        """Python value of a global attribute chain, or raise KeyError."""
        return self._resolve(chain)

    def helper(self, fn, kinds: tuple) -> tuple[str, str]:
        """(generated name, return kind) of kernel-language helper `fn` for argument kinds."""
        return self.gen.helper(fn, kinds)

    def ext_state(self, namespace: str) -> dict:
        """Per-function scratch state of an extension's lowering."""
        return self._ext_state.setdefault(namespace, {})


def kernel_module(kf, consts: dict, sig: tuple, soc=None) -> str:
    """The source of the module for one specialisation of kernel `kf` (a KernelFunction) on SoC
    profile `soc`: the kernel, its helpers, and `_run(ctx_words, (blocks_ptr, nblocks),
    block_num, *args)` that runs a range of blocks on one core (ctx_words: address and size of
    the core context's arrays; a GM argument is passed as its address and element count)."""
    gen = Generator(soc)
    gen.auto_sync = uses_allocation_sites(kf.fn)
    if gen.auto_sync:
        gen.require_import("from ascendc.lang.prims import autotensor as _PA")
    rt_params = [n for n in kf.param_names if n not in consts]
    kinds = {n: (GA if s[0] == "GA" else OTHER) for n, s in zip(rt_params, sig)}
    # as GLUE, the kernel is inlined into _run: its LLVM module is made (and optimised) once
    # (unless its call is an f(*args) one, which Numba's inliner rejects: call_spreads_args)
    gen.function(kf.fn, "_kernel", kinds, consts,
                 inline=gen.glue and not call_spreads_args(len(rt_params) + 1), helper=False)
    ps = ", ".join(rt_params)
    regs = "".join(f"        _C.register_gm(_ctx, {n})\n" for n in rt_params if kinds[n] == GA)
    # arrays arrive as (address, length) and are rebuilt without a reference count (rawptr.py:
    # a fault unwinding through Numba frames then leaks nothing); the caller keeps them alive
    run_params = []
    views = ""
    for n, s in zip(rt_params, sig):
        if kinds[n] == GA:
            run_params += [f"_asc_p_{n}", f"_asc_n_{n}"]
            gen.dtype_globals[f"_dt_{s[1]}"] = s[1]
            views += f"    {n} = _asc_carray(_asc_vp(_asc_p_{n}), _asc_n_{n}, _dt_{s[1]})\n"
        else:
            run_params.append(n)
    rps = ", ".join(run_params)
    gen.require_import("from numba import carray as _asc_carray")
    gen.require_import("from ascendc.compiler.rawptr import voidptr as _asc_vp")
    gen.require_import("from ascendc.lang.state import CORE_STATE as _asc_CORE_STATE")
    gen.functions.append(
        "@njit(nogil=True, cache=True)\n"
        f"def _run(_asc_c, _asc_b, _block_num{', ' if rps else ''}{rps}):\n"
        "    # the core context (lang/state.py's slots MEM, STAGE, STATE, TRACE)\n"
        "    _ctx = (_asc_carray(_asc_vp(_asc_c[0]), _asc_c[1], np.uint8),\n"
        "            _asc_carray(_asc_vp(_asc_c[2]), _asc_c[3], np.uint8),\n"
        "            _asc_carray(_asc_vp(_asc_c[4]), 1, _asc_CORE_STATE),\n"
        f"            _asc_carray(_asc_vp(_asc_c[5]), (_asc_c[6], {NCOL}), np.int64))\n"
        "    _blocks = _asc_carray(_asc_vp(_asc_b[0]), _asc_b[1], np.int64)\n"
        f"{views}"
        "    for _blk in _blocks:\n"
        "        _C.begin_block(_ctx, _blk, _block_num)\n"
        f"{'        _PA.auto_reset(_ctx)' + chr(10) if gen.auto_sync else ''}"
        f"{regs}"
        f"        _kernel(_ctx{', ' if ps else ''}{ps})\n"
        "        _P.kernel_end(_ctx)\n")
    # the header is a comment line: no repr of a user value reaches it (a newline in one would
    # end the comment and inject code), only names and a hash of the values
    digest = hashlib.sha256(repr(sorted(consts.items(), key=lambda kv: kv[0])).encode())
    header = (f"kernel {kf.__name__!r} from {str(inspect.getsourcefile(kf.fn))!r}; "
              f"consts {sorted(consts)!r} = sha256 {digest.hexdigest()[:16]}; "
              f"signature={sig!r}").replace("\n", " ").replace("\r", " ")
    return gen.module(header)


def uses_allocation_sites(fn, seen=None) -> bool:
    """Does kernel function `fn` (or an @asc.jit helper it calls) name a handle allocated per
    call site (surface Handle.site: LocalTensorAuto, whose kernels get insert_sync's flags)?"""
    names = {h.name for h in S.HANDLES.values() if h.site}
    seen = set() if seen is None else seen
    if fn in seen:
        return False
    seen.add(fn)
    try:
        tree = ast.parse(source_text(fn))
    except (OSError, TypeError, SyntaxError):
        return False
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in names:
            return True
        if isinstance(n, ast.Name):
            g = fn.__globals__.get(n.id)
            if _is_jit(g) and uses_allocation_sites(getattr(g, "fn", g), seen):
                return True
    return False


def _own_nodes(stmt):
    """The nodes of a statement outside the bodies of its nested statements."""
    if isinstance(stmt, (ast.For, ast.While, ast.If)):
        heads = [stmt.iter] if isinstance(stmt, ast.For) else [stmt.test]
        return [n for h in heads for n in ast.walk(h)]
    return list(ast.walk(stmt))
