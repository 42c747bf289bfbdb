"""ONNX's own backend test suite (`onnx.backend.test.BackendTest`) run against rt.onnx_backend.

What runs here (CI): a representative subset (`conformance.representative_node_tests`: two per
op-type set) of the node tests of every op the converter claims whose model uses only claimed
ops (`conformance.claimed_node_tests`), minus the documented exclusions (`conformance.EXCLUDE`,
each with its reason), and the light real models: ShuffleNet in CI,
the others marked slow (ResNet-50, AlexNet, Inception v1 and ZFNet-512 included: the cube's
fp32 mmad gives identical inputs identical bits in every column, as their uniform stored
softmax needs). `python -m bench.models --conformance` runs the full selection and prints the pass
counts. SqueezeNet is compared with onnx.reference (its stored output is not reproduced even
by onnx.reference) in test_light_models_vs_reference; DenseNet-121 runs as ONNX's own test
(we reproduce its stored output; onnx.reference does not, see conformance.LIGHT_MODELS).
"""
import os

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx.backend.test.runner import Runner
from onnx.reference import ReferenceEvaluator

import rt.onnx_backend as backend
from rt.onnx_backend import conformance

CI_LIGHT = ("test_shufflenet",)
# newly passing node tests CI runs besides the representative subset (small shapes)
CI_EXTRA = ("test_maxpool_with_argmax_2d_precomputed_pads", "test_maxpool_3d_default",
            "test_averagepool_2d_dilations", "test_averagepool_3d_dilations_small",
            "test_batchnorm_example_training_mode", "test_training_dropout_mask",
            "test_reduce_max_empty_set", "test_reduce_min_empty_set",
            "test_reduce_sum_square_empty_set_expanded", "test_shape_start_greater_than_end",
            "test_spacetodepth_example_expanded")
SLOW_LIGHT = tuple(m for m in conformance.LIGHT_MODELS if m not in CI_LIGHT)

_bt = onnx.backend.test.BackendTest(backend, __name__)
for _name in conformance.representative_node_tests() + list(CI_EXTRA) + \
        list(conformance.LIGHT_MODELS):
    _bt.include(rf"^{_name}_cpu$")
for _pattern, _reason in conformance.EXCLUDE:
    _bt.exclude(_pattern)
_cases = _bt.test_cases
for _cls in _cases.values():
    for _attr in dir(_cls):
        if any(_attr.startswith(m + "_") for m in SLOW_LIGHT):
            setattr(_cls, _attr, pytest.mark.slow(getattr(_cls, _attr)))
globals().update(_cases)


def test_claimed_ops_have_node_tests():
    """Every claimed op has at least one ONNX node test in the selection (not excluded)."""
    run = [n for n in conformance.claimed_node_tests(_bt) if not conformance.excluded(n)]
    tested = conformance.ops_of_tests(_bt, run)
    assert "Conv" in tested and "MaxPool" in tested and "Gemm" in tested
    untested = sorted(set(rt_ops()) - set(tested) - conformance.NO_NODE_TEST)
    assert not untested, f"claimed ops without any ONNX node test: {untested}"


def rt_ops():
    import rt.model
    return rt.model.AICPU_OPS


def test_exclusions_are_documented():
    for pattern, reason in conformance.EXCLUDE:
        assert pattern.startswith("^") and len(reason) > 20, (pattern, reason)


def test_ci_extra_tests_are_selected_and_not_excluded():
    claimed = set(conformance.claimed_node_tests())
    for name in CI_EXTRA:
        assert name in claimed and not conformance.excluded(name), name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet"])
def test_light_models_vs_reference(name):
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        f"light_{name}.onnx")
    m = onnx.load(path)
    inits = {i.name for i in m.graph.initializer}
    (vi,) = [i for i in m.graph.input if i.name not in inits]
    x = Runner.generate_dummy_data(vi, seed=0, name=name, random=False)
    (y,) = backend.prepare(m).run([x])
    (ref,) = ReferenceEvaluator(m).run(None, {vi.name: x})
    np.testing.assert_allclose(y, ref, rtol=1e-3, atol=1e-6)


def test_backend_device_names():
    assert backend.supports_device("CPU") and backend.supports_device("NPU:0")
    assert not backend.supports_device("CUDA")
    with pytest.raises(ValueError, match="device must be 'CPU"):
        backend.prepare(onnx.ModelProto(), "CUDA")
