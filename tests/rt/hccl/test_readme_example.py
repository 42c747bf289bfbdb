"""The mpirun example of docs/features.md (`examples/hccl_allreduce.py`) runs as written on 2
and 3 ranks."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from test_mpi import _mpiexec

pytest.importorskip("mpi4py", reason="the MPI transport needs mpi4py: pip install -e '.[mpi]'")

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("n", [2, 3])
def test_readme_mpirun_example(n):
    exe = _mpiexec()
    if exe is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([exe, "-n", str(n), sys.executable, "examples/hccl_allreduce.py"],
                       env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    total = n * (n + 1) / 2
    # ranks print concurrently, so lines may interleave: match each report wherever it is
    got = sorted(re.findall(r"rank (\d+)/(\d+): all_reduce sum = ([\d.]+)", p.stdout))
    assert got == [(str(r), str(n), str(total)) for r in range(n)], p.stdout
