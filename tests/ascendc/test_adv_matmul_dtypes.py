"""asc.adv.Matmul beyond float32 C: int8 x int8 -> int32 (the cube's int8 path, C0 = 32),
float16 C, C tiles through iterate() + get_tensor_c() into a VECCALC local tensor (float16 and
int32 C) or straight into C in GM (Ascend C's GetTensorC(gm) form), and the dtype combinations
that are refused.

Compiled kernels are slow to compile: one specialisation per kernel and dtype combination, shared
by every shape and transpose (transposes, bias, en_sequential_write are run-time arguments);
the other combinations run interpreted (the same kernel-language helpers)."""
import numpy as np
import pytest

import ascendc as asc
import rt

BM = BN = 32


def combos(*cases):
    """pytest params (interpret, ab, cdt) named mode-ab-cdt; compiled ones marked slow (a cold
    Matmul specialisation takes a minute or more to compile)."""
    out = []
    for interpret, ab, cdt in cases:
        name = (f"{'interpret' if interpret else 'compiled'}-{np.dtype(ab).name}-"
                f"{np.dtype(cdt).name}")
        out.append(pytest.param(interpret, ab, cdt, id=name,
                                marks=() if interpret else pytest.mark.slow))
    return out


@asc.jit
def mm_all_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                  bias: asc.GlobalAddress, tiling: asc.adv.TCubeTiling, ta: int, tb: int,
                  use_bias: int):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    biasg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    biasg.set_global_buffer(bias)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype, True),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype, True),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_a(ag, ta)
    mm.set_tensor_b(bg, tb)
    if use_bias:
        mm.set_bias(biasg)
    mm.iterate_all(cg)
    mm.end()


@asc.jit
def mm_iter_gm_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      tiling: asc.adv.TCubeTiling, seq: int):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)      # no workspace: C goes straight to GM
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    with mm.iterate() as count:
        slot = count * tiling.base_m * tiling.base_n
        if seq:     # tile `count` as a base_m x base_n block at slot `count`
            mm.get_tensor_c(cg[slot:], en_sequential_write=True)
        else:       # tile at its place in C
            mm.get_tensor_c(cg)
    mm.end()


@asc.jit
def mm_iter_ub_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(q, 1, tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    with mm.iterate() as count:
        t = q.alloc_tensor(cg.dtype)
        mm.get_tensor_c(t)
        q.enque(t)
        t = q.deque(cg.dtype)
        asc.data_copy(cg[count * tiling.base_m * tiling.base_n:], t,
                      tiling.base_m * tiling.base_n)
        q.free_tensor(t)
    mm.end()


def tiling(m, n, k, isz):
    """A hand-made tiling (base_k two C0 blocks: 64 for int8, 32 for 16-bit)."""
    return asc.adv.TCubeTiling(
        used_core_num=1, m=m, n=n, k_a=k, k_b=k, single_core_m=m, single_core_n=n,
        single_core_k=k, base_m=BM, base_n=BN, base_k=64 // isz, depth_a1=2, depth_b1=2,
        step_m=1, step_n=1, step_k_a=1, step_k_b=1, db_l0a=2, db_l0b=2, db_l0c=1)


def operands(m, n, k, dtype, seed=0):
    r = np.random.default_rng(seed)
    if dtype == np.int8:    # the full int8 range: k * 127 * 128 is far from int32's limits
        return (r.integers(-128, 128, (m, k)).astype(np.int8),
                r.integers(-128, 128, (k, n)).astype(np.int8))
    return (r.standard_normal((m, k)).astype(dtype), r.standard_normal((k, n)).astype(dtype))


def reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def check(got, ref, cdt):
    if cdt == np.int32:
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, ref.astype(np.int64))     # exact
    elif cdt == np.float16:     # fp32 accumulation, one rounding to fp16 at the fixpipe
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-3, atol=2e-3)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


SHAPES = [pytest.param((40, 50, 67), id="ragged"), pytest.param((64, 64, 128), id="tiles")]


# ---- iterate_all, C in GM ----------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("interpret,ab,cdt", combos(
    (True, np.int8, np.int32), (False, np.int8, np.int32),
    (True, np.float16, np.float16), (True, np.float16, np.float32)))
def test_iterate_all(interpret, ab, cdt, shape):
    m, n, k = shape
    a, b = operands(m, n, k, ab)
    bias_dt = np.int32 if ab == np.int8 else np.float32
    bias = (np.arange(n) * 3 - 40).astype(bias_dt)
    t = tiling(m, n, k, np.dtype(ab).itemsize)
    # int8 A^T / B^T take the int8 strip copies (nd2nz_strips_int8), odd K rows included
    cases = [(0, 0, 0), (1, 0, 1), (0, 1, 0), (1, 1, 1)] if ab == np.int8 else [(1, 1, 1)]
    for ta, tb, use_bias in cases:
        ga = np.ascontiguousarray(a.T) if ta else a
        gb = np.ascontiguousarray(b.T) if tb else b
        c = np.full((m, n), 7, cdt)
        mm_all_kernel[1](ga, gb, c, bias, t, ta, tb, use_bias, interpret=interpret)
        check(c, reference(a, b) + (bias if use_bias else 0), cdt)


# ---- iterate + get_tensor_c(gm) ----------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("interpret,ab,cdt", combos(
    (True, np.int8, np.int32), (False, np.int8, np.int32), (True, np.float16, np.float16)))
def test_get_tensor_c_into_gm(interpret, ab, cdt, shape):
    m, n, k = shape
    a, b = operands(m, n, k, ab, seed=1)
    ref = reference(a, b)
    t = tiling(m, n, k, np.dtype(ab).itemsize)
    c = np.zeros((m, n), cdt)
    mm_iter_gm_kernel[1](a, b, c, t, 0, interpret=interpret)
    check(c, ref, cdt)
    # en_sequential_write: tile i (along M first) at slot i, rows base_n apart
    tm, tn = -(-m // BM), -(-n // BN)
    slots = np.full((tm * tn, BM, BN), 5, cdt)
    mm_iter_gm_kernel[1](a, b, slots, t, 1, interpret=interpret)
    for i in range(tm * tn):
        r0, c0 = (i % tm) * BM, (i // tm) * BN
        blk = ref[r0:r0 + BM, c0:c0 + BN]
        check(slots[i, :blk.shape[0], :blk.shape[1]], blk, cdt)
        assert (slots[i, blk.shape[0]:] == 5).all() and (slots[i, :, blk.shape[1]:] == 5).all()


# ---- iterate + get_tensor_c(local VECCALC) ------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("interpret,ab,cdt", combos(
    (True, np.int8, np.int32), (False, np.int8, np.int32),
    (True, np.float16, np.float16), (False, np.float16, np.float16)))
def test_get_tensor_c_into_veccalc(interpret, ab, cdt, shape):
    m, n, k = shape
    a, b = operands(m, n, k, ab, seed=2)
    ref = reference(a, b)
    tm, tn = -(-m // BM), -(-n // BN)
    out = np.zeros((tm * tn, BM, BN), cdt)
    ws = np.zeros(BM * BN * 4, np.uint8)
    mm_iter_ub_kernel[1](a, b, out, tiling(m, n, k, np.dtype(ab).itemsize), ws,
                         interpret=interpret)
    for i in range(tm * tn):
        r0, c0 = (i % tm) * BM, (i // tm) * BN
        blk = ref[r0:r0 + BM, c0:c0 + BN]
        check(out[i, :blk.shape[0], :blk.shape[1]], blk, cdt)


# ---- refused combinations ----------------------------------------------------------------------

def test_int8_a_with_float16_b_is_refused():
    a, b = operands(32, 32, 64, np.int8)
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.iterate_all: a and b must both be "
                                          r"int8, both float16/bfloat16 or both float32, got "
                                          r"element sizes a=1 b=2"):
        mm_all_kernel[1](a, b.astype(np.float16), np.zeros((32, 32), np.int32),
                         np.zeros(32, np.int32), tiling(32, 32, 64, 1), 0, 0, 0, interpret=True)


@pytest.mark.parametrize("ab,cdt,msg", [
    (np.int8, np.float16, "element sizes a=1 c=2"), (np.int8, np.float32, None),
    (np.float32, np.float16, "element sizes a=4 c=2")])
def test_c_dtype_must_fit_the_operands(ab, cdt, msg):
    a, b = operands(32, 32, 64, ab)
    c = np.zeros((32, 32), cdt)
    args = (a, b, c, np.zeros(32, np.float32), tiling(32, 32, 64, np.dtype(ab).itemsize), 0, 0, 0)
    if msg is None:     # int8 -> float32: same size as int32; the fixpipe refuses the pair
        with pytest.raises(rt.AclError, match=r"fixpipe: quant_pre and dtypes must be one of .*"
                                              r"got src=int32 dst=float32"):
            mm_all_kernel[1](*args, interpret=True)
        return
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.iterate_all: c must be int32 for int8 "
                                          r"a and b \(quantised int8 -> float16 C is not "
                                          r"emulated\), float32 for float32 a and b, .*got " +
                                          msg):
        mm_all_kernel[1](*args, interpret=True)


@asc.jit
def bad_c_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                 tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress, local: int):
    """C declared in VECIN; get_tensor_c given a float32 LocalTensor (local=1) or the
    GlobalTensor C (local=0)."""
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(q, 1, tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.VECIN, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    while mm.iterate():
        if local:
            t = q.alloc_tensor(asc.float32)
            mm.get_tensor_c(t)
            q.free_tensor(t)
        else:
            mm.get_tensor_c(cg)


def test_local_c_tensor_must_have_c_dtype():
    a, b = operands(32, 32, 32, np.float16)
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.get_tensor_c: the tensor's dtype must "
                                          r"be MatmulType c's, got element size 4 for MatmulType "
                                          r"size c=2"):
        bad_c_kernel[1](a, b, np.zeros((32, 32), np.float16), tiling(32, 32, 32, 2),
                        np.zeros(BM * BN * 4, np.uint8), 1, interpret=True)


def test_get_tensor_c_tensor_kind_must_follow_c_position():
    a, b = operands(32, 32, 64, np.int8)
    # C declared in VECIN: get_tensor_c takes a LocalTensor
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.get_tensor_c: tensor must be a "
                                          r"LocalTensor \(MatmulType c is in TPosition.VECIN; "
                                          r"optional_tensor is not supported\), got "
                                          r"tensor=GlobalTensor"):
        bad_c_kernel[1](a, b, np.zeros((32, 32), np.int32), tiling(32, 32, 64, 1),
                        np.zeros(BM * BN * 4, np.uint8), 0, interpret=True)
