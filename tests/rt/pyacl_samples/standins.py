"""Stand-ins for what the public samples download: ONNX models with the input and output
names and shapes the samples expect, JPEG pictures, H.264/H.265 elementary streams."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def classifier(path, in_name="data", out_name="prob", shape=(1, 3, 224, 224), classes=1000,
               seed=0, nhwc=False):
    """Conv(4x4, stride 4) + Relu + GlobalAveragePool + Flatten + Gemm + Softmax; with `nhwc`
    the input is N,H,W,C (a TensorFlow model's layout) and a Transpose comes first."""
    rng = np.random.default_rng(seed)
    f = np.float32
    c = shape[3] if nhwc else shape[1]
    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("w1", rng.standard_normal((8, c, 4, 4)).astype(f) * 0.2),
        ("b1", rng.standard_normal(8).astype(f) * 0.1),
        ("fc_w", rng.standard_normal((classes, 8)).astype(f) * 0.5),
        ("fc_b", rng.standard_normal(classes).astype(f) * 0.1))]
    first = in_name
    nodes = []
    if nhwc:
        first = "nchw"
        nodes.append(helper.make_node("Transpose", [in_name], [first], name="to_nchw",
                                      perm=[0, 3, 1, 2]))
    nodes += [
        helper.make_node("Conv", [first, "w1", "b1"], ["c1"], name="conv1",
                         kernel_shape=[4, 4], strides=[4, 4]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("GlobalAveragePool", ["r1"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], [out_name], name=out_name, axis=1),
    ]
    graph = helper.make_graph(
        nodes, "standin",
        [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, [shape[0], classes])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def detector(path, in_name="images", shape=(1, 352, 640, 3), channels=24, seed=0):
    """A YOLO-shaped NHWC stand-in: Conv(8x8, stride 8) then two 2x2 average pools give three
    heads at strides 32, 16 and 8 (outputs out0, out1, out2, NHWC, `channels` each); each
    anchor's objectness channel is biased to -1."""
    rng = np.random.default_rng(seed)
    f = np.float32
    _, h, w, c = shape
    bias = rng.normal(0, 1, channels).astype(f)
    bias[4::channels // 3] = -1.0
    inits = [numpy_helper.from_array((rng.standard_normal((channels, c, 8, 8)) * 0.05).astype(f),
                                     "w8"), numpy_helper.from_array(bias, "b8")]
    nodes = [helper.make_node("Transpose", [in_name], ["x"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["x", "w8", "b8"], ["s8"], kernel_shape=[8, 8],
                              strides=[8, 8]),
             helper.make_node("AveragePool", ["s8"], ["s16"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["s16"], ["s32"], kernel_shape=[2, 2],
                              strides=[2, 2])]
    outs = []
    for k, (src, s) in enumerate((("s32", 32), ("s16", 16), ("s8", 8))):
        nodes.append(helper.make_node("Transpose", [src], [f"out{k}"], perm=[0, 2, 3, 1]))
        outs.append(helper.make_tensor_value_info(f"out{k}", TensorProto.FLOAT,
                                                  [shape[0], h // s, w // s, channels]))
    graph = helper.make_graph(nodes, "detector_standin",
                              [helper.make_tensor_value_info(in_name, TensorProto.FLOAT,
                                                             list(shape))], outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def video(path, codec="hevc", width=1280, height=720, frames=1, seed=0):
    """An Annex B elementary stream (H.265: codec 'hevc', H.264: 'h264') of `frames` frames."""
    import av
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    out = av.open(path, "w", format="hevc" if codec == "hevc" else "h264")
    s = out.add_stream("libx265" if codec == "hevc" else "libx264", rate=25)
    s.width, s.height, s.pix_fmt = width, height, "yuv420p"
    if codec == "hevc":
        s.options = {"x265-params": "log-level=error"}
    for k in range(frames):
        img = np.stack([(xx + 7 * k) % 256, (yy + 3 * k) % 256,
                        rng.integers(0, 256, (height, width))], -1).astype(np.uint8)
        for pkt in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
            out.mux(pkt)
    for pkt in s.encode():
        out.mux(pkt)
    out.close()


def jpegs(folder, names, width, height, seed=0):
    """Smooth textured JPEG pictures of width x height under `folder`; returns their paths."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    paths = []
    for k, name in enumerate(names):
        img = np.stack([128 + 100 * np.sin(xx / (9 + k) + c) * np.cos(yy / 7 - c)
                        for c in range(3)], -1) + rng.normal(0, 8, (height, width, 3))
        p = f"{folder}/{name}"
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(p, quality=90)
        paths.append(p)
    return paths
