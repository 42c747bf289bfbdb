"""Image pipeline on the emulated device vs Pillow + numpy + onnxruntime (docs/dvpp.md).

    python -m bench.image_pipeline [--images 8] [--model resnet50|small] [--trace out.json]

JPEGs (made here with Pillow, sizes 320x240 .. 640x480) -> DVPP JPEGD (NV12) -> DVPP VPC resize to
224x224 -> AIPP (YUV -> RGB, ImageNet mean/std; inserted by `rt.atc --insert_op_conf`) -> the model
-> top-5. On the device the chain is asynchronous: DVPP work alternates over `--streams` streams
(JPEGD of one image overlaps VPC of another), each image's resize records an event the model
stream waits for, and the model runs image after image on its own stream (one workspace) while
DVPP prepares the next ones; the host only synchronizes at the end. Times come from one profiled
run after one warm-up image (kernels compiled): images/s and, from the profiler's records, the
busy time per stage (DVPP units, AIPP kernel, model AI Core kernels, AI CPU ops). A Chrome trace
with the DVPP unit tracks is written with --trace.

The peer does the same in the same run on the CPU: Pillow decode, Pillow bilinear resize, numpy
normalisation, onnxruntime (CPU provider, --ort-threads) and numpy top-5, per-stage times.

The model: `resnet50` is the ONNX backend test data's light_resnet50.onnx (shipped in the onnx
wheel; ResNet-50's graph with constant weights, so its top-5 is not meaningful and the two chains
need not agree on it); about 4 s per image on 2 host cores once compiled (the first run
compiles its kernels: minutes). `small` is a 5-layer CNN with seeded random weights for quick
runs. onnxruntime is optional (`pip install 'ascend-emu[ort]'`); without it the peer is skipped.
"""
from __future__ import annotations

import argparse
import io
import os
import tempfile
import time

import numpy as np

import rt

SIZE = 224
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
JPEG_SIZES = ((320, 240), (500, 376), (640, 480), (448, 448), (400, 300), (512, 384))


def aipp_cfg(src: int = SIZE) -> str:
    """Static AIPP: NV12 224x224 -> RGB (JPEG's BT.601 full range), (x - mean) / std."""
    norm = "".join(f"    mean_chn_{c}: {int(MEAN[c])}  min_chn_{c}: {MEAN[c] - int(MEAN[c]):.4f}  "
                   f"var_reci_chn_{c}: {1 / STD[c]:.8f}\n" for c in range(3))
    return ("aipp_op {\n    aipp_mode: static\n    input_format: YUV420SP_U8\n"
            f"    src_image_size_w: {src}\n    src_image_size_h: {src}\n"
            "    csc_switch: true\n    rbuv_swap_switch: false\n"
            "    matrix_r0c0: 256  matrix_r0c1: 0    matrix_r0c2: 359\n"
            "    matrix_r1c0: 256  matrix_r1c1: -88  matrix_r1c2: -183\n"
            "    matrix_r2c0: 256  matrix_r2c1: 454  matrix_r2c2: 0\n"
            "    input_bias_0: 0  input_bias_1: 128  input_bias_2: 128\n" + norm + "}\n")


def jpegs(n: int, seed: int = 0) -> list:
    """n JPEGs of smooth random pictures (quality 90, 4:2:0)."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w, h = JPEG_SIZES[i % len(JPEG_SIZES)]
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        f = rng.uniform(5, 40, 3)
        img = np.stack([128 + 100 * np.sin(xx / f[k] + k) * np.cos(yy / f[(k + 1) % 3] - i)
                        for k in range(3)], -1)
        img = np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)
        b = io.BytesIO()
        Image.fromarray(img).save(b, "JPEG", quality=90)
        out.append(b.getvalue())
    return out


def small_model():
    """Conv(3->16, 3x3 s2) Relu MaxPool(2) Conv(16->32, 3x3 s2) Relu GAP Flatten Gemm(1000)
    Softmax, seeded random weights, 224x224 input."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    f = np.float32

    def init(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(f), name)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["fl"]),
             helper.make_node("Gemm", ["fl", "fw", "fb"], ["lo"], transB=1),
             helper.make_node("Softmax", ["lo"], ["prob"], axis=1)]
    g = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 1000])],
        [init("w1", 16, 3, 3, 3), init("b1", 16), init("w2", 32, 16, 3, 3), init("b2", 32),
         init("fw", 1000, 32), init("fb", 1000)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def model_path(name: str, tmp: str) -> str:
    import onnx
    if name == "resnet50":
        return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                            "light_resnet50.onnx")
    p = os.path.join(tmp, "small.onnx")
    onnx.save(small_model(), p)
    return p


def top5(prob) -> list:
    p = np.asarray(prob).reshape(-1)
    idx = np.argpartition(-p, 5)[:5]
    return [int(i) for i in idx[np.argsort(-p[idx], kind="stable")]]


# ---- the device chain ----------------------------------------------------------------------------

class DeviceChain:
    """Buffers, descs and streams for n images; `run()` queues everything and synchronizes."""

    def __init__(self, model: rt.Model, data: list, streams: int):
        self.model, self.data = model, data
        self.ch = rt.dvpp.ChannelDesc()
        self.ch.create()
        self.cfg = rt.dvpp.ResizeConfig()
        self.dvpp_streams = [rt.Stream() for _ in range(streams)]
        self.model_stream = rt.Stream()
        rs = SIZE * SIZE * 3 // 2
        self.items = []
        for d in data:
            w, h, _ = rt.dvpp.jpeg_get_image_info(d)
            ws, hs = rt.dvpp.align_up(w, 64), rt.dvpp.align_up(h, 16)
            n = rt.dvpp.jpeg_predict_dec_size(d, None, rt.dvpp.PixelFormat.YUV_SEMIPLANAR_420)
            jbuf = rt.dvpp.malloc(len(d))
            dec = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, width=w, height=h,
                                  width_stride=ws, height_stride=hs)
            res = rt.dvpp.PicDesc(data=rt.dvpp.malloc(rs), size=rs, width=SIZE, height=SIZE,
                                  width_stride=SIZE, height_stride=SIZE)
            img = rt.DeviceArray(model.inputs[0].shape, np.uint8, res.data)
            out = rt.device_empty(model.outputs[0].shape, np.float32)
            self.items.append((d, jbuf, dec, res, img, out, rt.Event()))

    def run(self, items=None) -> list:
        items = self.items if items is None else items
        for i, (d, jbuf, dec, res, img, out, ev) in enumerate(items):
            s = self.dvpp_streams[i % len(self.dvpp_streams)]
            rt.memcpy(jbuf, np.frombuffer(d, np.uint8), len(d), rt.MemcpyKind.HOST_TO_DEVICE)
            rt.dvpp.jpeg_decode_async(self.ch, jbuf, len(d), dec, s)
            rt.dvpp.vpc_resize_async(self.ch, dec, res, self.cfg, s)
            ev.record(s)
            self.model_stream.wait_event(ev)
            self.model.execute([img], stream=self.model_stream, outputs=[out])
        self.model_stream.synchronize()
        return [top5(it[5].copy_to_host()) for it in items]


STAGES = (("DVPP JPEGD decode", lambda r: r.kind == "dvpp" and r.name == "jpeg_decode"),
          ("DVPP VPC resize", lambda r: r.kind == "dvpp" and r.name == "vpc_resize"),
          ("AIPP kernel (AI Core)", lambda r: r.kind == "kernel" and "aipp" in r.name),
          ("model kernels (AI Core)", lambda r: r.kind == "kernel" and "aipp" not in r.name),
          ("model AI CPU ops", lambda r: r.kind == "aicpu"))


def stage_totals(prof) -> list:
    rows = []
    for name, pick in STAGES:
        rs = [r for r in prof.records if pick(r)]
        rows.append((name, len(rs), sum(r.end_ns - r.start_ns for r in rs) / 1e9))
    return rows


# ---- the CPU peer --------------------------------------------------------------------------------

def cpu_chain(data: list, path: str, threads: int):
    import onnxruntime as ort
    from PIL import Image
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    mean = np.array(MEAN, np.float32).reshape(3, 1, 1)
    inv = (1 / np.array(STD, np.float32)).reshape(3, 1, 1)
    t = {"Pillow decode": 0.0, "Pillow resize": 0.0, "numpy normalise": 0.0,
         "onnxruntime": 0.0, "top-5": 0.0}

    def one(d):
        c0 = time.perf_counter()
        im = Image.open(io.BytesIO(d)).convert("RGB")
        c1 = time.perf_counter()
        im = im.resize((SIZE, SIZE), Image.BILINEAR)
        c2 = time.perf_counter()
        x = ((np.asarray(im, np.float32).transpose(2, 0, 1) - mean) * inv)[None]
        c3 = time.perf_counter()
        (p,) = sess.run(None, {name: np.ascontiguousarray(x)})
        c4 = time.perf_counter()
        k = top5(p)
        c5 = time.perf_counter()
        return k, (c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4)
    one(data[0])                                            # warm-up
    start = time.perf_counter()
    res = []
    for d in data:
        k, dt = one(d)
        res.append(k)
        for key, v in zip(t, dt):
            t[key] += v
    return res, time.perf_counter() - start, t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--model", choices=("resnet50", "small"), default="resnet50")
    p.add_argument("--streams", type=int, default=2, help="DVPP streams")
    p.add_argument("--ort-threads", type=int, default=2)
    p.add_argument("--trace", default=None, help="write the device run's Chrome trace here")
    args = p.parse_args(argv)
    from rt.atc import convert
    rt.init()
    rt.set_device(0)
    data = jpegs(args.images)
    with tempfile.TemporaryDirectory() as tmp:
        src = model_path(args.model, tmp)
        cfg = os.path.join(tmp, "aipp.cfg")
        with open(cfg, "w") as f:
            f.write(aipp_cfg())
        t0 = time.perf_counter()
        convert(src, os.path.join(tmp, "m"), "Ascend910B2", insert_op_conf=cfg)
        model = rt.Model.load(os.path.join(tmp, "m.om"))
        print(f"model {args.model}: {len(model.engines())} nodes, converted + loaded in "
              f"{time.perf_counter() - t0:.1f} s; engines: "
              f"{sum(e == 'AI_CORE' for e in model.engines().values())} AI Core, "
              f"{sum(e == 'AI_CPU' for e in model.engines().values())} AI CPU "
              f"(aipp_0 on {model.engines()['aipp_0']})")
        chain = DeviceChain(model, data, args.streams)
        t0 = time.perf_counter()
        chain.run(chain.items[:1])                          # warm-up: compiles the kernels
        print(f"warm-up (1 image, compiles on a cold cache): {time.perf_counter() - t0:.1f} s")
        with rt.profile() as prof:
            start = time.perf_counter()
            dev_top = chain.run()
            wall = time.perf_counter() - start
        if args.trace:
            prof.export_chrome_trace(args.trace)
        n = len(data)
        print(f"\ndevice chain (DVPP -> AIPP -> model, {args.streams} DVPP streams + 1 model "
              f"stream): {n} images in {wall:.2f} s = {n / wall:.2f} images/s")
        print(f"  {'stage':<26} {'tasks':>6} {'busy s':>8} {'% of wall':>10}")
        for name, cnt, busy in stage_totals(prof):
            print(f"  {name:<26} {cnt:>6} {busy:>8.3f} {100 * busy / wall:>9.1f}%")
        t0 = min(r.start_ns for r in prof.records)
        dv = [r.end_ns for r in prof.records if r.kind == "dvpp"]
        ks = [r.start_ns for r in prof.records if r.kind == "kernel"]
        print(f"  overlap: DVPP done with all {n} images {(max(dv) - t0) / 1e9:.2f} s after the "
              f"start, the model's first kernel began at {(min(ks) - t0) / 1e9:.2f} s")
        util = rt.dvpp.utilization(0, window_ns=int(wall * 1e9))
        print(f"  DVPP utilisation (busiest unit, busy over its own tasks' span): {util:.1f}%"
              + (f"; trace: {args.trace}" if args.trace else ""))
        try:
            cpu_top, cwall, ct = cpu_chain(data, src, args.ort_threads)
        except ImportError as e:
            print(f"\nCPU peer skipped ({e}): pip install 'ascend-emu[ort]'")
            return 0
        print(f"\nCPU peer (Pillow + numpy + onnxruntime, {args.ort_threads} threads): {n} images "
              f"in {cwall:.2f} s = {n / cwall:.2f} images/s")
        for name, v in ct.items():
            print(f"  {name:<26} {'':>6} {v:>8.3f} {100 * v / cwall:>9.1f}%")
        agree = sum(a[0] == b[0] for a, b in zip(dev_top, cpu_top))
        note = " (light_resnet50 has constant weights: near-ties, not meaningful)" \
            if args.model == "resnet50" else ""
        print(f"\nratio device / CPU: {cwall / wall:.3f} x the CPU's images/s; top-1 agreement "
              f"{agree}/{n}{note} (device top-5 of image 0: {dev_top[0]}, CPU: {cpu_top[0]})")
    rt.finalize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
