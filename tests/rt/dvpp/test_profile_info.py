"""DVPP in the runtime's own views: the profiler's Chrome trace draws DVPP tasks on per-unit
tracks, `python -m rt info` has a DVPP(%) column, 507018 is rt.errors' code."""
import rt
import rt.__main__ as cli
from rt.errors import CODE_NAMES, ACL_ERROR_RT_AICPU_EXCEPTION
from rt.profiler import DVPP_TID_BASE, DVPP_UNITS
from dvpp_helpers import jpeg_bytes, picture, to_dvpp


def _decode_and_resize(channel, stream):
    data = jpeg_bytes(picture(96, 64, seed=1))
    n = rt.dvpp.jpeg_predict_dec_size(data, None, 1)
    dec = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=1, width=96, height=64,
                          width_stride=128, height_stride=64)
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(data), len(data), dec, stream)
    rs = 48 * 32 * 3 // 2
    res = rt.dvpp.PicDesc(data=rt.dvpp.malloc(rs), size=rs, format=1, width=48, height=32,
                          width_stride=48, height_stride=32)
    rt.dvpp.vpc_resize_async(channel, dec, res, None, stream)


def test_profiler_trace_has_a_track_per_dvpp_unit(channel, stream):
    with rt.profile() as prof:
        _decode_and_resize(channel, stream)
        stream.synchronize()
    trace = prof.chrome_trace()
    ev = trace["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    jpegd = DVPP_TID_BASE + DVPP_UNITS.index("JPEGD")
    vpc = DVPP_TID_BASE + DVPP_UNITS.index("VPC")
    assert names[(0, jpegd)] == "DVPP JPEGD" and names[(0, vpc)] == "DVPP VPC"
    assert names[(0, stream.id)] == f"stream {stream.id}"
    on_unit = {e["tid"]: e for e in ev if e.get("ph") == "X" and e["tid"] >= DVPP_TID_BASE}
    on_stream = {e["name"]: e for e in ev if e.get("ph") == "X" and e["tid"] == stream.id}
    assert on_unit[jpegd]["name"] == "jpeg_decode" and on_unit[vpc]["name"] == "vpc_resize"
    for tid, name in ((jpegd, "jpeg_decode"), (vpc, "vpc_resize")):
        u, s = on_unit[tid], on_stream[name]         # the same task on both tracks
        assert (u["ts"], u["dur"], u["cat"]) == (s["ts"], s["dur"], "dvpp")
        assert u["args"]["stream"] == stream.id and u["args"]["unit"] in DVPP_UNITS
    assert on_unit[vpc]["ts"] >= on_unit[jpegd]["ts"] + on_unit[jpegd]["dur"]   # stream order
    assert rt.dvpp.chrome_trace(prof)["traceEvents"] == ev      # the helper delegates


def test_info_table_has_a_dvpp_column(channel, stream):
    _decode_and_resize(channel, stream)
    stream.synchronize()
    table = cli.info_table().splitlines()
    assert len({len(line) for line in table}) == 1                       # rectangular
    head = [c.strip() for c in table[3].strip("|").split("|")]
    assert head[3:] == ["AICore(%)", "HBM-Usage(MB)", "DVPP(%)"]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in table if line.startswith("| ") and line[2].isdigit()}
    util = rt.dvpp.utilization(0)
    assert 0 < util <= 100 and float(rows["0"][5]) == round(util, 1)
    assert float(rows["1"][5]) == 0.0


def test_aicpu_exception_code_is_the_runtime_one():
    assert rt.dvpp.ACL_ERROR_RT_AICPU_EXCEPTION is ACL_ERROR_RT_AICPU_EXCEPTION
    assert CODE_NAMES[507018] == "ACL_ERROR_RT_AICPU_EXCEPTION"
