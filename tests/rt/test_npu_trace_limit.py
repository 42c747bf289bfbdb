"""rt.NpuTraceLimitError: the NPU view's row limit as its own error type (a KernelFault with code
507015 as before), kept as the cause of the launch's and the synchronize's errors; caused_by."""
import pickle

import pytest

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
