"""Helpers shared by the runtime tests (imported as `from rt_test_helpers import raises`)."""
import contextlib

import pytest

from rt.errors import AclError


@contextlib.contextmanager
def raises(code: int, match: str):
    """`pytest.raises(AclError, match=match)` that also checks `AclError.code == code`."""
    with pytest.raises(AclError, match=match) as info:
        yield info
    assert info.value.code == code, f"expected code {code}, got {info.value!r}"
