"""Helpers shared by the runtime tests (imported as `from rt_test_helpers import raises`)."""
import contextlib

import pytest

from rt.errors import AclError
from rt.kernel import KernelBinary


@contextlib.contextmanager
def raises(code: int, match: str):
    """`pytest.raises(AclError, match=match)` that also checks `AclError.code == code`."""
    with pytest.raises(AclError, match=match) as info:
        yield info
    assert info.value.code == code, f"expected code {code}, got {info.value!r}"


# a plain-Python test binary: subclasses set `name` and define run_blocks(first, last, block_dim,
# args); the other members take KernelBinary's defaults
PlainBinary = KernelBinary
