"""`python -m ascendc.sanitize [--tool memcheck|racecheck|initcheck|synccheck] [--leak-check yes]
[--check-all] [--log-file F] [--interpret] (script.py | -m module) [args...]`

Runs the script as `python -m ascendc.run` runs it (pyasc scripts too: `import asc` is ours),
every kernel launch sanitized; then prints the report (msSanitizer's shape, npu-check classes)
to stderr or to the log file. Exit status: the script's if it failed, else 1 if errors were
found, else 0.
"""
from __future__ import annotations

import sys

from .. import run
from .report import TOOLS
from .session import Session

USAGE = ("usage: python -m ascendc.sanitize [--tool memcheck|racecheck|initcheck|synccheck] "
         "[--leak-check yes|no] [--check-all] [--log-file F] [--interpret] "
         "(script.py | -m module) [args...]")


def parse(argv):
    """(options dict, the rest: script and its arguments); raises ValueError on a bad option."""
    opts = {"tool": "memcheck", "leak_check": False, "check_all": False, "log_file": None,
            "interpret": False}
    args = list(argv)
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        name, eq, value = opt.partition("=")
        if name in ("--tool", "--leak-check", "--log-file"):
            if not eq:
                if not args:
                    raise ValueError(f"{name} needs a value")
                value = args.pop(0)
            if name == "--tool":
                if value not in TOOLS:
                    raise ValueError(f"--tool must be one of {', '.join(TOOLS)}, got "
                                     f"--tool={value}")
                opts["tool"] = value
            elif name == "--leak-check":
                if value not in ("yes", "no"):
                    raise ValueError(f"--leak-check must be yes or no, got --leak-check={value}")
                opts["leak_check"] = value == "yes"
            else:
                opts["log_file"] = value
        elif opt == "--check-all":
            opts["check_all"] = True
        elif opt == "--interpret":
            opts["interpret"] = True
        elif opt in ("-h", "--help"):
            raise SystemExit(0)
        else:
            raise ValueError(f"unknown option {opt}")
    return opts, args


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        opts, rest = parse(argv)
    except SystemExit:
        print(USAGE)
        print(__doc__)
        return 0
    except ValueError as e:
        print(f"python -m ascendc.sanitize: {e}\n{USAGE}", file=sys.stderr)
        return 2
    if not rest:
        print(USAGE, file=sys.stderr)
        return 2
    session = Session(opts["tool"], check_all=opts["check_all"], leak_check=opts["leak_check"])
    with session:
        status = run.main((["--interpret"] if opts["interpret"] else []) + rest)
    text = session.report.format()
    if opts["log_file"]:
        with open(opts["log_file"], "w") as f:
            f.write(text)
    else:
        sys.stdout.flush()
        sys.stderr.write(text)
        sys.stderr.flush()
    if status:
        return status
    return 1 if session.report.error_count else 0


if __name__ == "__main__":
    sys.exit(main())
