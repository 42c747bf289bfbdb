"""`python -m bench.soak` in miniature: a 2-second run passes its own checks (no wrong result, no
unexpected error, pool counters back to zero) and reports every figure."""
from numba.core.runtime import _nrt_python

from bench import soak


def test_short_soak_passes_and_reports(capsys):
    try:
        assert soak.main(["--seconds", "2", "--threads", "2", "--fault-rate", "0.5",
                          "--free-iters", "100"]) == 0
    finally:
        _nrt_python.memsys_disable_stats()
    out = capsys.readouterr().out
    for what in ("runtime calls/s", "launches/s", "faults/s", "wrong results", "RSS",
                 "pool allocated_bytes.all.current  0 -> 0", "numba allocations",
                 "frees under load", "async ops/s with a queued free per round",
                 "result               OK"):
        assert what in out, out
