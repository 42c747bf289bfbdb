"""AIPP (docs/dvpp.md): aipp.cfg parsing and its refusals by message, the kernel against its numpy
reference in both modes, the AI CPU implementation, and DVPP decode -> AIPP -> model end to end
against numpy + onnx.reference."""
import io

import numpy as np
import pytest
from PIL import Image

import rt
from dvpp_helpers import jpeg_bytes, picture, to_dvpp
from kernels.aipp import aipp, aipp_reference
from rt.atc.aipp import AippConfigError, parse_config
from rt.dvpp.aipp import apply

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from rt.atc import AtcError, convert  # noqa: E402

JPEG_CSC = """
    csc_switch: true
    matrix_r0c0: 256  matrix_r0c1: 0    matrix_r0c2: 359
    matrix_r1c0: 256  matrix_r1c1: -88  matrix_r1c2: -183
    matrix_r2c0: 256  matrix_r2c1: 454  matrix_r2c2: 0
    input_bias_0: 0   input_bias_1: 128 input_bias_2: 128
"""
NORM = """
    mean_chn_0: 124  mean_chn_1: 116  mean_chn_2: 104
    min_chn_0: -0.325 min_chn_1: 0.28 min_chn_2: -0.47
    var_reci_chn_0: 0.0171 var_reci_chn_1: 0.0175 var_reci_chn_2: 0.0174
"""


def cfg(body: str, fmt: str = "YUV420SP_U8") -> str:
    return f"# test config\naipp_op {{\n  aipp_mode: static\n  input_format: {fmt}\n{body}\n}}\n"


def attrs(sw, sh, x, y, w, h, swap=False, dtype="float32", csc=True, fmt="YUV420SP_U8"):
    """rt.dvpp.aipp's node attrs for the JPEG (BT.601 full range) YUV -> RGB config."""
    ch = 1 if fmt == "YUV400_U8" else 3
    return {"input_format": fmt, "src_w": sw, "src_h": sh, "crop_x": x, "crop_y": y,
            "crop_w": w, "crop_h": h, "csc": csc, "rbuv_swap": swap,
            "matrix": [[256, 0, 359], [256, -88, -183], [256, 454, 0]],
            "input_bias": [0, 128, 128], "output_bias": [0, 0, 0],
            "sub": [123.675, 116.28, 103.53][:ch], "var_reci": [0.0171, 0.0175, 0.0174][:ch],
            "channels": ch, "dtype": dtype}


# ---- the config file -----------------------------------------------------------------------------

def test_parse_config_reads_cann_keys_and_defaults():
    (c,) = parse_config(cfg(JPEG_CSC + NORM + "  crop: true load_start_pos_w: 4\n"
                            "  crop_size_w: 50 crop_size_h: 30 rbuv_swap_switch: true"))
    assert c["aipp_mode"] == "static" and c["input_format"] == "YUV420SP_U8"
    assert (c["crop"], c["load_start_pos_w"], c["load_start_pos_h"]) == (True, 4, 0)
    assert (c["matrix_r1c1"], c["matrix_r2c1"], c["input_bias_1"]) == (-88, 454, 128)
    assert (c["mean_chn_2"], c["min_chn_0"], c["var_reci_chn_1"]) == (104, -0.325, 0.0175)
    assert c["rbuv_swap_switch"] is True and c["related_input_rank"] == 0
    assert c["var_reci_chn_3"] == 1.0 and c["src_image_size_w"] == 0     # CANN's defaults
    two = parse_config(cfg("related_input_rank: 1") + cfg("", "RGB888_U8"))
    assert [b["related_input_rank"] for b in two] == [1, 0]


@pytest.mark.parametrize("text,match", [
    (cfg("  colour_space: bt601"), r"keys must be CANN AIPP keys \(aipp_op #0\), got "
                                   r"key='colour_space'"),
    (cfg("  crop: yes"), r"crop \(aipp_op #0\) must be true or false, got crop='yes'"),
    (cfg("  load_start_pos_w: 1.5"), r"load_start_pos_w .* must be an int, got "
                                     r"load_start_pos_w='1.5'"),
    (cfg("  min_chn_0: low"), r"min_chn_0 .* must be a number, got min_chn_0='low'"),
    (cfg("  crop: true crop: false"), r"each key must appear once .* got key='crop'"),
    ("aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 752640\n}",
     r"aipp_mode must be static \(dynamic AIPP is not supported\) .* got aipp_mode='dynamic'"),
    ("aipp_op { input_format: YUV420SP_U8 }", r"aipp_mode must be given"),
    ("aipp_op { aipp_mode: static }", r"input_format must be given"),
    (cfg("", "XRGB8888_U8"), r"input_format must be one of .* \(XRGB8888_U8 is not supported "
                             r"yet\) .* got input_format='XRGB8888_U8'"),
    (cfg("", "NV12"), r"input_format must be one of \['YUV420SP_U8', 'RGB888_U8', "
                      r"'YUV400_U8'\] .* got input_format='NV12'"),
    (cfg("  padding: true left_padding_size: 4"),
     r"padding must be false \(padding is not supported yet\)"),
    (cfg("  resize: true"), r"resize must be false \(resize is not supported yet\)"),
    (cfg("  matrix_r0c0: 40000"), r"matrix_r0c0 must be in \[-32768, 32767\] .* "
                                  r"got matrix_r0c0=40000"),
    (cfg("  mean_chn_1: 300"), r"mean_chn_1 must be in \[0, 255\] .* got mean_chn_1=300"),
    (cfg("  csc_switch: true", "YUV400_U8"), r"csc_switch must be false for YUV400_U8"),
    ("aipp_op { aipp_mode: static input_format: RGB888_U8 } junk",
     r"the file must hold only `aipp_op \{ ... \}` blocks, got text='junk'"),
    ("aipp { aipp_mode: static }", r"blocks must be named aipp_op, got block='aipp'"),
    ("# nothing\n", r"the file must hold at least one aipp_op block, got blocks=0"),
    (cfg("") + cfg("", "RGB888_U8"), r"each model input must have one aipp_op block, got "
                                     r"related_input_rank=\[0, 0\]"),
])
def test_bad_configs_are_refused_by_message(text, match):
    with pytest.raises(AippConfigError, match=r"^atc --insert_op_conf: " + match):
        parse_config(text)


# ---- the kernel and the AI CPU implementation ----------------------------------------------------

@pytest.mark.parametrize("case", ["tile_multiple", "ragged_nv21_fp16", "two_tiles"])
def test_kernel_matches_reference(interpret, case):
    a = {"tile_multiple": attrs(64, 32, 0, 0, 64, 32),
         "ragged_nv21_fp16": attrs(70, 40, 4, 2, 51, 27, swap=True, dtype="float16"),
         "two_tiles": attrs(600, 6, 2, 2, 519, 3)}[case]
    batch = 1 if case == "two_tiles" else 2
    rng = np.random.default_rng(len(case))
    img = rng.integers(0, 256, (batch, a["src_h"] * 3 // 2, a["src_w"], 1), dtype=np.uint8)
    ref = aipp_reference(img, a)
    got = aipp(img, a, interpret=interpret)
    assert got.dtype == np.dtype(a["dtype"]) and got.shape == (batch, 3, a["crop_h"], a["crop_w"])
    np.testing.assert_array_equal(got, ref)          # same float32 ops in the same order
    # and the reference is what the documented formula says at one pixel
    yy, xx = min(5, a["crop_h"] - 1), 7
    sy, sx = a["crop_y"] + yy, a["crop_x"] + xx
    Y = int(img[0, sy, sx, 0])
    U, V = (int(v) for v in img[0, a["src_h"] + sy // 2, sx // 2 * 2:sx // 2 * 2 + 2, 0])
    if a["rbuv_swap"]:
        U, V = V, U
    r = min(255, max(0, (256 * Y + 359 * (V - 128)) >> 8))
    assert ref[0, 0, yy, xx] == np.asarray((np.float32(r) - np.float32(123.675)) *
                                           np.float32(0.0171)).astype(a["dtype"])


def test_aicpu_apply_matches_reference_for_every_format():
    rng = np.random.default_rng(7)
    for a in (attrs(70, 40, 4, 2, 51, 27, swap=True), attrs(64, 32, 0, 0, 64, 32, csc=False),
              attrs(33, 21, 3, 1, 29, 17, fmt="RGB888_U8", csc=False),
              attrs(33, 21, 3, 1, 29, 17, fmt="RGB888_U8", swap=True, dtype="float16"),
              attrs(33, 21, 1, 0, 20, 20, fmt="YUV400_U8", csc=False)):
        shape = rt.dvpp.aipp.input_shape(a["input_format"], 2, a["src_w"], a["src_h"])
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_array_equal(apply(a, img), aipp_reference(img, a))


def test_kernel_refuses_what_it_does_not_run():
    with pytest.raises(ValueError, match=r"aipp: the kernel takes YUV420SP_U8 .* got "
                                         r"input_format='RGB888_U8'"):
        aipp(np.zeros(33 * 21 * 3, np.uint8), attrs(33, 21, 0, 0, 33, 21, fmt="RGB888_U8"))
    with pytest.raises(ValueError, match=r"image must be uint8 with a multiple of 3072 bytes .* "
                                         r"got dtype=uint8 size=100"):
        aipp(np.zeros(100, np.uint8), attrs(64, 32, 0, 0, 64, 32))


# ---- conversion and end to end -------------------------------------------------------------------

def small_cnn(h, w, seed=0):
    """Conv(3x3, pad 1) + Relu + GlobalAveragePool + Flatten: NCHW float32 in."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3,
                                     "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32) * 0.1, "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["y"])]
    g = helper.make_graph(nodes, "aipp_cnn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("text,match", [
    (cfg("  src_image_size_w: 64 src_image_size_h: 48 crop: true load_start_pos_w: 3"),
     r"load_start_pos_w and load_start_pos_h must be even for YUV420SP_U8, got "
     r"load_start_pos='\(3, 0\)'"),
    (cfg("  src_image_size_w: 64 src_image_size_h: 48 crop: true load_start_pos_w: 20"),
     r"the crop window must lie inside the 64x48 source image, got crop='\(20, 0\) \+ 48x32'"),
    (cfg("  src_image_size_w: 64 src_image_size_h: 48"),
     r"the AIPP output size \(crop_size, else src_image_size\) must be the model input's "
     r"48x32 \('x'\), got output='64x48'"),
    (cfg("  related_input_rank: 2"), r"related_input_rank must name a model input \(the model "
                                     r"has 1\), got related_input_rank=2"),
    (cfg("", "YUV400_U8"), r"the model input 'x' must have 1 channels after AIPP "
                           r"\(YUV400_U8\), got C=3"),
])
def test_conversion_refusals(tmp_path, text, match):
    p = tmp_path / "aipp.cfg"
    p.write_text(text)
    with pytest.raises(AtcError, match=r"^atc --insert_op_conf: " + match):
        convert(small_cnn(32, 48), str(tmp_path / "m"), insert_op_conf=str(p))
    with pytest.raises(AtcError, match=r"the AIPP config file must be readable"):
        convert(small_cnn(32, 48), str(tmp_path / "m"), insert_op_conf=str(tmp_path / "no"))


def test_cli_reports_a_refused_config(tmp_path, capsys):
    from rt.atc.__main__ import main as atc
    onnx.save(small_cnn(32, 48), str(tmp_path / "m.onnx"))
    (tmp_path / "aipp.cfg").write_text("aipp_op {\n aipp_mode: dynamic\n}\n")
    assert atc(["--model", str(tmp_path / "m.onnx"), "--output", str(tmp_path / "m"),
                "--soc_version", "Ascend910B2", "--insert_op_conf",
                str(tmp_path / "aipp.cfg")]) == 1
    assert capsys.readouterr().err.startswith(
        "ATC run failed: atc --insert_op_conf: aipp_mode must be static (dynamic AIPP is not "
        "supported)")
    assert not (tmp_path / "m.om").exists()


@pytest.mark.parametrize("aicpu_only", [False, True])
def test_dvpp_decode_aipp_model_end_to_end(channel, stream, tmp_path, monkeypatch, capsys,
                                           aicpu_only):
    """Pillow JPEG -> DVPP JPEGD (NV12, strides 64 x 48) -> the converted model whose input is
    that NV12 buffer (AIPP crops 48x32 at (8, 4), YUV->RGB, normalises) == numpy reference AIPP
    of the same bytes + onnx.reference on the original model."""
    monkeypatch.setenv("ASCENDC_INTERPRET", "1")
    if aicpu_only:
        monkeypatch.setenv("ASCEND_EMU_MODEL_AICPU_ONLY", "1")
    jpg = jpeg_bytes(picture(56, 40, seed=3))
    w, h, _ = rt.dvpp.jpeg_get_image_info(jpg)
    n = rt.dvpp.jpeg_predict_dec_size(jpg, None, 1)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=1)
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(jpg), len(jpg), out, stream)
    ws, hs = rt.dvpp.align_up(w, 64), rt.dvpp.align_up(h, 16)
    assert (ws, hs) == (64, 48)
    conf = tmp_path / "aipp.cfg"
    conf.write_text(cfg(f"  src_image_size_w: {ws} src_image_size_h: {hs}\n  crop: true "
                        f"load_start_pos_w: 8 load_start_pos_h: 4 crop_size_w: 48 "
                        f"crop_size_h: 32\n" + JPEG_CSC + NORM))
    model = small_cnn(32, 48)
    onnx.save(model, str(tmp_path / "m.onnx"))
    from rt.atc.__main__ import main as atc
    assert atc(["--model", str(tmp_path / "m.onnx"), "--output", str(tmp_path / "m"),
                "--soc_version", "Ascend910B2", "--insert_op_conf", str(conf)]) == 0
    assert "Aipp x1" in capsys.readouterr().out
    m = rt.Model.load(str(tmp_path / "m.om"))
    assert m.inputs[0].dtype == "uint8" and m.inputs[0].shape == (1, hs * 3 // 2, ws, 1)
    assert m.engines()["aipp_0"] == ("AI_CPU" if aicpu_only else "AI_CORE")
    img = rt.DeviceArray(m.inputs[0].shape, np.uint8, out.data)   # DVPP's buffer goes straight in
    (y,) = m.execute([img], stream=stream)
    stream.synchronize()
    got = y.copy_to_host()
    nv12 = np.empty(ws * hs * 3 // 2, np.uint8)
    rt.memcpy(nv12, out.data, nv12.size, rt.MemcpyKind.DEVICE_TO_HOST)
    (c,) = parse_config(conf.read_text())
    a = attrs(ws, hs, 8, 4, 48, 32)
    a["sub"] = [c[f"mean_chn_{k}"] + c[f"min_chn_{k}"] for k in range(3)]
    x = aipp_reference(nv12, a)
    # the AIPP'd picture is the Pillow decode, up to the 4:2:0 chroma and the rounding
    rgb = np.asarray(Image.open(io.BytesIO(jpg)).convert("RGB"))[4:36, 8:56].astype(np.float32)
    back = x[0].transpose(1, 2, 0) / np.float32(a["var_reci"]) + np.float32(a["sub"])
    assert np.abs(back - rgb).mean() < 3
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_pyacl_decode_into_dvpp_memory_then_model_on_the_same_stream(tmp_path, monkeypatch):
    """pyACL: JPEGD writes NV12 into dvpp_malloc memory; that memory is the model's input data
    buffer; decode and execute_async are queued back to back on one stream."""
    import rt.acl as acl
    monkeypatch.setenv("ASCEND_EMU_MODEL_AICPU_ONLY", "1")     # the AI Core path is tested above
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    ch = acl.media.dvpp_create_channel_desc()
    assert acl.media.dvpp_create_channel(ch) == 0
    host = np.frombuffer(jpeg_bytes(picture(64, 48, seed=5)), np.uint8).copy()
    hp = acl.util.numpy_to_ptr(host)
    jdev, _ = acl.media.dvpp_malloc(host.size)
    assert acl.rt.memcpy(jdev, host.size, hp, host.size, acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    size, _ = acl.media.dvpp_jpeg_predict_dec_size(hp, host.size, 1)
    buf, _ = acl.media.dvpp_malloc(size)
    pic = acl.media.dvpp_create_pic_desc()
    for setter, v in ((acl.media.dvpp_set_pic_desc_data, buf),
                      (acl.media.dvpp_set_pic_desc_size, size),
                      (acl.media.dvpp_set_pic_desc_format, 1)):
        assert setter(pic, v) == 0
    conf = tmp_path / "aipp.cfg"
    conf.write_text(cfg("  src_image_size_w: 64 src_image_size_h: 48\n" + JPEG_CSC + NORM))
    model = small_cnn(48, 64, seed=1)
    convert(model, str(tmp_path / "m"), insert_op_conf=str(conf))
    model_id, ret = acl.mdl.load_from_file(str(tmp_path / "m.om"))
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_input_size_by_index(desc, 0) == 64 * 48 * 3 // 2
    assert acl.mdl.get_input_data_type(desc, 0) == 4                  # ACL_UINT8
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [1, 72, 64, 1]
    in_ds, out_ds = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    _, ret = acl.mdl.add_dataset_buffer(in_ds, acl.create_data_buffer(buf, 64 * 48 * 3 // 2))
    out_dev, _ = acl.rt.malloc(16, 0)
    _, ret2 = acl.mdl.add_dataset_buffer(out_ds, acl.create_data_buffer(out_dev, 16))
    assert ret == ret2 == 0
    assert acl.media.dvpp_jpeg_decode_async(ch, jdev, host.size, pic, stream) == 0
    assert acl.mdl.execute_async(model_id, in_ds, out_ds, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    got = np.empty(4, np.float32)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(got), 16, out_dev, 16,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    nv12 = np.empty(64 * 48 * 3 // 2, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(nv12), nv12.size, buf, nv12.size,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    a = attrs(64, 48, 0, 0, 64, 48)
    a["sub"] = [124 - 0.325, 116 + 0.28, 104 - 0.47]
    (want,) = ReferenceEvaluator(model).run(None, {"x": aipp_reference(nv12, a)})
    np.testing.assert_allclose(got, want.reshape(-1), rtol=1e-4, atol=1e-5)
    assert acl.mdl.unload(model_id) == 0 and acl.media.dvpp_destroy_channel(ch) == 0


def nhwc_cnn(h, w, seed=0):
    """small_cnn behind a Transpose: an N,H,W,C float32 input (a TensorFlow model's layout)."""
    m = small_cnn(h, w, seed)
    g = m.graph
    g.node.insert(0, helper.make_node("Transpose", ["x_nhwc"], ["x"], perm=[0, 3, 1, 2]))
    del g.input[:]
    g.input.append(helper.make_tensor_value_info("x_nhwc", TensorProto.FLOAT, [1, h, w, 3]))
    return m


@pytest.mark.parametrize("fmt", ["RGB888_U8", "YUV420SP_U8"])
def test_nhwc_model_input_takes_aipp_output_transposed(tmp_path, monkeypatch, fmt):
    """ATC --input_format=NHWC: the model input is (N, H, W, C); AIPP still takes the image and
    its NCHW result reaches the model through a Transpose: same output as onnx.reference on the
    numpy AIPP of the same bytes. Without NHWC the input's C is read where its W is: refused."""
    monkeypatch.setenv("ASCENDC_INTERPRET", "1")
    h, w = 24, 40
    conf = tmp_path / "aipp.cfg"
    body = (JPEG_CSC if fmt == "YUV420SP_U8" else "") + NORM
    conf.write_text(cfg(f"  src_image_size_w: {w} src_image_size_h: {h}\n" + body, fmt))
    model = nhwc_cnn(h, w, seed=2)
    convert(model, str(tmp_path / "m"), insert_op_conf=str(conf), input_format="NHWC")
    m = rt.Model.load(str(tmp_path / "m.om"))
    shape = (1, h * 3 // 2, w, 1) if fmt == "YUV420SP_U8" else (1, h, w, 3)
    assert m.inputs[0].name == "x_nhwc" and m.inputs[0].shape == shape
    img = np.random.default_rng(7).integers(0, 256, shape, dtype=np.uint8)
    (got,) = m.execute([img])
    a = attrs(w, h, 0, 0, w, h, csc=fmt == "YUV420SP_U8", fmt=fmt)
    if fmt == "RGB888_U8":
        a["input_bias"] = [0, 0, 0]
    a["sub"] = [124 - 0.325, 116 + 0.28, 104 - 0.47]
    x = aipp_reference(img, a).transpose(0, 2, 3, 1)
    (want,) = ReferenceEvaluator(model).run(None, {"x_nhwc": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(AtcError, match=r"the model input 'x_nhwc' must have 3 channels after "
                                       r"AIPP \(" + fmt + r"\), got C=24"):
        convert(model, str(tmp_path / "m2"), insert_op_conf=str(conf))
