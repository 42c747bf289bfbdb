"""`python -m rt.atc --model m.onnx --output m --soc_version Ascend910B2 [--input_shape ...]`.

Takes ATC's command lines as the samples' READMEs write them (``--flag=value`` or ``--flag
value``). Every failure prints ATC's "ATC run failed" line and the reason on stderr and exits
with 1; a flag ATC has but this converter does not is refused as "not supported: --flag".
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from .convert import AtcError, convert

#: ATC flags accepted without an effect on the converted model: performance or tuning choices
#: whose results here are the same either way (all ops use their exact implementations).
NO_EFFECT_FLAGS = {"--enable_small_channel": ("0", "1"),
                   "--op_select_implmode": ("high_precision", "high_performance")}
#: --log level -> logging level of the conversion's log records (rt.log: plog or stdout)
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
              "error": logging.ERROR, "null": logging.CRITICAL + 10}


class _Parser(argparse.ArgumentParser):
    def error(self, message):               # ATC's message, not argparse's exit(2) + usage
        raise AtcError(f"atc: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m rt.atc", allow_abbrev=False,
                description="Convert an ONNX model to an ascend-emu offline model (.om) for "
                            "rt.Model / acl.mdl.")
    p.add_argument("--model", default=None, help="the ONNX model file")
    p.add_argument("--singleop", default=None,        # acl.op single-op models (docs/acl.md)
                   help="single-op JSON: compile each op into --output (a directory)")
    p.add_argument("--output", default=None, help="output path (.om is appended; folders are "
                   "created)")
    p.add_argument("--soc_version", default=None, help="e.g. Ascend910B2, Ascend310, "
                   "Ascend310P3 (rt.SOCS)")
    p.add_argument("--framework", default="5", help="5 = ONNX (the only one supported)")
    p.add_argument("--mode", default="0", help="0 = convert a model (the only one supported)")
    p.add_argument("--input_shape", default=None, help='"name:1,3,224,224;name2:..."')
    p.add_argument("--dynamic_batch_size", default=None,
                   help='"1,2,4,8": one graph per batch size (acl.mdl.set_dynamic_batch_size)')
    p.add_argument("--dynamic_image_size", default=None,     # docs/dynamic-shapes.md
                   help='"224,224;448,448": one graph per H,W gear (-1 at H,W in --input_shape)')
    p.add_argument("--dynamic_dims", default=None,
                   help='"1,224;2,448": one graph per gear of the -1 dims in --input_shape')
    p.add_argument("--input_format", default=None, help="NCHW / NHWC / ND / NCDHW / NDHWC")
    p.add_argument("--insert_op_conf", default=None,           # AIPP: docs/dvpp.md
                   help="static AIPP config (aipp.cfg) inserted in front of the model input")
    p.add_argument("--out_nodes", default=None, help='"node:0;node2:1": the model outputs')
    p.add_argument("--input_fp16_nodes", default=None, help='"x;y": inputs fed as float16')
    p.add_argument("--output_type", default=None,
                   help='FP32 / FP16 / UINT8, or per output "node:0:FP16;node2:1:FP32"')
    p.add_argument("--precision_mode", default=None,
                   help="force_fp16 / allow_fp32_to_fp16 / allow_mix_precision / "
                        "cube_fp16in_fp32out / force_fp32 / must_keep_origin_dtype")
    p.add_argument("--log", default="null", help="debug / info / warning / error / null")
    for flag in NO_EFFECT_FLAGS:
        p.add_argument(flag, default=None, help=f"accepted, no effect here: "
                       f"{' / '.join(NO_EFFECT_FLAGS[flag])}")
    return p


def _check(args, unknown: list) -> None:
    flags = [a.split("=", 1)[0] for a in unknown if a.startswith("-")]
    if flags:
        raise AtcError(f"atc: not supported: {flags[0]}"
                       + (f" (and {', '.join(flags[1:])})" if flags[1:] else ""))
    if unknown:
        raise AtcError(f"atc: unexpected argument(s) {unknown}: ATC takes --flag=value only")
    for flag, values in NO_EFFECT_FLAGS.items():
        v = getattr(args, flag[2:])
        if v is not None and v not in values:
            raise AtcError(f"atc: {flag} must be one of {list(values)}, got {v!r}")
    if args.log not in LOG_LEVELS:
        raise AtcError(f"atc: --log must be one of {list(LOG_LEVELS)}, got {args.log!r}")
    if str(args.mode) != "0":
        raise AtcError(f"atc: not supported: --mode={args.mode} (only 0, model conversion)")
    if str(args.framework) != "5":
        raise AtcError(f"atc: not supported: --framework={args.framework} (only 5, ONNX)")
    for flag in ("output", "soc_version"):
        if not getattr(args, flag):
            raise AtcError(f"atc: --{flag} is required")


def _run(args) -> int:
    from .. import log
    level = LOG_LEVELS[args.log]
    before = log.logger.level
    log.logger.setLevel(level)
    try:
        log.write(logging.INFO, "ATC", f"converting {args.model} for {args.soc_version}")
        s = convert(args.model, args.output, args.soc_version, args.input_shape,
                    insert_op_conf=args.insert_op_conf,
                    dynamic_batch_size=args.dynamic_batch_size,
                    dynamic_image_size=args.dynamic_image_size,
                    dynamic_dims=args.dynamic_dims, input_format=args.input_format,
                    out_nodes=args.out_nodes, input_fp16_nodes=args.input_fp16_nodes,
                    output_type=args.output_type, precision_mode=args.precision_mode)
        for op, n in sorted(s["ops"].items()):
            log.write(logging.DEBUG, "ATC", f"graph op {op} x{n}")
        log.write(logging.INFO, "ATC", f"wrote {s['path']} ({s['bytes']} bytes)")
    finally:
        log.logger.setLevel(before)
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


def main(argv=None) -> int:
    try:
        args, unknown = _parser().parse_known_args(argv)
        _check(args, unknown)
        if args.singleop:
            from .singleop import main as singleop_main
            return singleop_main(args)
        if not args.model:
            raise AtcError("atc: --model (or --singleop) is required")
        return _run(args)
    except AtcError as e:
        print(f"ATC run failed: {e}", file=sys.stderr)
    except BrokenPipeError:         # `atc ... | head -1`: the reader left; what was done stays
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13             # as a C program ended by SIGPIPE, without a word
    except Exception as e:          # never a traceback: ATC reports and exits
        print(f"ATC run failed: atc: internal error {type(e).__name__}: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
