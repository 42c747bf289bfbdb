"""A kernel's file edited after its import: the compiler must not compile whatever now sits at the
kernel's old line numbers (another kernel, half of one); it refuses by name, and compiles again
after a reload. An edit elsewhere in the file changes nothing."""
import importlib
import os
import sys

import numpy as np
import pytest

from ascendc.lang.errors import CompileError

_SRC = '''
import ascendc as asc


@asc.jit
def scale_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, n: int, k: asc.ConstExpr[float]):
    xg = asc.GlobalTensor(); xg.set_global_buffer(x, n)
    yg = asc.GlobalTensor(); yg.set_global_buffer(y, n)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, 2 * 64 * 4)
    a = buf.get_with_offset(64, 0, asc.float32)
    b = buf.get_with_offset(64, 256, asc.float32)
    asc.data_copy(a, xg, 64)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.muls(b, a, k, 64)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(yg, b, 64)
'''


def _edit(path, text):
    path.write_text(text)
    st = os.stat(path)          # a new mtime even on coarse-grained file systems
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = f"edited_kernel_{os.getpid()}_{tmp_path.name}".replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(_SRC)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    yield mod, path
    sys.modules.pop(name, None)


def _run(kernel, k, interpret):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    kernel[1](x, y, 64, k, interpret=interpret)
    return x, y


def test_a_kernel_whose_lines_were_edited_away_is_refused_by_name(module):
    mod, path = module
    _edit(path, "# a comment pushes every line down\n" * 3 + _SRC.replace("muls", "adds"))
    with pytest.raises(CompileError, match=r"asc.jit: the source of scale_kernel must be the text "
                                           r"it was imported from, got .*edited since .*re-import"):
        _run(mod.scale_kernel, 3.0, interpret=False)
    # the interpreter runs the imported bytecode, which is still the kernel as imported
    x, y = _run(mod.scale_kernel, 3.0, interpret=True)
    np.testing.assert_array_equal(y, x * 3.0)


def test_a_reload_compiles_the_edited_kernel(module):
    mod, path = module
    _edit(path, "# moved\n" + _SRC.replace("muls", "adds"))
    mod = importlib.reload(mod)
    x, y = _run(mod.scale_kernel, 2.0, interpret=False)
    np.testing.assert_array_equal(y, x + 2.0)


def test_an_edit_after_the_kernel_leaves_it_compilable(module):
    mod, path = module
    _edit(path, _SRC + "\n\ndef added_later():\n    return 1\n")
    x, y = _run(mod.scale_kernel, 5.0, interpret=False)
    np.testing.assert_array_equal(y, x * 5.0)
