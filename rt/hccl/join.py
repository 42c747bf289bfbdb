"""Joining a communicator: HCCL's root info and `HcclCommInit*` (snake_case). The root info
names the transport: threads of one process meet at an in-process rendezvous, ranks of an MPI job
exchange their entries through MPI (root collects, bounded by HCCL_CONNECT_TIMEOUT)."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid as _uuid

import numpy as np

from .. import device as _device
from ..errors import AclError
from .algorithms import parse_hccl_algo
from .comm import E_PARA, ROOT_INFO_BYTES, Comm
from .ranktable import load_rank_table
from .transport import LocalEndpoint, LocalGroup, MpiEndpoint
from .types import HcclError, HcclResult, connect_timeout

_MAGIC = b"HCCLEMU1"


class RootInfo:
    """Mirrors `HcclRootInfo` (4108 opaque bytes): `bytes(info)` travels to the other ranks out of
    band (an MPI broadcast, a file); `RootInfo(blob)` or the blob itself is accepted back."""
    __slots__ = ("internal",)

    def __init__(self, internal: bytes):
        self.internal = bytes(internal)

    def __bytes__(self) -> bytes:
        return self.internal

    def __repr__(self) -> str:
        return f"<rt.hccl.RootInfo {self.header()}>"

    def header(self) -> dict:
        raw = self.internal
        if len(raw) != ROOT_INFO_BYTES or not raw.startswith(_MAGIC):
            raise HcclError(E_PARA, f"hccl: root_info must be the {ROOT_INFO_BYTES}-byte blob of "
                                    f"get_root_info(), got {len(raw)} bytes "
                                    f"starting {raw[:8]!r}")
        return json.loads(raw[len(_MAGIC):].rstrip(b"\0").decode())


# -- MPI ------------------------------------------------------------------------------------------
_MPI_ENV = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def _launched_by_mpi() -> bool:
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        v = os.environ.get(name)
        if v is not None:
            return v.strip() not in ("", "1")
    return False


def mpi():
    """mpi4py's MPI module (initialises MPI on first use; THREAD_MULTIPLE is required)."""
    try:
        import mpi4py
        mpi4py.rc.thread_level = "multiple"
        from mpi4py import MPI
    except ImportError as e:
        raise HcclError(HcclResult.HCCL_E_NOT_SUPPORT,
                        "hccl: the MPI transport needs mpi4py, got ImportError "
                        f"({e}); pip install -e '.[mpi]'") from None
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise HcclError(HcclResult.HCCL_E_NOT_SUPPORT,
                        "hccl: MPI must provide MPI_THREAD_MULTIPLE (collectives run on stream "
                        f"worker threads), got thread level {MPI.Query_thread()}")
    return MPI


def _transport_kind() -> str:
    raw = os.environ.get("ASCEND_EMU_HCCL_TRANSPORT", "").strip().lower()
    if raw in ("mpi", "local"):
        return raw
    if raw:
        raise HcclError(E_PARA, f"get_root_info: ASCEND_EMU_HCCL_TRANSPORT must be 'mpi' or "
                                f"'local', got {raw!r}")
    return "mpi" if _launched_by_mpi() else "local"


def get_root_info() -> RootInfo:
    """Mirrors `HcclGetRootInfo`: the blob the other ranks pass to `comm_init_root_info`.

    Under an MPI launcher (`mpirun -n N`, or ASCEND_EMU_HCCL_TRANSPORT=mpi) the communicator will
    run over MPI and the caller (MPI world rank w) is the rendezvous point: it must be one of the
    ranks. Otherwise the ranks are threads of this process (each with its own device)."""
    kind = _transport_kind()
    head = {"kind": kind, "id": _uuid.uuid4().hex, "pid": os.getpid(),
            "host": socket.gethostname()}
    if kind == "mpi":
        head["root"] = mpi().COMM_WORLD.Get_rank()
    body = _MAGIC + json.dumps(head).encode()
    return RootInfo(body + b"\0" * (ROOT_INFO_BYTES - len(body)))


# -- in-process rendezvous (comm_init_root_info from threads) --------------------------------------
class _Rendezvous:
    def __init__(self, n: int):
        self.n = n
        self.members: dict = {}         # rank -> device
        self.seen: set = set()          # ranks that ever arrived (one that gave up stays here)
        self.group = None
        self.cv = threading.Condition()


_rendezvous: dict = {}
_rendezvous_lock = threading.Lock()


def _join_local(head: dict, n: int, rank: int, dev: int, api: str) -> LocalEndpoint:
    if head["pid"] != os.getpid():
        raise HcclError(E_PARA, f"{api}: root_info must come from this process for the in-process "
                                f"transport, got one of pid {head['pid']}; launch the ranks with "
                                f"mpirun (then get_root_info makes an MPI root info)")
    with _rendezvous_lock:
        rv = _rendezvous.setdefault(head["id"], _Rendezvous(n))
    deadline = time.monotonic() + connect_timeout()
    with rv.cv:
        if rv.n != n:
            raise HcclError(E_PARA, f"{api}: n_ranks must be the same on every rank, got "
                                    f"{n} here and {rv.n} on another rank")
        if rank in rv.members or dev in rv.members.values():
            what = f"rank {rank}" if rank in rv.members else f"device {dev}"
            raise HcclError(E_PARA, f"{api}: each rank must join once, on its own device, got "
                                    f"{what} twice")
        rv.members[rank] = dev
        rv.seen.add(rank)
        if len(rv.members) == n:
            rv.group = LocalGroup(n)
            rv.cv.notify_all()
            with _rendezvous_lock:
                _rendezvous.pop(head["id"], None)
        while rv.group is None:
            left = deadline - time.monotonic()
            if left <= 0 or not rv.cv.wait(left) and rv.group is None:
                if rv.group is None:
                    del rv.members[rank]
                    raise HcclError(HcclResult.HCCL_E_TIMEOUT,
                                    f"{api}: all {n} ranks must join within HCCL_CONNECT_TIMEOUT "
                                    f"({connect_timeout():g} s), got {len(rv.seen)}: "
                                    f"missing ranks {sorted(set(range(n)) - rv.seen)}")
        return LocalEndpoint(rv.group, rank)


def _join_mpi(head: dict, n: int, rank: int, dev: int, api: str):
    """Join over MPI; returns (endpoint, host name of each rank)."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    me, root = world.Get_rank(), int(head["root"])
    if root >= world.Get_size():
        raise HcclError(E_PARA, f"{api}: root_info names MPI rank {root}, got a world of "
                                f"{world.Get_size()} processes")
    htag = 17000 + int(head["id"][:8], 16) % 15000
    deadline = time.monotonic() + connect_timeout()
    missing = "the root (MPI rank %d)" % root

    def timeout(detail):
        return HcclError(HcclResult.HCCL_E_TIMEOUT,
                         f"{api}: all {n} ranks must join within HCCL_CONNECT_TIMEOUT "
                         f"({connect_timeout():g} s), got no answer from {detail}")

    def probe(source):
        st = MPI.Status()
        pause = 1e-4
        while not world.Iprobe(source=source, tag=htag, status=st):
            if time.monotonic() >= deadline:
                return None
            time.sleep(pause)
            pause = min(pause * 2, 5e-3)
        return world.recv(source=st.Get_source(), tag=htag)

    def send(obj, dest):
        req = world.isend(obj, dest=dest, tag=htag)
        while not req.Test():
            if time.monotonic() >= deadline:
                raise timeout(f"MPI rank {dest}")
            time.sleep(1e-4)

    host = socket.gethostname()
    # every rank must pick the same algorithm for a collective: the choice depends on HCCL_ALGO
    # and the SoC's links, so both must agree across processes
    algo = (os.environ.get("HCCL_ALGO") or "", _device.get_device(dev).soc.name)
    if me == root:
        table = {rank: (me, dev, host)}
        while len(table) < n:
            msg = probe(MPI.ANY_SOURCE)
            if msg is None:
                lost = sorted(set(range(n)) - set(table))
                raise timeout(f"HCCL ranks {lost}")
            mid, mn, mrank, mworld, mdev, mhost, malgo = msg
            if mid != head["id"]:
                continue
            if mn != n or not 0 <= mrank < n or mrank in table:
                err = f"n_ranks {mn} (root: {n}), rank {mrank}"
                send(("error", err), mworld)
                raise HcclError(E_PARA, f"{api}: ranks must agree on n_ranks and take distinct "
                                        f"ranks in [0, n_ranks), got {err}")
            if tuple(malgo) != algo:
                err = (f"HCCL_ALGO={malgo[0]!r} on {malgo[1]} for rank {mrank}, "
                       f"HCCL_ALGO={algo[0]!r} on {algo[1]} for the root")
                send(("error", err), mworld)
                raise HcclError(E_PARA, f"{api}: HCCL_ALGO and the SoC must be the same on every "
                                        f"rank, got {err}")
            table[mrank] = (mworld, mdev, mhost)
        worlds = [table[i][0] for i in range(n)]
        hosts = [table[i][2] for i in range(n)]
        for i in range(n):
            if table[i][0] != me:
                send(("ok", worlds, hosts), table[i][0])
    else:
        send((head["id"], n, rank, me, dev, host, algo), root)
        msg = probe(root)
        if msg is None:
            raise timeout(missing)
        if msg[0] != "ok":
            raise HcclError(E_PARA, f"{api}: the root refused this rank: {msg[1]}")
        worlds, hosts = msg[1], msg[2]
    group = world.Get_group().Incl(worlds)
    sub = world.Create_group(group, tag=htag)
    group.Free()
    return MpiEndpoint(sub, MPI), hosts


# -- HcclCommInit* ---------------------------------------------------------------------------
def _bind_device(rank: int) -> int:
    try:
        return _device.current_device()
    except AclError:
        pass
    try:
        n = _device.device_count()
    except AclError:
        _device.init()
        n = _device.device_count()
    _device.set_device(rank % n)
    return rank % n


def comm_init_root_info(n_ranks: int, root_info, rank: int) -> Comm:
    """Mirrors `HcclCommInitRootInfo`: join communicator `root_info` as rank `rank` of `n_ranks`.

    Blocks until all ranks have joined, at most HCCL_CONNECT_TIMEOUT seconds (default 120), then
    raises HCCL_E_TIMEOUT. The rank is bound to this thread's current device (if none is set:
    device `rank % device_count`, as `mpirun` scripts expect)."""
    api = "comm_init_root_info"
    parse_hccl_algo(os.environ.get("HCCL_ALGO"))        # a bad HCCL_ALGO fails before joining
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise HcclError(E_PARA, f"{api}: n_ranks must be an int >= 1, got n_ranks={n_ranks!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < n_ranks:
        raise HcclError(E_PARA, f"{api}: rank must be in [0, {n_ranks}), got rank={rank!r}")
    if not isinstance(root_info, RootInfo):
        if not isinstance(root_info, (bytes, bytearray, memoryview)):
            raise HcclError(E_PARA, f"{api}: root_info must be a RootInfo or its bytes, got "
                                    f"{type(root_info).__name__}")
        root_info = RootInfo(bytes(root_info))
    head = root_info.header()
    dev = _bind_device(rank)
    if head["kind"] == "mpi":
        ep, servers = _join_mpi(head, n_ranks, rank, dev, api)
    else:
        ep, servers = _join_local(head, n_ranks, rank, dev, api), None
    return Comm(ep, rank, n_ranks, dev, servers=servers)


_cluster_joins: dict = {}              # rank-table digest -> communicators made from it (MPI)
_cluster_lock = threading.Lock()


def comm_init_cluster_info(rank_table_path, rank: int) -> Comm:
    """Mirrors `HcclCommInitClusterInfo(clusterInfo, rank, comm)`: join the communicator the rank
    table at `rank_table_path` describes (see `rt.hccl.ranktable` for the format and its checks)
    as rank `rank`, on the table's `device_id` of that rank.

    The rank table replaces the root info: in one process each rank is a thread calling with its
    rank (the table's device ids must then be distinct); under `mpirun` one rank per process, HCCL
    rank 0 in MPI world rank 0 (the rendezvous; the others may be any world ranks). If the
    thread already has a current device it must be the table's. Blocks until every rank has
    joined, at most HCCL_CONNECT_TIMEOUT seconds (then HCCL_E_TIMEOUT); ranks whose tables
    differ never meet (they time out)."""
    api = "comm_init_cluster_info"
    table = load_rank_table(rank_table_path, api)
    parse_hccl_algo(os.environ.get("HCCL_ALGO"))
    n = table.size
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < n:
        raise HcclError(E_PARA, f"{api}: rank must be in [0, {n}) (the rank table has {n} "
                                f"ranks), got rank={rank!r}")
    rank = int(rank)
    entry = table.ranks[rank]
    kind = _transport_kind()
    dev = _bind_table_device(entry.device_id, rank, api)
    if kind == "mpi":
        me = mpi().COMM_WORLD.Get_rank()
        if (rank == 0) != (me == 0):
            raise HcclError(E_PARA, f"{api}: under MPI, rank 0 must run in MPI world rank 0 (the "
                                    f"rendezvous), got rank={rank} in world rank {me}")
        with _cluster_lock:            # every process makes its communicators in the same order
            seq = _cluster_joins.get(table.digest, 0)
            _cluster_joins[table.digest] = seq + 1
        head = {"kind": "mpi", "id": f"{table.digest[:24]}-{seq}", "root": 0}
        ep, _ = _join_mpi(head, n, rank, dev, api)
    else:
        head = {"kind": "local", "id": f"ranktable-{table.digest}", "pid": os.getpid()}
        ep = _join_local(head, n, rank, dev, api)
    return Comm(ep, rank, n, dev, servers=[e.server_id for e in table.ranks])


def _bind_table_device(device_id: int, rank: int, api: str) -> int:
    try:
        cur = _device.current_device()
    except AclError:
        cur = None
    if cur is not None:
        if cur != device_id:
            raise HcclError(E_PARA, f"{api}: the current device must be rank {rank}'s device_id "
                                    f"in the rank table ({device_id}), got device {cur}")
        return cur
    try:
        count = _device.device_count()
    except AclError:
        _device.init()
        count = _device.device_count()
    if device_id >= count:
        raise HcclError(E_PARA, f"{api}: rank {rank}'s device_id must be < the device count "
                                f"({count}), got device_id={device_id}")
    _device.set_device(device_id)
    return device_id


def comm_init_all(devices) -> list[Comm]:
    """Mirrors `HcclCommInitAll(ndev, devices, comms)`: one communicator per device of this
    process (rank i on devices[i]). Devices not opened yet are opened; the calling thread keeps
    its current device (or gets devices[0] if it had none)."""
    api = "comm_init_all"
    parse_hccl_algo(os.environ.get("HCCL_ALGO"))
    try:
        ok = all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in devices)
        devs = [int(d) for d in devices] if ok else []
    except (TypeError, ValueError):
        devs, ok = [], False
    if not ok or not devs or len(set(devs)) != len(devs):
        raise HcclError(E_PARA, f"{api}: devices must be distinct device ids, got "
                                f"devices={devices!r}")
    try:
        prev = _device.current_device()
    except AclError:
        prev = None
    try:
        if prev is None:
            try:
                _device.device_count()
            except AclError:
                _device.init()
        for d in devs:
            _device.set_device(d)
    except AclError as e:
        raise HcclError(E_PARA, f"{api}: {e.message}") from None
    finally:
        if prev is not None:
            _device.set_device(prev)
        elif devs:
            try:
                _device.set_device(devs[0])
            except AclError:
                pass
    group = LocalGroup(len(devs))
    return [Comm(LocalEndpoint(group, i), i, len(devs), d) for i, d in enumerate(devs)]
