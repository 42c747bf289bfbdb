"""Trusted host inputs cannot give silent wrong results or crash the
process; every refusal names the API, the rule and the value."""
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ascendc as asc
import rt
from kernels.add import AddTiling, add, add_tiling
from kernels.matmul import matmul, matmul_tiling
from kernels.norm import layernorm, layernorm_tiling
from kernels.softmax import softmax, softmax_tiling
from rt.kernel import KernelBinary

from rt_test_helpers import raises


class Nop(KernelBinary):
    name = "nop"

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        pass


# -- item 8: kernel wrappers validate a user tiling and the dtypes --------------------------------
def test_add_refuses_a_tiling_that_covers_part_of_the_input():
    x = np.ones(4096, np.float32)
    quarter = add_tiling(1024, np.float32)
    with pytest.raises(ValueError, match=r"add: tiling\.total must equal the input's 4096 "
                                         r"elements, got tiling\.total=1024"):
        add(x, x, tiling=quarter)
    short = AddTiling(4096, 2, 1024, 512)
    with pytest.raises(ValueError, match=r"add: tiling\.block_dim \* tiling\.per_core must cover "
                                         r"all 4096 elements, got tiling\.block_dim \* "
                                         r"tiling\.per_core=2 \* 1024 = 2048"):
        add(x, x, tiling=short)
    with pytest.raises(ValueError, match=r"add: tiling\.tile \* itemsize must be a multiple of 32 "
                                         r"bytes, got tiling\.tile=12 \(48 bytes of float32\)"):
        add(x, x, tiling=AddTiling(4096, 1, 4096, 12))
    with pytest.raises(ValueError, match=r"add: tiling\.tile must fit 3 x 2 buffers in UB"):
        add(x, x, tiling=AddTiling(4096, 1, 4096, 1 << 20))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint8])
def test_add_refuses_dtypes_the_vector_unit_lacks(dtype):
    x = np.ones(64, dtype)
    with pytest.raises(TypeError, match=r"add: dtype must be one of float32, float16, bfloat16, "
                                        rf"int32, int16 \(.*\), got dtype={np.dtype(dtype)}"):
        add(x, x)
    with pytest.raises(TypeError, match=r"add_tiling: dtype must be one of"):
        add_tiling(64, dtype)


def test_other_wrappers_refuse_a_tiling_for_other_shapes():
    x = np.ones((8, 64), np.float32)
    with pytest.raises(ValueError, match=r"softmax: tiling must be for rows=8 cols=64"):
        softmax(x, tiling=softmax_tiling(2, 64, np.float32))
    with pytest.raises(ValueError, match=r"layernorm: tiling must be for rows=8 cols=64"):
        layernorm(x, np.ones(64, np.float32), np.zeros(64, np.float32),
                  tiling=layernorm_tiling(2, 64, np.float32))
    a = np.ones((32, 32), np.float16)
    with pytest.raises(ValueError, match=r"matmul: tiling must be made for these inputs"):
        matmul(a, a, tiling=matmul_tiling(16, 32, 32, np.float16))


# -- item 9 ---------------------------------------------------------------------------------------
def test_bogus_raw_host_pointer_is_refused_not_a_segfault():
    code = textwrap.dedent("""
        import numpy as np, rt
        rt.init(); rt.set_device(0)
        d = rt.to_device(np.arange(16, dtype=np.float32))
        try:
            rt.memcpy(0x10, d.ptr, 64, rt.MemcpyKind.DEVICE_TO_HOST)
        except rt.AclError as e:
            print("CODE", e.code, e.message)
        try:
            rt.memcpy(d.ptr, 0xdead0000, 64, rt.MemcpyKind.HOST_TO_DEVICE)
        except rt.AclError as e:
            print("CODE", e.code, e.message)
        buf = np.zeros(16, np.float32)
        rt.memcpy(buf.ctypes.data, d.ptr, 64, rt.MemcpyKind.DEVICE_TO_HOST)   # a real one works
        print("OK", buf[:4].tolist())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("CODE 107000 rt.memcpy: dst must point to writable host memory "
                               "of this process for count bytes, got dst=0x10, count=64")
    assert lines[1].startswith("CODE 107000 rt.memcpy: src must point to host memory of this "
                               "process for count bytes, got src=0xdead0000, count=64")
    assert lines[2] == "OK [0.0, 1.0, 2.0, 3.0]"


def test_device_array_of_another_device_in_a_launch(dev0):
    rt.set_device(1)
    x1 = rt.device_zeros(16)
    rt.set_device(0)
    with raises(107000, r"launch: kernel nop: args\[1\] must live on the stream's device 0, got "
                        r"args\[1\] on device 1"):
        rt.launch(Nop(), 1, (1, x1), rt.Stream())


def test_destroyed_stream_and_event_answer_107017(dev0):
    s = rt.Stream()
    s.destroy()
    with raises(107017, r"synchronize: stream must not be destroyed, got stream=\d+"):
        s.synchronize()
    with raises(107017, r"query: stream must not be destroyed, got stream=\d+"):
        s.query()
    e = rt.Event()
    e.record(rt.Stream())
    e.destroy()
    with raises(107017, r"synchronize: event must not be destroyed, got event=\d+"):
        e.synchronize()
    with raises(107017, r"query: event must not be destroyed, got event=\d+"):
        e.query()


def test_free_none_and_launch_on_a_non_stream(dev0):
    with raises(100000, r"rt\.free: ptr must be a device pointer returned by rt\.malloc, got "
                        r"ptr=None"):
        rt.free(None)
    with raises(107000, r"launch: stream must be an rt\.Stream or None, got stream='str'"):
        rt.launch(Nop(), 1, (), "str")


@asc.jit
def _copy_kernel(x: asc.GlobalAddress):
    pass


def test_kernel_subscript_with_a_string_stream(dev0):
    x = rt.device_zeros(8)
    with raises(107000, r"launch: stream must be an rt\.Stream or None, got stream='str' "
                        r"\(kernel _copy_kernel\)"):
        _copy_kernel[4, "str"](x, interpret=True)


N = 64


@asc.jit
def _bind_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, nx: int, nz: int):
    """Copies nx elements of x to z, bound with nz elements."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, nx)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, nz)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, 2 * N * 4)
    t = buf.get(asc.float32)
    asc.data_copy(t, xg, nx)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg, t, nx)


@pytest.mark.parametrize("interpret", [True, False])
def test_integer_host_pointer_for_a_global_address_is_refused_clearly(dev0, interpret):
    h = np.zeros(N, np.float32)
    z = rt.device_zeros((N,), np.float32)
    for v in (np.int64(h.ctypes.data), h.ctypes.data, 8):
        with raises(100000, rf"_bind_kernel: GlobalAddress argument 'x' must be an "
                            rf"rt\.DeviceArray, rt\.DevicePtr, numpy array or CPU torch tensor "
                            rf"\(an integer is not a device address\), got x={re.escape(repr(v))}"):
            _bind_kernel[1](v, z, N, N, interpret=interpret)


@pytest.mark.parametrize("interpret", [True, False])
def test_over_bind_is_labelled_by_what_the_kernel_does_with_the_argument(dev0, interpret):
    x = rt.to_device(np.arange(N, dtype=np.float32))
    z = rt.device_zeros((N,), np.float32)
    with raises(507043, r"GlobalTensor\.set_global_buffer: GM write must stay inside argument "
                        r"'z' \(64 elements\), got elements \[0, 128\)"):
        _bind_kernel[1](x, z, N, 2 * N, interpret=interpret)       # the output: a write
        rt.current_stream().synchronize()
    with raises(507042, r"GlobalTensor\.set_global_buffer: GM read must stay inside argument "
                        r"'x' \(64 elements\), got elements \[0, 128\)"):
        _bind_kernel[1](x, z, 2 * N, N, interpret=interpret)       # an input: a read
        rt.current_stream().synchronize()
    _bind_kernel[1](x, z, N, N, interpret=interpret)
    rt.current_stream().synchronize()
    np.testing.assert_array_equal(z.copy_to_host(), np.arange(N, dtype=np.float32))


@pytest.mark.parametrize("shape, msg", [
    ((2, 16, 64), r"flash_attention: a tensor in layout BNSD must be 4-D \(B, N, S, D\), got "
                  r"shape=\(2, 16, 64\)"),
    ((1, 2, 0, 64), r"flash_attention: every dim of a BNSD tensor must be >= 1, got "
                    r"shape=\(1, 2, 0, 64\)"),
])
def test_flash_attention_refuses_a_wrong_rank_or_an_empty_dim(dev0, shape, msg):
    from kernels.flash_attention import flash_attention
    q = np.zeros(shape, np.float32)
    with pytest.raises(ValueError, match=msg):
        flash_attention(q, q, q, interpret=True)
