"""The identity of a kernel-language function: what `@asc.jit` wraps.

A bottom module: the compiler recognises kernels and helpers by this class, and `ascendc.jit`
builds launches on top of it, so neither has to import the other.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import os
import textwrap
import threading
import weakref

from .api import ConstExpr
from .errors import CompileError


def const_params(fn) -> set[str]:
    """Names of parameters annotated asc.ConstExpr / asc.ConstExpr[...]."""
    out = set()
    for name, p in inspect.signature(fn).parameters.items():
        ann = p.annotation
        if ann is ConstExpr or (isinstance(ann, str) and "ConstExpr" in ann):
            out.add(name)
    return out


class KernelFunction:
    """A Python function written in the kernel language: `fn`, its name, parameter names and the
    parameters that are compile-time constants (ConstExpr)."""

    def __init__(self, fn):
        self._rewritten = _rewrite_iterate(fn)
        self._fn = fn if self._rewritten is None else self._rewritten[0]
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.param_names = list(inspect.signature(fn).parameters)
        self.const_params = const_params(fn)
        _remember_source(self.fn)

    @property
    def fn(self):
        """The Python function (rewritten when it has `with <matmul>.iterate()`, see below; its
        lines are (re)registered for the compiler each time it is read)."""
        if self._rewritten is not None:
            _install_lines(*self._rewritten[1])
        return self._fn


def is_kernel_function(v) -> bool:
    return isinstance(v, KernelFunction)


# ---- the source a kernel was imported with -----------------------------------------------------
# The compiler reads a kernel's text through linecache (inspect), at its first launch or at a new
# specialisation, possibly long after the import. If the file was edited meanwhile, those lines at
# the function's old line numbers are other code (another kernel, half of one): compiling them
# would launch something the interpreter (which runs the imported bytecode) never ran.
_SOURCES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _remember_source(fn) -> None:
    try:
        _SOURCES[fn] = tuple(inspect.getsourcelines(fn)[0])
    except (OSError, TypeError):
        pass                        # no source file (built with exec): nothing to compare


def source_lines(fn):
    """inspect.getsourcelines(fn), refusing text that is no longer what `fn` was declared with
    (its file edited since the import)."""
    lines, first = inspect.getsourcelines(fn)
    known = _SOURCES.get(fn)
    if known is not None and tuple(lines) != known:
        raise CompileError(f"asc.jit: the source of {fn.__name__} must be the text it was imported "
                           f"from, got {inspect.getsourcefile(fn)} edited since (lines {first}-"
                           f"{first + len(known) - 1} now hold other code); re-import the module "
                           f"(importlib.reload) to compile the edited kernel")
    return lines, first


def source_text(fn) -> str:
    """The dedented source of `fn`, as source_lines checks it."""
    return textwrap.dedent("".join(source_lines(fn)[0]))


# ---- pyasc's `with mm.iterate() as count:` -----------------------------------------------------
# In pyasc this `with` is a loop (MatmulIterator.__enter__ opens an scf.while): the body runs once
# per C tile with count = 0, 1, ... Python runs a `with` body once, so the kernel's source is
# rewritten line for line, keeping every line number:
#     with mm.iterate(...) as count:        ->  while mm.iterate(...):
#         first_statement                   ->      count = mm._iterate_count(); first_statement
# The rewritten text is what both modes see: the interpreter runs the function compiled from it
# (same file name and line numbers, so errors name the kernel's lines), and the compiler reads it
# through linecache (registered for the kernel's file, every other line unchanged).

def _iterate_withs(tree):
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and len(node.items) == 1:
            e = node.items[0].context_expr
            if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and \
                    e.func.attr == "iterate":
                out.append(node)
    return out


def _rewrite_iterate(fn):
    """(fn compiled from the rewritten source, the file's rewritten lines), or None when `fn`
    has no `with <matmul>.iterate()` block."""
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn)
    except (OSError, TypeError):
        return None
    text = textwrap.dedent("".join(lines))
    if "iterate" not in text or "with" not in text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    withs = _iterate_withs(tree)
    if not withs:
        return None
    if file is None or fn.__closure__:
        raise CompileError(f"kernel {fn.__name__}: `with <matmul>.iterate()` must be in a "
                           f"module-level function whose source file exists, got a "
                           f"{'closure' if fn.__closure__ else 'function without a file'}")
    try:
        st = os.stat(file)
    except OSError:
        return None
    all_lines = linecache.getlines(file)
    if not all_lines:
        return None
    new = list(all_lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    for w in withs:
        item = w.items[0]
        if w.end_lineno is None or item.context_expr.end_lineno != w.lineno or \
                w.body[0].lineno == w.lineno:
            raise CompileError(f"kernel {fn.__name__}: `with <matmul>.iterate() as count:` must "
                               f"have its header on one line and its body below it, got line "
                               f"{first + w.lineno - 1} of {file}")
        i = first + w.lineno - 2
        call = ast.get_source_segment(text, item.context_expr)
        head = new[i]
        col = w.col_offset + indent
        new[i] = head[:col] + f"while {call}:\n"
        if item.optional_vars is not None:
            if not isinstance(item.optional_vars, ast.Name):
                raise CompileError(f"kernel {fn.__name__}: `with <matmul>.iterate() as <name>:` "
                                   f"must bind one plain name, got line {first + w.lineno - 1}")
            b = w.body[0]
            if isinstance(b, (ast.If, ast.For, ast.While, ast.With)) or \
                    b.lineno != b.end_lineno:
                raise CompileError(f"kernel {fn.__name__}: the body of `with <matmul>.iterate() "
                                   f"as {item.optional_vars.id}:` must start with a one-line "
                                   f"statement, got line {first + b.lineno - 1}")
            j = first + b.lineno - 2
            bcol = b.col_offset + indent
            mm = ast.get_source_segment(text, item.context_expr.func.value)
            new[j] = (new[j][:bcol] + f"{item.optional_vars.id} = {mm}._iterate_count(); "
                      + new[j][bcol:])
    src = "".join(new[first - 1:first - 1 + len(lines)])
    tree = ast.parse(textwrap.dedent(src))
    tree.body[0].decorator_list = []
    ast.increment_lineno(tree, first - 1)
    ns: dict = {}
    exec(compile(tree, file, "exec"), fn.__globals__, ns)
    new_fn = ns[fn.__name__]
    new_fn.__defaults__, new_fn.__doc__ = fn.__defaults__, fn.__doc__
    new_fn.__module__ = fn.__module__
    return new_fn, (file, new, first - 1, first - 1 + len(lines), (st.st_size, st.st_mtime))


_LINES_LOCK = threading.Lock()


def _install_lines(file, lines, lo, hi, stamp):
    """Register this kernel's rewritten lines [lo, hi) for `file` in linecache, keeping other
    kernels' rewrites of the same file. The entry carries the file's real size and mtime, so
    linecache.checkcache drops it once the file is edited (a reload then sees the new text);
    a kernel whose file has changed since it was rewritten installs nothing."""
    with _LINES_LOCK:
        try:
            st = os.stat(file)
        except OSError:
            return
        if (st.st_size, st.st_mtime) != stamp:
            return
        linecache.checkcache(file)
        cur = linecache.getlines(file)
        merged = list(cur) if len(cur) == len(lines) else list(lines)
        merged[lo:hi] = lines[lo:hi]
        linecache.cache[file] = (st.st_size, st.st_mtime, merged, file)
