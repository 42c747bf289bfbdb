"""Public pyACL samples (Ascend/samples, vendored in vendor/ with only `import acl` changed) run
as their READMEs run them: the README's ATC line (the model swapped for an ONNX stand-in:
`--model=<stand-in>.onnx --framework=5`, `--soc_version=Ascend310` for "Ascendxxx"), then the
README's python command in the README's folder, on an emulated Ascend310 (ASCEND_EMU_SOC).
Each test checks what the sample computed, not only that it ended. docs/pyacl-public-samples.md
has the whole table."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VENDOR = HERE / "vendor"
sys.path.insert(0, str(HERE))
import standins  # noqa: E402


def _copy(name, tmp_path) -> pathlib.Path:
    dst = tmp_path / name
    shutil.copytree(VENDOR / name, dst)
    return dst


def _run(args, cwd, timeout=900) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ASCEND_EMU_SOC="Ascend310")
    env.pop("ASCEND_EMU_DEVICES", None)
    r = subprocess.run([sys.executable] + list(args), cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{args} exited {r.returncode}:\n{out[-4000:]}"
    return out


def _atc(cwd, *args) -> str:
    return _run(["-m", "rt.atc", *args], cwd)


def _matrix(text: str, label: str, rows: int) -> np.ndarray:
    """The numpy-printed int matrix that follows `label` in the sample's output."""
    body = text.split(label, 1)[1]
    nums = re.findall(r"-?\d+", "\n".join(body.strip().splitlines()[:rows * 2]))
    return np.array([int(v) for v in nums], np.int64)


def test_acl_operator_add(tmp_path):
    """README: in test_data, `atc --singleop=config/add_op.json --soc_version=Ascendxxx
    --output=op_models`, then `python3 ../src/acl_execute_add.py`. The sample prints its random
    inputs and the op's output: output == a + b."""
    d = _copy("acl_operator_add", tmp_path) / "test_data"
    _atc(d, "--singleop=config/add_op.json", "--soc_version=Ascend310", "--output=op_models")
    out = _run(["../src/acl_execute_add.py"], d)
    assert "execute success" in out and "release source success" in out
    text = out.replace("[", " ").replace("]", " ")
    a = _matrix(text, "factor_a:", 8)[:128]
    b = _matrix(text, "factor_b:", 8)[:128]
    got = _matrix(text, "ACL output:", 8)[:128]
    assert a.size == b.size == got.size == 128
    np.testing.assert_array_equal(got, a + b)


def test_memcpy_host_dvpp(tmp_path):
    """README: `python3 memcpy_host_dvpp.py --release_cycle 10 --number_of_cycles 10 --device_id 0
    --memory_size 10485760 --memory_reuse` in src/; run here with 2 x 1 cycles of 1 MiB (the
    sample sleeps 1 s per cycle). Every buffer it prints holds the 7s it wrote."""
    d = _copy("memcpy_host_DVPP_python", tmp_path) / "src"
    out = _run(["memcpy_host_dvpp.py", "--release_cycle", "2", "--number_of_cycles", "1",
                "--device_id", "0", "--memory_size", "1048576", "--memory_reuse"], d)
    assert "run success!" in out
    shown = re.findall(r"data is \[([^\]]*)\]", out)
    assert shown and all(set(s.replace(".", "").split()) == {"7"} for s in shown), shown
    assert "failed" not in out


def test_venc_image(tmp_path):
    """README: `python3 ./src/acl_venc.py` with data/dvpp_venc_128x128_nv12.yuv; the sample sends
    the picture 16 times (pic desc with data and size only) and writes data/output.h265."""
    av = pytest.importorskip("av")
    d = _copy("venc_image", tmp_path)
    yy, xx = np.mgrid[0:128, 0:128]
    y = ((xx * 2 + yy) % 256).astype(np.uint8)
    uv = np.stack([128 + (xx[:64, :64] % 32), 128 - (yy[:64, :64] % 32)], -1).astype(np.uint8)
    frame = np.concatenate([y.reshape(-1), uv.reshape(-1)])
    (d / "data").mkdir(exist_ok=True)      # the sample's data/ holds only what the user puts there
    frame.tofile(d / "data" / "dvpp_venc_128x128_nv12.yuv")
    _run(["./src/acl_venc.py"], d)
    frames = [f.to_ndarray(format="yuv420p") for f in av.open(str(d / "data" / "output.h265"))
              .decode(video=0)]
    assert len(frames) == 16
    mse = np.mean((frames[-1][:128].astype(float) - y) ** 2)
    assert 10 * np.log10(255 ** 2 / max(mse, 1e-9)) > 30


@pytest.mark.slow
def test_resnet50_async_imagenet_classification(tmp_path):
    """README: `atc --model=caffe_model/resnet50.prototxt ... --framework=0 --output=model/resnet50
    --soc_version=Ascendxxx --input_format=NCHW --input_fp16_nodes=data --output_type=FP32
    --out_nodes=prob:0`, then `python3 ./src/acl_net.py` (two JPEGs in data/). Every top-5 it
    prints (one per execution, from its callbacks) is a picture's top-5 as onnx's reference
    evaluator gives them on the sample's preprocessing (labels exact, probabilities within
    0.02: the input is float16)."""
    d = _copy("resnet50_async_imagenet_classification", tmp_path)
    (d / "caffe_model").mkdir()
    (d / "data").mkdir()
    standins.classifier(str(d / "caffe_model" / "resnet50.onnx"))
    pics = standins.jpegs(d / "data", ["dog1_1024_683.jpg", "dog2_1024_683.jpg"], 1024, 683)
    _atc(d, "--model=caffe_model/resnet50.onnx", "--framework=5", "--output=model/resnet50",
         "--soc_version=Ascend310", "--input_format=NCHW", "--input_fp16_nodes=data",
         "--output_type=FP32", "--out_nodes=prob:0")
    out = _run(["./src/acl_net.py"], d)
    assert "run finish!!!" in out and "callback func stage success" in out
    tops = re.findall(r"\[(\d+)\]: ([0-9.]+)", out)
    assert tops and len(tops) % 5 == 0 and len(tops) >= 5 * len(pics)
    from onnx.reference import ReferenceEvaluator
    ref = ReferenceEvaluator(str(d / "caffe_model" / "resnet50.onnx"))
    refs = [ref.run(None, {"data": _resnet_input(p)})[0][0] for p in pics]
    for k in range(len(tops) // 5):
        labels = [int(v) for v, _ in tops[5 * k:5 * k + 5]]
        probs = [float(v) for _, v in tops[5 * k:5 * k + 5]]
        assert probs == sorted(probs, reverse=True)
        assert any(labels == list(np.argsort(-r)[:5]) and np.allclose(probs, np.sort(r)[::-1][:5],
                                                                     atol=2e-2) for r in refs)


def _resnet_input(path):
    """The sample's preprocessing (acl_net.py transfer_pic, as its README describes it): resize
    to 256x256, centre 224x224, RGB -> BGR, minus (104, 117, 123), float16 NCHW."""
    from PIL import Image
    with Image.open(path) as im:
        img = np.array(im.resize((256, 256)))
    img = img[16:240, 16:240, ::-1].astype(np.float16) - np.array([104, 117, 123], np.float16)
    return img.transpose(2, 0, 1)[None].astype(np.float32)


@pytest.mark.slow
def test_vpc_resnet50_imagenet_classification(tmp_path):
    """README: the AIPP model (`--insert_op_conf=caffe_model/aipp.cfg`), `atc --singleop=
    op_models/op_list.json --soc_version=Ascendxxx --output=op_models/` (Cast with `truncate`,
    ArgMaxV2 declared [1]), then `python3 ./src/acl_sample.py`: JPEGD -> VPC resize -> model ->
    Cast + ArgMaxV2 single ops. The ArgMaxV2 label is the model's top-1 of the same picture."""
    d = _copy("vpc_resnet50_imagenet_classification", tmp_path)
    (d / "data").mkdir()
    standins.classifier(str(d / "caffe_model" / "resnet50.onnx"))
    standins.jpegs(d / "data", ["dog1_1024_683.jpg", "dog2_1024_683.jpg"], 1024, 683)
    _atc(d, "--model=caffe_model/resnet50.onnx", "--framework=5", "--output=model/resnet50_aipp",
         "--soc_version=Ascend310", "--insert_op_conf=caffe_model/aipp.cfg")
    _atc(d, "--singleop=op_models/op_list.json", "--soc_version=Ascend310", "--output=op_models/")
    out = _run(["./src/acl_sample.py"], d)
    top1 = re.findall(r"top5 inference results: =+\s*label:(\d+)", out)
    argmax = re.findall(r"label of classification result is:(\d+)", out)
    assert len(top1) == len(argmax) == 2 and top1 == argmax, out[-3000:]


# -- acllite-based samples (python/common/acllite, itself a pyACL wrapper, vendored with only its
#    `import acl` changed); they find it at src/../../../../common/acllite, so the tree is laid out
#    as in Ascend/samples.

AIPP_YUV = """aipp_op {
    aipp_mode : static
    related_input_rank : 0
    input_format : YUV420SP_U8
    csc_switch : true
    rbuv_swap_switch : false
    var_reci_chn_0 : 1
    var_reci_chn_1 : 1
    var_reci_chn_2 : 1
    min_chn_0 : 104
    min_chn_1 : 117
    min_chn_2 : 123
    src_image_size_w : 224
    src_image_size_h : 224
}
"""


def _acllite_sample(name, tmp_path) -> pathlib.Path:
    root = tmp_path / "python"
    if not (root / "common").exists():
        shutil.copytree(VENDOR / "common", root / "common")
    dst = root / "level2_simple_inference" / "1_classification" / name
    shutil.copytree(VENDOR / name, dst)
    (dst / "model").mkdir()
    (dst / "data").mkdir()
    (dst / "model" / "insert_op.cfg").write_text(AIPP_YUV)   # the README downloads one
    return dst


def _acllite_top5(out: str) -> dict:
    """{picture file name: [(label, confidence)] * 5} from classify.py's prints."""
    res = {}
    for pic, body in re.findall(r"images:(\S+)\s*=+ top5 inference results: =+\s*((?:label:.*\n?)"
                                r"{5})", out):
        res[os.path.basename(pic)] = [(int(a), float(b)) for a, b in
                                      re.findall(r"label:(\d+)\s+confidence: ([0-9.]+)", body)]
    return res


@pytest.mark.slow
def test_googlenet_imagenet_picture_and_dynamic_batch(tmp_path):
    """googlenet_imagenet_picture, README: `atc --model=./googlenet.prototxt ... --framework=0
    --output=googlenet_yuv --soc_version=Ascend310 --insert_op_conf=./insert_op.cfg
    --input_shape="data:1,3,224,224" --input_format=NCHW` in model/, `python3.6 classify.py
    ../data/` in src/ (acllite: JPEGD -> VPC resize -> AIPP model, one picture at a time).
    googlenet_imagenet_dynamic_batch: the same with `--input_shape="data:-1,3,224,224"
    --dynamic_batch_size="1,2,4,8"`; the sample sends its two pictures as one batch of 2.
    Each picture's top-5 from the batch equals its top-5 alone, and the two pictures differ."""
    one = _acllite_sample("googlenet_imagenet_picture", tmp_path)
    dyn = _acllite_sample("googlenet_imagenet_dynamic_batch", tmp_path)
    names = ["test1.jpg", "test2.jpg"]
    for d, shape in ((one, "data:1,3,224,224"), (dyn, "data:-1,3,224,224")):
        standins.classifier(str(d / "model" / "googlenet.onnx"), shape=("N", 3, 224, 224))
        standins.jpegs(d / "data", names, 1024, 683)
    _atc(one / "model", "--model=./googlenet.onnx", "--framework=5", "--output=googlenet_yuv",
         "--soc_version=Ascend310", "--insert_op_conf=./insert_op.cfg",
         "--input_shape=data:1,3,224,224", "--input_format=NCHW")
    _atc(dyn / "model", "--input_shape=data:-1,3,224,224", "--input_format=NCHW",
         "--output=./googlenet_dynamic_batch", "--soc_version=Ascend310",
         "--insert_op_conf=./insert_op.cfg", "--framework=5", "--model=./googlenet.onnx",
         "--dynamic_batch_size=1,2,4,8")
    alone = _acllite_top5(_run(["classify.py", "../data/"], one / "src"))
    out = _run(["classify.py", "../data/"], dyn / "src")
    assert "'batch': [1, 2, 4, 8]" in out
    batched = _acllite_top5(out)
    assert sorted(alone) == sorted(batched) == names, out[-3000:]
    for n in names:
        assert [k for k, _ in alone[n]] == [k for k, _ in batched[n]]
        np.testing.assert_allclose([v for _, v in alone[n]], [v for _, v in batched[n]],
                                   atol=2e-6)
    assert alone["test1.jpg"] != alone["test2.jpg"]
    assert (one / "out" / "test1.jpg").exists()      # the picture it labels and saves


AIPP_RGB = """aipp_op {
    aipp_mode : static
    related_input_rank : 0
    input_format : RGB888_U8
    csc_switch : false
    rbuv_swap_switch : false
    min_chn_0 : 123.68
    min_chn_1 : 116.78
    min_chn_2 : 103.94
    var_reci_chn_0 : 0.0171
    var_reci_chn_1 : 0.0175
    var_reci_chn_2 : 0.0174
}
"""


@pytest.mark.slow
def test_resnet50_imagenet_dynamic_hw(tmp_path):
    """README: `atc --model=./resnet50_tensorflow_1.7.pb --framework=3 --output=./tf_resnet50
    --soc_version=Ascend310 --input_shape="Placeholder:1,-1,-1,3"
    --dynamic_image_size="112,112;224,224;448,448" --insert_op_conf=./aipp_resnet50.aippconfig`
    (an NHWC stand-in: `--input_format=NHWC`, TensorFlow's default, added), then `python3
    acl_net.py` in src/. The README's line copies the largest gear's input size (448x448x3) from
    the 224x224 picture's bytes, a read past the end of a host buffer: refused (107000) when the
    memory after it is not mapped, which depends on the process's memory layout, else it runs
    on gear 224 (the first 150 528 bytes are the picture). Either way; then with `--h 448
    --w 448`. Each top-5 printed is the one the onnx reference evaluator gives on the sample's
    preprocessing with the AIPP config applied (RGB888, minus min_chn, times var_reci)."""
    d = _copy("resnet50_imagenet_dynamic_hw", tmp_path)
    (d / "model").mkdir()
    (d / "data").mkdir()
    model = d / "model" / "resnet50_tensorflow_1.7.onnx"
    standins.classifier(str(model), in_name="Placeholder", shape=(1, "H", "W", 3), classes=1001,
                        nhwc=True)
    (d / "model" / "aipp_resnet50.aippconfig").write_text(AIPP_RGB)
    pics = standins.jpegs(d / "data", ["dog1_1024_683.jpg", "dog2_1024_683.jpg"], 1024, 683)
    _atc(d / "model", "--model=./resnet50_tensorflow_1.7.onnx", "--framework=5",
         "--output=./tf_resnet50", "--soc_version=Ascend310",
         "--input_shape=Placeholder:1,-1,-1,3", "--dynamic_image_size=112,112;224,224;448,448",
         "--insert_op_conf=./aipp_resnet50.aippconfig", "--input_format=NHWC")
    env = dict(os.environ, PYTHONPATH=str(ROOT), ASCEND_EMU_SOC="Ascend310")
    r = subprocess.run([sys.executable, "acl_net.py"], cwd=d / "src", env=env,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        assert "acl.rt.memcpy failed ret=107000" in r.stdout + r.stderr, r.stderr[-2000:]
    else:
        _check_dynamic_hw_top5(r.stdout, pics, model, 224)
    _check_dynamic_hw_top5(_run(["acl_net.py", "--h", "448", "--w", "448"], d / "src"), pics,
                           model, 448)


def _check_dynamic_hw_top5(out, pics, model, side):
    assert "*****run finish******" in out
    got = {os.path.basename(p): [(int(a), float(b)) for a, b in re.findall(
        r"\[(\d+)\]: ([0-9.]+)", body)] for p, body in re.findall(
        r"images:(\S+)\n(?:.*\n)*?=+ top5 inference results: =+\n((?:\[\d+\]: .*\n){5})", out)}
    from onnx.reference import ReferenceEvaluator
    from PIL import Image
    ref = ReferenceEvaluator(str(model))
    assert sorted(got) == sorted(os.path.basename(p) for p in pics)
    for p in pics:
        with Image.open(p) as im:      # acl_net.py transfer_pic, as written (box (h, w) swapped)
            ho, wo = im.height // 10, im.width // 10
            img = np.array(im.crop((ho, wo, im.height - ho, im.width - wo)).resize((side, side)))
        x = (img.astype(np.float32) - np.float32([123.68, 116.78, 103.94])) * \
            np.float32([0.0171, 0.0175, 0.0174])
        prob = ref.run(None, {"Placeholder": x[None]})[0].reshape(-1)
        vals = np.exp(prob) / np.sum(np.exp(prob))       # the sample's own softmax on top
        top = np.argsort(-vals)[:5]
        labels = [k for k, _ in got[os.path.basename(p)]]
        np.testing.assert_allclose(vals[labels], [v for _, v in got[os.path.basename(p)]],
                                   atol=2e-6)
        assert set(labels) <= set(np.argsort(-vals)[:8]) and labels[0] == top[0]
