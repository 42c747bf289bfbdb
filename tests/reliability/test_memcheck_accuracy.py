"""Issue 11 item 7: mem-check tells reads from writes where it knows them, and work it refused
leaves no record that flags later correct code."""
import numpy as np

import rt
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
