"""A kernel sanitizer on the CPU: msSanitizer's four tools (memcheck, racecheck, initcheck,
synccheck; leak checking) with the CPU npu check's error classes (docs/sanitizer.md).

    python -m ascendc.sanitize [--tool memcheck|racecheck|initcheck|synccheck] \\
        [--leak-check yes] [--check-all] [--log-file F] script.py [args...]

or in Python (`asc.sanitize`):

    with asc.sanitize(tool="initcheck") as san:
        kernel[8](x, y)
    print(san.report.format())
"""
from __future__ import annotations

from .report import CLASSES, TOOLS, Finding, Report, npu_check_name
from .session import Session

__all__ = ["sanitize", "Session", "Report", "Finding", "CLASSES", "TOOLS", "npu_check_name"]


def sanitize(tool: str = "memcheck", *, check_all: bool = False, leak_check=False) -> Session:
    """A sanitizer session (a context manager): every kernel launch inside it runs sanitized and
    its findings collect in `session.report` (launches do not fail on what it finds: a faulting
    block stops, the others go on). `tool` is one of TOOLS; `check_all` runs all four;
    `leak_check` (True or "yes") adds device memory never freed inside the session."""
    if isinstance(leak_check, str):
        if leak_check not in ("yes", "no"):
            raise ValueError(f"asc.sanitize: leak_check must be True/False or 'yes'/'no', got "
                             f"leak_check={leak_check!r}")
        leak_check = leak_check == "yes"
    return Session(tool, check_all=check_all, leak_check=leak_check)
