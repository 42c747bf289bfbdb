"""Which GM parameters a kernel may write, read from its AST (for mem-check and fault labels).

rt's mem-check counts every buffer argument of a launch as written unless told otherwise, so two
streams' kernels that only read one buffer looked like a race. `written_params` tells
it which GM parameters a kernel (with the @asc.jit helpers it calls) may write. The analysis is
flow-insensitive and conservative: a name aliases the GM parameters whose values reach it
(`g.set_global_buffer(x + off, n)`, `h = g[i:]`, helper arguments), and an alias counts as
written when it is any argument of an `asc.*` call but a `src` one of its surface row
(`register_matmul`'s workspace is written), the receiver or an
argument of a method whose surface row returns nothing (`set_value`), or reaches any call the
analysis does not know. Anything it cannot follow makes the answer None ("unknown": every
argument is a write).
"""
from __future__ import annotations

import ast
import inspect

from ..lang import surface as S
from ..lang.kernel import is_kernel_function
from .codegen import BUILTINS      # builtins never write through their arguments
from .frontend import KernelSource, attr_chain, is_asc_module

# methods of extension objects (asc.adv.Matmul) that only read their GM argument; the surface
# table's own methods are judged by their rows (_reads_only)
EXTENSION_READS = frozenset({"set_tensor_a", "set_tensor_b", "set_bias"})


def _source_params(fn_name: str) -> set:
    """Positions and names of the `src*` parameters of asc function `fn_name` in the surface
    table (only read: data_copy's src); every other GM argument of an asc.* call counts as
    written (register_matmul's workspace holds C tiles)."""
    row = S.FUNCTIONS.get(fn_name)
    out: set = set()
    for form in (row.forms if row is not None else ()):
        for i, p in enumerate(form.params):
            if p.startswith("src"):
                out |= {i, p}
    return out


class _Unknown(Exception):
    pass


def _rebinds(method: str) -> bool:
    row = S.method_for_kind(S.OTHER, method)
    return row is not None and row.rebinds


def _reads_only(method: str) -> bool:
    """Does a method of that name leave its receiver and arguments unwritten? A surface row
    that returns something (get_value, get_size, a view) or rebinds (set_global_buffer) does;
    one returning nothing (set_value) writes; a name the table lacks counts as a write."""
    if method in EXTENSION_READS:
        return True
    row = S.method_for_kind(S.OTHER, method)
    return row is not None and (row.returns is not None or row.rebinds)


def written_params(fn, gm_params, _depth=0) -> frozenset | None:
    """The names among `gm_params` (GM parameters of kernel or helper `fn`) that `fn` may write;
    None if the analysis cannot tell."""
    try:
        return frozenset(_Analysis(fn, frozenset(gm_params), _depth).run())
    except (_Unknown, OSError, TypeError, SyntaxError, RecursionError):
        return None


class _Analysis:
    def __init__(self, fn, gm_params, depth):
        if depth > 8:
            raise _Unknown("helpers nest too deep")
        self.depth = depth
        src = KernelSource(fn)
        self.fdef = src.fdef
        self.globs = dict(fn.__globals__)
        if fn.__closure__:
            self.globs.update(inspect.getclosurevars(fn).nonlocals)
        self.alias = {p: {p} for p in gm_params}
        self.written: set = set()

    def run(self):
        for _ in range(20):                      # aliases to a fixpoint
            before = {k: set(v) for k, v in self.alias.items()}
            for node in ast.walk(self.fdef):
                self._aliases(node)
            if before == self.alias:
                break
        for node in ast.walk(self.fdef):
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Return) and node.value is not None and \
                    self._of(node.value):
                raise _Unknown("a GM alias is returned")
        return self.written

    def _of(self, e) -> set:
        """GM parameters whose addresses `e` may carry."""
        if isinstance(e, ast.Name):
            return set(self.alias.get(e.id, ()))
        if isinstance(e, ast.BinOp):
            return self._of(e.left) | self._of(e.right)
        if isinstance(e, ast.Subscript):
            return self._of(e.value)
        if isinstance(e, ast.IfExp):
            return self._of(e.body) | self._of(e.orelse)
        if isinstance(e, (ast.Tuple, ast.List)):
            return set().union(*(self._of(x) for x in e.elts)) if e.elts else set()
        if isinstance(e, ast.Starred):
            return self._of(e.value)
        return set()

    def _bind(self, target, ps):
        if not ps:
            return
        if isinstance(target, ast.Name):
            self.alias.setdefault(target.id, set()).update(ps)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._bind(t, ps)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, ps)
        else:
            raise _Unknown("a GM alias is stored in an attribute or item")

    def _aliases(self, node):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self._bind(t, self._of(node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            self._bind(node.target, self._of(node.value))
        elif isinstance(node, ast.For):
            self._bind(node.target, self._of(node.iter))
        elif isinstance(node, ast.NamedExpr):
            self._bind(node.target, self._of(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.args and _rebinds(node.func.attr):      # g.set_global_buffer(x, n)
            self._bind(node.func.value, self._of(node.args[0]))

    def _call(self, node):
        args = [(i, a) for i, a in enumerate(node.args)] + \
               [(k.arg, k.value) for k in node.keywords]
        carried = [(i, a, self._of(a)) for i, a in args]
        carried = [c for c in carried if c[2]]
        f = node.func
        chain = attr_chain(f)
        root = self.globs.get(chain[0]) if chain and chain[0] not in self.alias else None
        if isinstance(f, ast.Attribute) and not is_asc_module(root):
            if _reads_only(f.attr):
                return
            self.written |= self._of(f.value)             # g.set_value(i, v), unknown methods
            for _, _, ps in carried:                      # mm.iterate_all(c_gm): a write
                self.written |= ps
            return
        if not carried:
            return
        if is_asc_module(root):                           # asc.data_copy(dst, src, n)
            reads = _source_params(chain[-1])
            for i, _, ps in carried:
                if i not in reads:
                    self.written |= ps
            return
        if isinstance(f, ast.Name) and f.id in BUILTINS and f.id not in self.alias:
            return
        g = self.globs.get(f.id) if isinstance(f, ast.Name) else None
        if not is_kernel_function(g):
            raise _Unknown(f"a GM alias reaches {ast.unparse(f)}()")
        names = list(inspect.signature(g.fn).parameters)
        mapping: dict = {}
        for i, _, ps in carried:
            name = names[i] if isinstance(i, int) and i < len(names) else i
            if name not in names:
                raise _Unknown("helper call with unknown arguments")
            mapping.setdefault(name, set()).update(ps)
        inner = written_params(g.fn, mapping, self.depth + 1)
        if inner is None:
            raise _Unknown("helper")
        for name in inner:
            self.written |= mapping[name]
