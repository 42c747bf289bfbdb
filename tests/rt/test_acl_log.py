"""CANN-style logging of the pyACL facade: every failing acl.* call writes an ASCENDCL line naming
the call (stdout with ASCEND_SLOG_PRINT_TO_STDOUT=1, else the plog file under
ASCEND_PROCESS_LOG_PATH/debug/plog), acl.app_log writes APP lines, ASCEND_GLOBAL_LOG_LEVEL
filters; the recent error message names the acl.* call too."""
import glob
import inspect
import os
import re

import numpy as np
import pytest

import rt
import rt.acl as acl
from rt import log as rt_log
from rt.errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_INVALID_RESOURCE_HANDLE,
                       ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_PARAM_INVALID)

STAMP = r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}"


def _line() -> int:
    """The caller's line number (where the failing facade call is made)."""
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture
def to_stdout(monkeypatch, tmp_path):
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path))
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    rt_log.configure()


@pytest.fixture
def to_file(monkeypatch, tmp_path):
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path))
    rt_log.configure()
    return tmp_path


def test_failing_call_logs_an_ascendcl_line_naming_the_call(to_stdout, capsys):
    assert acl.init() == 0
    ptr, ret = acl.rt.malloc(0, 0); line = _line()  # noqa: E702 (the line the log must name)
    assert (ptr, ret) == (0, ACL_ERROR_INVALID_PARAM)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1, out
    pattern = (rf"\[ERROR\] ASCENDCL\({os.getpid()},python\):{STAMP} "
               rf"\[test_acl_log\.py:{line}\]\d+ acl\.rt\.malloc: .*size must be.* "
               rf"\(error code {ACL_ERROR_INVALID_PARAM}, ACL_ERROR_INVALID_PARAM\)$")
    assert re.match(pattern, out[0]), out[0]
    assert acl.get_recent_err_msg().startswith(
        f"[{ACL_ERROR_INVALID_PARAM} ACL_ERROR_INVALID_PARAM] acl.rt.malloc: ")


def test_messages_name_the_acl_call_for_every_wrapper_style(to_stdout, capsys):
    assert acl.init() == 0
    # a function wrapped by returns_ret whose rt message names rt.set_device
    assert acl.rt.set_device(99) == ACL_ERROR_RT_INVALID_DEVICEID
    assert acl.get_recent_err_msg() == (
        f"[{ACL_ERROR_RT_INVALID_DEVICEID} ACL_ERROR_RT_INVALID_DEVICEID] acl.rt.set_device: "
        f"rt.set_device: device id must be in [0, 8), got device=99")
    # lambdas and aliases get their public names
    assert acl.rt.synchronize_stream(12345) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert acl.get_recent_err_msg().split("] ", 1)[1].startswith("acl.rt.synchronize_stream: ")
    rt.set_device(0)
    assert acl.rt.memset(0x10, 64, 0, 64) != 0
    assert "] acl.rt.memset: " in acl.get_recent_err_msg()
    # acl.mdl (frame-named helpers) and the top-level data-buffer functions
    assert acl.mdl.unload(4242) != 0
    assert "] acl.mdl.unload: model_id must be a loaded model, got 4242" in \
        acl.get_recent_err_msg()
    assert acl.get_data_buffer_size(777) == 0
    assert "] acl.get_data_buffer_size: handle must be a live" in acl.get_recent_err_msg()
    # acl.util raises (pyACL has no ret there) but still logs
    with pytest.raises(rt.AclError, match="numpy_to_ptr: array must be a numpy.ndarray"):
        acl.util.numpy_to_ptr([1, 2])
    out = capsys.readouterr().out
    for call in ("acl.rt.set_device: ", "acl.rt.synchronize_stream: ", "acl.rt.memset: ",
                 "acl.mdl.unload: ", "acl.get_data_buffer_size: ", "acl.util.numpy_to_ptr: "):
        assert re.search(rf"^\[ERROR\] ASCENDCL\(.*\]\d+ {re.escape(call)}", out, re.M), call


def test_log_file_mode_writes_the_plog_file(to_file, capsys):
    assert acl.init() == 0
    assert acl.rt.free(0x10) != 0; line = _line()  # noqa: E702
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""            # nothing on the screen in file mode
    files = glob.glob(str(to_file / "debug" / "plog" / "plog-*.log"))
    assert len(files) == 1, files
    assert re.fullmatch(rf"plog-{os.getpid()}_\d{{17}}\.log", os.path.basename(files[0]))
    assert rt_log.log_file_path() == files[0]
    text = open(files[0]).read().splitlines()
    assert len(text) == 1
    assert re.match(rf"\[ERROR\] ASCENDCL\({os.getpid()},python\):{STAMP} "
                    rf"\[test_acl_log\.py:{line}\]\d+ acl\.rt\.free: ", text[0]), text[0]
    acl.app_log(acl.ACL_ERROR, "second line")        # appended to the same file
    assert open(files[0]).read().splitlines()[1].endswith(
        "test_log_file_mode_writes_the_plog_file: second line")


def test_default_root_is_home_ascend_log(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ASCEND_PROCESS_LOG_PATH", raising=False)
    assert rt_log.log_root() == str(tmp_path / "ascend" / "log")


def test_unwritable_log_dir_falls_back_to_stderr(monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(blocker))
    rt_log.configure()
    acl.app_log(acl.ACL_ERROR, "still visible")
    assert "still visible" in capsys.readouterr().err


def test_app_log_format_and_level_filtering(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    for env_level, shown in (("0", "DEBUG INFO WARNING ERROR"), ("1", "INFO WARNING ERROR"),
                             ("2", "WARNING ERROR"), ("3", "ERROR"), ("4", "")):
        monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", env_level)
        rt_log.configure()
        for lvl, name in ((acl.ACL_DEBUG, "DEBUG"), (acl.ACL_INFO, "INFO"),
                          (acl.ACL_WARNING, "WARNING"), (acl.ACL_ERROR, "ERROR")):
            acl.app_log(lvl, f"message at {name}"); line = _line()  # noqa: E702
        out = capsys.readouterr().out.splitlines()
        assert [ln.split("]", 1)[0][1:] for ln in out] == shown.split(), (env_level, out)
        for ln in out:
            level = ln.split("]", 1)[0][1:]
            assert re.match(rf"\[{level}\] APP\({os.getpid()},python\):{STAMP} "
                            rf"\[test_acl_log\.py:{line}\]\d+ "
                            rf"test_app_log_format_and_level_filtering: message at {level}$", ln)


def test_app_log_bad_level_is_an_ascendcl_error(to_stdout, capsys):
    assert acl.app_log(7, "x") is None
    out = capsys.readouterr().out
    assert "[ERROR] ASCENDCL(" in out and "APP(" not in out
    assert "acl.app_log: log_level must be ACL_DEBUG (0), ACL_INFO (1), ACL_WARNING (2) or " \
           "ACL_ERROR (3), got log_level=7" in out
    assert acl.get_recent_err_msg().startswith(f"[{ACL_ERROR_INVALID_PARAM} ")


def test_null_level_logs_nothing_even_for_errors(monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "4")
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    assert acl.init() == 0
    assert acl.rt.set_device(99) == ACL_ERROR_RT_INVALID_DEVICEID
    assert capsys.readouterr().out == ""
    assert "acl.rt.set_device" in acl.get_recent_err_msg()       # the message is still kept


def test_facade_success_writes_nothing(to_stdout, capsys):
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    p, ret = acl.rt.malloc(64, 0)
    a = np.ones(16, np.float32)
    assert acl.rt.memcpy(p, 64, acl.util.numpy_to_ptr(a), 64, 1) == 0
    assert acl.rt.free(p) == 0
    assert capsys.readouterr().out == ""


def test_util_start_thread_refusal_is_logged(to_stdout, capsys):
    assert acl.util.start_thread(None, []) == (0, ACL_ERROR_RT_PARAM_INVALID)
    assert acl.util.stop_thread(-5) == ACL_ERROR_RT_PARAM_INVALID
    out = capsys.readouterr().out
    assert "acl.util.start_thread: fn must be callable, got fn=None" in out
    assert "acl.util.stop_thread: thread_id must be a thread of acl.util.start_thread" in out
