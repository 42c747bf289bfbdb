"""comm_init_cluster_info (HcclCommInitClusterInfo): a rank table instead of the root info, in one
process (one thread per rank); the rank table's checks, each by its message and HCCL code. The
multi-process case is in test_mpi.py."""
import copy
import json
import threading

import numpy as np
import pytest

import rt
from rt import hccl
from rt.hccl import HcclResult


def table(n_servers=1, per_server=4, device_of=None):
    """A version-1.0 rank table (numbers as strings, as the real hccl.json has them)."""
    servers, rank = [], 0
    for s in range(n_servers):
        devs = []
        for d in range(per_server):
            dev = device_of(rank) if device_of else d
            devs.append({"device_id": str(dev), "device_ip": f"192.168.{s}.{10 + d}",
                         "rank_id": str(rank)})
            rank += 1
        servers.append({"server_id": f"10.0.0.{s + 1}", "device": devs})
    return {"version": "1.0", "status": "completed", "server_count": str(n_servers),
            "server_list": servers}


def write(tmp_path, doc, name="hccl.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(p)


def join_threads(path, ranks):
    """Each rank joins from its own thread (no current device: the table's is set)."""
    out, errs = {}, {}

    def one(r):
        try:
            c = hccl.comm_init_cluster_info(path, r)
            out[r] = (c, rt.current_device())
        except Exception as e:                            # noqa: BLE001 - reported below
            errs[r] = e

    ts = [threading.Thread(target=one, args=(r,)) for r in ranks]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return out, errs


def test_ranks_join_from_threads_on_the_tables_devices_and_all_reduce(tmp_path):
    rt.init()
    # 2 servers x 2 devices; device ids chosen so rank != device (7, 5, 3, 1)
    path = write(tmp_path, table(2, 2, device_of=lambda r: 7 - 2 * r))
    got, errs = join_threads(path, range(4))
    assert not errs, errs
    comms = [got[r][0] for r in range(4)]
    assert [got[r][1] for r in range(4)] == [7, 5, 3, 1]             # thread's device set
    assert [(c.rank_id(), c.rank_size(), c.device) for c in comms] == \
        [(r, 4, 7 - 2 * r) for r in range(4)]
    assert comms[0].servers == ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"]
    data = [np.random.default_rng(r).standard_normal(1001).astype(np.float32) for r in range(4)]
    xs, ss = [], []
    for c, d in zip(comms, data):
        rt.set_device(c.device)
        ss.append(rt.Stream())
        xs.append(rt.to_device(d))
    with rt.profile() as prof:
        for c, s, x in zip(comms, ss, xs):
            c.all_reduce(x, x, stream=s)
        for s in ss:
            s.synchronize()
    want = np.sum(np.stack(data).astype(np.float64), axis=0)
    for x in xs:
        np.testing.assert_allclose(x.copy_to_host(), want, rtol=1e-5, atol=1e-5)
    rec = [r for r in prof.records if r.kind == "hccl"][0]
    assert rec.args["est_link"] == "RoCE"                 # two servers: the inter-server link
    for c in comms:
        c.destroy()


def test_a_table_can_make_two_communicators_one_after_the_other(tmp_path):
    rt.init()
    path = write(tmp_path, table(1, 2))
    first, errs = join_threads(path, range(2))
    assert not errs
    second, errs = join_threads(path, range(2))
    assert not errs
    assert first[0][0].id != second[0][0].id and second[1][0].rank == 1


def test_facade_returns_a_handle_and_codes(tmp_path):
    import rt.acl as acl
    rt.init()
    path = write(tmp_path, table(1, 1))
    h, ret = acl.hccl.comm_init_cluster_info(path, 0)      # one rank: joins at once
    assert ret == 0 and acl.hccl.get_rank_size(h) == (1, 0)
    assert acl.hccl.comm_destroy(h) == 0
    h, ret = acl.hccl.comm_init_cluster_info(str(tmp_path / "missing.json"), 0)
    assert (h, ret) == (0, HcclResult.HCCL_E_OPEN_FILE_FAILURE)
    assert "rank_table_path must name a readable file" in acl.get_recent_err_msg()


def _bad(doc_fn):
    doc = table(1, 2)
    doc_fn(doc)
    return doc


def _set(path, value):
    def fn(doc):
        d = doc
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return fn


def _del(path):
    def fn(doc):
        d = doc
        for k in path[:-1]:
            d = d[k]
        del d[path[-1]]
    return fn


DEV0 = ("server_list", 0, "device", 0)
BAD = [
    ("not json", "{'version': 1.0", 1, "the rank table must be JSON"),
    ("a list", "[]", 1, "the rank table must be a JSON object, got list"),
    ("version", _bad(_set(("version",), "2.0")), 1, "version must be '1.0', got version='2.0'"),
    ("status", _bad(_set(("status",), "initializing")), 1,
     "status must be 'completed' (the table is complete), got status='initializing'"),
    ("no status", _bad(_del(("status",))), 1, "the rank table must have the field 'status'"),
    ("server_count", _bad(_set(("server_count",), "2")), 1,
     "server_count must equal the number of servers in server_list (1), got server_count=2"),
    ("server_count text", _bad(_set(("server_count",), "one")), 1,
     "server_count must be an int >= 0 (or its decimal string), got server_count='one'"),
    ("empty server_list", _bad(_set(("server_list",), [])), 1,
     "server_list must be a non-empty list"),
    ("no devices", _bad(_set(("server_list", 0, "device"), [])), 1,
     "server_list[0].device must be a non-empty list"),
    ("no rank_id", _bad(_del(DEV0 + ("rank_id",))), 1,
     "server_list[0].device[0] must have the field 'rank_id'"),
    ("device_id", _bad(_set(DEV0 + ("device_id",), "x")), 1,
     "server_list[0].device[0].device_id must be an int >= 0 (or its decimal string), "
     "got server_list[0].device[0].device_id='x'"),
    ("device_ip", _bad(_set(DEV0 + ("device_ip",), "300.1.1.1")), 1,
     "server_list[0].device[0].device_ip must be an IPv4 address, got device_ip='300.1.1.1'"),
    ("same ip", _bad(_set(DEV0 + ("device_ip",), "192.168.0.11")), 1,
     "device_ip must be distinct over the table, got server_list[0].device[1].device_ip="
     "'192.168.0.11' twice"),
    ("same device", _bad(_set(DEV0 + ("device_id",), "1")), 1,
     "device_id must be distinct within a server, got server_list[0].device[1].device_id=1 "
     "twice on server '10.0.0.1'"),
    ("rank gap", _bad(_set(DEV0 + ("rank_id",), "2")), 1,
     "rank_id must be 0..1, each once, got rank_ids [1, 2]"),
    ("rank repeated", _bad(_set(DEV0 + ("rank_id",), "1")), 1,
     "rank_id must be 0..1, each once, got rank_ids [1, 1] (repeated: [1])"),
    ("grouped table", {"version": "1.0", "status": "completed", "server_group_list": []}, 5,
     "must be the version 1.0 server_list format"),
]


@pytest.mark.parametrize("doc,code,msg", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_rank_tables_are_refused_with_hccl_codes(tmp_path, doc, code, msg):
    rt.init()
    path = write(tmp_path, copy.deepcopy(doc))
    with pytest.raises(hccl.HcclError) as ei:
        hccl.comm_init_cluster_info(path, 0)
    assert ei.value.code == code and msg in str(ei.value), str(ei.value)
    assert str(ei.value).startswith("comm_init_cluster_info: ")


def test_missing_file_rank_range_and_device_checks(tmp_path):
    rt.init()
    with pytest.raises(hccl.HcclError) as ei:
        hccl.comm_init_cluster_info(str(tmp_path / "nope.json"), 0)
    assert ei.value.code == HcclResult.HCCL_E_OPEN_FILE_FAILURE
    assert "rank_table_path must name a readable file, got rank_table_path=" in str(ei.value)
    path = write(tmp_path, table(1, 2))
    with pytest.raises(hccl.HcclError, match=r"rank must be in \[0, 2\) \(the rank table has 2 "
                                             r"ranks\), got rank=2") as ei:
        hccl.comm_init_cluster_info(path, 2)
    assert ei.value.code == 1
    big = write(tmp_path, table(1, 1, device_of=lambda r: 8), "big.json")
    with pytest.raises(hccl.HcclError, match=r"rank 0's device_id must be < the device count "
                                             r"\(8\), got device_id=8"):
        hccl.comm_init_cluster_info(big, 0)
    rt.set_device(1)                                      # this thread is on device 1 ...
    with pytest.raises(hccl.HcclError, match=r"the current device must be rank 0's device_id "
                                             r"in the rank table \(0\), got device 1"):
        hccl.comm_init_cluster_info(path, 0)              # ... but rank 0 is on device 0


def test_a_rank_that_never_joins_times_out(tmp_path, monkeypatch):
    # long enough for ranks 0 and 2 both to arrive on a loaded machine: each names the other
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "2")
    rt.init()
    path = write(tmp_path, table(1, 3))
    got, errs = join_threads(path, [0, 2])                # rank 1 never calls
    assert not got and set(errs) == {0, 2}
    for e in errs.values():
        assert isinstance(e, hccl.HcclError) and e.code == HcclResult.HCCL_E_TIMEOUT
        assert "got 2: missing ranks [1]" in str(e), str(e)


def _oversized(tmp_path):
    """A valid one-rank table padded with whitespace past the size limit (sparse: no disk)."""
    from rt.hccl.ranktable import MAX_RANK_TABLE_BYTES
    p = tmp_path / "huge.json"
    with open(p, "wb") as f:
        f.write(json.dumps(table(1, 1)).encode())
        f.seek(MAX_RANK_TABLE_BYTES)
        f.write(b" ")
    return str(p)


def _deep(tmp_path):
    """200,000 nested arrays ("[" inside a string does not count) inside a valid table."""
    doc = table(1, 1)
    doc["note"] = "[[[[{{{{"
    text = json.dumps(doc)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    return write(tmp_path, text, "deep.json")


@pytest.mark.parametrize("make,msg", [
    (_oversized, "comm_init_cluster_info: the rank table must be at most 16777216 bytes, got "
                 "rank_table_path="),
    (_deep, "comm_init_cluster_info: the rank table must nest at most 16 arrays/objects deep, "
            "got depth=200001 in "),
], ids=["size", "depth"])
def test_hostile_rank_tables_are_bounded_before_reading_and_parsing(tmp_path, make, msg):
    """A huge file used to be read whole (MemoryError), deep nesting to raise RecursionError;
    both are refused with HCCL_E_PARA, through rt and the acl facade (codes, never a raise)."""
    import rt.acl as acl
    rt.init()
    path = make(tmp_path)
    with pytest.raises(hccl.HcclError) as ei:
        hccl.comm_init_cluster_info(path, 0)
    assert ei.value.code == HcclResult.HCCL_E_PARA and str(ei.value).startswith(msg), ei.value
    assert acl.hccl.comm_init_cluster_info(path, 0) == (0, 1)
    assert msg in acl.get_recent_err_msg()


def test_brackets_in_strings_do_not_count_as_nesting(tmp_path):
    rt.init()
    doc = table(1, 1)
    doc["server_list"][0]["server_id"] = "[" * 100 + "\\\"{" * 50
    h = hccl.comm_init_cluster_info(write(tmp_path, doc), 0)
    assert h.rank_size() == 1
    h.destroy()


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_nesting_depth_counts_what_json_nests(chunk):
    """The pre-parse scan agrees with the parsed nesting, across chunk boundaries (escaped
    quotes and backslash runs in strings, brackets inside strings)."""
    from rt.hccl.ranktable import _nesting_depth
    docs = [[], {}, [[["a"]]], {"k[": ["\\", {"x": "\\\"[[{"}]}, ["\\\\", [1, {"]": []}]],
            {"a": "\"" * 5 + "[" * 9}, [[], [[]], [[[]]]]]
    for doc, depth in zip(docs, [1, 1, 3, 3, 4, 1, 4]):
        assert _nesting_depth(json.dumps(doc).encode(), chunk) == depth, doc
