"""Kernels call their larger primitives instead of inlining them (docs/compile-time.md).

The generated kernel functions compile as GLUE (ascendc/compiler/gluejit.py); a primitive whose
optimised code is large is then only declared in the kernel's LLVM module and called, small ones
stay inlined (lang/numba_link.py, CalledLibrary). A kernel loaded from the disk cache first loads
the primitives it calls (PrimLoader), also when their own cache was dropped and they recompile
under another symbol.
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import types

import ascendc as asc
from ascendc.compiler.codegen import kernel_module
from ascendc.lang import numba_link
from ascendc.lang.errors import KernelError

ROOT = pathlib.Path(__file__).resolve().parents[2]
TILE = 64

pytestmark = pytest.mark.skipif(not numba_link.prim_calls_enabled(),
                                reason="ASCEND_EMU_PRIM_CALLS=0: primitives are inlined")


@asc.jit
def scale_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    """z = 2 * x + block index, n elements per block, in tiles of TILE through queues."""
    base = asc.get_block_idx() * n
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + base, n)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, TILE * 4)
    pipe.init_buffer(qo, 1, TILE * 4)
    for t in range(n // TILE):
        a = qi.alloc_tensor(x.dtype)
        asc.data_copy(a, xg[t * TILE:], TILE)
        qi.enque(a)
        a = qi.deque(x.dtype)
        b = qo.alloc_tensor(z.dtype)
        asc.muls(b, a, 2.0, TILE)
        asc.adds(b, b, 1.0 * asc.get_block_idx(), TILE)
        qo.enque(b)
        qi.free_tensor(a)
        b = qo.deque(z.dtype)
        asc.data_copy(zg[t * TILE:], b, TILE)
        qo.free_tensor(b)


def _compiled_run(kernel):
    """The `_run` dispatcher of the kernel's one compiled specialisation."""
    (binary,) = [b for b in kernel._cache.values() if hasattr(b, "run")]
    return binary.run


def test_kernel_glue_declares_large_primitives_and_inlines_small_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCENDC_CACHE_DIR", str(tmp_path))     # compiled here, not loaded
    x = np.arange(4 * TILE, dtype=np.float32)
    z = np.zeros_like(x)
    scale_kernel[1](x, z, x.size, interpret=False)
    np.testing.assert_array_equal(z, 2 * x)
    (cres,) = _compiled_run(scale_kernel).overloads.values()
    ir = cres.library.get_llvm_str()
    defined = {ln.split("@")[1].split("(")[0].strip('"') for ln in ir.splitlines()
               if ln.startswith("define")}
    declared = {ln.split("@")[1].split("(")[0].strip('"') for ln in ir.splitlines()
                if ln.startswith("declare")}

    def mangled(prim):
        return {c.fndesc.mangled_name for c in prim.overloads.values()}
    from ascendc.lang import prims
    assert mangled(prims.que_deque) & declared, "que_deque must be called, not inlined"
    assert not mangled(prims.que_deque) & defined
    assert mangled(prims.data_copy_count) & declared
    # get_block_idx is a load from the core state: inlined, not called
    assert not mangled(prims.get_block_idx) & declared


def test_generated_module_uses_glue_jit_only_when_prim_calls_are_on(monkeypatch):
    sig = (("GA", "float32"), ("GA", "float32"), ("S", "int32"))
    glue = "from ascendc.compiler.gluejit import glue_jit as njit\n"
    plain = "from ascendc.lang.numba_link import cached_njit as njit\n"   # sealed cache files
    on = kernel_module(scale_kernel, {}, sig)
    assert glue in on and plain not in on
    # the kernel is inlined into _run, compiled once
    assert "@njit(nogil=True, cache=True, inline='always')\ndef _kernel(" in on
    monkeypatch.setenv("ASCEND_EMU_PRIM_CALLS", "0")
    off = kernel_module(scale_kernel, {}, sig)
    assert glue not in off and plain in off
    assert "@njit(nogil=True, cache=True)\ndef _kernel(" in off


def test_prim_loader_refuses_a_primitive_whose_return_type_changed():
    loader = numba_link.PrimLoader("ascendc.lang.core", "level_name", (types.int64,),
                                   types.int64, "_no_such_symbol")
    with pytest.raises(KernelError, match=r"cached kernel: primitive level_name\(int64,\) must "
                                          r"return int64 as when the kernel was compiled, got "
                                          r"unicode_type \(clear the kernel cache\)"):
        loader()


CHILD = textwrap.dedent("""
    import numpy as np
    from tests.ascendc.test_compile_prim_calls import scale_kernel, _compiled_run, TILE
    x = np.arange(8 * TILE, dtype=np.float32)
    z = np.zeros_like(x)
    scale_kernel[2](x, z, x.size // 2, interpret=False)
    want = 2 * x + np.repeat([0.0, 1.0], x.size // 2).astype(np.float32)
    assert np.array_equal(z, want), (z, want)
    print("HITS", sum(_compiled_run(scale_kernel).stats.cache_hits.values()))
""")


@pytest.mark.slow
def test_cached_kernel_loads_its_primitives_first_even_when_they_recompile(tmp_path):
    numba_cache, kernels = tmp_path / "numba", tmp_path / "kernels"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(numba_cache), ASCENDC_CACHE_DIR=str(kernels),
               PYTHONPATH=str(ROOT))

    def child():
        r = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        return int(r.stdout.split("HITS")[-1])

    assert child() == 0                 # compiled, primitives and kernel cached
    assert child() == 1                 # kernel loaded from disk, its primitives first
    # drop the primitives' cache only: they recompile under new symbols, the cached kernel
    # still refers to the old ones
    for f in numba_cache.rglob("*.nb[ic]"):
        if "kernels" not in str(f.relative_to(numba_cache)):
            f.unlink()
    assert child() == 1


@asc.jit
def scalar_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, k: asc.ConstExpr[int]):
    """z[i] = k * x[i] by scalar get/set_value: small primitives (inlined into the glue) that
    call a large one (the index check)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, n)
    for i in range(n):
        zg.set_value(i, xg.get_value(i) * k)


SCALAR_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from tests.ascendc.test_compile_prim_calls import scalar_kernel, _compiled_run
    k = int(sys.argv[1])
    x = np.arange(40, dtype=np.float32)
    z = np.zeros_like(x)
    scalar_kernel[1](x, z, x.size, k, interpret=False)
    assert np.array_equal(z, k * x), z
    print("HITS", sum(_compiled_run(scalar_kernel).stats.cache_hits.values()))
""")


@pytest.mark.slow
def test_a_kernel_compiled_against_cached_primitives_that_call_primitives_loads(tmp_path):
    """get/set_value call the index check (a primitive calling a primitive, not inlining it).
    A kernel compiled in a process that loaded them from the disk cache, then loaded from disk
    in a process that loaded nothing, must find every symbol they call."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               ASCENDC_CACHE_DIR=str(tmp_path / "kernels"), PYTHONPATH=str(ROOT))

    def child(k):
        r = subprocess.run([sys.executable, "-c", SCALAR_CHILD, str(k)], env=env, cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        return int(r.stdout.split("HITS")[-1])

    assert child(2) == 0        # primitives compiled and cached with kernel k=2
    assert child(3) == 0        # kernel k=3 compiled against the cached primitives
    assert child(3) == 1        # kernel k=3 loaded from disk, in a process that loaded nothing


def test_an_inlined_primitive_rebuilt_from_the_cache_passes_on_its_loaders():
    """A small primitive is inlined into its caller, and what it calls must be loaded before
    the caller's cached code: a library rebuilt from Numba's disk cache has no loaders of its
    own (they are kept on the compile result), so they are taken from there."""
    class Lib:              # a library as Numba rebuilds it from the cache
        _reload_init = set()

        def _get_module_for_linking(self):
            raise AssertionError("size asked outside a compile")

    class Cres:
        reload_init = [numba_link.PrimLoader("m", "big", (), types.none, "sym")]

    called = numba_link.CalledLibrary(Lib(), Cres(), None)
    assert not numba_link._COMPILING.stack            # outside a compile: linked, not called
    assert called._reload_init == set(Cres.reload_init)
