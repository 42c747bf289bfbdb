"""rt.NpuTraceLimitError: the NPU view's row limit as its own error type (a KernelFault with code
507015 as before), kept as the cause of the launch's and the synchronize's errors; caused_by;
raised by real launches (a MIX kernel, both modes)."""
import pickle

import numpy as np
import pytest

import ascendc as asc
import rt
from rt.errors import ACL_ERROR_RT_AICORE_EXCEPTION, NpuTraceLimitError, caused_by

from rt_test_helpers import PlainBinary, raises

MSG = ("rt.profile(npu=True): a block must issue at most 64 instructions to be recorded, "
       "got 512 in block_idx=2 (raise ASCEND_EMU_NPU_TRACE_ROWS)")


class Binary(PlainBinary):
    def __init__(self, name, exc_of_block):
        self.name = name
        self.exc_of_block = exc_of_block

    def run_blocks(self, first, last, block_dim, args):
        for b in range(first, last):
            e = self.exc_of_block(b)
            if e is not None:
                raise e


def test_the_limit_is_a_kernel_fault_with_its_code_rows_and_count():
    e = NpuTraceLimitError(ACL_ERROR_RT_AICORE_EXCEPTION, MSG, 2, rows=64, issued=512)
    assert isinstance(e, rt.KernelFault) and isinstance(e, rt.AclError)
    assert rt.NpuTraceLimitError is NpuTraceLimitError
    assert (e.code, e.block_idx, e.rows, e.issued, e.detail) == (507015, 2, 64, 512, MSG)
    assert str(e) == f"{MSG} (error code 507015, ACL_ERROR_RT_AICORE_EXCEPTION)"
    f = pickle.loads(pickle.dumps(e))
    assert type(f) is NpuTraceLimitError
    assert (f.code, f.message, f.block_idx, f.rows, f.issued) == (507015, MSG, 2, 64, 512)


def test_synchronize_error_keeps_the_limit_as_its_cause(dev0):
    lim = NpuTraceLimitError(ACL_ERROR_RT_AICORE_EXCEPTION, MSG, 2, rows=64, issued=512)
    rt.launch(Binary("long", lambda b: lim if b == 2 else None), 4, ())
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION, r"^synchronize: kernel 'long' on stream \d+ "
                r"failed in block_idx=2/4: rt\.profile\(npu=True\): a block must issue at "
                r"most 64 instructions") as info:
        rt.default_stream().synchronize()
    assert type(info.value) is rt.AclError                 # rt's wrappers keep their types
    assert caused_by(info.value, NpuTraceLimitError) is lim
    assert NpuTraceLimitError.in_chain(info.value) is lim
    assert caused_by(info.value, rt.KernelFault) is info.value.__cause__


def test_other_faults_are_not_the_limit_even_when_their_text_names_it(dev0):
    """A fault whose message names the environment variable (as the limit's does) is not the
    limit: only the type identifies it."""
    other = rt.KernelFault(ACL_ERROR_RT_AICORE_EXCEPTION, MSG, 1)
    rt.launch(Binary("k", lambda b: other if b == 1 else None), 2, ())
    with pytest.raises(rt.AclError, match="ASCEND_EMU_NPU_TRACE_ROWS") as info:
        rt.default_stream().synchronize()
    assert NpuTraceLimitError.in_chain(info.value) is None
    assert caused_by(info.value, rt.KernelFault) is not None


def test_caused_by_walks_causes_only_and_ends_on_a_cycle():
    a, b = ValueError("a"), KeyError("b")
    a.__cause__, b.__cause__ = b, a                       # a cycle
    assert caused_by(a, KeyError) is b and caused_by(a, TypeError) is None
    c = RuntimeError("c")
    c.__context__ = KeyError("implicit")                   # not a cause: not walked
    assert caused_by(c, KeyError) is None and caused_by(None, KeyError) is None


@asc.jit(kernel_type="MIX_AIC_1_2")
def long_aiv_kernel(out: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """Each AIV writes n values of its own row (n scalar GM writes); the AIC issues nothing."""
    if asc.ascend_is_aiv():
        og = asc.GlobalTensor()
        og.set_global_buffer(out)
        v = asc.get_block_idx()
        for i in range(n):
            og.set_value(v * n + i, i)


def test_a_mix_instance_too_long_for_the_npu_view_raises_the_limit(monkeypatch, interpret):
    """A MIX launch whose AIV instances issue more instructions than the view's rows: the
    synchronize's AclError (code 507015, the message as before) is caused by an
    NpuTraceLimitError with the rows and the count; the same launch fits with more rows."""
    n, groups = 40, 2
    out = np.zeros(2 * groups * n, np.int32)
    monkeypatch.setenv("ASCEND_EMU_NPU_TRACE_ROWS", "16")
    with pytest.raises(rt.AclError, match=r"a block must issue at most 16 instructions to be "
                       r"recorded, got \d+ in block_idx=\d+ \(raise ASCEND_EMU_NPU_TRACE_ROWS\)"
                       ) as info:
        with rt.profile(npu=True):
            long_aiv_kernel[groups](out, n, interpret=interpret)
    assert info.value.code == ACL_ERROR_RT_AICORE_EXCEPTION
    lim = NpuTraceLimitError.in_chain(info.value)
    assert lim is not None and lim.rows == 16 and lim.issued >= n
    assert lim.issued == int(lim.message.split("got ")[1].split()[0])
    monkeypatch.setenv("ASCEND_EMU_NPU_TRACE_ROWS", str(4 * n))
    with rt.profile(npu=True) as prof:
        long_aiv_kernel[groups](out, n, interpret=interpret)
    assert prof.npu_runs("long_aiv_kernel")[-1].timeline.us > 0
    np.testing.assert_array_equal(out, np.tile(np.arange(n, dtype=np.int32), 2 * groups))
