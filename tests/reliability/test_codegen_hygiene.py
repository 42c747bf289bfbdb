"""Generated names never collide with user names, and printf counts `%%` right.
A kernel parameter named `_blk` used to be overwritten by the block index (silently wrong); now
every name the compiler generates is refused, in both modes, with the name and the line."""
import numpy as np
import pytest

import ascendc as asc
from ascendc.compiler.lower import format_pieces
from ascendc.lang.errors import CompileError


def _param_kernel():
    @asc.jit
    def blk_kernel(x: asc.GlobalAddress, _blk: int):
        g = asc.GlobalTensor(); g.set_global_buffer(x, 8)         # noqa: E702
        g.set_value(0, _blk)
    return blk_kernel


def _local_kernel():
    @asc.jit
    def local_kernel(x: asc.GlobalAddress):
        _ctx = 3
        g = asc.GlobalTensor(); g.set_global_buffer(x, 8)         # noqa: E702
        g.set_value(0, _ctx)
    return local_kernel


@pytest.mark.parametrize("make, name", [(_param_kernel, "_blk"), (_local_kernel, "_ctx")])
def test_generated_names_are_refused_with_a_clear_message(make, name):
    k = make()
    x = np.zeros(8, np.int32)
    args = (x, 5) if name == "_blk" else (x,)
    with pytest.raises(CompileError, match=f"names must not be ones the compiler generates .*, "
                                           f"got '{name}': rename it"):
        k[1](*args, interpret=False)


@pytest.mark.parametrize("fmt, pieces", [
    ("%d%% done", ["", "% done"]),
    ("100%%", ["100%"]),
    ("a=%d b=%.2f", ["a=", " b=", ""]),
    ("%%d is not a conversion", ["%d is not a conversion"]),
])
def test_printf_counts_conversions_not_percent_signs(fmt, pieces):
    assert format_pieces(fmt) == pieces


def test_printf_percent_percent_in_a_compiled_kernel(capfd):
    @asc.jit
    def progress(x: asc.GlobalAddress):
        asc.printf("%d%% done\n", asc.get_block_idx() + 50)
    x = np.zeros(8, np.float32)
    progress[1](x, interpret=False)
    progress[1](x, interpret=True)
    assert capfd.readouterr().out.splitlines() == ["50% done", "50% done"]
