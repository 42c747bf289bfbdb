"""The surface table (ascendc/lang/surface.py) is the single place a kernel-language name is
declared: the interpreter's classes and functions, the compiler's lowering and the primitives
are derived from it or checked one-to-one against it here."""
import ast
import inspect
import pathlib

import pytest

import ascendc as asc
from ascendc import language
from ascendc.lang import api, prims, surface as S
from ascendc.lang.enums import PipeID

ROOT = pathlib.Path(__file__).resolve().parents[2]

# names of `asc.*` that are values, not operations (dtypes, enums, the jit, errors, options)
VALUES = {"jit", "JitFunction", "DataType", "ConstExpr", "KernelError", "CompileError",
          "CheckedOptions", "set_default_checked", "int8", "int16", "int32", "int64", "uint8",
          "uint16", "uint32", "uint64", "float16", "float32", "float64", "bfloat16", "half",
          "float_", "double", "int_", "TPosition", "Hardware", "PipeID", "HardEvent", "RoundMode",
          "CMPMODE", "SELMODE", "SelMode", "ReduceOrder", "QuantModes", "FixpipeConfig",
          "CubeFormat", "MaskMode", "Property", "DEFAULT_C0_SIZE", "ONE_BLK_SIZE",
          "TOTAL_L1_SIZE", "TOTAL_L0C_SIZE", "TransposeType", "LayoutMode",
          "AippInputFormat", "GatherMaskMode"}


def test_every_public_name_of_the_language_is_a_surface_row():
    declared = set(S.FUNCTIONS) | set(S.HANDLES) | set(S.STRUCTS)
    stray = sorted(set(language.__all__) - declared - VALUES)
    assert not stray, f"asc names declared outside ascendc/lang/surface.py: {stray}"
    missing = sorted(n for n in declared if n != "DataType" and not hasattr(asc, n))
    assert not missing, f"surface rows not exposed as asc.<name>: {missing}"


def test_interpreter_classes_only_carry_surface_methods():
    for name, cls in api._CLASSES.items():
        rows = {m.name for m in S.methods_of(name)}
        public = {k for k in vars(cls) if not k.startswith("_") or k in ("__getitem__", "__add__")}
        assert public <= rows, f"{name} declares {sorted(public - rows)} outside the surface table"
        for m in S.methods_of(name):
            assert m.name in vars(cls), f"{m.api}: surface row with no interpreter method"


def test_interpreter_functions_are_generated_from_rows():
    for name, row in S.FUNCTIONS.items():
        f = getattr(asc, name)
        assert f is api.FUNCTIONS[name]
        if row.special is None:
            assert f.__qualname__ == name, name


def _string_constants(path):
    return {n.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_the_compiler_names_no_operation_by_hand():
    """Lowering reads the table; a string naming an op or method in the compiler is a second
    declaration (Python builtins the compiler passes through are the exception)."""
    from ascendc.compiler import codegen
    names = set(S.FUNCTIONS) | set(S.HANDLES) | \
        {m.name for m in S.METHODS.values() if not m.interpret_only}
    for path in sorted((ROOT / "ascendc" / "compiler").glob("*.py")):
        hand = sorted((_string_constants(path) & names) - codegen.BUILTINS)
        assert not hand, f"{path.name} names surface ops by hand: {hand}"


def _prim_params(name):
    fn = getattr(prims, name)
    return list(inspect.signature(getattr(fn, "py_func", fn)).parameters)


@pytest.mark.parametrize("row", sorted(S.FUNCTIONS.values(), key=lambda r: r.name),
                         ids=lambda r: r.name)
def test_function_rows_name_primitives_with_their_parameters(row):
    """Vector and reduce primitives (made per row) carry the row's parameter names; the others
    (one primitive may serve several forms) its arity."""
    for form in row.forms:
        if form.prim is None:
            assert row.special, f"asc.{row.name}: a form without a primitive must be special"
            continue
        params = [p for p in form.params if p not in form.ignored]
        got = _prim_params(form.prim)
        if row.work in (S.Work.ELEMENTWISE, S.Work.REDUCE):
            assert got == ["ctx", *params], form.prim
        else:
            assert got[0] == "ctx" and len(got) == 1 + len(params), (form.prim, got)


@pytest.mark.parametrize("row", sorted(S.METHODS.values(), key=lambda r: r.api),
                         ids=lambda r: r.api)
def test_method_rows_name_primitives_with_their_arity(row):
    for form in row.forms:
        if form.prim is None:
            assert row.native or row.interpret_only, f"{row.api}: no primitive"
            continue
        got = _prim_params(form.prim)
        want = 1 + int(row.receiver) + len(form.params)
        assert got[0] == "ctx" and len(got) == want, f"{row.api} -> {form.prim}{tuple(got)}"


def test_handles_construct_through_their_primitives():
    for h in S.HANDLES.values():
        if h.ctor is not None and h.ctor.prim is not None:
            assert _prim_params(h.ctor.prim) == ["ctx", *h.ctor.params], h.name


def test_every_public_primitive_is_used_by_a_row():
    used = {f.prim for r in S.FUNCTIONS.values() for f in r.forms}
    used |= {f.prim for r in S.METHODS.values() for f in r.forms}
    used |= {h.ctor.prim for h in S.HANDLES.values() if h.ctor is not None}
    internal = {"kernel_end", "position_name", "load_data_typed", "gather_mask_typed",
                "stream_copy",
                "data_copy_count", "data_copy_blocks", "data_copy_nd2nz", "data_copy_ub",
                "data_copy_pad_blocks",
                "mix_sync_all",      # sync_all's MIX-launch path (prims/sync.py calls it)
                "gm_order", "gm_order_rows"}    # checked mode's GM-order records (data movement)
    unused = sorted(n for n in prims.__dict__ if not n.startswith("_") and
                    callable(prims.__dict__[n]) and n not in used and n not in internal and
                    getattr(prims.__dict__[n], "__module__", "").startswith("ascendc.lang.prims"))
    assert not unused, f"primitives no surface row names (add a row or list them as internal): " \
                       f"{unused}"


def test_rows_carry_the_hardware_facts():
    pipes = set(PipeID) | {S.BY_DIRECTION}
    for r in S.FUNCTIONS.values():
        assert r.pipe in pipes and isinstance(r.work, S.Work), r.name
    for m in S.METHODS.values():
        assert m.pipe in pipes and isinstance(m.work, S.Work), m.api
    assert S.FUNCTIONS["add"].pipe == PipeID.PIPE_V and S.FUNCTIONS["mmad"].pipe == PipeID.PIPE_M
    assert S.DIRECTION_PIPES[("GM", "UB")] == PipeID.PIPE_MTE2
    assert S.DIRECTION_PIPES[("UB", "GM")] == PipeID.PIPE_MTE3
    assert S.DIRECTION_PIPES[("L0C", "GM")] == PipeID.PIPE_FIX


def test_binding_by_keyword_and_position():
    f = S.bind("TPipe.init_buffer", S.METHODS[("TPipe", "init_buffer")].forms, 0,
               ["que", "num", "len"])
    assert f.prim == "init_buffer_que"
    f = S.bind("TPipe.init_buffer", S.METHODS[("TPipe", "init_buffer")].forms, 2, [])
    assert f.prim == "init_buffer_buf"
    with pytest.raises(TypeError, match=r"TPipe.init_buffer: arguments must match one of "
                                        r"TPipe.init_buffer\(que, num, len\) \| "
                                        r"TPipe.init_buffer\(buf, len\) \| "
                                        r"TPipe.init_buffer\(buf, num\), got 1 positional"):
        S.bind("TPipe.init_buffer", S.METHODS[("TPipe", "init_buffer")].forms, 1, [])
    assert S.FUNCTIONS["dump_tensor"].forms[0].order(["t", 1, 8], {}) == ["t", 1, 8]
