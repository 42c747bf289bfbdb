"""rt.device: init/finalize, devices, per-thread current device, attributes, memory info,
logging."""
import threading
import weakref

import pytest

import rt
from rt import device as _device
from rt.errors import (AclError, ACL_ERROR_UNINITIALIZE, ACL_ERROR_REPEAT_INITIALIZE,
                       ACL_ERROR_REPEAT_FINALIZE, ACL_ERROR_INVALID_PARAM, ACL_ERROR_INVALID_FILE,
                       ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_CONTEXT_NULL,
                       ACL_ERROR_RT_PARAM_INVALID)
from rt.soc import GiB, MiB

from rt_test_helpers import raises


# -- init / finalize ------------------------------------------------------------------------------
def test_init_twice_is_repeat_initialize():
    rt.init()
    with raises(ACL_ERROR_REPEAT_INITIALIZE, r"rt\.init: the runtime must be initialized once"):
        rt.init()


def test_finalize_without_init_and_twice():
    with raises(ACL_ERROR_UNINITIALIZE, r"rt\.finalize: the runtime must be initialized first"):
        rt.finalize()
    rt.init()
    rt.finalize()
    with raises(ACL_ERROR_REPEAT_FINALIZE, r"rt\.finalize: .*already finalized"):
        rt.finalize()
    rt.init()           # re-init after finalize is allowed
    assert rt.device_count() == 8


@pytest.mark.parametrize("call", [lambda: rt.set_device(0), lambda: rt.malloc(16),
                                  rt.device_count, rt.current_device, rt.get_soc_name,
                                  lambda: rt.get_device_info(0, 101), rt.get_mem_info,
                                  lambda: rt.malloc_host(16), rt.synchronize_device])
def test_apis_before_init_raise_uninitialize(call):
    with raises(ACL_ERROR_UNINITIALIZE, r"must be initialized first, got initialized=False"):
        call()


def test_init_config_path(tmp_path):
    good = tmp_path / "acl.json"
    good.write_text("{}")
    rt.init(str(good))
    rt.finalize()
    with raises(ACL_ERROR_INVALID_FILE, r"rt\.init: config_path must name a readable JSON file"):
        rt.init(str(tmp_path / "missing.json"))


def test_finalize_resets_devices():
    rt.init()
    rt.set_device(0)
    rt.malloc(100)
    rt.finalize()
    rt.init()
    with raises(ACL_ERROR_RT_CONTEXT_NULL, r"rt\.malloc: a current device must be set"):
        rt.malloc(100)
    assert _device.devices() == {}


# -- devices --------------------------------------------------------------------------------------
def test_device_count_env(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_DEVICES", "2")
    rt.init()
    assert rt.device_count() == 2
    rt.set_device(1)
    with raises(ACL_ERROR_RT_INVALID_DEVICEID,
                r"rt\.set_device: device id must be in \[0, 2\), got device=2"):
        rt.set_device(2)
    monkeypatch.setenv("ASCEND_EMU_DEVICES", "zero")
    with raises(ACL_ERROR_INVALID_PARAM, r"ASCEND_EMU_DEVICES must be a positive integer"):
        rt.device_count()


@pytest.mark.parametrize("bad", [-1, 8, "0", 1.0, True])
def test_set_device_invalid_id(bad):
    rt.init()
    with raises(ACL_ERROR_RT_INVALID_DEVICEID, r"rt\.set_device: device id must be in \[0, 8\)"):
        rt.set_device(bad)


def test_no_current_device_is_context_null():
    rt.init()
    with raises(ACL_ERROR_RT_CONTEXT_NULL, r"rt\.current_device: a current device must be set in "
                                           r"this thread, got device=None"):
        rt.current_device()
    with raises(ACL_ERROR_RT_CONTEXT_NULL, r"rt\.get_mem_info: a current device must be set"):
        rt.get_mem_info()
    with raises(ACL_ERROR_RT_CONTEXT_NULL, r"device 3 must be set with rt\.set_device\(3\) first"):
        _device.get_device(3)


def test_current_device_is_per_thread():
    rt.init()
    rt.set_device(0)
    barrier = threading.Barrier(4)
    seen, errors = {}, []

    def worker(k):
        try:
            if k == 3:          # a thread that never sets a device has none
                with pytest.raises(AclError) as e:
                    rt.current_device()
                seen[k] = e.value.code
                barrier.wait()
                return
            rt.set_device(k + 1)
            barrier.wait()      # every thread has set its device before anyone reads
            p = rt.malloc(64)
            seen[k] = (rt.current_device(), p.device)
            rt.free(p)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert seen == {0: (1, 1), 1: (2, 2), 2: (3, 3), 3: ACL_ERROR_RT_CONTEXT_NULL}
    assert rt.current_device() == 0


def test_device_object_and_addresses(dev0):
    assert dev0.id == 0 and dev0.soc.name == "Ascend910B2"
    assert dev0.arena.base == 0x100 << 40
    assert dev0.default_stream is None       # created on first use by rt.default_stream()
    assert isinstance(dev0.streams, weakref.WeakSet)
    rt.set_device(5)
    p = rt.malloc(10)
    assert p.device == 5 and int(p) >> 40 == 0x105
    assert _device.get_device() is _device.get_device(5)


def test_default_stream_is_made_by_rt_stream_not_by_the_device(dev0):
    assert dev0.default_stream is None
    s = rt.default_stream()
    assert dev0.default_stream is s and s.is_default and rt.default_stream() is s
    rt.reset_device(0)
    assert dev0.default_stream is None


class _FakeStream:
    def __init__(self, fail=False):
        self.synced, self.fail = 0, fail

    def synchronize(self):
        self.synced += 1
        if self.fail:
            raise AclError(507015, "boom")


def test_synchronize_device_waits_for_every_stream(dev0):
    a, b = _FakeStream(), _FakeStream()
    dev0.streams.add(a)
    dev0.streams.add(b)
    rt.synchronize_device()
    assert (a.synced, b.synced) == (1, 1)
    bad = _FakeStream(fail=True)
    dev0.streams.add(bad)
    with raises(507015, "boom"):
        rt.synchronize_device()
    assert (a.synced, b.synced, bad.synced) == (2, 2, 1)     # all were waited for


def test_reset_device_syncs_runs_hooks_and_drops_state(dev0):
    s = _FakeStream(fail=True)
    dev0.streams.add(s)
    hooked = []
    dev0.reset_hooks.append(lambda d: hooked.append(d.id))
    rt.malloc(1000)
    rt.reset_device(0)
    assert s.synced == 1 and hooked == [0]
    assert 0 not in _device.devices()
    with raises(ACL_ERROR_RT_CONTEXT_NULL, r"rt\.malloc: a current device must be set"):
        rt.malloc(10)
    rt.set_device(0)
    assert rt.memory_stats()["allocated_bytes.all.current"] == 0
    rt.reset_device(3)          # never set: nothing to do


def test_reset_device_reports_leaks(monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "2")
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    rt.init()
    rt.set_device(0)
    rt.malloc(1000)
    rt.malloc(24)
    rt.reset_device(0)
    out = capsys.readouterr().out
    assert "[WARNING] RUNTIME(" in out
    assert "device 0 has 2 leaked allocation(s), 1024 bytes" in out
    assert "size=1000" in out and "size=24" in out and "allocated at" not in out


def test_reset_device_leak_report_says_where_at_debug(monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "0")
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    rt.init()
    rt.set_device(0)
    rt.malloc(77)
    rt.reset_device(0)
    out = capsys.readouterr().out
    assert "size=77 allocated at" in out and "test_device.py" in out


# -- SoC and attributes --------------------------------------------------------------------------
def test_soc_name_and_device_info(monkeypatch):
    rt.init()
    assert rt.get_soc_name() == "Ascend910B2"
    info = {a: rt.get_device_info(0, a) for a in rt.DevAttr}
    assert info == {rt.DevAttr.AICPU_CORE_NUM: 6, rt.DevAttr.AICORE_CORE_NUM: 24,
                    rt.DevAttr.CUBE_CORE_NUM: 24, rt.DevAttr.VECTOR_CORE_NUM: 48,
                    rt.DevAttr.TOTAL_GLOBAL_MEM_SIZE: 64 * GiB, rt.DevAttr.L2_CACHE_SIZE: 192 * MiB}
    assert rt.get_device_info(0, 101) == 24          # plain ACL ids work
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"rt\.get_device_info: attr must be one of .*got attr=7"):
        rt.get_device_info(0, 7)
    with raises(ACL_ERROR_RT_INVALID_DEVICEID, r"rt\.get_device_info: device id must be"):
        rt.get_device_info(9, 101)


def test_soc_env(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    monkeypatch.setenv("ASCEND_EMU_DEVICE_MEMORY", "1G")
    rt.init()
    rt.set_device(0)
    assert rt.get_soc_name() == "Ascend310P3"
    assert rt.get_device_info(0, rt.DevAttr.AICORE_CORE_NUM) == 8
    assert rt.get_device_info(0, rt.DevAttr.TOTAL_GLOBAL_MEM_SIZE) == GiB
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend999")
    with raises(ACL_ERROR_INVALID_PARAM, r"get_soc: soc name must be one of"):
        rt.set_device(1)


# -- memory capacity and info --------------------------------------------------------------------
@pytest.mark.parametrize("text,value", [("64M", 64 * MiB), ("1.5G", 3 * GiB // 2),
                                        ("4GiB", 4 * GiB), ("1048576", MiB), ("512k", 512 * 1024),
                                        ("100T", 64 * GiB)])
def test_device_memory_env(monkeypatch, text, value):
    monkeypatch.setenv("ASCEND_EMU_DEVICE_MEMORY", text)
    rt.init()
    rt.set_device(0)
    assert rt.get_mem_info(rt.device.ACL_HBM_MEM) == (value, value)


def test_device_memory_env_invalid(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_DEVICE_MEMORY", "lots")
    rt.init()
    with raises(ACL_ERROR_INVALID_PARAM, r"ASCEND_EMU_DEVICE_MEMORY must be a byte count like 4G, "
                                         r"512M or 1048576, got ASCEND_EMU_DEVICE_MEMORY='lots'"):
        rt.set_device(0)


def test_get_mem_info_is_truthful(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_DEVICE_MEMORY", "256M")
    rt.init()
    rt.set_device(0)
    total = 256 * MiB
    assert rt.get_mem_info() == (total, total)
    p = rt.malloc(3 * MiB)                     # two 2 MiB huge granules
    assert rt.get_mem_info() == (total - 4 * MiB, total)
    rt.free(p)
    assert rt.get_mem_info() == (total - 4 * MiB, total)   # cached by the pool: still reserved
    assert rt.empty_cache() == 4 * MiB
    assert rt.get_mem_info() == (total, total)
    assert rt.get_mem_info(rt.device.ACL_DDR_MEM) == (0, 0)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.get_mem_info: attr must be an aclrtMemAttr"):
        rt.get_mem_info(9)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_device_memory_is_backed_lazily():
    rt.init()
    before = _rss()
    ptrs = []
    for d in range(8):                      # 8 devices x 64 GiB reserved, 8 GiB allocated on each
        rt.set_device(d)
        ptrs.append(rt.malloc(8 * GiB))
    assert _rss() - before < 64 * MiB
    view = rt.memory.device_view(ptrs[0], 16 * MiB)
    view[:] = 1                              # touching pages is what costs RAM
    assert 16 * MiB <= _rss() - before < 96 * MiB


# -- logging -------------------------------------------------------------------------------------
def test_init_logs_at_info_to_stdout(monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "1")
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    rt.init()
    out = capsys.readouterr().out
    assert "[INFO] RUNTIME(" in out and "Runtime initialized successfully" in out


def test_default_log_level_is_error(capsys):
    rt.init()
    rt.set_device(0)
    rt.malloc(10)
    rt.reset_device(0)                       # a leak warning: below the default level
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""


def test_logs_go_to_the_plog_file_without_print_to_stdout(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "1")
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path))
    rt.init()
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""
    (path,) = list((tmp_path / "debug" / "plog").glob("plog-*.log"))
    assert "Runtime initialized successfully" in path.read_text()


def test_log_level_null(monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "4")
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    rt.init()
    rt.log.logger.error("not shown")
    assert capsys.readouterr().out == ""


def test_recent_error_message():
    with pytest.raises(AclError):
        rt.set_device(0)
    msg = rt.get_recent_err_msg()
    assert msg.startswith("[100001 ACL_ERROR_UNINITIALIZE] rt.set_device:")
    assert rt.get_recent_err_msg() is None
