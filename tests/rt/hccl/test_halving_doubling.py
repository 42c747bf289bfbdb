"""Halving-doubling all-reduce (HCCL's H-D_R) against numpy over ranks, dtypes, ops and ragged
counts, in one process; HCCL_ALGO parsing and the algorithm selection recorded in the task."""
import zlib

import numpy as np
import pytest

from rt import hccl
from rt.hccl import HcclResult
from rt.hccl.algorithms import choose_all_reduce, parse_hccl_algo

from hccl_test_data import DTYPES, _check, _data, _reference

HD = "level0:NA;level1:H-D_R"


def _recomm(R, n):
    """New communicators on R's first n devices (HCCL_ALGO is read when they are made)."""
    R.comms = hccl.comm_init_all(list(range(n)))
    for c in R.comms:
        c.chunk_bytes = 64
    R.streams, R.n = R.streams[:n], n
    return R


def _all_reduce(R, data, op="sum", in_place=False):
    xs = R.put(data)
    ys = xs if in_place else R.empty(len(data[0]), data[0].dtype)
    tasks = [c.all_reduce(x, y, op=op, stream=s)
             for c, s, x, y in zip(R.comms, R.streams, xs, ys)]
    return tasks, R.get(ys)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_hd_every_dtype_and_op_with_a_folded_rank(ranks, monkeypatch, dtype, op):
    monkeypatch.setenv("HCCL_ALGO", HD)
    R = ranks(3)                                  # 3 = 2 + 1: ranks 0 and 1 fold first
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, "hd")).encode()))
    data = _data(rng, 3, 77, dtype, op)           # 77: ragged over 2 blocks and 64-byte chunks
    tasks, got = _all_reduce(R, data, op)
    want = _reference(op, data)
    for g in got:
        _check(g, want, dtype)
    assert {t.args["algorithm"] for t in tasks} == {"H-D_R"}
    assert tasks[0].args["algorithm_reason"] == "HCCL_ALGO"


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("count", [1, 5, 1000])
def test_hd_ranks_and_ragged_counts(ranks, monkeypatch, n, count):
    monkeypatch.setenv("HCCL_ALGO", HD)
    R = ranks(n)
    data = _data(np.random.default_rng(n * 1000 + count), n, count, "int32")
    tasks, got = _all_reduce(R, data, "sum", in_place=count == 1000)
    want = _reference("sum", data)
    for g in got:
        np.testing.assert_array_equal(g, want)
    assert tasks[0].args["algorithm"] == "H-D_R"


@pytest.mark.parametrize("n", [4, 8])
def test_hd_floats_with_max_and_min_on_power_of_two_ranks(ranks, monkeypatch, n):
    monkeypatch.setenv("HCCL_ALGO", "H-D_R")                # the bare shorthand
    R = ranks(n)
    for op in ("max", "min"):
        data = _data(np.random.default_rng(n), n, 333, "float32")
        _, got = _all_reduce(R, data, op)
        for g in got:
            np.testing.assert_array_equal(g, _reference(op, data).astype(np.float32))


def test_hd_and_ring_agree_bit_for_bit_on_integers(ranks, monkeypatch):
    data = _data(np.random.default_rng(5), 5, 999, "int64")
    out = {}
    R = ranks(5)
    for algo in ("ring", "H-D_R"):
        monkeypatch.setenv("HCCL_ALGO", f"level0:NA;level1:{algo}")
        _recomm(R, 5)
        tasks, got = _all_reduce(R, data, "prod")
        assert tasks[0].args["algorithm"] == algo
        out[algo] = got[0]
    np.testing.assert_array_equal(out["ring"], out["H-D_R"])


# -- HCCL_ALGO ------------------------------------------------------------------------------------
def test_parse_hccl_algo_forms():
    assert parse_hccl_algo(None) == {} and parse_hccl_algo("  ") == {}
    assert parse_hccl_algo("level0:NA;level1:H-D_R") == {"*": "H-D_R"}
    assert parse_hccl_algo("level0:NA;level1:ring;level2:NHR") == {"*": "ring"}
    assert parse_hccl_algo("h-d_r") == {"*": "H-D_R"}
    assert parse_hccl_algo("allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:NB") == \
        {"allreduce": "ring", "allgather": "NB"}


@pytest.mark.parametrize("raw,why", [
    ("level0:NA;level1:fast", "unknown algorithm 'fast'"),
    ("level0:ring;level1:ring", "level0 must be NA, got 'ring'"),
    ("level0:NA", "level1 missing"),
    ("level3:NA;level1:ring", "unknown level ['level3']"),
    ("allreduc=level0:NA;level1:ring", "op must be one of"),
    ("tree", "unknown algorithm 'tree'"),
])
def test_bad_hccl_algo_fails_communicator_creation(ranks, monkeypatch, raw, why):
    monkeypatch.setenv("HCCL_ALGO", raw)
    with pytest.raises(hccl.HcclError) as ei:
        ranks(2)
    assert ei.value.code == HcclResult.HCCL_E_PARA
    assert "hccl: HCCL_ALGO must be 'level0:NA;level1:<algo>'" in str(ei.value)
    assert f"got HCCL_ALGO={raw!r} ({why}" in str(ei.value)


def test_forced_algorithms_hccl_does_not_emulate_fall_back_to_ring_with_the_reason(ranks,
                                                                                  monkeypatch):
    monkeypatch.setenv("HCCL_ALGO", "allreduce=level0:NA;level1:NHR/allgather=level0:NA;"
                                    "level1:H-D_R")
    R = ranks(4)
    tasks, _ = _all_reduce(R, [np.ones(8, np.float32)] * 4)
    assert tasks[0].args["algorithm"] == "ring"
    assert tasks[0].args["algorithm_reason"] == "HCCL_ALGO asks NHR: not emulated, ring used"
    xs, ys = R.put([np.ones(2, np.float32)] * 4), R.empty(8, np.float32)
    t = R.comms[0].all_gather(xs[0], ys[0], stream=R.streams[0])
    for c, s, x, y in zip(R.comms[1:], R.streams[1:], xs[1:], ys[1:]):
        c.all_gather(x, y, stream=s)
    R.sync()
    assert t.args["algorithm"] == "ring"
    assert t.args["algorithm_reason"] == "HCCL_ALGO asks H-D_R: not emulated for allgather, " \
                                         "ring used"


# -- selection without HCCL_ALGO ---------------------------------------------------------------
def _est(n, nbytes, bw=56e9, lat=2e-6):
    return lambda a: hccl.estimate_seconds("HcclAllReduce", a, n, nbytes, bw, lat) * 1e6


@pytest.mark.parametrize("n,nbytes,want", [
    (2, 1 << 26, "ring"),           # 2 ranks: the same exchange
    (4, 64, "H-D_R"),               # powers of two: fewer steps, the same bytes
    (8, 1 << 26, "H-D_R"),
    (3, 64, "ring"),                # 3 = 2 + 1: the fold costs what ring's extra steps save
    (5, 4096, "H-D_R"),             # small: the fold is cheaper than 3 more ring steps
    (5, 1 << 20, "ring"),           # large: the fold's 2 N/B dominates
    (7, 1 << 17, "H-D_R"),
    (7, 1 << 20, "ring"),
])
def test_auto_selection_by_rank_count_and_size(n, nbytes, want):
    algo, why = choose_all_reduce({}, n, nbytes, _est(n, nbytes))
    assert algo == want, why
    if n > 2:
        e = _est(n, nbytes)
        assert why == f"auto: est ring {e('ring'):.3f} us, H-D_R {e('H-D_R'):.3f} us"


def test_auto_selection_is_recorded_in_the_task(ranks):
    R = ranks(4)
    tasks, got = _all_reduce(R, [np.full(100, r, np.float32) for r in range(4)])
    np.testing.assert_array_equal(got[0], 6)
    assert tasks[0].args["algorithm"] == "H-D_R"
    assert tasks[0].args["algorithm_reason"].startswith("auto: est ring ")
    tasks, _ = _all_reduce(_recomm(R, 3), [np.ones(100, np.float32)] * 3)
    assert tasks[0].args["algorithm"] == "ring"
