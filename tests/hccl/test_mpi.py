"""rt.hccl across processes: `mpiexec -n N python tests/hccl/mpi_worker.py <scenario>` (one rank
per process, root info broadcast with MPI, data moved with MPI non-blocking point-to-point from
the stream workers). Needs the `mpi` extra (mpi4py + the mpich wheel's mpiexec)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py", reason="the MPI transport needs mpi4py: pip install -e '.[mpi]'")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER = HERE / "mpi_worker.py"


def _mpiexec():
    local = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


def run(tmp_path, scenario: str, n: int, timeout: float = 60, **env) -> dict:
    exe = _mpiexec()
    if exe is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    e = dict(os.environ, PYTHONPATH=str(ROOT), HCCL_TEST_OUT=str(tmp_path), **env)
    for name in ("HCCL_EXEC_TIMEOUT", "HCCL_CONNECT_TIMEOUT"):
        if name not in env:
            e.pop(name, None)
    p = subprocess.run([exe, "-n", str(n), sys.executable, str(WORKER), scenario], env=e,
                       capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    results = {}
    for r in range(n):
        f = tmp_path / f"rank{r}.jsonl"
        if f.exists():
            results[r] = json.loads(f.read_text().splitlines()[-1])
    assert p.returncode == 0 and len(results) == n, \
        f"mpiexec exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-3000:]}"
    return results


@pytest.mark.parametrize("n", [2, 3])
def test_every_collective_over_mpi(tmp_path, n):
    res = run(tmp_path, "collectives", n)
    for r in range(n):
        assert res[r]["ok"], res[r]
        assert res[r]["transport"] == "mpi" and res[r]["rank"] == r and res[r]["size"] == n
        assert res[r]["device"] == r % 8                      # rank % device_count


def test_a_rank_that_never_joins_gives_the_others_a_timeout(tmp_path):
    res = run(tmp_path, "never_joins", 3, HCCL_CONNECT_TIMEOUT="1")
    for r in (0, 1):                                          # the root and a plain member
        assert res[r]["code"] == 9, res[r]                    # HCCL_E_TIMEOUT
        assert res[r]["seconds"] < 10
    assert res[2]["skipped"]


def test_a_rank_that_skips_a_collective_gives_the_others_a_timeout(tmp_path):
    res = run(tmp_path, "exec_timeout", 2, HCCL_EXEC_TIMEOUT="1")
    assert res[0]["code"] == 9 and res[0]["cause"] == "HcclError", res[0]
    assert res[0]["seconds"] < 10
