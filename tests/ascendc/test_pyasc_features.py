"""pyasc language features: `.ceildiv` / `asc.ceildiv`, helper defaults and keyword
arguments, `asc.property` platform constants, launch keywords binding parameters, kernel types
and the block numbering of mixed kernels, static `LocalTensor(dtype, pos, addr, len)`; in both
modes."""
import warnings

import numpy as np
import pytest

import ascendc as asc
import rt

MODES = [pytest.param(True, id="interpret"), pytest.param(False, id="compiled")]


# ---- 1. ceildiv ------------------------------------------------------------------------------
@asc.jit
def ceildiv_kernel(out: asc.GlobalAddress, n: int, d: int, tiling: asc.adv.TCubeTiling):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 8)
    og.set_value(0, n.ceildiv(d))
    og.set_value(1, asc.ceildiv(n, d))
    og.set_value(2, tiling.m.ceildiv(tiling.single_core_m))
    og.set_value(3, (n * 3).ceildiv(32))
    og.set_value(4, asc.ceildiv(-n, d))
    og.set_value(5, n.ceildiv(32))


@pytest.mark.parametrize("interpret", MODES)
def test_ceildiv_on_kernel_integers(interpret):
    out = np.zeros(8, np.int32)
    t = asc.adv.TCubeTiling(m=300, single_core_m=128)
    ceildiv_kernel[1](out, 100, 7, t, interpret=interpret)
    assert out[:6].tolist() == [15, 15, 3, 10, -14, 4]


def test_ceildiv_on_the_host():
    assert asc.ceildiv(7, 2) == 4 and asc.ceildiv(8, 2) == 4 and asc.ceildiv(0, 5) == 0
    with pytest.raises(TypeError, match=r"asc.ceildiv: y must be an integer, got y=2.0"):
        asc.ceildiv(7, 2.0)


# ---- 2. helper defaults and keyword arguments --------------------------------------------------
@asc.jit
def scaled(x: int, factor: int = 3, offset: int = 1, flip: bool = False):
    r = x * factor + offset
    if flip:
        r = -r
    return r


@asc.jit
def helper_kernel(out: asc.GlobalAddress, n: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, scaled(n))
    og.set_value(1, scaled(n, 2))
    og.set_value(2, scaled(n, offset=5))
    og.set_value(3, scaled(x=n, flip=True, factor=1))


@pytest.mark.parametrize("interpret", MODES)
def test_helper_defaults_and_keywords(interpret):
    out = np.zeros(4, np.int32)
    helper_kernel[1](out, 10, interpret=interpret)
    assert out.tolist() == [31, 21, 35, -11]


@asc.jit
def bad_keyword_kernel(out: asc.GlobalAddress, n: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, scaled(n, scale=2))


@asc.jit
def missing_arg_kernel(out: asc.GlobalAddress, n: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, scaled(offset=n))


@asc.jit
def twice_kernel(out: asc.GlobalAddress, n: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, scaled(n, 2, factor=3))


def test_helper_call_errors_compiled():
    out = np.zeros(4, np.int32)
    with pytest.raises(asc.CompileError, match=r"helper scaled\(\) got an unexpected keyword "
                                               r"argument 'scale' \(parameters: x, factor, "
                                               r"offset, flip\)"):
        bad_keyword_kernel[1](out, 1, interpret=False)
    with pytest.raises(asc.CompileError, match=r"helper scaled\(\) missing a required "
                                               r"argument: 'x'"):
        missing_arg_kernel[1](out, 1, interpret=False)
    with pytest.raises(asc.CompileError, match=r"helper scaled\(\) got multiple values for "
                                               r"argument 'factor'"):
        twice_kernel[1](out, 1, interpret=False)


@asc.jit
def defaults_kernel(out: asc.GlobalAddress, n: int = 3):
    pass


def test_kernel_parameters_still_have_no_defaults_compiled():
    with pytest.raises(asc.CompileError, match=r"kernel parameters must not have default "
                                               r"values \(helpers' may\)"):
        defaults_kernel[1](np.zeros(4, np.int32), 1, interpret=False)


# ---- 3. platform constants ---------------------------------------------------------------------
@asc.jit
def property_kernel(out: asc.GlobalAddress):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, asc.property(asc.TOTAL_L1_SIZE))
    og.set_value(1, asc.property(asc.TOTAL_L0C_SIZE))
    og.set_value(2, asc.property(asc.DEFAULT_C0_SIZE))
    og.set_value(3, asc.property(prop=asc.ONE_BLK_SIZE))


@pytest.mark.parametrize("interpret", MODES)
def test_platform_constants(interpret):
    soc = rt.get_soc()
    out = np.zeros(4, np.int64)
    property_kernel[1](out, interpret=interpret)
    assert out.tolist() == [soc.l1_bytes, soc.l0c_bytes, 32, soc.block_bytes]
    assert asc.property(asc.TOTAL_L1_SIZE) == soc.l1_bytes      # on the host too


@asc.jit
def bad_property_kernel(out: asc.GlobalAddress, n: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, asc.property(n))


def test_platform_constant_errors():
    out = np.zeros(4, np.int64)
    with pytest.raises(asc.CompileError, match=r"asc.property: prop must be a platform constant "
                                               r"known at compile time .* got n"):
        bad_property_kernel[1](out, 1, interpret=False)
    with pytest.raises(rt.AclError, match=r"asc.property: prop must be one of "
                                             r"asc.DEFAULT_C0_SIZE, .* got 1"):
        bad_property_kernel[1](out, 1, interpret=True)


# ---- 4. launch keywords ------------------------------------------------------------------------
@asc.jit
def fill_kernel(out: asc.GlobalAddress, value: int, count: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, count)
    for i in range(count):
        og.set_value(i, value)


@pytest.mark.parametrize("interpret", MODES)
def test_launch_keywords_bind_parameters(interpret):
    out = np.zeros(4, np.int32)
    fill_kernel[1](out, count=4, value=7, interpret=interpret)
    assert out.tolist() == [7] * 4
    fill_kernel[1, rt.current_stream()](out=out, value=2, count=3, interpret=interpret)
    assert out.tolist() == [2, 2, 2, 7]


def test_launch_keyword_errors():
    out = np.zeros(4, np.int32)
    with pytest.raises(TypeError, match=r"fill_kernel: unknown launch option 'interpert' "
                                        r"\(neither a parameter of the kernel \(out, value, "
                                        r"count\) nor an option \(interpret, "):
        fill_kernel[1](out, 1, 4, interpert=True)
    with pytest.raises(TypeError, match=r"fill_kernel: got multiple values for argument "
                                        r"'value'"):
        fill_kernel[1](out, 1, 4, value=2)
    with pytest.raises(TypeError, match=r"fill_kernel: missing a required argument: 'count'"):
        fill_kernel[1](out, 1)
    with pytest.raises(TypeError, match=r"fill_kernel: expected 3 arguments \(out, value, "
                                        r"count\), got 4"):
        fill_kernel[1](out, 1, 2, 3)
    with pytest.raises(TypeError, match=r"asc.jit: unknown option 'interprt' for k"):
        @asc.jit(interprt=True)
        def k(x: asc.GlobalAddress):
            pass
    with pytest.raises(ValueError, match=r"kernel_type must be one of AIV_ONLY, AIC_ONLY, .* "
                                         r"got kernel_type='MIX_AIC_1_3'"):
        fill_kernel[1](out, 1, 4, kernel_type="MIX_AIC_1_3")


# ---- 5. kernel types and block numbering --------------------------------------------------------
@asc.jit
def numbering_kernel(out: asc.GlobalAddress):
    _numbers_at(out, asc.get_block_idx())


@asc.jit
def mix_numbering_kernel(out: asc.GlobalAddress):
    """numbering_kernel for MIX launches: the AIV rows after the AIC rows (with one row per
    block_idx, the AIC and AIV of a group would write one row with no flag between them)."""
    row = asc.get_block_idx()
    if asc.ascend_is_aiv():
        row = row + asc.get_block_num()
    _numbers_at(out, row)


@asc.jit
def _numbers_at(out, row):
    og = asc.GlobalTensor()
    i = asc.get_block_idx()
    og.set_global_buffer(out + row * 8, 8)
    og.set_value(0, 1)
    og.set_value(1, i)
    og.set_value(2, asc.get_block_num())
    og.set_value(3, asc.get_sub_block_idx())
    og.set_value(4, asc.get_sub_block_num())
    og.set_value(5, asc.get_task_ratio())
    og.set_value(6, 1 if asc.ascend_is_aic() else 0)
    og.set_value(7, 1 if asc.ascend_is_aiv() else 0)


def _numbering(kernel_type, block_dim, interpret):
    out = np.zeros((3 * block_dim + 1, 8), np.int32)
    kernel = mix_numbering_kernel if str(kernel_type).startswith("MIX") else numbering_kernel
    kernel[block_dim](out, kernel_type=kernel_type, interpret=interpret)
    return out


@pytest.mark.parametrize("interpret", MODES)
def test_kernel_type_numbering(interpret):
    bd = 3
    # AIV_ONLY (what pyasc detects for a kernel without a Matmul): block_dim vector instances
    out = _numbering(None, bd, interpret)
    assert out[:bd].tolist() == [[1, i, bd, 0, 1, 1, 0, 1] for i in range(bd)]
    assert not out[bd:].any()
    out = _numbering("AIC_ONLY", bd, interpret)
    assert out[:bd].tolist() == [[1, i, bd, 0, 1, 1, 1, 0] for i in range(bd)]
    assert not out[bd:].any()
    # MIX_AIC_1_2 / MIX_AIC_1_1 run an AIC and 2 / 1 AIVs per block: their numbering is tested
    # in tests/ascendc/test_mix_kernels.py


@pytest.mark.parametrize("interpret", MODES)
@pytest.mark.parametrize("kt", ["MIX_AIC_1_1", "MIX_AIC_1_2"])
def test_mix_kernels_run_their_aic_side_without_a_warning(interpret, kt, monkeypatch):
    from ascendc.lang.prims import vecbase
    monkeypatch.setattr(vecbase, "_WARNED", set())      # a kernel warning is once per process
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _numbering(kt, 2, interpret)
        _numbering("AIV_ONLY", 2, interpret)
        _numbering("AIC_ONLY", 2, interpret)
    assert not [w for w in rec if "ascend_is_aic" in str(w.message)]


@pytest.mark.parametrize("interpret", MODES)
def test_the_kernel_type_shows_in_the_profile(interpret):
    out = np.zeros((3 * 2 + 1, 8), np.int32)
    with rt.profile() as prof:
        mix_numbering_kernel[2](out, kernel_type="MIX_AIC_1_2", interpret=interpret)
        numbering_kernel[2](out, interpret=interpret)
    kinds = [r.args.get("kernel_type") for r in prof.records if r.kind == "kernel"]
    assert kinds == ["MIX_AIC_1_2", "AIV_ONLY"]
    from rt.opsummary import op_summary
    rows = op_summary(prof)
    assert sorted(r["kernel_type"] for r in rows) == ["AIV_ONLY", "MIX_AIC_1_2"]
    events = [e for e in prof.chrome_trace()["traceEvents"] if e.get("cat") == "kernel"]
    assert [e["args"]["kernel_type"] for e in events] == ["MIX_AIC_1_2", "AIV_ONLY"]


@asc.jit
def cube_kernel(out: asc.GlobalAddress):
    og = asc.GlobalTensor()
    og.set_global_buffer(out + asc.get_block_idx() * 4, 4)
    og.set_value(0, 1)
    og.set_value(1, asc.get_sub_block_num())
    og.set_value(2, 1 if asc.ascend_is_aic() else 0)
    og.set_value(3, 1 if asc.ascend_is_aiv() else 0)
    if asc.get_block_num() < 0:      # never runs: a cube instruction makes the kernel AICORE
        asc.mmad(og, og, og, asc.MmadParams())


def test_kernels_issuing_cube_instructions_own_whole_ai_cores():
    out = np.zeros((3, 4), np.int32)
    cube_kernel[2](out, interpret=True)
    assert out.tolist() == [[1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]]
    assert cube_kernel.kernel_type({}) == cube_kernel.kernel_type({"kernel_type": "AICORE"})


def _tiling(m, n, k, dim):
    from ascendc.lib import host
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(dim)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    t.get_tiling(tiling)
    return tiling


@asc.jit
def mix_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      tiling: asc.adv.TCubeTiling):
    blk = asc.get_block_idx()
    m_blocks = tiling.m.ceildiv(tiling.single_core_m)
    mi = blk % m_blocks
    ni = blk // m_blocks
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a + mi * tiling.single_core_m * tiling.k_a)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b + ni * tiling.single_core_n)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c + mi * tiling.single_core_m * tiling.n + ni * tiling.single_core_n)
    pipe = asc.TPipe()
    f16 = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16)
    mm = asc.adv.Matmul(f16, f16, asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND,
                                                     asc.float32))
    asc.adv.register_matmul(pipe, mm, tiling)
    if blk < tiling.used_core_num:
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.set_tail(min(tiling.single_core_m, tiling.m - mi * tiling.single_core_m),
                    min(tiling.single_core_n, tiling.n - ni * tiling.single_core_n))
        mm.iterate_all(cg)
        mm.end()


def test_a_matmul_kernel_is_mix_and_numbers_its_aivs():
    """As tutorial 03_matmul_mix: the tiling is for 4 vector cores, the launch for 2 groups."""
    from ascendc.pyasc_compat.namespace import PyascKernel
    pyasc_kernel = PyascKernel(mix_matmul_kernel.fn)         # pyasc scripts' @asc.jit
    assert pyasc_kernel.kernel_type({}) == 7                 # MIX_AIC_1_2, as pyasc detects it
    assert pyasc_kernel.kernel_type({"matmul_cube_only": True}) == 1   # AIC_ONLY
    assert mix_matmul_kernel.kernel_type({}) == 15           # ascendc.jit: a block = an AI Core
    m, n, k = 64, 128, 32
    tiling = _tiling(m, n, k, 4)
    assert tiling.used_core_num == 4
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 3, (m, k)).astype(np.float16)
    b = rng.integers(-3, 3, (k, n)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    c = np.zeros((m, n), np.float32)
    pyasc_kernel[2](a, b, c, tiling, interpret=True)
    np.testing.assert_allclose(c, want)
    c = np.zeros((m, n), np.float32)
    mix_matmul_kernel[2](a, b, c, tiling, kernel_type="MIX_AIC_1_2", interpret=True)
    np.testing.assert_allclose(c, want)
    c = np.zeros((m, n), np.float32)
    mix_matmul_kernel[4](a, b, c, tiling, interpret=True)        # AICORE: 4 blocks
    np.testing.assert_allclose(c, want)


# ---- 6. static LocalTensor ---------------------------------------------------------------------
@asc.jit
def static_local_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, n)
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    zl = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, n * x.dtype.sizeof(), n)
    asc.data_copy(xl, xg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.adds(zl, xl, 1.0, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, zl, n)


@pytest.mark.parametrize("interpret", MODES)
def test_static_local_tensor(interpret):
    x = np.arange(64, dtype=np.float32)
    z = np.zeros_like(x)
    static_local_kernel[1](x, z, 64, interpret=interpret)
    np.testing.assert_array_equal(z, x + 1)


@asc.jit
def bad_static_local_kernel(x: asc.GlobalAddress, addr: int, n: int):
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, addr, n)
    xl.set_value(0, 1.0)


@pytest.mark.parametrize("interpret", MODES)
def test_static_local_tensor_errors(interpret):
    x = np.zeros(8, np.float32)
    with pytest.raises(rt.AclError, match=r"LocalTensor\(dtype, pos, addr, tile_size\): addr "
                                             r"must be a multiple of 32 bytes >= 0, got "
                                             r"addr=4"):
        bad_static_local_kernel[1](x, 4, 8, interpret=interpret)
    with pytest.raises(rt.AclError, match=r"addr \+ tile_size \* sizeof must fit the \d+ "
                                             r"bytes of UB, got addr=0 tile_size=100000000"):
        bad_static_local_kernel[1](x, 0, 100_000_000, interpret=interpret)


def test_unsupported_names_in_interpreted_kernels_name_the_line():
    from ascendc import pyasc_compat
    with pyasc_compat.installed():
        import asc as pyasc

        @pyasc.jit
        def auto_kernel(x: pyasc.GlobalAddress):
            pyasc.TBufPool()
        with pytest.raises(rt.AclError, match=r"asc.TBufPool \(pyasc\) is not supported "
                                              r"by ascend-emu.*\n  File \".*"
                                              r"test_pyasc_features.py\", line \d+, in kernel "
                                              r"auto_kernel\n    pyasc.TBufPool"):
            auto_kernel[1](np.zeros(8, np.float32), interpret=True)


@asc.jit
def untyped_kernel(out: asc.GlobalAddress, n: int):
    og = asc.GlobalTensor()
    og.set_global_buffer(out, 4)
    og.set_value(0, n.bit_length())


def test_numba_typing_errors_name_the_kernel_line_not_the_cache():
    with pytest.raises(rt.AclError, match=r"CompileError: kernel untyped_kernel: compiled mode "
                                          r"cannot type this statement: Unknown attribute "
                                          r"'bit_length' of type int32\n  File \".*"
                                          r"test_pyasc_features.py\", line \d+\n    "
                                          r"og.set_value\(0, n.bit_length\(\)\)") as e:
        untyped_kernel[1](np.zeros(4, np.int32), 3, interpret=False)
    assert "ascend-emu/kernels" not in str(e.value)
