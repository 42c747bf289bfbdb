"""`python -m rt.atc --model m.onnx --output m --soc_version Ascend910B2 [--input_shape ...]`."""
from __future__ import annotations

import argparse
import sys

from .convert import AtcError, convert


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rt.atc", description="Convert an ONNX model to an "
                                "ascend-emu offline model (.om) for rt.Model / acl.mdl.")
    p.add_argument("--model", required=True, help="the ONNX model file")
    p.add_argument("--output", required=True, help="output path (.om is appended)")
    p.add_argument("--soc_version", required=True, help="e.g. Ascend910B2")
    p.add_argument("--framework", default="5", help="5 = ONNX (the only one supported)")
    p.add_argument("--input_shape", default=None, help='"name:1,3,224,224;name2:..."')
    p.add_argument("--dynamic_batch_size", default=None, help='"1,2,4,8" (not supported yet)')
    args = p.parse_args(argv)
    try:
        if str(args.framework) != "5":
            raise AtcError(f"atc: --framework must be 5 (ONNX), got {args.framework}")
        if args.dynamic_batch_size:
            raise AtcError("atc: --dynamic_batch_size is not supported yet (static shapes only)")
        s = convert(args.model, args.output, args.soc_version, args.input_shape)
    except AtcError as e:
        print(f"ATC run failed: {e}", file=sys.stderr)
        return 1
    ops = ", ".join(f"{k} x{v}" for k, v in sorted(s["ops"].items()))
    print(f"ATC run success: {s['path']} ({s['bytes']} bytes)\n"
          f"  ops: {ops}\n"
          f"  passes: {s['folded_nodes']} nodes constant-folded, {s['batchnorm_folded']} "
          f"BatchNorm folded into Conv, {s['gemm_normalised']} Gemm normalised\n"
          f"  memory plan: workspace {s['workspace_bytes']} bytes (without reuse "
          f"{s['workspace_bytes_without_reuse']}), weights {s['weight_bytes']} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
