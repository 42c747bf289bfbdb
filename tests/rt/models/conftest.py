import pathlib
import sys

import pytest

pytest.importorskip("onnx")
sys.path.insert(0, str(pathlib.Path(__file__).parent))


# ONNX's BackendTest creates a test for every node test it ships and marks the ones outside the
# selection with unittest.skip; those are deselected here, so a run reports what it ran instead of
# thousands of skips (the selection and the exclusions, with reasons, are in rt.onnx_backend).
_NOT_SELECTED = ("no matched include pattern", "matched exclude pattern",
                 "Backend doesn't support device")


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        fn = getattr(item, "obj", None)
        why = getattr(fn, "__unittest_skip_why__", "") if getattr(fn, "__unittest_skip__", False) \
            else ""
        (drop if "test_onnx_backend.py" in item.nodeid and why.startswith(_NOT_SELECTED)
         else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
