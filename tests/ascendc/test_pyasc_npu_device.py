"""torch's device "npu" under the pyasc compat layer (pyasc's generalization tests make
their tensors with device="npu"). Each case runs in a subprocess: registering the device renames
torch's PrivateUse1 backend for the whole process, which must not leak into the rest of the
suite (the device exists only where the compat layer is active)."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytest.importorskip("torch")

KERNEL = '''
import numpy as np
import torch
import asc
import asc.runtime.config as config
import asc.lib.runtime as rt


@asc.jit
def vadd_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                per_core: int, TILE: asc.ConstExpr[int]):
    offset = asc.get_block_idx() * per_core
    x_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    z_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + offset)
    y_gm.set_global_buffer(y + offset)
    z_gm.set_global_buffer(z + offset)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 2)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qx, 2, TILE * x.dtype.sizeof())
    pipe.init_buffer(qz, 1, TILE * z.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    yl = qx.alloc_tensor(y.dtype)
    asc.data_copy(xl, x_gm, TILE)           # a whole tile, even past a short tensor's end
    asc.data_copy(yl, y_gm, TILE)
    qx.enque(xl)
    qx.enque(yl)
    xl = qx.deque(x.dtype)
    yl = qx.deque(y.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.add(zl, xl, yl, TILE)
    qz.enque(zl)
    qx.free_tensor(xl)
    qx.free_tensor(yl)
    zl = qz.deque(z.dtype)
    asc.data_copy(z_gm, zl, TILE)
    qz.free_tensor(zl)
'''


def _run(body, mode, tmp_path, runner=("-m", "ascendc.run")):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(KERNEL) + textwrap.dedent(body))
    env = dict(os.environ, ASCENDC_INTERPRET="1" if mode == "interpret" else "0",
               ASCENDC_CHECKED="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *runner, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_npu_tensors_are_kernel_arguments(tmp_path, mode):
    p = _run('''
        config.set_platform(config.Backend.NPU)
        n, cores, tile = 4096, 8, 512
        x = torch.randn(n, dtype=torch.float32, device="npu")
        y = torch.rand((n,), device="npu")
        z = torch.zeros_like(x)
        assert x.is_npu and z.device.type == "npu" and str(z.device) == "npu:0"
        vadd_kernel[cores, rt.current_stream()](x, y, z, n // cores, tile)
        want = x.cpu().numpy() + y.cpu().numpy()          # numpy reference
        assert np.array_equal(z.cpu().numpy(), want)       # the kernel's writes are in z
        assert torch.allclose(z, x + y)                    # torch's reference on the device
        assert (x + y).device.type == "npu" and z.cpu().device.type == "cpu"
        h = torch.arange(6, dtype=torch.int16).to("npu")
        assert h.device.type == "npu" and h[2:].cpu().tolist() == [2, 3, 4, 5]
        assert h.sum().item() == 15 and torch.zeros(3, device="npu").cpu().tolist() == [0, 0, 0]
        assert "device='npu:0'" in repr(h) and f"{h.sum():.1f}" == "15.0"     # printing works
        print("npu ok")
    ''', mode, tmp_path)
    assert p.returncode == 0 and "npu ok" in p.stdout, p.stdout + p.stderr[-3000:]


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_over_reach_inside_the_segment_runs_beyond_traps(tmp_path, mode):
    """A 3-element tensor read and written a whole 512-element tile (as pyasc's tail shapes
    do) stays inside torch_npu's 2 MiB segment: it runs and the 3 elements are right. A
    tensor over 1 MiB has a segment of its own (rounded to 2 MiB; this one ends 512 bytes
    before it): a tile from its last element crosses the segment's end, a GM trap."""
    p = _run('''
        config.set_platform(config.Backend.NPU)
        x = torch.tensor([1.0, 2.0, 3.0], device="npu")
        y = torch.tensor([10.0, 20.0, 30.0], device="npu")
        z = torch.zeros_like(x)
        vadd_kernel[1, rt.current_stream()](x, y, z, 0, 512)
        rt.synchronize()
        assert z.cpu().tolist() == [11.0, 22.0, 33.0], z.cpu()
        n = ((2 << 20) - 512) // 4
        big = torch.ones(n, device="npu")
        out = torch.zeros(n, device="npu")
        vadd_kernel[2, rt.current_stream()](big, big, out, n - 1, 512)
        try:
            rt.synchronize()
        except Exception as e:
            print("trapped:", e)
    ''', mode, tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "trapped:" in out and "GM read must stay inside argument 'x'" in out, out[-3000:]


def test_no_npu_device_outside_the_compat_layer(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent('''
        import torch
        import ascendc
        try:
            torch.zeros(1, device="npu")
        except RuntimeError as e:
            print("no npu:", e)
    '''))
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "no npu:" in p.stdout, p.stdout + p.stderr[-2000:]


def test_block_sizes_follow_torch_npu():
    from ascendc.pyasc_compat.npu_device import torch_npu_block_bytes
    assert [torch_npu_block_bytes(n) for n in (1, 480, 481, 4000, 4064, 4065)] == \
        [512, 512, 1024, 4096, 4096, 4608]
