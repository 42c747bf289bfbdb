"""Errors raised inside kernels (both modes). The launcher turns them into rt.AclError with the
kernel name and `block_idx=i/n:` prefix; GM violations map to CANN's trap codes.

Inside njit code a message is raised as a constant template plus runtime numbers,
``raise KernelError("data_copy: count must be >= 0, got count={}", count)``: building strings
in nopython code costs seconds of compile time per call site, this costs nothing. The template is
filled in when the message is read; ``{:level}``, ``{:pos}`` and ``{:event}`` print a number as a
memory level, TPosition or HardEvent name.
"""

from .positions import LEVEL_NAMES, POSITION_NAMES


class _Num(int):
    def __format__(self, spec):
        v = int(self)
        if spec == "level":
            return LEVEL_NAMES[v] if 0 <= v < len(LEVEL_NAMES) else "GM"
        if spec == "pos":
            return POSITION_NAMES[v] if 0 <= v < len(POSITION_NAMES) else f"TPosition({v})"
        if spec == "event":
            from .enums import HardEvent
            try:
                return HardEvent(v).name
            except ValueError:
                return str(v)
        return format(v, spec)


def _arg(a):
    try:
        return _Num(a) if int(a) == a else a
    except (TypeError, ValueError, OverflowError):
        return a


class KernelError(Exception):
    """A rule of the NPU broken by a kernel (queue discipline, capacity, alignment, ...)."""

    def __str__(self):
        if len(self.args) > 1 and isinstance(self.args[0], str):
            try:
                return self.args[0].format(*(_arg(a) for a in self.args[1:]))
            except (IndexError, KeyError, ValueError):
                return " ".join(str(a) for a in self.args)
        return super().__str__()


class GMReadError(KernelError):
    """A global-memory read outside the argument's allocation (ACL 507042 TRAP_READ_OVERFLOW)."""


class GMWriteError(KernelError):
    """A global-memory write outside the argument's allocation (ACL 507043 TRAP_WRITE_OVERFLOW)."""


class CompileError(SyntaxError):
    """Unsupported Python in a kernel: file:line, the source line and a caret."""
