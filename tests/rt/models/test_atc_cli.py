"""python -m rt.atc as the samples' READMEs call it: every --soc_version CANN's ATC accepts, the
output folder created, failures as ATC's message and exit code, --out_nodes, --output_type,
--input_fp16_nodes, --precision_mode, --log, --input_format, unsupported flags, AIPP with
--dynamic_image_size."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rt
from rt import log as rt_log
from rt.atc.__main__ import main as atc
from rt.graph import format as fmt

import onnx_models

#: --soc_version values of CANN's ATC (Atlas 200/300/500, inference, 200I/500 A2, training,
#: A2 and A3 series; the short-SoC-version table's names)
ATC_SOCS = ["Ascend310", "Ascend310P1", "Ascend310P3", "Ascend310P5", "Ascend310P7",
            "Ascend310P3vir01", "Ascend310P3vir02", "Ascend310P3vir04", "Ascend310P3vir08",
            "Ascend310B1", "Ascend310B2", "Ascend310B3", "Ascend310B4",
            "Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA",
            "Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4",
            "Ascend910B4-1", "Ascend910_9391", "Ascend910_9392", "Ascend910_9381",
            "Ascend910_9382", "Ascend910_9372", "Ascend910_9362"]


@pytest.fixture
def cnn(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(onnx_models.cnn(), path)
    return str(path)


X = np.random.default_rng(5).standard_normal((1, 3, 12, 12)).astype(np.float32)


def _header(path):
    return fmt.parse(open(path, "rb").read())[0]


def test_every_atc_soc_version_has_a_profile_with_its_family():
    assert set(ATC_SOCS) == set(rt.SOCS)
    fam = {s: rt.get_soc(s).family for s in ATC_SOCS}
    assert fam["Ascend310"] == "Ascend310" and fam["Ascend310P3vir04"] == "Ascend310P"
    assert fam["Ascend310B4"] == "Ascend310B" and fam["Ascend910ProB"] == "Ascend910"
    assert fam["Ascend910B"] == "Ascend910"     # the training-series 910B, not Atlas A2
    assert fam["Ascend910B4-1"] == "Ascend910B" and fam["Ascend910_9362"] == "Ascend910_93"
    # the per-core buffers follow the arch table; every unsourced number is named
    for name in ATC_SOCS:
        s = rt.get_soc(name)
        assert s.sources and set(s.assumptions) <= set(vars(s))
        if s.npu_arch == 2201:
            assert (s.ub_bytes, s.l1_bytes, s.l0c_bytes) == (192 << 10, 512 << 10, 128 << 10)
        if s.npu_arch == 3002:
            assert (s.ub_bytes, s.l1_bytes, s.l0c_bytes) == (248 << 10, 1 << 20, 128 << 10)
    assert rt.get_soc("Ascend310P3vir02").ai_core_num == 2
    assert "ai_core_num" not in rt.get_soc("Ascend910B2").assumptions
    assert "ai_core_num" in rt.get_soc("Ascend310").assumptions


@pytest.mark.parametrize("soc", ["Ascend310", "Ascend310P3", "Ascend310B1", "Ascend910A",
                                 "Ascend910_9392"])
def test_readme_command_line_converts_into_a_new_folder(tmp_path, cnn, soc, monkeypatch, capsys):
    # a model runs only on a device of the SoC it was converted for (the runtime refuses others)
    monkeypatch.setenv("ASCEND_EMU_SOC", soc)
    monkeypatch.chdir(tmp_path)
    assert atc([f"--model={cnn}", "--framework=5", "--output=model/deep/m",
                f"--soc_version={soc}", "--input_shape=x:1,3,12,12", "--input_format=NCHW",
                "--log=error"]) == 0
    assert "ATC run success: model/deep/m.om" in capsys.readouterr().out
    assert _header(tmp_path / "model/deep/m.om")["soc_version"] == soc
    (y,) = rt.Model.load(tmp_path / "model/deep/m.om").execute([X])
    np.testing.assert_allclose(y, ReferenceEvaluator(onnx_models.cnn()).run(None, {"x": X})[0],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("args,message", [
    (["--soc_version=Ascend999"], "soc_version must be one of"),
    (["--soc_version=Ascend310", "--enable_scope_fusion_passes=x"],
     "not supported: --enable_scope_fusion_passes"),
    (["--soc_version=Ascend310", "--framework=3"], r"not supported: --framework=3 \(only 5"),
    (["--soc_version=Ascend310", "--mode=1"], "not supported: --mode=1"),
    (["--soc_version=Ascend310", "--input_format=NC1HWC0"],
     "not supported: --input_format=NC1HWC0"),
    (["--soc_version=Ascend310", "--precision_mode=allow_fp32_to_bf16"],
     "not supported: --precision_mode=allow_fp32_to_bf16"),
    (["--soc_version=Ascend310", "--precision_mode=fast"], "--precision_mode must be one of"),
    (["--soc_version=Ascend310", "--log=verbose"], "--log must be one of"),
    (["--soc_version=Ascend310", "--op_select_implmode=fastest"],
     "--op_select_implmode must be one of"),
    ([], "--soc_version is required"),
    (["--soc_version=Ascend310", "--output_type=INT4"], "--output_type must be one of"),
    (["--soc_version=Ascend310", "--out_nodes=nope:0"], "--out_nodes: node 'nope' is not in"),
    (["--soc_version=Ascend310", "--out_nodes=relu1"], "--out_nodes entries must be node:index"),
    (["--soc_version=Ascend310", "--out_nodes=relu1:3"], "node 'relu1' \\(Relu\\) has 1 output"),
    (["--soc_version=Ascend310", "--output_type=relu1:0:FP16"],
     "--output_type: relu1:0 must be a model output"),
    (["--soc_version=Ascend310", "--input_fp16_nodes=y"],
     "--input_fp16_nodes names must be model inputs"),
])
def test_failures_are_atc_messages_and_exit_codes(tmp_path, cnn, capsys, args, message):
    import re
    out = str(tmp_path / "m")
    assert atc([f"--model={cnn}", f"--output={out}"] + args) == 1
    err = capsys.readouterr().err
    assert err.startswith("ATC run failed: atc: ") and "Traceback" not in err
    assert re.search(message, err), err
    assert not (tmp_path / "m.om").exists()


def test_unwritable_output_and_missing_model_are_messages(tmp_path, cnn, capsys):
    (tmp_path / "file").write_text("x")
    assert atc([f"--model={cnn}", f"--output={tmp_path}/file/m",
                "--soc_version=Ascend310"]) == 1
    assert "--output must be a writable file path" in capsys.readouterr().err
    assert atc([f"--model={tmp_path}/none.onnx", f"--output={tmp_path}/m",
                "--soc_version=Ascend310"]) == 1
    assert "cannot read ONNX model" in capsys.readouterr().err


def test_a_reader_that_leaves_early_ends_atc_as_sigpipe_would(tmp_path, cnn):
    """`python -m rt.atc ... | head -1` after the model is written: no traceback and no
    "internal error", exit 141 (128 + SIGPIPE) as the C++ atc ended by SIGPIPE, the .om kept."""
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[3]
    r, w = os.pipe()
    os.close(r)                                   # the reader is already gone
    p = subprocess.run([sys.executable, "-m", "rt.atc", f"--model={cnn}",
                        f"--output={tmp_path}/m", "--soc_version=Ascend310"], stdout=w,
                       stderr=subprocess.PIPE, text=True, env=dict(os.environ,
                                                                    PYTHONPATH=str(root)),
                       timeout=300)
    os.close(w)
    assert p.returncode == 141, p.stderr
    assert p.stderr == ""
    assert (tmp_path / "m.om").stat().st_size > 0


def test_out_nodes_and_per_output_type(tmp_path, cnn, monkeypatch):
    # a model runs only on a device of the SoC it was converted for (the runtime refuses others)
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310")
    assert atc([f"--model={cnn}", f"--output={tmp_path}/m", "--soc_version=Ascend310",
                "--out_nodes=relu1:0;softmax:0", "--output_type=relu1:0:FP16"]) == 0
    model = rt.Model.load(tmp_path / "m.om")
    assert [(t.name, t.dtype) for t in model.outputs] == [("r1", "float16"), ("prob", "float32")]
    r1, prob = model.execute([X])
    ref_r1, ref_prob = ReferenceEvaluator(onnx_models.cnn()).run(["r1", "prob"], {"x": X})
    assert r1.dtype == np.float16 and prob.dtype == np.float32
    np.testing.assert_allclose(r1, ref_r1.astype(np.float16), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(prob, ref_prob, rtol=1e-4, atol=1e-6)


def test_output_type_for_every_output_and_input_fp16_nodes(tmp_path, cnn, monkeypatch):
    # a model runs only on a device of the SoC it was converted for (the runtime refuses others)
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    assert atc([f"--model={cnn}", f"--output={tmp_path}/m", "--soc_version=Ascend310P3",
                "--output_type=FP16", "--input_fp16_nodes=x"]) == 0
    model = rt.Model.load(tmp_path / "m.om")
    assert (model.inputs[0].dtype, model.outputs[0].dtype) == ("float16", "float16")
    x16 = X.astype(np.float16)
    (y,) = model.execute([x16])
    ref = ReferenceEvaluator(onnx_models.cnn()).run(None, {"x": x16.astype(np.float32)})[0]
    np.testing.assert_allclose(y, ref.astype(np.float16), rtol=2e-3, atol=1e-3)


def _matmul_model(k=64):
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((k, 16)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), \
        numpy_helper.to_array(w)


@pytest.mark.parametrize("mode", ["force_fp16", "cube_fp16in_fp32out", "must_keep_origin_dtype",
                                  "force_fp32"])
def test_precision_mode_rounds_the_cube_operands(tmp_path, mode):
    m, w = _matmul_model()
    onnx.save(m, tmp_path / "mm.onnx")
    assert atc([f"--model={tmp_path}/mm.onnx", f"--output={tmp_path}/mm",
                "--soc_version=Ascend910B2", f"--precision_mode={mode}"]) == 0
    x = np.random.default_rng(4).standard_normal((8, 64)).astype(np.float32) * 3
    (y,) = rt.Model.load(tmp_path / "mm.om").execute([x])
    half = x.astype(np.float16).astype(np.float64) @ w.astype(np.float16).astype(np.float64)
    full = x.astype(np.float64) @ w.astype(np.float64)
    if mode == "force_fp16":        # fp16 operands, fp32 accumulation, fp16 result
        np.testing.assert_allclose(y, half.astype(np.float16), rtol=1e-3, atol=1e-3)
        assert np.all(y == y.astype(np.float16).astype(np.float32))
    elif mode == "cube_fp16in_fp32out":
        np.testing.assert_allclose(y, half, rtol=1e-5, atol=1e-4)
        assert not np.all(y == y.astype(np.float16).astype(np.float32))
    else:
        np.testing.assert_allclose(y, full, rtol=1e-5, atol=1e-4)
        assert np.abs(y - half).max() > 1e-4       # the rounding above is measurable


def test_log_level_writes_atc_records(tmp_path, cnn, monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    rt_log.configure()
    try:
        assert atc([f"--model={cnn}", f"--output={tmp_path}/a", "--soc_version=Ascend310",
                    "--log=debug"]) == 0
        out = capsys.readouterr().out
        assert "[INFO] ATC" in out and "graph op Conv x2" in out
        assert atc([f"--model={cnn}", f"--output={tmp_path}/b", "--soc_version=Ascend310",
                    "--log=null"]) == 0
        assert "ATC(" not in capsys.readouterr().out.replace("ATC run", "")
    finally:
        monkeypatch.delenv("ASCEND_SLOG_PRINT_TO_STDOUT")
        rt_log.configure()


def test_no_effect_flags_are_accepted(tmp_path, cnn):
    assert atc([f"--model={cnn}", f"--output={tmp_path}/m", "--soc_version=Ascend910A",
                "--enable_small_channel=1", "--op_select_implmode=high_precision"]) == 0


AIPP_CFG = ("aipp_op {\n  aipp_mode: static\n  input_format: YUV420SP_U8\n  csc_switch: true\n"
            "  matrix_r0c0: 256\n  matrix_r0c2: 359\n  matrix_r1c0: 256\n  matrix_r1c1: -88\n"
            "  matrix_r1c2: -183\n  matrix_r2c0: 256\n  matrix_r2c1: 454\n  input_bias_1: 128\n"
            "  input_bias_2: 128\n  var_reci_chn_0: 0.0039\n  var_reci_chn_1: 0.0039\n"
            "  var_reci_chn_2: 0.0039\n}\n")


def _conv_model():
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     [1, 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_aipp_with_dynamic_image_size(tmp_path, monkeypatch):
    # a model runs only on a device of the SoC it was converted for (the runtime refuses others)
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310")
    from rt.dvpp.aipp import apply, input_shape
    onnx.save(_conv_model(), tmp_path / "c.onnx")
    (tmp_path / "aipp.cfg").write_text(AIPP_CFG)
    assert atc([f"--model={tmp_path}/c.onnx", f"--output={tmp_path}/c", "--soc_version=Ascend310",
                "--input_shape=x:1,3,-1,-1", "--dynamic_image_size=8,8;16,24",
                f"--insert_op_conf={tmp_path}/aipp.cfg", "--input_format=NCHW"]) == 0
    model = rt.Model.load(tmp_path / "c.om")
    header = _header(tmp_path / "c.om")
    aipp_attrs = next(n["attrs"] for n in header["nodes"] if n["op"] == "Aipp")
    ref = ReferenceEvaluator(_conv_model())
    rng = np.random.default_rng(9)
    for h, w in ((16, 24), (8, 8)):
        model.set_dynamic_hw_size(h, w)
        assert model.inputs[0].dtype == "uint8"
        assert tuple(model.inputs[0].shape) == input_shape("YUV420SP_U8", 1, w, h)
        img = rng.integers(0, 256, input_shape("YUV420SP_U8", 1, w, h), dtype=np.uint8)
        (y,) = model.execute([img])
        attrs = dict(aipp_attrs, src_w=w, src_h=h, crop_w=w, crop_h=h)
        x = apply(attrs, img)
        np.testing.assert_allclose(y, ref.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


def test_aipp_is_still_refused_with_dynamic_dims(tmp_path, capsys):
    onnx.save(_conv_model(), tmp_path / "c.onnx")
    (tmp_path / "aipp.cfg").write_text(AIPP_CFG)
    assert atc([f"--model={tmp_path}/c.onnx", f"--output={tmp_path}/c", "--soc_version=Ascend310",
                "--input_shape=x:1,3,-1,-1", "--dynamic_dims=8,8;16,24", "--input_format=ND",
                f"--insert_op_conf={tmp_path}/aipp.cfg"]) == 1
    assert "--insert_op_conf cannot be combined with --dynamic_dims" in capsys.readouterr().err
