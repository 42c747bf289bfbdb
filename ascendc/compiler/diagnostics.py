"""Numba's typing errors of a generated kernel module, mapped back to the kernel's own line."""
from __future__ import annotations

import linecache
import os
import re

from ..lang.errors import CompileError


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def typing_error(e, name, module_file, lines) -> CompileError:
    """A Numba error of a generated kernel module as a CompileError at the kernel's own line:
    the innermost `File "<module>", line N` of the message is mapped through the line marker
    (`_asc_state.src_line = k`) before line N onto `lines[k]` (file, line); the cache path and
    Numba's traceback of the generated code are left out."""
    text = _ANSI.sub("", str(e))
    heads = [ln.strip() for ln in text.splitlines() if ln.strip() and not
             ln.strip().startswith(("Failed in", "During:", "File ", "def ", "<source", "^"))]
    head = heads[0] if heads else type(e).__name__
    where = None
    gen = re.findall(r'File "([^"]+)", line (\d+)', text)
    try:
        src = open(module_file).read().splitlines()
    except OSError:
        src = []
    for f, n in gen:
        if os.path.basename(f) != os.path.basename(module_file):
            continue
        for i in range(min(int(n), len(src)) - 1, -1, -1):
            m = re.match(r"\s*_asc_state\.src_line = (\d+)\s*$", src[i])
            if m:
                k = int(m.group(1))
                if 0 < k < len(lines):
                    where = lines[k]
                break
        if where is not None:
            break
    msg = f"kernel {name}: compiled mode cannot type this statement: {head}"
    if where is not None:
        file, line = where
        code = linecache.getline(file, line).strip()
        msg += f'\n  File "{file}", line {line}' + (f"\n    {code}" if code else "")
    err = CompileError(msg)
    if where is not None:
        err.filename, err.lineno = where
    return err
