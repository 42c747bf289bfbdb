"""The kernel language end to end: launch, argument typing, rules and their messages, checked
mode, both execution modes."""
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc.lang.errors import CompileError

import kernels_for_tests as K


def test_copy_kernel_both_modes(interpret):
    x = np.arange(256, dtype=np.float32)
    z = np.zeros_like(x)
    K.copy_kernel[1](x, z, 256, interpret=interpret)
    np.testing.assert_array_equal(z, x + 1)


def test_keyword_arguments_in_both_modes(interpret):
    """Every call may use pyasc's parameter names as keywords (the surface table binds them)."""
    x = np.arange(128, dtype=np.float32)
    z = np.zeros_like(x)
    K.keyword_kernel[1](x, z, 128, interpret=interpret)
    np.testing.assert_array_equal(z, 2 * x + 1)


def test_device_arrays_are_used_in_place_asynchronously(interpret):
    x = np.arange(128, dtype=np.float32)
    s = rt.Stream()
    dx, dz = rt.to_device(x), rt.device_zeros(128, np.float32)
    K.copy_kernel[1, s](dx, dz, 128, interpret=interpret)
    s.synchronize()
    np.testing.assert_array_equal(dz.copy_to_host(), x + 1)


def test_missing_enque_deque_is_reported_in_checked_mode(interpret):
    x = np.arange(K.TILE, dtype=np.float32)
    z = np.zeros_like(x)
    # the GM->UB copy was never made visible to MTE3: on the NPU the copy-out reads stale UB
    with pytest.raises(rt.AclError, match=r"kernel 'no_sync_kernel'\[1\]: block_idx=0/1: "
                       r"data_copy: src must be ordered after the MTE2 copy that wrote it, by "
                       r"wait_flag\(HardEvent.MTE2_MTE3\)") as e:
        K.no_sync_kernel[1](x, z, interpret=interpret, checked=True)
    assert e.value.code == 507015
    K.no_sync_kernel[1](x, z, interpret=interpret, checked=False)
    np.testing.assert_array_equal(z, x)


def test_wait_flag_makes_the_copy_visible(interpret):
    x = np.arange(K.TILE, dtype=np.float32)
    z = np.zeros_like(x)
    K.flag_sync_kernel[1](x, z, interpret=interpret, checked=True)
    np.testing.assert_array_equal(z, x)


@pytest.mark.parametrize("what, message", [
    (0, r"TQue.deque: the queue must hold an enqueued tensor, got an empty VECIN TQue #0"),
    (1, r"TQue.alloc_tensor: a free buffer must be available, got all 1 buffers"),
    (2, r"TQue.free_tensor: tensor must be a buffer of VECIN TQue #0, got a foreign tensor"),
    (3, r"kernel end: every tensor must be freed with free_tensor, got 1 tensor\(s\) still held"),
])
def test_queue_discipline(interpret, what, message):
    x = np.zeros(8, np.float32)
    with pytest.raises(rt.AclError,
                       match=r"kernel 'queue_misuse_kernel'\[1\]: block_idx=0/1: " + message) as e:
        K.queue_misuse_kernel[1](x, what, interpret=interpret)
    assert e.value.code == 507015


def test_capacity_error_names_queue_bytes_asked_and_left(interpret):
    x = np.zeros(8, np.float32)
    with pytest.raises(rt.AclError, match=r"VECIN TQue #0 must fit in UB, asked 262144 bytes "
                                          r"\(2 x 131072\), got 196608 bytes left of 196608"):
        K.capacity_kernel[1](x, 131072, interpret=interpret)
    K.capacity_kernel[1](x, 96 * 1024, interpret=interpret)  # exactly fits


def test_gm_out_of_range_names_kernel_block_argument_and_offset(interpret):
    x = np.zeros(3 * K.TILE, np.float32)
    z = np.zeros(8, np.float32)
    with pytest.raises(rt.AclError, match=r"kernel 'oob_kernel'\[4\]: block_idx=3/4: "
                                          r"GlobalTensor.set_global_buffer: GM read must stay "
                                          r"inside argument 'x' \(192 elements\), got elements "
                                          r"\[192, 256\)\n  File \".*kernels_for_tests.py\", "
                                          r"line \d+, in kernel oob_kernel\n    "
                                          r"xg.set_global_buffer\(x \+ base, TILE\)") as e:
        K.oob_kernel[4](x, z, K.TILE, interpret=interpret)
    assert e.value.code == 507042


def test_gm_errors_name_the_gm_argument_after_a_scalar(interpret):
    x = np.zeros(K.TILE, np.float32)
    with pytest.raises(rt.AclError, match=r"GM read must stay inside argument 'x' \(64 elements\), "
                                          r"got elements \[16, 80\)\n  File .*, in kernel "
                                          r"scalar_first_oob_kernel\n    xg.set_global_buffer"):
        K.scalar_first_oob_kernel[1](16, x, interpret=interpret)   # past its 288-byte allocation


def test_host_address_is_an_illegal_address():
    h = rt.malloc_host(256)
    try:
        with pytest.raises(rt.AclError,
                           match=r"argument 'x' is a host address .* illegal address") as e:
            K.capacity_kernel[1](h, 64)
        assert e.value.code == 507015
    finally:
        rt.free_host(h)


def test_one_tpipe_per_kernel(interpret):
    with pytest.raises(rt.AclError, match="a kernel must create exactly one TPipe"):
        K.two_pipes_kernel[1](np.zeros(8, np.float32), interpret=interpret)


def test_scalars_constexpr_and_block_num(interpret):
    z = np.zeros(8, np.float32)
    K.scalar_kernel[3](z, 7, 2.5, 11, interpret=interpret)
    np.testing.assert_array_equal(z[:5], [7, 2.5, 11, 3, 5.0])


def test_launch_errors():
    z = np.zeros(8, np.float32)
    with pytest.raises(rt.AclError, match=r"block_dim must be in \[1, 65535\], got block_dim=0"):
        K.scalar_kernel[0](z, 1, 1.0, 1)
    with pytest.raises(TypeError, match=r"launched with scalar_kernel\[block_dim\]"):
        K.scalar_kernel(z, 1, 1.0, 1)
    with pytest.raises(TypeError, match="expected 4 arguments"):
        K.scalar_kernel[1](z, 1)
    with pytest.raises(rt.AclError, match="int argument must fit int32"):
        K.scalar_kernel[1](z, 2**40, 1.0, 1)


def test_printf(capfd, interpret):
    K.printf_kernel[2](np.zeros(1, np.float32), interpret=interpret, checked=False)
    out = capfd.readouterr().out
    assert "block 0 of 2" in out and "block 1 of 2" in out


def test_compile_error_points_at_the_line():
    @asc.jit
    def bad(x: asc.GlobalAddress):
        f = lambda v: v  # noqa: E731, F841  the lambda is the compile error under test
    with pytest.raises(CompileError) as e:
        bad[1](np.zeros(8, np.float32))
    msg = str(e.value)
    assert "kernel bad: nested functions, lambdas and classes are not supported" in msg
    assert "test_language.py\", line" in msg and "f = lambda v: v" in msg and "^" in msg


def test_plain_python_helper_is_rejected():
    def helper(v):
        return v

    @asc.jit
    def calls_helper(x: asc.GlobalAddress, n: int):
        m = helper(n)  # noqa: F841  calling a plain function is the compile error under test
    with pytest.raises(CompileError, match="function 'helper' must be an @asc.jit helper"):
        calls_helper[1](np.zeros(8, np.float32), 3)


def test_interpret_env_switch(monkeypatch):
    """ASCENDC_INTERPRET=1 runs the Python source: a Python-only construct proves it."""
    seen = []

    @asc.jit
    def probe(z: asc.GlobalAddress):
        seen.append(asc.get_block_idx())
    monkeypatch.setenv("ASCENDC_INTERPRET", "1")
    probe[2](np.zeros(1, np.float32))
    assert sorted(seen) == [0, 1]


def test_generated_source_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCENDC_CACHE_DIR", str(tmp_path))

    @asc.jit
    def tiny(z: asc.GlobalAddress):
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 1)
        zg.set_value(0, 42)
    z = np.zeros(1, np.int32)
    tiny[1](z)
    assert z[0] == 42
    files = list(tmp_path.glob("ascendc_gen_tiny_*.py"))
    assert len(files) == 1 and "@njit(nogil=True, cache=True)" in files[0].read_text()
