"""Errors raised inside kernels (both modes). The launcher turns them into rt.AclError with the
kernel name and `block_idx=i/n:` prefix; GM violations map to CANN's trap codes."""


class KernelError(Exception):
    """A rule of the NPU broken by a kernel (queue discipline, capacity, alignment, ...)."""


class GMReadError(KernelError):
    """A global-memory read outside the argument's allocation (ACL 507042 TRAP_READ_OVERFLOW)."""


class GMWriteError(KernelError):
    """A global-memory write outside the argument's allocation (ACL 507043 TRAP_WRITE_OVERFLOW)."""


class CompileError(SyntaxError):
    """Unsupported Python in a kernel: file:line, the source line and a caret."""
