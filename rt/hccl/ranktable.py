"""HCCL rank tables: the JSON file `HcclCommInitClusterInfo` reads (`hccl.json`, RANK_TABLE_FILE).

The format read is the Atlas training / Atlas A2 one, version "1.0" (Ascend MindCluster,
"hccl.json文件说明"; CANN HCCL user guide, "rank table配置资源信息"); numbers are JSON strings
there, plain ints are accepted too:

    {"version": "1.0", "status": "completed", "server_count": "1",
     "server_list": [{"server_id": "10.0.0.1",
                      "device": [{"device_id": "0", "device_ip": "192.168.100.101",
                                  "rank_id": "0"}, ...]}]}

Rules checked (HCCL_E_PARA unless said): the file must be readable (HCCL_E_OPEN_FILE_FAILURE)
JSON of at most MAX_RANK_TABLE_BYTES (checked before reading more) nesting at most
MAX_RANK_TABLE_DEPTH arrays/objects (checked before parsing; the format needs 5); version "1.0";
status "completed" (anything else means the operator is still writing it);
server_count = len(server_list) >= 1; every server a distinct non-empty server_id and a non-empty
device list; every device an int device_id >= 0 (distinct within its server), an IPv4
device_ip (distinct over the table) and an int rank_id; the rank_ids exactly 0..n-1.
The grouped "global rank table" (server_group_list) and version 1.2 (super_pod_list) are not
read: HCCL_E_NOT_SUPPORT.
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass

import numpy as np

from .types import HcclError, HcclResult

E_PARA = HcclResult.HCCL_E_PARA
#: a rank table of 100,000 devices is about 12 MB; anything past this is not a rank table
MAX_RANK_TABLE_BYTES = 16 << 20
#: the format nests 5 deep (table, server_list, server, device list, device); room for extras
MAX_RANK_TABLE_DEPTH = 16


@dataclass(frozen=True)
class RankEntry:
    """One device of the table: HCCL rank `rank` on device `device_id` of server `server_id`."""
    rank: int
    server_id: str
    device_id: int
    device_ip: str


@dataclass(frozen=True)
class RankTable:
    path: str
    version: str
    ranks: tuple            # RankEntry by rank
    digest: str             # sha256 of the canonical table: ranks that disagree never meet

    @property
    def size(self) -> int:
        return len(self.ranks)

    @property
    def servers(self) -> tuple:
        return tuple(dict.fromkeys(e.server_id for e in self.ranks))


def _int(v, api: str, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        ok = False
    else:
        ok = isinstance(v, int) or v.strip().isdigit()
    if not ok or int(v) < 0:
        raise HcclError(E_PARA, f"{api}: {what} must be an int >= 0 (or its decimal string), "
                                f"got {what}={v!r}")
    return int(v)


def _field(d: dict, key: str, api: str, where: str):
    if not isinstance(d, dict) or key not in d:
        raise HcclError(E_PARA, f"{api}: {where} must have the field {key!r}, got "
                                f"{sorted(d) if isinstance(d, dict) else type(d).__name__}")
    return d[key]


def _nesting_depth(raw: bytes, chunk: int = 1 << 20) -> int:
    """The deepest nesting of [ and { in JSON text `raw` (brackets inside strings not counted),
    found without parsing (json.loads recurses once per level): vectorised over chunks, carrying
    whether a string is open, the backslashes just before the chunk and the depth."""
    inside, run, depth, deepest = False, 0, 0, 0
    for start in range(0, len(raw), chunk):
        b = np.frombuffer(raw, np.uint8, min(chunk, len(raw) - start), start)
        pos = np.arange(b.size, dtype=np.int64)
        bs = b == 0x5C
        # position of the last non-backslash at or before each byte (-1 - run: before the chunk)
        last = np.maximum.accumulate(np.where(bs, -1 - run, pos))
        quotes = np.flatnonzero(b == 0x22)
        before = np.where(quotes > 0, quotes - 1 - last[np.maximum(quotes - 1, 0)], run)
        real = quotes[before % 2 == 0]              # quotes not escaped by a backslash
        toggles = np.zeros(b.size, np.int8)
        toggles[real] = 1
        in_str = (np.cumsum(toggles, dtype=np.int64) + inside) % 2 == 1
        step = (np.isin(b, (0x5B, 0x7B)).astype(np.int64) - np.isin(b, (0x5D, 0x7D)))
        step[in_str] = 0
        levels = np.cumsum(step) + depth
        if levels.size:
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        inside = bool(in_str[-1])
        run = int(b.size - 1 - last[-1])
    return deepest


def load_rank_table(path, api: str = "comm_init_cluster_info") -> RankTable:
    """Read and check the rank table at `path` (see the module docstring for the rules)."""
    if not isinstance(path, (str, bytes)) and not hasattr(path, "__fspath__"):
        raise HcclError(E_PARA, f"{api}: rank_table_path must be a path, got "
                                f"rank_table_path={path!r}")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_RANK_TABLE_BYTES + 1)      # never more, whatever the file claims
    except OSError as e:
        raise HcclError(HcclResult.HCCL_E_OPEN_FILE_FAILURE,
                        f"{api}: rank_table_path must name a readable file, got "
                        f"rank_table_path={str(path)!r} ({e.strerror})") from None
    if len(raw) > MAX_RANK_TABLE_BYTES:
        raise HcclError(E_PARA, f"{api}: the rank table must be at most {MAX_RANK_TABLE_BYTES} "
                                f"bytes, got rank_table_path={str(path)!r} (larger)")
    depth = _nesting_depth(raw)
    if depth > MAX_RANK_TABLE_DEPTH:
        raise HcclError(E_PARA, f"{api}: the rank table must nest at most "
                                f"{MAX_RANK_TABLE_DEPTH} arrays/objects deep, got depth={depth} "
                                f"in {str(path)!r}")
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise HcclError(E_PARA, f"{api}: the rank table must be JSON, got {str(path)!r}: "
                                f"{e}") from None
    if not isinstance(doc, dict):
        raise HcclError(E_PARA, f"{api}: the rank table must be a JSON object, got "
                                f"{type(doc).__name__}")
    if "server_group_list" in doc or "super_pod_list" in doc:
        raise HcclError(HcclResult.HCCL_E_NOT_SUPPORT,
                        f"{api}: the rank table must be the version 1.0 server_list format, got "
                        f"a grouped/SuperPoD table (server_group_list/super_pod_list)")
    version = _field(doc, "version", api, "the rank table")
    if version != "1.0":
        raise HcclError(E_PARA, f"{api}: rank table version must be '1.0', got "
                                f"version={version!r}")
    status = _field(doc, "status", api, "the rank table")
    if status != "completed":
        raise HcclError(E_PARA, f"{api}: rank table status must be 'completed' (the table is "
                                f"complete), got status={status!r}")
    servers = _field(doc, "server_list", api, "the rank table")
    count = _int(_field(doc, "server_count", api, "the rank table"), api, "server_count")
    if not isinstance(servers, list) or not servers:
        raise HcclError(E_PARA, f"{api}: server_list must be a non-empty list, got "
                                f"server_list={servers!r}")
    if count != len(servers):
        raise HcclError(E_PARA, f"{api}: server_count must equal the number of servers in "
                                f"server_list ({len(servers)}), got server_count={count}")
    entries, ips, seen_servers = [], set(), set()
    for si, srv in enumerate(servers):
        where = f"server_list[{si}]"
        sid = _field(srv, "server_id", api, where)
        if not isinstance(sid, str) or not sid or sid in seen_servers:
            raise HcclError(E_PARA, f"{api}: {where}.server_id must be a distinct non-empty "
                                    f"string, got server_id={sid!r}")
        seen_servers.add(sid)
        devs = _field(srv, "device", api, where)
        if not isinstance(devs, list) or not devs:
            raise HcclError(E_PARA, f"{api}: {where}.device must be a non-empty list, got "
                                    f"device={devs!r}")
        dev_ids = set()
        for di, d in enumerate(devs):
            w = f"{where}.device[{di}]"
            dev = _int(_field(d, "device_id", api, w), api, f"{w}.device_id")
            ip = _field(d, "device_ip", api, w)
            rank = _int(_field(d, "rank_id", api, w), api, f"{w}.rank_id")
            if dev in dev_ids:
                raise HcclError(E_PARA, f"{api}: device_id must be distinct within a server, "
                                        f"got {w}.device_id={dev} twice on server {sid!r}")
            dev_ids.add(dev)
            try:
                ipaddress.IPv4Address(ip)
            except (ValueError, TypeError):
                raise HcclError(E_PARA, f"{api}: {w}.device_ip must be an IPv4 address, got "
                                        f"device_ip={ip!r}") from None
            if ip in ips:
                raise HcclError(E_PARA, f"{api}: device_ip must be distinct over the table, "
                                        f"got {w}.device_ip={ip!r} twice")
            ips.add(ip)
            entries.append(RankEntry(rank, sid, dev, ip))
    ranks = sorted(e.rank for e in entries)
    if ranks != list(range(len(entries))):
        dup = sorted({r for r in ranks if ranks.count(r) > 1})
        raise HcclError(E_PARA, f"{api}: rank_id must be 0..{len(entries) - 1}, each once, got "
                                f"rank_ids {ranks}" + (f" (repeated: {dup})" if dup else ""))
    entries.sort(key=lambda e: e.rank)
    canon = json.dumps([[e.rank, e.server_id, e.device_id, e.device_ip] for e in entries])
    return RankTable(str(path), version, tuple(entries),
                     hashlib.sha256(canon.encode()).hexdigest())
