"""Cold compile vs warm start (Numba disk cache) of each kernel, each in a fresh process.

    python -m bench.compile_times
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SNIPPETS = {
    "add": "import numpy as np; from kernels.add import add; add(np.ones(100, np.float32), np.ones(100, np.float32))",
    "softmax": "import numpy as np; from kernels.softmax import softmax; softmax(np.ones((4, 40), np.float32))",
    "layernorm": "import numpy as np; from kernels.norm import layernorm; layernorm(np.ones((4, 40), np.float32), np.ones(40, np.float32), np.zeros(40, np.float32))",
    "matmul": "import numpy as np; from kernels.matmul import matmul; matmul(np.ones((40, 50), np.float32), np.ones((50, 30), np.float32))",
}
TIMED = ("import time, sys; t0 = time.perf_counter(); import numba, numpy; t1 = time.perf_counter(); "
         "{code}; t2 = time.perf_counter(); print(f'{{t1 - t0:.3f}} {{t2 - t1:.3f}}')")


def run(code, cache):
    env = dict(os.environ, ASCENDC_CACHE_DIR=cache)
    r = subprocess.run([sys.executable, "-c", TIMED.format(code=code)], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        return None
    return float(r.stdout.split()[-1])


def main():
    print(f"{'kernel':<10}{'cold s':>9}{'warm s':>9}   (seconds beyond importing numpy+numba)")
    with tempfile.TemporaryDirectory() as d:
        for name, code in SNIPPETS.items():
            cold = run(code, d)
            warm = run(code, d)
            fmt = lambda v: f"{v:>9.2f}" if v is not None else f"{'failed':>9}"  # noqa: E731
            print(f"{name:<10}{fmt(cold)}{fmt(warm)}")


if __name__ == "__main__":
    main()
