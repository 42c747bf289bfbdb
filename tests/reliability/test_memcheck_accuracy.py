"""Mem-check tells reads from writes where it knows them, and work it refused
leaves no record that flags later correct code."""
import numpy as np

import ascendc as asc
import rt
from ascendc.compiler.gmwrites import written_params
from kernels.add import add_kernel
from rt.kernel import KernelBinary

from rt_test_helpers import raises


class Nop(KernelBinary):
    name = "nop"

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        pass


class ReadsFirst(Nop):
    """Declares (as a compiler could) that it writes only its last GM argument."""
    name = "reads_first"

    def gm_writes(self, args):
        return [len(args) - 1]


def _two_streams(monkeypatch):
    monkeypatch.setenv("ASCEND_MEM_CHECK", "1")
    rt.init()
    rt.set_device(0)
    return rt.Stream(), rt.Stream()


def test_two_streams_reading_one_buffer_are_not_flagged(monkeypatch):
    s1, s2 = _two_streams(monkeypatch)
    x, o1, o2 = (rt.device_zeros(64) for _ in range(3))
    rt.launch(Nop(), 1, (x, o1), s1, reads=[0], writes=[1])
    rt.launch(Nop(), 1, (x, o2), s2, reads=[0])          # both only read x: fine
    rt.launch(ReadsFirst(), 1, (x, o2), s2)              # the binary says what it writes
    with raises(107000, r"mem-check: access to buffer 0x[0-9a-f]+ \(allocation 0x[0-9a-f]+\) "
                        r"must be ordered after stream \d+'s kernel 'reads_first', got "
                        r"stream \d+'s kernel 'nop' with no event or synchronize in between"):
        rt.launch(Nop(), 1, (x,), s1)                    # unknown: counted as a write of x
    with raises(107000, r"launch: reads must be indices into args in \[0, 2\), got reads=\[5\]"):
        rt.launch(Nop(), 1, (x, o1), s1, reads=[5])
    s1.synchronize()
    s2.synchronize()


def test_a_rejected_launch_leaves_no_phantom_write(monkeypatch):
    s1, s2 = _two_streams(monkeypatch)
    a, b = rt.device_zeros(64), rt.device_zeros(64)
    rt.launch(Nop(), 1, (b,), s1)                        # s1 writes b
    with raises(107000, r"must be ordered after stream \d+'s kernel 'nop'"):
        rt.launch(Nop(), 1, (a, b), s2)                  # refused on b: it never runs
    s1.synchronize()
    rt.launch(Nop(), 1, (a,), s1)                        # a was never touched by s2: fine
    s1.synchronize()
    assert np.all(a.copy_to_host() == 0)


# -- the kernel language tells mem-check which GM arguments a kernel writes ------------------------
N = 2048


def test_kernels_reading_one_buffer_on_two_streams_are_not_flagged(monkeypatch):
    s1, s2 = _two_streams(monkeypatch)
    x = rt.to_device(np.arange(N, dtype=np.float32))
    y = rt.to_device(np.ones(N, np.float32))
    z1, z2 = rt.device_zeros(N), rt.device_zeros(N)
    add_kernel[1, s1](x, y, z1, N, N, 1024, interpret=True)
    add_kernel[1, s2](x, y, z2, N, N, 1024, interpret=True)     # x, y only read: no race
    with raises(107000, r"mem-check: access to buffer 0x[0-9a-f]+ \(allocation 0x[0-9a-f]+\) "
                        r"must be ordered after stream \d+'s kernel 'add_kernel', got stream "
                        r"\d+'s kernel 'add_kernel' with no event or synchronize in between"):
        add_kernel[1, s2](x, y, z1, N, N, 1024, interpret=True)  # z1 is written by s1's
    s1.synchronize()
    s2.synchronize()
    want = np.arange(N, dtype=np.float32) + 1
    np.testing.assert_array_equal(z1.copy_to_host(), want)
    np.testing.assert_array_equal(z2.copy_to_host(), want)


def _direct(x: asc.GlobalAddress, y: asc.GlobalAddress):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 8)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + 8, 8)
    yv = yg[4:]
    yv.set_value(0, xg.get_value(0))


@asc.jit
def _store(dst, src, n):
    asc.data_copy(dst, src, n)


def _through_helper(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress):
    t = asc.LocalTensor(asc.float32, asc.TPosition.VECCALC, 0, 64)
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 64)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 64)
    asc.data_copy(t, xg, 64)
    _store(zg, t, 64)


def _unknown(x: asc.GlobalAddress, y: asc.GlobalAddress):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 8)
    print_it(xg)                                  # a call the analysis cannot follow


def print_it(v):
    return v


def _matmul_with_workspace(a: asc.GlobalAddress, b: asc.GlobalAddress, ws: asc.GlobalAddress,
                           c: asc.GlobalAddress):
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(None, None, None)
    asc.adv.register_matmul(pipe, ws, mm, None)   # the workspace stages C tiles: a write
    mm.set_tensor_a(a)
    mm.set_tensor_b(b)
    mm.iterate_all(c)


def test_written_params_follows_aliases_and_helpers():
    assert written_params(_direct, ["x", "y"]) == {"y"}
    assert written_params(_through_helper, ["x", "y", "z"]) == {"z"}
    assert written_params(_unknown, ["x", "y"]) is None
    assert written_params(add_kernel.fn, ["x", "y", "z"]) == {"z"}
    assert written_params(_matmul_with_workspace, ["a", "b", "ws", "c"]) == {"ws", "c"}
