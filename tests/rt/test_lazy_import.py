"""`import rt` loads the AscendCL core only; each subsystem loads the first time it is touched
(a module `__getattr__`), in a fresh interpreter so nothing imported by other tests leaks in."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUBSYSTEMS = ("rt.hccl", "rt.dvpp", "rt.model", "rt.npu", "rt.atc", "rt.graph", "rt.acl")


def _loaded_after(code: str) -> dict:
    probe = (f"import json, sys\nimport rt\n{code}\n"
             f"print(json.dumps({{m: m in sys.modules for m in {list(SUBSYSTEMS)!r}}}))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_rt_loads_no_subsystem():
    loaded = _loaded_after("")
    assert loaded == {m: False for m in SUBSYSTEMS}, loaded
    _loaded_after("assert 'ml_dtypes' not in sys.modules, 'import rt loaded ml_dtypes'")


@pytest.mark.parametrize("touch, loads", [
    ("rt.hccl", {"rt.hccl"}),
    ("rt.hccl.all_reduce", {"rt.hccl"}),
    ("rt.dvpp.ChannelDesc", {"rt.dvpp"}),
    ("rt.Model", {"rt.model", "rt.graph", "rt.atc"}),
    ("rt.TensorDesc", {"rt.model", "rt.graph", "rt.atc"}),
    ("rt.npu.simulate", {"rt.npu"}),
])
def test_a_subsystem_loads_when_touched(touch, loads):
    loaded = _loaded_after(touch)
    assert {m for m, on in loaded.items() if on} >= loads, loaded
    assert not loaded["rt.hccl"] or "hccl" in touch


def test_lazy_names_are_the_real_ones():
    import rt
    from rt import hccl, model
    assert rt.Model is model.Model and rt.TensorDesc is model.TensorDesc and rt.hccl is hccl
    assert {"hccl", "dvpp", "model", "Model", "TensorDesc"} <= set(dir(rt))
    with pytest.raises(AttributeError, match="module 'rt' has no attribute 'no_such_name'"):
        getattr(rt, "no_such_name")
