"""Generated kernel modules live as real files in a cache directory, so Numba's `cache=True`
disk cache works across processes. The file name is a hash of the generated source and of the
kernel language's own sources (a change to a primitive invalidates every cached kernel)."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from functools import lru_cache
from pathlib import Path


def cache_dir() -> Path:
    d = os.environ.get("ASCENDC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "ascend-emu", "kernels")
    p = Path(d)
    p.mkdir(parents=True, exist_ok=True)
    return p


@lru_cache(maxsize=1)
def lang_fingerprint() -> str:
    """Hash of ascendc's sources: cached kernels are only valid for the code that made them."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def load_module(source: str, stem: str):
    """Write `source` (once) under a content-hashed name and import it."""
    digest = hashlib.sha256((lang_fingerprint() + source).encode()).hexdigest()[:20]
    name = f"ascendc_gen_{stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    path = cache_dir() / f"{name}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)  # atomic: concurrent processes never see a half-written file
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
