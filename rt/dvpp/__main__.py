"""`python -m rt.dvpp info [--demo]`: DVPP utilisation per device and unit, as
`npu-smi info -t dvpp` shows it (0% in a fresh process; `--demo` first decodes and resizes a few
JPEGs on device 0 so the numbers move). `python -m rt info` does not show DVPP yet (see
docs/dvpp.md, "Not yet")."""
from __future__ import annotations

import argparse
import io
import sys

import numpy as np

import rt.dvpp as dvpp
from rt import device, memory, stream


def _demo() -> None:
    from PIL import Image
    device.set_device(0)
    yy, xx = np.mgrid[0:480, 0:640]
    img = np.stack([(xx + k * 40) % 256 for k in range(3)], -1).astype(np.uint8)
    b = io.BytesIO()
    Image.fromarray(img).save(b, "JPEG", quality=90)
    data = np.frombuffer(b.getvalue(), np.uint8).copy()
    src = dvpp.malloc(data.size)
    memory.memcpy(src, data, data.size, memory.MemcpyKind.HOST_TO_DEVICE)
    ch = dvpp.ChannelDesc()
    ch.create()
    n = dvpp.jpeg_predict_dec_size(data, None, 1)
    dec = dvpp.PicDesc(data=dvpp.malloc(n), size=n, format=1, width=640, height=480,
                       width_stride=640, height_stride=480)
    out = dvpp.PicDesc(data=dvpp.malloc(224 * 224 * 3 // 2), size=224 * 224 * 3 // 2, format=1,
                       width=224, height=224, width_stride=224, height_stride=224)
    s = stream.Stream()
    for _ in range(8):
        dvpp.jpeg_decode_async(ch, src, data.size, dec, s)
        dvpp.vpc_resize_async(ch, dec, out, None, s)
    s.synchronize()


def dvpp_table() -> str:
    head = "| NPU | " + " | ".join(f"{u}(%)" for u in dvpp.UNITS) + " |"
    out = [head, "|" + "-" * (len(head) - 2) + "|"]
    for i in range(device.device_count()):
        cells = " | ".join(f"{dvpp.utilization(i, u):>{len(u) + 3}.1f}" for u in dvpp.UNITS)
        out.append(f"| {i:<3} | {cells} |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rt.dvpp", description=__doc__.splitlines()[0])
    p.add_argument("cmd", nargs="?", default="info", choices=["info"])
    p.add_argument("--demo", action="store_true", help="decode and resize a few JPEGs first")
    args = p.parse_args(argv)
    device.init()
    try:
        if args.demo:
            _demo()
        print(dvpp_table())
    finally:
        device.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
