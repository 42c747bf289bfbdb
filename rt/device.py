"""Devices: init/finalize, the per-thread current device, device attributes and memory info.

Mirrors AscendCL's ``aclInit``/``aclFinalize`` and the ``aclrt*Device*`` calls. Every API except
:func:`init` needs ``init()`` first (else ``ACL_ERROR_UNINITIALIZE`` 100001); APIs that act on the
current device need ``set_device`` in the calling thread first (else ``ACL_ERROR_RT_CONTEXT_NULL``
107002), as in ACL where the current context is per host thread.

Environment: ``ASCEND_EMU_DEVICES`` (device count, default 8), ``ASCEND_EMU_SOC`` (default
Ascend910B2), ``ASCEND_EMU_DEVICE_MEMORY`` (caps each device's memory: bytes, or with a K/M/G/T
suffix such as ``4G``), ``ASCEND_MEM_CHECK=1`` (use-after-free detection, see ``rt.memcheck``).

Deviation: ACL reference-counts ``aclrtSetDevice`` per thread; here ``reset_device(i)`` always
drops device *i*'s state (streams synchronized, leaked allocations reported and freed), and any
thread whose current device was *i* must call ``set_device`` again.
"""
from __future__ import annotations

import enum
import json
import os
import re
import threading
import weakref

from . import log as _log
from time import perf_counter_ns

from .errors import (AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_UNINITIALIZE,
                     ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_REPEAT_FINALIZE, ACL_ERROR_INVALID_FILE,
                     ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_CONTEXT_NULL,
                     ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                     ACL_ERROR_RT_INTERNAL_ERROR)
from .pool import Arena, DevicePool
from .soc import SocSpec, get_soc

logger = _log.logger

ACL_DDR_MEM, ACL_HBM_MEM, ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL, ACL_HBM_MEM_HUGE, \
    ACL_HBM_MEM_NORMAL = range(6)


class DevAttr(enum.IntEnum):
    """Mirrors `aclrtDevAttr` (ids for `aclrtGetDeviceInfo`)."""
    AICPU_CORE_NUM = 1
    AICORE_CORE_NUM = 101
    CUBE_CORE_NUM = 102
    VECTOR_CORE_NUM = 201
    TOTAL_GLOBAL_MEM_SIZE = 301
    L2_CACHE_SIZE = 302


class Device:
    """The state of one set device: ``.id``, ``.soc``, ``.arena``, ``.pool``, ``.streams``.

    ``streams`` is a WeakSet that ``rt.stream`` fills; ``synchronize_device`` and ``reset_device``
    synchronize each. ``default_stream`` is None until ``rt.default_stream()`` creates it (under
    ``lock``). Callables appended to ``reset_hooks`` run (with the device) after its streams are
    synchronized in ``reset_device``.
    """

    def __init__(self, i: int, soc: SocSpec, capacity: int, memcheck: bool):
        self.id = i
        self.soc = soc
        self.arena = Arena(i, capacity)
        self.pool = DevicePool(i, self.arena, memcheck=memcheck)
        self.streams: weakref.WeakSet = weakref.WeakSet()
        self.default_stream = None
        self.reset_hooks: list = []
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<Device {self.id} {self.soc.name} capacity={self.arena.capacity}>"


_lock = threading.RLock()
_initialized = False
_finalized_once = False
_generation = 0                     # bumped by init/finalize: stale thread-locals read as unset
#: id -> Device of every set device (memory and memcheck read it without the lock).
DEVICES: dict[int, Device] = {}
_tls = threading.local()


def parse_bytes(text: str, name: str) -> int:
    """``"4G"``, ``"512M"``, ``"1.5GiB"``, ``"1048576"`` -> bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if not m:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"rt: {name} must be a byte count like 4G, 512M or 1048576, "
                       f"got {name}={text!r}")
    return int(float(m.group(1)) * (1 << (10 * " KMGT".index(m.group(2) or " "))))


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        v = int(raw)
        if v < 1:
            raise ValueError
        return v
    except ValueError:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"rt: {name} must be a positive integer, got {name}={raw!r}") from None


def check_init(api: str) -> None:
    if not _initialized:
        raise AclError(ACL_ERROR_UNINITIALIZE,
                       f"{api}: the runtime must be initialized first, got initialized=False; "
                       f"call rt.init()")


def _check_id(i, api: str) -> int:
    n = device_count()
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
        raise AclError(ACL_ERROR_RT_INVALID_DEVICEID,
                       f"{api}: device id must be in [0, {n}), got device={i!r}")
    return int(i)


def init(config_path: str | None = None) -> None:
    """Mirrors `aclInit`: initialize the runtime. A second call raises 100002.

    `config_path`, if given, must be a readable JSON file (its content is not used).
    """
    global _initialized, _generation
    with _lock:
        if _initialized:
            raise AclError(ACL_ERROR_REPEAT_INITIALIZE,
                           "rt.init: the runtime must be initialized once, got initialized=True; "
                           "call rt.finalize() first")
        if config_path:
            try:
                with open(config_path) as f:
                    text = f.read()
                if text.strip():
                    json.loads(text)
            except (OSError, ValueError) as e:
                raise AclError(ACL_ERROR_INVALID_FILE,
                               f"rt.init: config_path must name a readable JSON file, "
                               f"got config_path={config_path!r} ({e})") from None
        _log.configure()
        _generation += 1
        _initialized = True
    logger.info("rt.init: Runtime initialized successfully")


def finalize() -> None:
    """Mirrors `aclFinalize`: reset every set device and deinitialize the runtime."""
    global _initialized, _finalized_once, _generation
    with _lock:
        if not _initialized:
            if _finalized_once:
                raise AclError(ACL_ERROR_REPEAT_FINALIZE,
                               "rt.finalize: the runtime must be initialized, "
                               "got initialized=False (already finalized)")
            check_init("rt.finalize")
    for i in sorted(DEVICES):
        reset_device(i)
    with _lock:
        _initialized = False
        _finalized_once = True
        _generation += 1
    logger.info("rt.finalize: Runtime finalized successfully")


def device_count() -> int:
    """Mirrors `aclrtGetDeviceCount`: the number of emulated devices (env ASCEND_EMU_DEVICES, 8)."""
    check_init("rt.device_count")
    return _env_int("ASCEND_EMU_DEVICES", 8)


def _capacity(soc: SocSpec) -> int:
    cap = soc.hbm_bytes
    raw = os.environ.get("ASCEND_EMU_DEVICE_MEMORY")
    if raw:
        cap = min(cap, parse_bytes(raw, "ASCEND_EMU_DEVICE_MEMORY"))
    cap &= ~4095
    if cap < 4096:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"rt.set_device: ASCEND_EMU_DEVICE_MEMORY must be >= 4K, got "
                       f"ASCEND_EMU_DEVICE_MEMORY={raw!r}")
    return cap


def set_device(i: int) -> None:
    """Mirrors `aclrtSetDevice`: make device `i` current for the calling thread (creating its
    state on first use)."""
    with _lock:
        check_init("rt.set_device")
        i = _check_id(i, "rt.set_device")
        if i not in DEVICES:
            soc = get_soc()
            memcheck = os.environ.get("ASCEND_MEM_CHECK", "0").strip() == "1"
            DEVICES[i] = Device(i, soc, _capacity(soc), memcheck)
            logger.info("rt.set_device: device %d opened (%s, %d bytes%s)", i, soc.name,
                        DEVICES[i].arena.capacity, ", mem-check on" if memcheck else "")
        _tls.cur = (_generation, i)


def _current_id(api: str) -> int:
    cur = getattr(_tls, "cur", None)
    if cur is not None and cur[0] == _generation and cur[1] in DEVICES:
        return cur[1]
    check_init(api)
    raise AclError(ACL_ERROR_RT_CONTEXT_NULL,
                   f"{api}: a current device must be set in this thread, got device=None; "
                   f"call rt.set_device(i) first")


def current_device() -> int:
    """Mirrors `aclrtGetDevice`: the calling thread's current device id."""
    return _current_id("rt.current_device")


def ensure_device() -> int:
    """Initialise rt and select device 0 on first use, as pyasc and torch_npu do implicitly;
    returns the current device. Explicit `init`/`set_device` calls made earlier are kept."""
    with _lock:
        if not _initialized:
            init()
    try:
        return current_device()
    except AclError as e:
        if e.code != ACL_ERROR_RT_CONTEXT_NULL:
            raise
        set_device(0)
        return 0


def get_device(i: int | None = None, api: str = "rt.get_device") -> Device:
    """Internal: the `Device` of id `i` (default: the current device); it must be set."""
    if i is None:
        return DEVICES[_current_id(api)]
    dev = DEVICES.get(i)
    if dev is None:
        check_init(api)
        _check_id(i, api)
        raise AclError(ACL_ERROR_RT_CONTEXT_NULL,
                       f"{api}: device {i} must be set with rt.set_device({i}) first, "
                       f"got device={i}")
    return dev


def _sync_streams(dev: Device, api: str, raise_errors: bool, timeout_ms: int = -1) -> None:
    first = None
    deadline = None if timeout_ms is None or timeout_ms < 0 else \
        perf_counter_ns() + int(timeout_ms) * 1_000_000
    for s in list(dev.streams):
        if getattr(s, "_destroyed", False):
            continue
        try:
            if deadline is None:
                s.synchronize()
            else:
                s.synchronize(api=api, deadline=deadline)
        except AclError as e:
            if e.code == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT and deadline is not None:
                raise AclError(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                               f"{api}: device {dev.id} must finish within timeout_ms, got "
                               f"timeout_ms={timeout_ms} with stream {s.id} still busy") from None
            if first is None:
                first = e
            logger.error("%s: stream %r of device %d failed: %s", api, s, dev.id, e)
        except Exception as e:      # a stream in error: report it, keep going
            if first is None:
                first = e
            logger.error("%s: stream %r of device %d failed: %s", api, s, dev.id, e)
    if first is not None and raise_errors:
        raise first


def synchronize_device(timeout_ms: int = -1) -> None:
    """Mirrors `aclrtSynchronizeDevice(WithTimeout)`: wait for every stream of the current device;
    raises the first stream error after all have been waited for. `timeout_ms=-1` waits forever;
    otherwise raises 507046 (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) at the deadline."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < -1:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"synchronize_device: timeout_ms must be -1 or an int >= 0, got "
                       f"timeout_ms={timeout_ms!r}")
    dev = get_device(api="rt.synchronize_device")
    _sync_streams(dev, "synchronize_device", raise_errors=True, timeout_ms=timeout_ms)


#: Called as hook(dev, err) when a device is reset, to end its streams' work (rt.stream adds one).
ABORT_HOOKS: list = []


def _abort(dev: Device, api: str) -> None:
    err = AclError(ACL_ERROR_RT_INTERNAL_ERROR,
                   f"{api}: the device's work must end when it is reset, got device={dev.id} "
                   f"reset while the task was queued or running")
    for hook in list(ABORT_HOOKS):
        try:
            hook(dev, err)
        except Exception as e:              # noqa: BLE001 - the reset goes on
            logger.error("%s: abort hook %r failed: %s", api, hook, e)


def reset_device(i: int) -> None:
    """Mirrors `aclrtResetDevice`: end device `i`'s work, report leaked allocations (a warning
    with their sizes; where they were allocated when ASCEND_GLOBAL_LOG_LEVEL=0), free them and
    drop the device's state.

    Ending the work: tasks not started are discarded; a running kernel is stopped (interpret
    mode: at its next Python bytecode; compiled code cannot be interrupted: its core worker is
    abandoned, keeps its CPU until the compiled function returns, and a new worker takes its
    place, so the runtime stays usable); copies and host functions already running finish.
    Synchronize first to have queued work complete."""
    with _lock:
        check_init("rt.reset_device")
        i = _check_id(i, "rt.reset_device")
        dev = DEVICES.get(i)
    if dev is None:
        return
    _abort(dev, "rt.reset_device")
    _sync_streams(dev, "reset_device", raise_errors=False)   # without the lock: tasks may need it
    for hook in list(dev.reset_hooks):
        try:
            hook(dev)
        except Exception as e:
            logger.error("rt.reset_device: reset hook %r failed: %s", hook, e)
    with _lock:
        if DEVICES.get(i) is not dev:
            return
        leaks = dev.pool.live_blocks()
        if leaks:
            total = sum(b.req for b in leaks)
            lines = [f"  0x{b.addr:x} size={b.req}"
                     + (f" allocated at {b.where}" if b.where else "")
                     for b in leaks[:50]]
            more = f"\n  ... and {len(leaks) - 50} more" if len(leaks) > 50 else ""
            logger.warning("rt.reset_device: device %d has %d leaked allocation(s), %d bytes; "
                           "freeing them:\n%s%s", i, len(leaks), total, "\n".join(lines), more)
        del DEVICES[i]
        dev.pool.allocs.clear()
        dev.arena.close()
        cur = getattr(_tls, "cur", None)
        if cur is not None and cur[1] == i:
            _tls.cur = None


def get_soc_name() -> str:
    """Mirrors `aclrtGetSocName`: the emulated SoC (env ASCEND_EMU_SOC, default Ascend910B2)."""
    check_init("rt.get_soc_name")
    cur = getattr(_tls, "cur", None)
    if cur is not None and cur[0] == _generation and cur[1] in DEVICES:
        return DEVICES[cur[1]].soc.name
    return get_soc().name


def get_device_info(i: int, attr: int) -> int:
    """Mirrors `aclrtGetDeviceInfo(devId, attr, &value)` with `DevAttr` ids."""
    check_init("rt.get_device_info")
    i = _check_id(i, "rt.get_device_info")
    dev = DEVICES.get(i)
    soc = dev.soc if dev is not None else get_soc()
    values = {DevAttr.AICPU_CORE_NUM: soc.aicpu_num, DevAttr.AICORE_CORE_NUM: soc.ai_core_num,
              DevAttr.CUBE_CORE_NUM: soc.ai_core_num, DevAttr.VECTOR_CORE_NUM: soc.vector_core_num,
              DevAttr.TOTAL_GLOBAL_MEM_SIZE: dev.arena.capacity if dev else _capacity(soc),
              DevAttr.L2_CACHE_SIZE: soc.l2_bytes}
    try:
        return int(values[DevAttr(int(attr))])
    except (ValueError, KeyError, TypeError):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"rt.get_device_info: attr must be one of "
                       f"{', '.join(f'{a.name}={a.value}' for a in DevAttr)}, "
                       f"got attr={attr!r}") from None


def get_mem_info(attr: int = ACL_HBM_MEM) -> tuple[int, int]:
    """Mirrors `aclrtGetMemInfo(attr, &free, &total)` for the current device: (free, total) bytes.

    Memory the caching pool holds counts as used (as the driver sees it); `rt.empty_cache()` gives
    it back. The emulated 910B/310P devices have no separate DDR: the DDR attributes report (0, 0).
    """
    dev = get_device(api="rt.get_mem_info")
    if attr in (ACL_HBM_MEM, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_NORMAL):
        total = dev.arena.capacity
        return total - dev.arena.reserved, total
    if attr in (ACL_DDR_MEM, ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL):
        return 0, 0
    raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                   f"rt.get_mem_info: attr must be an aclrtMemAttr in [0, 5], got attr={attr!r}")


def devices() -> dict[int, Device]:
    """Internal: a snapshot of the set devices."""
    return dict(DEVICES)


def _reset_for_tests() -> None:
    """Drop all runtime state (devices, init flag, this thread's current device) without raising.

    Other threads' current devices become unset too (the generation changes)."""
    global _initialized, _finalized_once, _generation
    with _lock:
        devs = [DEVICES.pop(i) for i in sorted(DEVICES)]
        _initialized = False
        _finalized_once = False
        _generation += 1
        _tls.cur = None
    for dev in devs:
        _abort(dev, "_reset_for_tests")
        _sync_streams(dev, "_reset_for_tests", raise_errors=False)
        for hook in list(dev.reset_hooks):
            try:
                hook(dev)
            except Exception:
                pass
        dev.pool.allocs.clear()
        dev.arena.close()
    _log.configure()
