"""Which of ONNX's backend tests rt.onnx_backend runs, and the documented exclusions.

The selection: the node tests (`onnx.backend.test.loader.load_model_tests(kind="node")`) whose
model uses only ops the converter claims (`rt.model.AICPU_OPS`, the op catalogue), plus the
light real models. The suite runs as ONNX ships it; a test we do not pass is excluded here by
a regular expression with the reason (tests/rt/models/test_onnx_backend.py applies them,
`python -m bench.models --conformance` reports the counts).
"""
from __future__ import annotations

# ONNX's light models; DenseNet-121's stored output is reproduced here (and by onnxruntime),
# though onnx.reference misses it because its BatchNormalization-9 fills momentum's default 0.9 and
# then mixes in batch statistics
LIGHT_MODELS = ("test_resnet50", "test_vgg19", "test_bvlc_alexnet", "test_inception_v1",
                "test_shufflenet", "test_zfnet512", "test_densenet121")

# ops of the catalogue without a node test of their own in ONNX's suite
NO_NODE_TEST = {"Aipp"}     # AIPP: inserted by ATC's --insert_op_conf, not an ONNX op

# (pattern over the test name without the _cpu suffix, reason)
EXCLUDE: list[tuple[str, str]] = [
    (r"^test_cast(like)?_.*(BFLOAT16|FLOAT8|FLOAT4|INT4|UINT4|INT2|UINT2|e8m0)",
     "element types bfloat16 / float8 / float4 / int4 / int2 / e8m0 are not in the model format "
     "(ATC refuses them)"),
    (r"^test_equal_string", "string tensors are not in the model format"),
    (r"^test_identity_(opt|sequence)", "optional and sequence types: tensors only"),
    (r"^test_flexattention_", "the expanded function uses the ai.onnx.preview domain"),
    (r"^test_reduce_log_sum_(?!exp_).*expanded",
     "the expanded function's ReduceSum takes its axes from a model input, so its output shape "
     "depends on run-time data: ONNX shape inference leaves it open and ATC needs static shapes"),
]


def _node_cases():
    from onnx.backend.test.loader import load_model_tests
    return load_model_tests(kind="node")


def claimed_node_tests(bt=None) -> list[str]:
    """Names of the node tests whose every op (Constant aside) is in the op catalogue."""
    from ..model import AICPU_OPS
    ops = set(AICPU_OPS) | {"Constant"}
    out = []
    for tc in _node_cases():
        nodes = tc.model.graph.node
        if all(n.domain in ("", "ai.onnx") and n.op_type in ops for n in nodes):
            out.append(tc.name)
    return sorted(out)


def representative_node_tests(per_op: int = 2) -> list[str]:
    """CI's subset: of the claimed, not excluded node tests, the first `per_op` (by name) of
    each op-type set (`python -m bench.models --conformance` runs them all)."""
    groups: dict = {}
    for tc in _node_cases():
        if tc.name in _claimed() and not excluded(tc.name):
            key = frozenset(n.op_type for n in tc.model.graph.node) - {"Constant"}
            groups.setdefault(key, []).append(tc.name)
    return sorted(n for names in groups.values() for n in sorted(names)[:per_op])


def _claimed() -> set:
    global _CLAIMED
    if _CLAIMED is None:
        _CLAIMED = set(claimed_node_tests())
    return _CLAIMED


_CLAIMED = None


def excluded(name: str) -> bool:
    """Whether test `name` (with or without the _cpu suffix) matches an EXCLUDE pattern."""
    import re
    name = name if name.endswith("_cpu") else name + "_cpu"
    return any(re.search(p, name) for p, _ in EXCLUDE)


def ops_of_tests(bt, names) -> set:
    """The op types used by the named node tests."""
    names = set(names)
    return {n.op_type for tc in _node_cases() if tc.name in names
            for n in tc.model.graph.node}
