"""The NPU-view time estimate of collectives (rt/hccl/estimate.py): the formulas exactly, the
SoC's links, and that profiled collectives carry the estimate in their args."""
import math

import numpy as np
import pytest

import rt
from rt import hccl
from rt.hccl.estimate import estimate_seconds, link_of, npu_estimate
from rt.soc import LINKS, get_links

MiB = 1 << 20
BW, LAT = 1e9, 1e-6                      # round numbers: every term is easy to check by hand


@pytest.mark.parametrize("name,algo,n,want", [
    ("HcclAllReduce", "ring", 4, 2 * 3 * LAT + 2 * 3 / 4 * MiB / BW),
    ("HcclAllReduce", "H-D_R", 4, 2 * 2 * LAT + 2 * 3 / 4 * MiB / BW),
    ("HcclAllReduce", "H-D_R", 8, 2 * 3 * LAT + 2 * 7 / 8 * MiB / BW),
    # 6 = 4 + 2 folded: fold + unfold of the whole vector, then H-D over 4
    ("HcclAllReduce", "H-D_R", 6, 2 * LAT + 2 * MiB / BW + 2 * 2 * LAT + 2 * 3 / 4 * MiB / BW),
    ("HcclReduceScatter", "ring", 4, 3 * LAT + 3 / 4 * MiB / BW),
    ("HcclAllGatherV", "ring", 5, 4 * LAT + 4 / 5 * MiB / BW),
    ("HcclAlltoAll", "pairwise", 8, 7 * LAT + 7 / 8 * MiB / BW),
    ("HcclReduce", "ring", 4, 4 * LAT + 2 * 3 / 4 * MiB / BW),
    ("HcclBroadcast", "ring", 3, 2 * LAT + MiB / BW),
    ("HcclScatter", "ring", 4, LAT + 3 / 4 * MiB / BW),
    ("HcclSend", "p2p", 2, LAT + MiB / BW),
    ("HcclBatchSendRecv", "p2p", 4, LAT + MiB / BW),
    ("HcclBarrier", "dissemination", 5, 3 * LAT),
    ("HcclAllReduce", "ring", 1, 0.0),
])
def test_formulas(name, algo, n, want):
    assert math.isclose(estimate_seconds(name, algo, n, MiB, BW, LAT), want, rel_tol=1e-12)


def test_hd_and_ring_estimates_share_the_bandwidth_term_on_powers_of_two():
    for n in (2, 4, 8, 16):
        ring = estimate_seconds("HcclAllReduce", "ring", n, 0, BW, LAT)
        hd = estimate_seconds("HcclAllReduce", "H-D_R", n, 0, BW, LAT)
        assert math.isclose(ring / hd, (n - 1) / math.log2(n))   # 2(n-1) vs 2 log2 n steps
        big = [estimate_seconds("HcclAllReduce", a, n, 1 << 30, BW, 0.0) for a in ("ring",
                                                                                   "H-D_R")]
        assert math.isclose(big[0], big[1])


def test_unknown_task_name_is_refused():
    with pytest.raises(ValueError, match="name must be an HCCL task name, got name='HcclFoo'"):
        estimate_seconds("HcclFoo", "ring", 2, 1, BW, LAT)


def test_links_of_the_socs():
    a2 = get_links("Ascend910B2")
    assert link_of(a2, None) == ("HCCS", 56e9, 2e-6)
    assert link_of(a2, ["s0", "s0"]) == ("HCCS", 56e9, 2e-6)
    assert link_of(a2, ["s0", "s1"]) == ("RoCE", 25e9, 5e-6)
    assert link_of(get_links("Ascend310P3"), None)[0] == "PCIe"
    assert set(LINKS) == set(rt.soc.SOCS)
    for spec in LINKS.values():              # every number is either sourced or an assumption
        assert spec.assumptions and spec.sources


def test_npu_estimate_args():
    got = npu_estimate("HcclAllReduce", "ring", 8, 64 * MiB, soc="Ascend910B2")
    want = (2 * 7 * 2e-6 + 2 * 7 / 8 * 64 * MiB / 56e9) * 1e6
    assert got["npu_est_us"] == round(want, 3) and got["est_link"] == "HCCS"
    assert got["est_source"].startswith("estimate, not measured: alpha-beta model")
    roce = npu_estimate("HcclAllReduce", "ring", 8, 64 * MiB, ["a"] * 4 + ["b"] * 4,
                        "Ascend910B2")
    assert roce["est_link"] == "RoCE" and roce["npu_est_us"] > got["npu_est_us"]


def test_profiled_collectives_carry_the_estimate(ranks):
    R = ranks(4)
    n, count = 4, 1000
    xs = R.put([np.ones(count, np.float32)] * n)
    ys = R.empty(count * n, np.float32)
    with rt.profile() as prof:
        for c, s, x, y in zip(R.comms, R.streams, xs, ys):
            c.all_reduce(x, x, stream=s)
            c.all_gather(x, y, stream=s)
            c.barrier(stream=s)
        R.sync()
    recs = [r for r in prof.records if r.kind == "hccl"]
    assert len(recs) == 3 * n
    for r in recs:
        algo = r.args["algorithm"]
        want = npu_estimate(r.name, algo, n, r.nbytes, soc=rt.get_soc_name())
        assert r.args["npu_est_us"] == want["npu_est_us"] > 0
        assert r.args["est_source"] == want["est_source"] and r.args["est_link"] == "HCCS"
    ar = [r for r in recs if r.name == "HcclAllReduce"][0]
    assert ar.args["algorithm"] == "H-D_R" and ar.nbytes == count * 4
    assert ar.args["npu_est_us"] == round(
        (2 * 2 * 2e-6 + 2 * 3 / 4 * count * 4 / 56e9) * 1e6, 3)
    events = prof.chrome_trace()["traceEvents"]          # the trace shows it too
    assert sum(1 for e in events if e.get("args", {}).get("npu_est_us")) >= 3 * n
    assert hccl.npu_estimate is npu_estimate
