"""`import torch_npu` without a real torch_npu (ascendc/pyasc_compat/torch_npu_standin.py) and
pyasc's package layout (`asc.lib.runtime.support`, `asc.runtime.launcher`, `asc.language.*`).

The torch cases run in a subprocess: the device renames torch's PrivateUse1 backend for the whole
process, which must not leak into the rest of the suite."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from ascendc import pyasc_compat

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = '''
import numpy as np
import torch
import torch_npu
import asc
import asc.runtime.config as config
import asc.lib.runtime as rt
from asc.lib.runtime.support import DeviceModuleType, DeviceInfoType


@asc.jit
def scale_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, TILE: asc.ConstExpr[int]):
    x_gm, z_gm = asc.GlobalTensor(), asc.GlobalTensor()
    x_gm.set_global_buffer(x + asc.get_block_idx() * n, n)
    z_gm.set_global_buffer(z + asc.get_block_idx() * n, n)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, TILE * x.dtype.sizeof())
    for i in range(n // TILE):
        t = q.alloc_tensor(x.dtype)
        asc.data_copy(t, x_gm[i * TILE:], TILE)
        q.enque(t)
        t = q.deque(x.dtype)
        asc.muls(t, t, 2.0, TILE)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(z_gm[i * TILE:], t, TILE)
        asc.set_flag(asc.HardEvent.MTE3_V, 0)
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)
        q.free_tensor(t)


assert torch_npu.__ascend_emu__ and torch_npu.npu is torch.npu
torch_npu.npu.set_device(0)
assert torch.npu.is_available() and torch.npu.current_device() == 0
assert torch.npu.device_count() == rt.device_count() >= 1
cores = rt.device_info(DeviceModuleType.RT_MODULE_TYPE_VECTOR_CORE,
                       DeviceInfoType.INFO_TYPE_CORE_NUM)
assert cores == torch_npu.npu.get_device_properties(0).vector_core_num
before = torch.npu.memory_allocated()
x = torch.randn(4, 256, device="npu")          # 4096 bytes + 32 -> a 4608-byte block
z = torch.zeros(4 * 256).npu()
w = torch.arange(5).to("npu")
assert x.device.type == z.device.type == w.device.type == "npu"
assert torch.npu.memory_allocated() - before == 4608 * 2 + 512
assert torch.npu.memory_reserved() >= 2 << 20
scale_kernel[4, torch.npu.current_stream()](x, z, 256, 128)
torch.npu.synchronize()
assert np.array_equal(z.cpu().numpy(), 2 * x.cpu().numpy().reshape(-1))
start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
s = torch.npu.Stream()
start.record(s)
with torch.npu.stream(s):
    assert torch.npu.current_stream() is s
    scale_kernel[4, s](z, x, 256, 128)
end.record(s)
end.synchronize()
assert start.elapsed_time(end) >= 0
s2 = torch.npu.Stream()
s2.wait_stream(s)
s2.synchronize()
assert np.array_equal(x.cpu().numpy().reshape(-1), 4 * (z.cpu().numpy() / 2))
del x
assert torch.npu.memory_allocated() - before == 4608 + 512
assert torch.npu.max_memory_allocated() - before >= 4608 * 2 + 512
assert torch_npu.npu.utils.get_device_name() == rt.current_platform()
print("torch_npu ok")
'''


def _run(tmp_path, body, mode, extra_files=None):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    for name, text in (extra_files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = dict(os.environ, ASCENDC_INTERPRET="1" if mode == "interpret" else "0",
               ASCENDC_CHECKED="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ascendc.run", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_torch_npu_standin_devices_streams_memory(tmp_path, mode):
    pytest.importorskip("torch")
    p = _run(tmp_path, SCRIPT, mode)
    assert p.returncode == 0 and "torch_npu ok" in p.stdout, p.stdout + p.stderr[-3000:]


def test_a_torch_npu_on_the_path_is_never_shadowed(tmp_path):
    """A script's own torch_npu (here a file next to it) is imported, not the stand-in; the
    emulated device still works, since that file is not Ascend's torch_npu."""
    pytest.importorskip("torch")
    p = _run(tmp_path, '''
        import torch
        import torch_npu
        assert torch_npu.MINE and not hasattr(torch_npu, "__ascend_emu__")
        assert torch.ones(3, device="npu").sum().item() == 3
        print("own shim ok")
    ''', "interpret", {"torch_npu.py": "MINE = True\n"})
    assert p.returncode == 0 and "own shim ok" in p.stdout, p.stdout + p.stderr[-3000:]


def test_no_torch_npu_outside_the_runner(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import ascendc\ntry:\n    import torch_npu\nexcept ImportError:\n"
                      "    print('no torch_npu')\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "no torch_npu" in p.stdout, p.stdout + p.stderr[-2000:]


def test_pyasc_package_layout():
    with pyasc_compat.installed():
        import asc
        import asc.lib.runtime as rt
        import asc.lib.runtime.support as support
        from asc.lib.runtime.support import CoreType, MemcpyKind
        from asc.lib.runtime.interface import current_stream
        from asc.runtime.launcher import LaunchOptions
        from asc.runtime.compiler import CompileOptions
        from asc.runtime.jit import jit, JITFunction
        from asc.codegen.function_visitor import CodegenOptions
        from asc.language.fwk.tpipe import TPipe, TQue
        from asc.language.core.tensor import GlobalTensor
        from asc.language.basic.vec_binary import add
        from asc.language.adv import Matmul
        from asc.language.core.struct import Struct
        import asc.language as lang
        import ascendc
        assert rt.CoreType is CoreType is support.CoreType and MemcpyKind is rt.MemcpyKind
        assert current_stream is rt.current_stream and rt.interface.malloc is rt.malloc
        assert LaunchOptions is asc.LaunchOptions and CompileOptions is asc.CompileOptions
        assert CodegenOptions is asc.CodegenOptions and jit is asc.jit
        assert TPipe is ascendc.TPipe and TQue is ascendc.TQue and add is ascendc.add
        assert GlobalTensor is ascendc.GlobalTensor and Matmul is ascendc.adv.Matmul
        assert Struct is not None and lang.add is ascendc.add and lang.jit is asc.jit

        @lang.jit
        def k(x: asc.GlobalAddress):
            pass
        assert isinstance(k, JITFunction)
        with pytest.raises(ImportError, match=r"asc.lib.runtime.support.Nope \(pyasc\) is not "
                                              r"supported by ascend-emu"):
            from asc.lib.runtime.support import Nope  # noqa: F401
        with pytest.raises(ImportError, match=r"asc.language.core.utils.global_builder "
                                              r"\(pyasc\) is not supported"):
            from asc.language.core.utils import global_builder  # noqa: F401
