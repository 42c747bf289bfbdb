"""`python -m ascendc.run [--interpret] [--checked] script.py [args...]`: run an unmodified pyasc
script on ascend-emu.

For this process only, `import asc`, `asc.lib.runtime`, `asc.lib.host`, `asc.runtime.config`
resolve to ours (`ascendc.pyasc_compat`), and `import torch_npu` gives ascend-emu's stand-in
when no real torch_npu is installed (docs/torch-npu.md). The script runs as `python script.py
args...` would run it: `__name__ == "__main__"`, `sys.argv[0]` is the script, its directory is
first on `sys.path`.
The exit status is the script's (0, its `sys.exit` code, or 1 after an uncaught exception, whose
traceback is printed as Python prints it, without the runner's frames).
`python -m ascendc.run -m module args...` runs a module the same way (e.g. `-m pytest`).

Options before the script: `--interpret` (`ASCENDC_INTERPRET=1`: every kernel interpreted) and
`--checked` (`ASCENDC_CHECKED=1`: the fidelity traps of checked mode).
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback
import types

from . import pyasc_compat
from .pyasc_compat import npu_device, torch_npu_standin

USAGE = "usage: python -m ascendc.run [--interpret] [--checked] (script.py | -m module) [args...]"


def _strip_runner_frames(tb, first_file=None):
    """Drop the leading traceback entries that belong to this runner (and runpy)."""
    here = os.path.abspath(__file__)
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if first_file is not None and os.path.abspath(f) == first_file:
            break
        if os.path.abspath(f) != here and not f.startswith("<frozen runpy") and \
                os.path.basename(f) != "runpy.py":
            break
        tb = tb.tb_next
    return tb


def run_script(path: str, argv: list) -> int:
    """Run `path` as `__main__` with `sys.argv = [path, *argv]`; returns its exit status."""
    path_abs = os.path.abspath(path)
    with open(path_abs, "rb") as f:
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__loader__ = None
    main.__spec__ = None
    sys.modules["__main__"] = main
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(path_abs))
    return _run(lambda: exec(code, main.__dict__), path_abs)


def run_module(name: str, argv: list) -> int:
    sys.argv = [name, *argv]
    sys.path.insert(0, os.getcwd())
    return _run(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True), None)


def _run(body, first_file) -> int:
    try:
        body()
    except SystemExit as e:
        return _exit_status(e.code)
    except BaseException as e:          # as Python does: print the traceback, exit status 1
        tb = _strip_runner_frames(e.__traceback__, first_file)
        if tb is not None:
            e.__traceback__ = tb    # the display reads the exception's own traceback
        sys.excepthook(type(e), e, e.__traceback__)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    finally:
        sys.stdout.flush()
    return 0


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    while args and args[0] in ("--interpret", "--checked"):
        opt = args.pop(0)
        os.environ["ASCENDC_INTERPRET" if opt == "--interpret" else "ASCENDC_CHECKED"] = "1"
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not args else sys.stdout)
        print(__doc__, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    pyasc_compat.install()
    npu_device.activate_when_torch_imported()     # torch's "npu" device, as torch_npu gives it
    torch_npu_standin.install()                   # `import torch_npu` without a real one
    if args[0] == "-m":
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        return run_module(args[1], args[2:])
    if not os.path.isfile(args[0]):
        print(f"python -m ascendc.run: can't open file {args[0]!r}: no such file",
              file=sys.stderr)
        return 2
    return run_script(args[0], args[1:])


if __name__ == "__main__":
    status = main()
    try:
        sys.stdout.flush()
    except Exception:
        traceback.print_exc()
    sys.exit(status)
