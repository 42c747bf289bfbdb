"""asc.adv.quant (AscendQuant per tensor) and TPipe.init_buffer(buf=, num=) in both modes
(pyasc's generalization/adv/test_quant). The reference follows CANN's steps: float ->
half, * scale and + offset in half, half -> int8 rounding half to even."""
import numpy as np
import pytest

import ascendc as asc


@asc.jit
def quant_kernel(src: asc.GlobalAddress, dst: asc.GlobalAddress, size: int, tmp_bytes: int,
                 scale: float, offset: float, with_config: asc.ConstExpr[bool]):
    sg = asc.GlobalTensor()
    dg = asc.GlobalTensor()
    sg.set_global_buffer(src)
    dg.set_global_buffer(dst)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qin, num=1, len=size * src.dtype.sizeof())
    pipe.init_buffer(que=qout, num=1, len=size * dst.dtype.sizeof())
    s = qin.alloc_tensor(src.dtype)
    asc.data_copy(s, sg, count=size)
    qin.enque(s)
    s = qin.deque(src.dtype)
    d = qout.alloc_tensor(dst.dtype)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf=tmp_buf, num=tmp_bytes)          # pyasc's TPipe spelling of len
    tmp = tmp_buf.get(asc.uint8)
    if with_config:
        asc.adv.quant(d, s, scale, offset, size, tmp, config=asc.adv.QuantConfig(size, 0, 0, 128))
    else:
        asc.adv.quant(d, s, scale, offset, size, tmp)
    qout.enque(d)
    qin.free_tensor(s)
    d = qout.deque(dst.dtype)
    asc.data_copy(dg, d, count=size)
    qout.free_tensor(d)


def reference(src, scale, offset):
    h = src.astype(np.float16)                  # step 1 (a no-op for half input)
    h = (h * np.float16(scale)).astype(np.float16)
    h = (h + np.float16(offset)).astype(np.float16)
    return np.clip(np.rint(h.astype(np.float32)), -128, 127).astype(np.int8)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("with_config", [False, True])
def test_quant_matches_cann_steps(mode, dtype, with_config):
    size = 320                                   # 5 chunks of 64 halfs with a 128-byte buffer
    rng = np.random.default_rng(1)
    src = (rng.random(size) * 80 - 40).astype(dtype)
    src[:4] = [1.25, -2.75, 0.05, 70.0]          # ties to even and int8 saturation (70*2+0.9)
    dst = np.zeros(size, np.int8)
    tmp_bytes = 128 if not with_config else 512
    quant_kernel[1](src, dst, size, tmp_bytes, 2.0, 0.9, with_config,
                    interpret=(mode == "interpret"))
    want = reference(src, 2.0, 0.9)
    np.testing.assert_array_equal(dst, want)
    assert dst[3] == 127


def test_quant_needs_a_chunk_of_temporary_buffer():
    src = np.ones(64, np.float32)
    dst = np.zeros(64, np.int8)
    with pytest.raises(Exception, match=r"asc.adv.quant: temp_buffer must hold at least 64 "
                                        r"bytes \(32 halfs\), got 32 bytes"):
        quant_kernel[1](src, dst, 64, 32, 1.0, 0.0, False, interpret=True)


def test_quant_config_work_size_must_fit_the_buffer():
    src = np.ones(64, np.float32)
    dst = np.zeros(64, np.int8)
    with pytest.raises(Exception, match=r"asc.adv.quant: config.work_local_size must not exceed "
                                        r"temp_buffer's size \(96 bytes\), got "
                                        r"work_local_size=128"):
        quant_kernel[1](src, dst, 64, 96, 1.0, 0.0, True, interpret=True)


def test_per_channel_config_is_refused():
    with pytest.raises(NotImplementedError, match="scale_count and offset_count"):
        asc.adv.QuantConfig(32, 32, 32, 512)
