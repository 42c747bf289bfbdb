"""The runtime's logger, configured like CANN's slog from the environment.

- ``ASCEND_GLOBAL_LOG_LEVEL``: 0 debug, 1 info, 2 warning, 3 error (default), 4 null (nothing).
- ``ASCEND_SLOG_PRINT_TO_STDOUT=1``: records go to stdout; otherwise to stderr. (CANN writes to
  log files under ``~/ascend/log`` when not printing to stdout; the emulator has no log files and
  uses stderr instead, so with the default level only errors are ever shown.)

Lines look like CANN's::

    [INFO] RUNTIME(4242,python):2026-05-09-07:35:25.123.456 [device.py:88]4242 init: Runtime initialized successfully

The environment is read at import and again by :func:`configure` (``rt.init`` calls it), so a
script may set the variables before ``rt.init()``.
"""  # noqa: E501 (the sample log line above cannot be wrapped)
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

#: True when ASCEND_GLOBAL_LOG_LEVEL=0: the pool then records where each allocation was made.
DEBUG = False


class _CannFormatter(logging.Formatter):
    _proc = os.path.basename(sys.argv[0] or "python") if sys.argv and sys.argv[0] else "python"

    def format(self, record: logging.LogRecord) -> str:
        t = record.created
        stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(t))
        us = int((t - int(t)) * 1e6)
        level = _NAMES.get(record.levelno, record.levelname)
        tid = threading.get_native_id() if record.thread else 0
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        return (f"[{level}] RUNTIME({record.process},python):"
                f"{stamp}.{us // 1000:03d}.{us % 1000:03d} "
                f"[{record.filename}:{record.lineno}]{tid} {msg}")


class _LiveStreamHandler(logging.StreamHandler):
    """Looks ``sys.stdout``/``sys.stderr`` up at each record (so redirection and capture work)."""

    def __init__(self, to_stdout: bool):
        super().__init__()
        self.to_stdout = to_stdout

    @property
    def stream(self):
        return sys.stdout if self.to_stdout else sys.stderr

    @stream.setter
    def stream(self, value):  # logging.StreamHandler.__init__ assigns it
        pass


_handler: _LiveStreamHandler | None = None


def level_from_env() -> int:
    """The logging level ASCEND_GLOBAL_LOG_LEVEL asks for (default 3: error)."""
    raw = os.environ.get("ASCEND_GLOBAL_LOG_LEVEL", "3").strip()
    try:
        return _LEVELS[int(raw)]
    except (ValueError, KeyError):
        return logging.ERROR


def configure() -> None:
    """(Re)read ASCEND_GLOBAL_LOG_LEVEL and ASCEND_SLOG_PRINT_TO_STDOUT."""
    global _handler, DEBUG
    level = level_from_env()
    to_stdout = os.environ.get("ASCEND_SLOG_PRINT_TO_STDOUT", "0").strip() == "1"
    logger.setLevel(level)
    if _handler is None:
        _handler = _LiveStreamHandler(to_stdout)
        _handler.setFormatter(_CannFormatter())
        logger.addHandler(_handler)
    _handler.to_stdout = to_stdout
    DEBUG = level <= logging.DEBUG


configure()
