"""`python -m ascendc.run` and `ascendc.pyasc_compat`: pyasc scripts run unchanged."""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ascendc import pyasc_compat

ROOT = pathlib.Path(__file__).resolve().parents[2]

KERNEL_SCRIPT = '''
import sys
import numpy as np
import asc
import asc.runtime.config as config
import asc.lib.runtime as rt
import asc.lib.host as host


@asc.jit(always_compile=True)
def vadd_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                block_length: int, TILE: asc.ConstExpr[int]):
    offset = asc.get_block_idx() * block_length
    x_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    z_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + offset, block_length)
    y_gm.set_global_buffer(y + offset, block_length)
    z_gm.set_global_buffer(z + offset, block_length)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qx, 1, TILE * x.dtype.sizeof())
    pipe.init_buffer(qy, 1, TILE * y.dtype.sizeof())
    pipe.init_buffer(qz, 1, TILE * z.dtype.sizeof())
    for i in range(block_length // TILE):
        xl = qx.alloc_tensor(x.dtype)
        yl = qy.alloc_tensor(y.dtype)
        asc.data_copy(xl, x_gm[i * TILE:], TILE)
        asc.data_copy(yl, y_gm[i * TILE:], TILE)
        qx.enque(xl)
        qy.enque(yl)
        xl = qx.deque(x.dtype)
        yl = qy.deque(y.dtype)
        zl = qz.alloc_tensor(z.dtype)
        asc.add(zl, xl, yl, TILE)
        qz.enque(zl)
        qx.free_tensor(xl)
        qy.free_tensor(yl)
        zl = qz.deque(z.dtype)
        asc.data_copy(z_gm[i * TILE:], zl, TILE)
        qz.free_tensor(zl)


config.set_platform(config.Backend.Model, config.Platform.Ascend910B4)
assert rt.current_platform() == "Ascend910B4", rt.current_platform()
x = np.arange(8 * 256, dtype=np.float32)
y = np.ones_like(x)
z = np.zeros_like(x)
# pyasc binds launch keywords to kernel parameters
vadd_kernel[8, rt.current_stream()](x, y, z, block_length=256, TILE=128)
rt.synchronize()
assert np.array_equal(z, x + y)
print("ok", sys.argv[1:], __name__)
'''


def run(tmp_path, source, *args, env=None):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH")
                                                     else []))
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "ascendc.run", *args, str(script), "a", "b"],
                          capture_output=True, text=True, env=e, cwd=tmp_path, timeout=600)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_runner_runs_a_pyasc_script_unchanged(tmp_path, mode):
    p = run(tmp_path, KERNEL_SCRIPT,
            env={"ASCENDC_INTERPRET": "1" if mode == "interpret" else "0"})
    assert p.returncode == 0, p.stderr
    assert "ok ['a', 'b'] __main__" in p.stdout


def test_runner_interpret_flag(tmp_path):
    p = run(tmp_path, "import os; print(os.environ['ASCENDC_INTERPRET'])", "--interpret")
    assert p.returncode == 0 and p.stdout.strip() == "1", p.stderr


def test_runner_exit_status_is_the_scripts(tmp_path):
    assert run(tmp_path, "import sys; sys.exit(3)").returncode == 3
    assert run(tmp_path, "import sys; sys.exit()").returncode == 0
    p = run(tmp_path, "import sys; sys.exit('bye')")
    assert p.returncode == 1 and "bye" in p.stderr


def test_runner_shows_the_scripts_traceback_as_python_does(tmp_path):
    p = run(tmp_path, "import asc\n\ndef f():\n    raise ValueError('boom')\n\nf()\n")
    assert p.returncode == 1
    err = p.stderr
    assert err.startswith("Traceback (most recent call last):"), err
    assert 'script.py", line 6, in <module>' in err and 'line 4, in f' in err
    assert err.rstrip().endswith("ValueError: boom")
    assert "ascendc/run.py" not in err and "runpy" not in err


def test_mapping_is_for_the_process_that_asks_only():
    pyasc_compat.uninstall()
    with pytest.raises(ImportError):
        import asc  # noqa: F401
    with pyasc_compat.installed():
        import asc
        import asc.lib.runtime as rt
        import asc.lib.host as host
        import asc.runtime.config as config
        import ascendc
        assert asc.add is ascendc.add and host.MultiCoreMatmulTiling is ascendc.host.\
            MultiCoreMatmulTiling
        assert config.Backend("Model") is config.Backend.Model and rt.default_device() == 0
    assert "asc" not in sys.modules


def test_set_platform_selects_the_soc_profile(monkeypatch):
    import rt as ourrt
    before = ourrt.get_soc().name
    monkeypatch.delenv("ASCEND_EMU_SOC", raising=False)
    try:
        _set_platform_checks(ourrt)
    finally:    # set_platform writes ASCEND_EMU_SOC and reopens the device: undo both
        with pyasc_compat.installed():
            import asc.runtime.config as config
            config.set_platform(config.Backend.Model, config.Platform(before))
        os.environ.pop("ASCEND_EMU_SOC", None)
    assert ourrt.get_soc().name == before


def _set_platform_checks(ourrt):
    with pyasc_compat.installed():
        import asc
        import asc.lib.runtime as rt
        import asc.runtime.config as config
        config.set_platform(config.Backend.Model, config.Platform.Ascend910B3)
        assert rt.get_soc_version() is config.Platform.Ascend910B3
        assert ourrt.get_soc().name == "Ascend910B3" == rt.current_platform()
        assert asc.property(asc.TOTAL_L1_SIZE) == ourrt.get_soc().l1_bytes
        assert asc.property(asc.TOTAL_L0C_SIZE) == ourrt.get_soc().l0c_bytes
        assert asc.property(asc.DEFAULT_C0_SIZE) == 32
        assert rt.device_info(rt.DeviceModuleType.RT_MODULE_TYPE_AICORE,
                              rt.DeviceInfoType.INFO_TYPE_CORE_NUM) == 20
        with pytest.raises(ValueError, match="no emulated SoC profile"):
            config.set_platform(config.Backend.Model, config.Platform.Ascend910_9392)
        config.set_platform(config.Backend.Model)       # pyasc's default: Ascend910B1
        assert ourrt.get_soc().name == "Ascend910B1"


def test_host_helpers_and_runtime_memory():
    with pyasc_compat.installed():
        import asc
        import asc.lib.runtime as rt
        assert asc.ceildiv(10, 3) == 4 and asc.ceildiv(9, 3) == 3
        host = np.arange(16, dtype=np.float32)
        dev = rt.copy_data_to_device(host.ctypes.data, host.nbytes)
        back = np.zeros_like(host)
        rt.copy_data_from_device(back.ctypes.data, dev, host.nbytes)
        rt.free(dev)
        assert np.array_equal(back, host)
        s = rt.create_stream()
        rt.synchronize(s)
        rt.destroy_stream(s)
        with pytest.raises(NotImplementedError, match="launch_kernel is not supported"):
            rt.launch_kernel(None, 1, [])


def test_unsupported_names_say_so():
    with pyasc_compat.installed():
        import asc
        with pytest.raises(AttributeError, match="asc.LocalMemAllocator .pyasc. is not supported "
                                                 "by ascend-emu"):
            getattr(asc, "LocalMemAllocator")
        with pytest.raises(ImportError, match="asc.language.fwk.TBufPool .pyasc. is not "
                                              "supported"):
            from asc.language.fwk import TBufPool  # noqa: F401


def test_launch_keywords_bind_kernel_parameters():
    with pyasc_compat.installed():
        import asc

        @asc.jit
        def k(x: asc.GlobalAddress, n: int, m: int):
            pass
        assert k.bind_launch_args((1,), {"m": 3, "n": 2, "interpret": True}) == \
            ((1, 2, 3), {"interpret": True})
        with pytest.raises(TypeError, match="multiple values for argument 'n'"):
            k.bind_launch_args((1, 2), {"n": 2})
        with pytest.raises(TypeError, match="missing a required argument: 'm'"):
            k.bind_launch_args((1,), {"n": 2})
