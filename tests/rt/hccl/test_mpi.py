"""rt.hccl across processes: `mpiexec -n N python tests/rt/hccl/mpi_worker.py <scenario>` (one rank
per process, root info broadcast with MPI, data moved with MPI non-blocking point-to-point from
the stream workers). Needs the `mpi` extra (mpi4py + the mpich wheel's mpiexec)."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py", reason="the MPI transport needs mpi4py: pip install -e '.[mpi]'")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
WORKER = HERE / "mpi_worker.py"


def _mpiexec():
    local = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


def run(tmp_path, scenario: str, n: int, timeout: float = 300, **env) -> dict:
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
        assert res[r]["seconds"] < 30                         # 30x: a loaded machine
    assert res[2]["skipped"]


def test_a_rank_that_skips_a_collective_gives_the_others_a_timeout(tmp_path):
    res = run(tmp_path, "exec_timeout", 2, HCCL_EXEC_TIMEOUT="1")
    assert res[0]["code"] == 9 and res[0]["cause"] == "HcclError", res[0]
    assert res[0]["seconds"] < 30                             # 30x: a loaded machine


def _table(tmp_path, servers, **extra):
    """A rank table: `servers` = device ids per server; rank ids in order."""
    rank, sl = 0, []
    for si, devs in enumerate(servers):
        sl.append({"server_id": f"node{si}", "device": [
            {"device_id": str(d), "device_ip": f"10.1.{si}.{d + 1}", "rank_id": str(rank + i)}
            for i, d in enumerate(devs)]})
        rank += len(devs)
    doc = {"version": "1.0", "status": "completed", "server_count": str(len(sl)),
           "server_list": sl, **extra}
    p = tmp_path / "rank_table.json"
    p.write_text(json.dumps(doc))
    return str(p)


def test_cluster_info_and_halving_doubling_over_mpi(tmp_path):
    # 3 ranks on 2 "servers" (device 0 twice: each process has its own emulated devices);
    # H-D_R forced: 3 = 2 + 1, so ranks 0 and 1 fold first
    path = _table(tmp_path, [[0, 1], [0]])
    res = run(tmp_path, "cluster_info", 3, HCCL_TEST_TABLE=path,
              HCCL_ALGO="level0:NA;level1:H-D_R")
    for r in range(3):
        assert res[r]["ok"], res[r]
        assert res[r]["rank"] == r and res[r]["size"] == 3 and res[r]["transport"] == "mpi"
        assert res[r]["device"] == [0, 1, 0][r]              # the table's device_id
        assert res[r]["algorithms"] == ["H-D_R"] and res[r]["links"] == ["RoCE"]


def test_bad_rank_tables_over_mpi(tmp_path):
    path = _table(tmp_path, [[0, 1]], status="initializing")
    res = run(tmp_path, "bad_table", 2, HCCL_TEST_TABLE=path)
    for r in range(2):
        assert res[r]["code"] == 1, res[r]
        assert "rank table status must be 'completed'" in res[r]["msg"]
    path = _table(tmp_path, [[0, 1]])
    res = run(tmp_path, "bad_table", 2, HCCL_TEST_TABLE=path, HCCL_TEST_RANK_SHIFT="1")
    for r in range(2):
        assert res[r]["code"] == 1, res[r]
        assert "under MPI, rank 0 must run in MPI world rank 0 (the rendezvous), got rank=" \
            f"{1 - r} in world rank {r}" in res[r]["msg"]


def test_ranks_with_different_hccl_algo_are_refused_at_join(tmp_path):
    """The algorithm is chosen per rank from HCCL_ALGO and the SoC, so they must agree (else
    the ranks would run different algorithms on one collective and hang or mix data)."""
    res = run(tmp_path, "algo_mismatch", 2, HCCL_CONNECT_TIMEOUT="20")
    for r in (0, 1):
        assert res[r]["code"] == 1, res[r]                    # HCCL_E_PARA
        assert re.search(r"HCCL_ALGO='level0:NA;level1:ring' on Ascend\w+ for rank 1, "
                         r"HCCL_ALGO='' on Ascend\w+ for the root", res[r]["msg"]), res[r]
    assert "HCCL_ALGO and the SoC must be the same on every rank" in res[0]["msg"]
    assert "the root refused this rank" in res[1]["msg"]
