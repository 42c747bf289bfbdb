"""A representative part of the sanitizer sweep (tests/sanitize_sweep.py; the whole sweep's result
is in docs/sanitizer.md): kernels of kernels/ and the suite's test kernels run clean under
asc.sanitize(check_all=True), and tests that provoke a kernel fault on purpose still pass (the
fault still raises) and are recognised as such, not counted as findings."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PART = [
    "tests/kernels/test_add.py",
    "tests/kernels/test_softmax.py",
    "tests/ascendc/test_adv_softmax.py",    # ragged original shapes; errors provoked on purpose
    # kernels the sweep found true errors in (ErrorRead2 of a narrow AIPP tile, ErrorWrite3 of
    # an MTE3 read of a VECIN tensor), fixed: they stay clean
    "tests/rt/dvpp/test_aipp.py::test_kernel_matches_reference",
    "tests/rt/test_host_mapped_args.py",
    # a served Matmul (its messages order the workspace; the bias table is reloaded after the
    # previous tile's mmad) and a VECCALC queue's kernel ordering its copies with flags
    "tests/ascendc/test_mix_matmul.py::test_iterate_and_get_tensor_c_are_served_tile_by_tile",
    "tests/ascendc/test_state.py::test_tque_at_veccalc_is_a_ub_queue",
    # the model runtime's kernels of kernels/ (conv through img2col, matmul, pools, norm, ...)
    # and an int8 asc.adv.Matmul on the host's tiling, ragged and tile-multiple
    "tests/rt/models/test_model_exec.py::test_model_matches_onnx_reference",
    "tests/ascendc/test_host_tiling_int8.py::test_host_tiling_runs_ragged_int8",
    "tests/ascendc/test_host_tiling_int8.py::test_host_tiling_runs_tile_multiple_int8",
]


@pytest.mark.slow
def test_the_sweep_of_a_representative_part_is_clean(tmp_path):
    out = tmp_path / "sweep.json"
    env = {**os.environ, "ASCEND_EMU_SANITIZE_SWEEP": str(out),
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-m", "not slow", *PART], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=3000)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    with open(out) as f:
        got = json.load(f)
    s = got["summary"]
    assert s["findings"] == 0, r.stdout[-4000:]
    assert s["failed_under_sweep"] == []
    assert {"add_kernel", "softmax_kernel", "aipp_kernel", "swap_halves", "leaky_kernel",
            "veccalc_queue_kernel", "conv_matmul_kernel", "img2col_kernel", "matmul_kernel",
            "norm_kernel", "mm_all_kernel"} <= set(
        s["kernel_names"]), s["kernel_names"]
    assert s["launches"] >= s["tests_with_launches"] > 50
    # the adv softmax tests that expect an error (a tiling that misses rows, too little
    # temporary space) still pass: their launches faulted, and are listed, not counted
    expected = {t["test"].split("::")[1].split("[")[0] for t in got["tests"] if t["expected"]}
    assert {"test_softmax_refuses_a_tiling_that_misses_rows",
            "test_softmax_temporary_space_must_hold_a_row"} <= expected, expected
    assert "sanitizer sweep" in r.stdout
