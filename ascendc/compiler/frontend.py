"""Kernel source -> checked AST: unsupported Python is a CompileError with file:line and a caret."""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
import types

from ..lang.errors import CompileError
from ..lang.kernel import is_kernel_function, source_lines, source_text


# names the generated module defines or the generated functions use (codegen.py, lower.py)
RESERVED = frozenset({"_ctx", "_blk", "_blocks", "_block_num", "_kernel", "_run", "_P", "_PR",
                      "_D", "_C", "_ADV", "_LINES", "_asc_state", "np", "math", "njit"})
_RESERVED_PREFIX = re.compile(r"_asc_|_h\d+_|_dt_")


def is_reserved(name: str) -> bool:
    """Would a user name collide with the generated code's (and silently change a kernel)?"""
    return name in RESERVED or bool(_RESERVED_PREFIX.match(name))


class KernelSource:
    """The parsed source of a kernel or helper, with positions mapped back to its file."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        lines, first = source_lines(fn)
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.first_line = first
        raw = "".join(lines)
        self.text = textwrap.dedent(raw)
        self.indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(self.text)
        self.fdef = tree.body[0]
        if not isinstance(self.fdef, ast.FunctionDef):
            raise self.error(self.fdef, "a kernel must be a plain `def` function")
        self.fdef.decorator_list = []
        self.lines = raw.splitlines()

    def error(self, node, msg) -> CompileError:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.indent
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        full = (f"kernel {self.name}: {msg}\n  File \"{self.file}\", "
                f"line {self.first_line + line - 1}"
                f"\n    {src.strip()}\n    {' ' * (col - (len(src) - len(src.lstrip())))}^")
        e = CompileError(full)
        e.filename, e.lineno, e.offset, e.text = self.file, self.first_line + line - 1, col + 1, src
        return e

    def check(self, helper=False):
        """Reject constructs the kernel language does not support (as pyasc does). Helpers'
        parameters may have default values (filled in at each call by the compiler)."""
        a = self.fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.error(self.fdef, "kernel parameters must be plain positional names "
                                        "(no *args, **kwargs or keyword-only parameters)")
        if a.defaults and not helper:
            raise self.error(a.defaults[0], "kernel parameters must not have default values "
                                            "(helpers' may)")
        for name, node in [(x.arg, x) for x in a.args] + [
                (x.id, x) for x in ast.walk(self.fdef)
                if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)]:
            if is_reserved(name):
                raise self.error(node, f"names must not be ones the compiler generates "
                                       f"({', '.join(sorted(RESERVED))}, _asc_*, _h<N>_*, "
                                       f"_dt_*), got {name!r}: rename it")
        for node in ast.walk(self.fdef):
            bad = None
            if node is not self.fdef and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                           ast.Lambda, ast.ClassDef)):
                bad = "nested functions, lambdas and classes are not supported in a kernel " \
                      "(make a helper with @asc.jit)"
            elif isinstance(node, (ast.Try, ast.Raise, ast.Global, ast.Nonlocal, ast.Yield,
                                   ast.YieldFrom, ast.Await, ast.Delete, ast.Import,
                                   ast.ImportFrom)):
                bad = f"`{type(node).__name__.lower()}` is not supported in a kernel"
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                                   ast.Dict, ast.Set, ast.JoinedStr)):
                bad = f"{type(node).__name__} is not supported in a kernel"
            elif isinstance(node, ast.With):
                bad = "`with` is not supported in a kernel"
            if bad:
                raise self.error(node, bad)
        self.fdef = _TupleAssignments(self).visit(self.fdef)


class _TupleAssignments(ast.NodeTransformer):
    """`a, b = x, y` (and nested, and `[a, b] = ...`) as one assignment per name, as Python
    evaluates it: every value first (into temporaries when a value reads a name the statement
    assigns, e.g. a swap `a, b = b, a`), then the targets left to right. Handles (tensors,
    queues) thus get their own kind each; unpacking anything else (`a, b = f()`) is left as is."""

    def __init__(self, src: KernelSource):
        self.src = src

    def visit_Assign(self, node):
        if len(node.targets) != 1 or not isinstance(node.targets[0], (ast.Tuple, ast.List)) or \
                not isinstance(node.value, (ast.Tuple, ast.List)):
            return node
        pairs = self._pairs(node.targets[0], node.value)
        if pairs is None:
            return node
        stored = {n.id for t, _ in pairs for n in ast.walk(t) if isinstance(n, ast.Name)}
        read = {n.id for _, v in pairs for n in ast.walk(v) if isinstance(n, ast.Name)}
        out = []
        if stored & read or any(not isinstance(t, ast.Name) for t, _ in pairs):
            temps = []
            for i, (_, v) in enumerate(pairs):
                tmp = f"_asc_tuple{node.lineno}_{node.col_offset}_{i}"
                temps.append(tmp)
                out.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=v))
            pairs = [(t, ast.Name(id=tmp, ctx=ast.Load())) for (t, _), tmp in zip(pairs, temps)]
        out += [ast.Assign(targets=[t], value=v) for t, v in pairs]
        return [ast.copy_location(ast.fix_missing_locations(ast.copy_location(a, node)), node)
                for a in out]

    def _pairs(self, target, value):
        """[(target, value)] for a target tuple matched element-wise by a value tuple (nested
        tuples flattened); None when a side is starred or not a literal tuple."""
        if not isinstance(target, (ast.Tuple, ast.List)):
            return [(target, value)]
        if not isinstance(value, (ast.Tuple, ast.List)) or \
                any(isinstance(e, ast.Starred) for e in target.elts + value.elts):
            return None
        if len(target.elts) != len(value.elts):
            raise self.src.error(target, f"tuple assignment must have as many targets as "
                                         f"values, got {len(target.elts)} targets and "
                                         f"{len(value.elts)} values")
        out = []
        for t, v in zip(target.elts, value.elts):
            sub = self._pairs(t, v)
            if sub is None:
                return None
            out += sub
        return out


def is_asc_module(v) -> bool:
    """Is `v` the kernel language's module (`import ascendc as asc`, or pyasc's `asc`)?"""
    return isinstance(v, types.ModuleType) and getattr(v, "__kernel_language__", False)


def attr_chain(node):
    """`a.b.c` -> ['a', 'b', 'c'] (None if not a pure attribute chain on a name)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def asc_calls(fn, _seen=None) -> frozenset:
    """Dotted names of the `asc.*` functions that kernel `fn` calls, directly or through the
    @asc.jit helpers it calls ("sync_all", "mmad", "adv.Matmul", ...), read from its AST."""
    seen = set() if _seen is None else _seen
    if fn in seen:
        return frozenset()
    seen.add(fn)
    try:
        tree = ast.parse(source_text(fn))
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    globs = dict(getattr(fn, "__globals__", {}))
    if getattr(fn, "__closure__", None):
        globs.update(inspect.getclosurevars(fn).nonlocals)
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        chain = attr_chain(node.func) if isinstance(node.func, ast.Attribute) else None
        if chain and is_asc_module(globs.get(chain[0])):
            out.add(".".join(chain[1:]))
        elif isinstance(node.func, ast.Name):
            g = globs.get(node.func.id)
            if is_kernel_function(g):       # an @asc.jit helper
                out |= asc_calls(g.fn, seen)
    return frozenset(out)


def keyword_fields(rw, call, cls: str, fields, fields_text: str, wrap=None) -> list:
    """The values of a record constructor `asc.adv.<cls>(f=v, ...)` in kernel source, lowered by
    the rewriter `rw`, in `fields` order with 0 for a field not given (each `wrap(value)` if
    `wrap`). Fields by keyword only, each one of `fields` (`fields_text` names them in the
    error)."""
    if call.args:
        raise rw.err(call, f"asc.adv.{cls}: fields must be given by keyword (f=v), got "
                           f"{len(call.args)} positional arguments")
    given = {}
    for k in call.keywords:
        if k.arg not in fields:
            raise rw.err(call, f"asc.adv.{cls}: field must be one of {cls}'s fields "
                               f"({fields_text}), got {k.arg!r}")
        v = rw.visit(k.value)
        given[k.arg] = wrap(v) if wrap else v
    return [given.get(f, ast.Constant(0)) for f in fields]
