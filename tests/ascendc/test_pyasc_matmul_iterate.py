"""`Matmul.iterate()` + `get_tensor_c()` with C in VECCALC, `with mm.iterate() as count:`,
TCubeTiling field writes in kernels, and the pyasc host setters."""
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc.lang.errors import CompileError
from ascendc import host as phost

# compiled: iterate/get_tensor_c, `with ... as count` and tiling writes are compiled by the
# conformance rewrites (tests/pyasc_conformance/test_rewritten_*.py: 05, test_matmul,
# test_matmul_torch); one more cold matmul compile (~2-3 min) here would only repeat them
MODES = [pytest.param(True, id="interpret")]


@asc.jit
def tiles_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                 order: asc.GlobalAddress, tiling: asc.adv.TCubeTiling,
                 workspace: asc.GlobalAddress):
    tiling.db_l0c = 2                           # a field written by the kernel
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    og = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    og.set_global_buffer(order, 64)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(q, 1, tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.VECIN, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    with mm.iterate() as count:
        t = q.alloc_tensor(cg.dtype)
        mm.get_tensor_c(t)
        q.enque(t)
        t = q.deque(cg.dtype)
        # tile `count` lands at slot `count` of C (tiles stored one after another) and
        # order[count] records its first element
        asc.data_copy(cg[count * tiling.base_m * tiling.base_n:], t,
                      tiling.base_m * tiling.base_n)
        og.set_value(count, count + 1)
        q.free_tensor(t)
    mm.end()


def _tiling(m, n, k, traverse):
    t = phost.MultiCoreMatmulTiling(phost.get_ascendc_platform())
    t.set_a_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT16)
    t.set_b_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT16)
    t.set_c_type(phost.TPosition.VECCALC, phost.CubeFormat.ND, phost.DataType.DT_FLOAT)
    t.set_shape(m, n, k)
    t.set_traverse(traverse)
    t.set_fix_split(32, 16, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


@pytest.mark.parametrize("interpret", MODES)
@pytest.mark.parametrize("traverse", [phost.MatrixTraverse.FIRSTM, phost.MatrixTraverse.FIRSTN])
def test_iterate_visits_every_tile_in_the_traverse_order(interpret, traverse):
    m, n, k = 64, 48, 32
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 4, (m, k)).astype(np.float16)
    b = rng.integers(-4, 4, (k, n)).astype(np.float16)
    tiling = _tiling(m, n, k, traverse)
    assert (tiling.base_m, tiling.base_n) == (32, 16)
    assert tiling.iterate_order == (1 if traverse == phost.MatrixTraverse.FIRSTN else 0)
    c = np.zeros(m * n, np.float32)
    order = np.zeros(64, np.int32)
    ws = np.zeros(1 << 16, np.uint8)
    tiles_kernel[1](a, b, c, order, tiling, ws, interpret=interpret)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tm, tn = m // 32, n // 16
    assert order[:tm * tn].tolist() == list(range(1, tm * tn + 1)) and order[tm * tn] == 0
    for t in range(tm * tn):
        mi, ni = (t % tm, t // tm) if traverse == phost.MatrixTraverse.FIRSTM else \
            (t // tn, t % tn)
        got = c[t * 512:(t + 1) * 512].reshape(32, 16)
        np.testing.assert_array_equal(got, ref[mi * 32:mi * 32 + 32, ni * 16:ni * 16 + 16])


@asc.jit
def no_iterate_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(q, 1, tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, c.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    t = q.alloc_tensor(c.dtype)
    mm.get_tensor_c(t)
    q.free_tensor(t)


def test_get_tensor_c_needs_a_tile_first():
    tiling = _tiling(32, 16, 32, phost.MatrixTraverse.FIRSTM)
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.get_tensor_c: iterate\(\) must return "
                                          r"True first, got no current C tile\n  File \".*"
                                          r"test_pyasc_matmul_iterate.py\", line \d+, in kernel"):
        no_iterate_kernel[1](np.zeros((32, 32), np.float16), np.zeros((32, 16), np.float16),
                             np.zeros((32, 16), np.float32), tiling,
                             np.zeros(1 << 14, np.uint8), interpret=True)


@asc.jit
def no_workspace_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                        tiling: asc.adv.TCubeTiling):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(q, 1, tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, c.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    while mm.iterate():
        t = q.alloc_tensor(c.dtype)
        mm.get_tensor_c(t)
        q.free_tensor(t)


@pytest.mark.parametrize("interpret", [True, False], ids=["interpret", "compiled"])
def test_get_tensor_c_needs_a_workspace(interpret):
    tiling = _tiling(32, 16, 32, phost.MatrixTraverse.FIRSTM)
    msg = (r"asc.adv.Matmul.(get_tensor_c|iterate): a workspace must be given to "
           r"register_matmul\(pipe, workspace, mm, ...\)")
    # interpret: a kernel fault at the call; compiled: refused while compiling
    with pytest.raises(rt.AclError if interpret else CompileError, match=msg):
        no_workspace_kernel[1](np.zeros((32, 32), np.float16), np.zeros((32, 16), np.float16),
                               np.zeros((32, 16), np.float32), tiling, interpret=interpret)


def test_with_iterate_body_must_start_with_a_simple_statement():
    with pytest.raises(CompileError, match=r"kernel bad_with: the body of `with <matmul>."
                                           r"iterate\(\) as n:` must start with a one-line "
                                           r"statement, got line \d+"):
        @asc.jit
        def bad_with(mm_holder: asc.GlobalAddress):
            mm = mm_holder
            with mm.iterate() as n:
                if n:
                    pass


def test_tiling_field_writes_are_checked_in_kernels():
    @asc.jit
    def bad_field(out: asc.GlobalAddress, tiling: asc.adv.TCubeTiling):
        tiling.base_q = 3
    with pytest.raises(rt.AclError, match=r"TCubeTiling: field must be one of TCubeTiling's "
                                          r"fields \(snake_case, e.g. single_core_m\), got "
                                          r"base_q=3"):
        bad_field[1](np.zeros(4, np.float32), asc.adv.TCubeTiling(), interpret=True)


def test_host_fix_split_and_traverse_errors():
    t = phost.MultiCoreMatmulTiling(phost.get_ascendc_platform())
    with pytest.raises(ValueError, match=r"MultiCoreMatmulTiling.set_fix_split: base_n must be -1 "
                                         r"or a positive multiple of 16, got base_n=20"):
        t.set_fix_split(32, 20)
    with pytest.raises(ValueError, match=r"MultiCoreMatmulTiling.set_traverse: traverse must be a "
                                         r"MatrixTraverse, got traverse=7"):
        t.set_traverse(7)
    t.set_a_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT16)
    t.set_b_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT16)
    t.set_c_type(phost.TPosition.VECCALC, phost.CubeFormat.ND, phost.DataType.DT_FLOAT)
    t.set_shape(512, 512, 64)
    t.set_fix_split(512, 256)
    with pytest.warns(RuntimeWarning, match=r"the fixed base_m x base_n float32 C tile must fit "
                                            r"L0C, got base_m=512 base_n=256"):
        assert t.get_tiling(asc.adv.TCubeTiling()) == -1


_RELOADED = '''
import ascendc as asc


@asc.jit
def k(x: asc.GlobalAddress):
    mm = None
    with mm.iterate() as c:
        y = "VERSION"
'''


def test_an_edited_and_reloaded_with_iterate_kernel_is_rewritten_from_the_new_text(tmp_path,
                                                                                   monkeypatch):
    """The rewritten lines are cached per file with the file's size and mtime, so an edit is
    seen after importlib.reload (not the first version's rewrite)."""
    import importlib
    import inspect
    import os
    import sys
    src = tmp_path / "reloaded_iterate_kernel.py"
    src.write_text(_RELOADED.replace("VERSION", "v1"))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("reloaded_iterate_kernel")
    try:
        assert 'c = mm._iterate_count(); y = "v1"' in inspect.getsource(mod.k.fn)
        src.write_text(_RELOADED.replace("VERSION", "v22"))
        st = os.stat(src)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        mod = importlib.reload(mod)
        text = inspect.getsource(mod.k.fn)
        assert 'c = mm._iterate_count(); y = "v22"' in text and "v1" not in text
    finally:
        sys.modules.pop("reloaded_iterate_kernel", None)


def test_with_iterate_in_a_closure_is_refused_by_name():
    def make():
        mm = None

        def inner(x: asc.GlobalAddress):
            with mm.iterate() as c:  # noqa: F841
                pass
        return inner
    with pytest.raises(CompileError, match=r"kernel inner: `with <matmul>.iterate\(\)` must be in "
                                           r"a module-level function whose source file exists, "
                                           r"got a closure"):
        asc.jit(make())
