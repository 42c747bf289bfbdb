"""`python -m rt.atc --model m.onnx --output m --soc_version Ascend910B2 [--input_shape ...]`."""
from __future__ import annotations

import argparse
import sys

from .convert import AtcError, convert


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rt.atc", description="Convert an ONNX model to an "
                                "ascend-emu offline model (.om) for rt.Model / acl.mdl.")
    p.add_argument("--model", default=None, help="the ONNX model file")
    p.add_argument("--singleop", default=None,        # acl.op single-op models (docs/acl.md)
                   help="single-op JSON: compile each op into --output (a directory)")
    p.add_argument("--output", required=True, help="output path (.om is appended)")
    p.add_argument("--soc_version", required=True, help="e.g. Ascend910B2")
    p.add_argument("--framework", default="5", help="5 = ONNX (the only one supported)")
    p.add_argument("--input_shape", default=None, help='"name:1,3,224,224;name2:..."')
    p.add_argument("--dynamic_batch_size", default=None,
                   help='"1,2,4,8": one graph per batch size (acl.mdl.set_dynamic_batch_size)')
    p.add_argument("--dynamic_image_size", default=None,     # docs/dynamic-shapes.md
                   help='"224,224;448,448": one graph per H,W gear (-1 at H,W in --input_shape)')
    p.add_argument("--dynamic_dims", default=None,
                   help='"1,224;2,448": one graph per gear of the -1 dims in --input_shape')
    p.add_argument("--input_format", default=None, help="NCHW / NHWC / ND")
    p.add_argument("--insert_op_conf", default=None,           # AIPP: docs/dvpp.md
                   help="static AIPP config (aipp.cfg) inserted in front of the model input")
    args = p.parse_args(argv)
    if args.singleop:
        from .singleop import main as singleop_main
        return singleop_main(args)
    if not args.model:
        p.error("the following arguments are required: --model (or --singleop)")
    try:
        if str(args.framework) != "5":
            raise AtcError(f"atc: --framework must be 5 (ONNX), got {args.framework}")
        s = convert(args.model, args.output, args.soc_version, args.input_shape,
                    insert_op_conf=args.insert_op_conf,
                    dynamic_batch_size=args.dynamic_batch_size,
                    dynamic_image_size=args.dynamic_image_size,
                    dynamic_dims=args.dynamic_dims, input_format=args.input_format)
    except AtcError as e:
        print(f"ATC run failed: {e}", file=sys.stderr)
        return 1
    ops = ", ".join(f"{k} x{v}" for k, v in sorted(s["ops"].items()))
    print(f"ATC run success: {s['path']} ({s['bytes']} bytes)\n"
          f"  ops: {ops}\n"
          f"  passes: {s['folded_nodes']} nodes constant-folded, {s['batchnorm_folded']} "
          f"BatchNorm folded into Conv, {s['gemm_normalised']} Gemm normalised\n"
          f"  memory plan: workspace {s['workspace_bytes']} bytes (without reuse "
          f"{s['workspace_bytes_without_reuse']}), weights {s['weight_bytes']} bytes" +
          (f"\n  dynamic batch sizes: {s['dynamic_batch']}" if s.get("dynamic_batch") else "") +
          (f"\n  dynamic gears: {s['dynamic_gears']}" if s.get("dynamic_gears") else "") +
          (f"\n  dynamic shape ranges: {s['dynamic_shape']}" if s.get("dynamic_shape") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
