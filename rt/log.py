"""The runtime's logger, configured like CANN's slog (the host's `libascendalog`) from the environment.

- ``ASCEND_GLOBAL_LOG_LEVEL``: 0 debug, 1 info, 2 warning, 3 error (default), 4 null (nothing).
- ``ASCEND_SLOG_PRINT_TO_STDOUT=1``: records go to stdout. Otherwise, as CANN does, to this
  process's log file ``<root>/debug/plog/plog-<pid>_<YYYYmmddHHMMSSfff>.log``, where ``<root>``
  is ``$ASCEND_PROCESS_LOG_PATH`` or ``~/ascend/log`` (created at the first record; see
  :func:`log_file_path`). No rotation: one file per process.

Lines follow CANN's "[Level] ModuleName(PID,PName):DateTimeMS [FileName:LineNumber]LogContent"
with DateTimeMS = yyyy-mm-dd-hh:mm:ss.fff.zzz (CANN Log Reference, "Log Overview"/"Log Format",
hiascend.com .../maintenref/logreference/logreference_0001.html); like CANN's own lines the
content starts with the thread id and the function::

    [INFO] RUNTIME(4242,python):2026-05-09-07:35:25.123.456 [device.py:88]4242 init: Runtime initialized successfully
    [ERROR] ASCENDCL(4242,python):2026-05-09-07:35:25.200.001 [sample.py:12]4242 acl.rt.malloc: ...

Modules: RUNTIME (rt), ASCENDCL (the pyACL facade's failing calls), APP (``acl.app_log``).
The environment is read at import and again by :func:`configure` (``rt.init`` calls it), so a
script may set the variables before ``rt.init()``.
"""  # noqa: E501 (the sample log lines above cannot be wrapped)
from __future__ import annotations

import logging
import os
import sys
import threading
import time

logger = logging.getLogger("rt")
logger.propagate = False

_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR,
           4: logging.CRITICAL + 10}
_NAMES = {logging.DEBUG: "DEBUG", logging.INFO: "INFO", logging.WARNING: "WARNING",
          logging.ERROR: "ERROR", logging.CRITICAL: "ERROR"}
_RT_DIR = os.path.dirname(os.path.abspath(__file__))

#: True when ASCEND_GLOBAL_LOG_LEVEL=0: the pool then records where each allocation was made.
DEBUG = False


def format_line(level: str, module: str, pid: int, created: float, filename: str, lineno: int,
                tid: int, content: str) -> str:
    """One log line in CANN's layout (see the module docstring)."""
    stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(created))
    us = int((created - int(created)) * 1e6)
    return (f"[{level}] {module}({pid},python):{stamp}.{us // 1000:03d}.{us % 1000:03d} "
            f"[{filename}:{lineno}]{tid} {content}")


class _CannFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = _NAMES.get(record.levelno, record.levelname)
        tid = threading.get_native_id()         # records are formatted on the logging thread
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        return format_line(level, getattr(record, "cann_module", "RUNTIME"), record.process,
                           record.created, record.filename, record.lineno, tid, msg)


class _CannHandler(logging.Handler):
    """stdout (looked up at each record, so redirection and capture work) or the plog file."""

    def __init__(self):
        super().__init__()
        self.to_stdout = False
        self.root = ""
        self._file = None
        self._path: str | None = None
        self._pid = 0

    def set_target(self, to_stdout: bool, root: str) -> None:
        self.acquire()
        try:
            self.to_stdout = to_stdout
            if root != self.root:
                self._close_file()
            self.root = root
        finally:
            self.release()

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
        self._file, self._path = None, None

    def file_path(self) -> str | None:
        return self._path if self._pid == os.getpid() else None

    def _open(self):
        # a forked child (multiprocessing) gets its own plog-<pid> file, as in CANN
        if self._file is None or self._pid != os.getpid():
            self._file = None
            t = time.time()
            stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(t)) + f"{int(t * 1000) % 1000:03d}"
            folder = os.path.join(self.root, "debug", "plog")
            os.makedirs(folder, exist_ok=True)
            self._pid = os.getpid()
            self._path = os.path.join(folder, f"plog-{self._pid}_{stamp}.log")
            self._file = open(self._path, "a", encoding="utf-8")
        return self._file

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
            if self.to_stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                return
            f = self._open()
            f.write(line)
            f.flush()
        except OSError:             # an unwritable log directory must not break the program
            sys.stderr.write(line)
        except Exception:
            self.handleError(record)


_handler: _CannHandler | None = None


def level_from_env() -> int:
    """The logging level ASCEND_GLOBAL_LOG_LEVEL asks for (default 3: error)."""
    raw = os.environ.get("ASCEND_GLOBAL_LOG_LEVEL", "3").strip()
    try:
        return _LEVELS[int(raw)]
    except (ValueError, KeyError):
        return logging.ERROR


def log_root() -> str:
    """Where log files go: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log (CANN's default)."""
    root = os.environ.get("ASCEND_PROCESS_LOG_PATH", "").strip()
    return os.path.abspath(os.path.expanduser(root or os.path.join("~", "ascend", "log")))


def log_file_path() -> str | None:
    """The plog file this process writes (None before its first record or in stdout mode)."""
    return None if _handler is None or _handler.to_stdout else _handler.file_path()


def configure() -> None:
    """(Re)read ASCEND_GLOBAL_LOG_LEVEL, ASCEND_SLOG_PRINT_TO_STDOUT, ASCEND_PROCESS_LOG_PATH."""
    global _handler, DEBUG
    level = level_from_env()
    to_stdout = os.environ.get("ASCEND_SLOG_PRINT_TO_STDOUT", "0").strip() == "1"
    logger.setLevel(level)
    if _handler is None:
        _handler = _CannHandler()
        _handler.setFormatter(_CannFormatter())
        logger.addHandler(_handler)
    _handler.set_target(to_stdout, log_root())
    DEBUG = level <= logging.DEBUG


def _in_rt(filename: str) -> bool:
    folder = os.path.dirname(os.path.abspath(filename))
    return folder == _RT_DIR or folder.startswith(_RT_DIR + os.sep)


def caller_outside_rt() -> tuple[str, int, str]:
    """(file, line, function) of the nearest frame outside the `rt` package: the script's line
    that made the failing facade call (what a log line should point at)."""
    f = sys._getframe(1)
    while f is not None and _in_rt(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return "unknown", 0, "unknown"
    return f.f_code.co_filename, f.f_lineno, f.f_code.co_name


def write(level: int, module: str, content: str, where: tuple[str, int, str] | None = None) -> None:
    """Log `content` as CANN module `module` (e.g. "ASCENDCL", "APP") at `level` (a `logging`
    level), located at `where` = (file, line, function) or the caller outside `rt`."""
    if not logger.isEnabledFor(level):
        return
    path, line, func = where or caller_outside_rt()
    record = logger.makeRecord(logger.name, level, path, line, content, None, None, func,
                               {"cann_module": module})
    logger.handle(record)


configure()
