"""Shared fixtures: kernel tests run in both modes with every fidelity trap on."""
import os
import tempfile

import pytest

os.environ.setdefault("ASCENDC_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache",
                                                        "ascend-emu", "test-kernels"))
# CANN-style plog files of failing acl calls go here, not to ~/ascend/log
os.environ.setdefault("ASCEND_PROCESS_LOG_PATH", os.path.join(tempfile.gettempdir(),
                                                              "ascend-emu-test-log"))

if os.environ.get("ASCEND_EMU_SANITIZE_SWEEP"):
    # every test's kernel launches under asc.sanitize(check_all=True) (tests/sanitize_sweep.py)
    from sanitize_sweep import (_sanitize_sweep, pytest_collection_modifyitems,  # noqa: F401
                                pytest_runtest_makereport, pytest_terminal_summary)


@pytest.fixture(params=["interpret", "compiled"])
def mode(request):
    """Run a kernel test once interpreted and once compiled (pass `interpret=...` to launches)."""
    return request.param


@pytest.fixture
def interpret(mode):
    return mode == "interpret"


@pytest.fixture(autouse=True, scope="session")
def _checked_everywhere():
    import ascendc
    ascendc.set_default_checked(True)
    yield
    ascendc.set_default_checked(None)


@pytest.fixture(autouse=True)
def _npu_simulator_checked(monkeypatch):
    """Every NPU simulation of the suite is replayed by the plain reference scan too and must give
    identical records (tests/npu_reference.py)."""
    from npu_reference import checked_simulator
    from rt.npu import sim
    monkeypatch.setattr(sim, "Simulator", checked_simulator(sim.Simulator))
