"""Cold compile vs warm start (Numba disk cache) of each kernel, each in a fresh process.

    python -m bench.compile_times

"cold" uses an empty kernel cache (ASCENDC_CACHE_DIR) but the primitives' Numba cache as it is;
"warm" is the next process, loading the kernel from disk. Both include running the kernel once;
flash_attn is the main job's default shape, so its warm figure is the main job's warm start to
its first result (beyond importing numpy and numba).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SNIPPETS = {
    "add": "import numpy as np; from kernels.add import add; "
           "add(np.ones(100, np.float32), np.ones(100, np.float32))",
    "softmax": "import numpy as np; from kernels.softmax import softmax; "
               "softmax(np.ones((4, 40), np.float32))",
    "layernorm": "import numpy as np; from kernels.norm import layernorm; "
                 "layernorm(np.ones((4, 40), np.float32), np.ones(40, np.float32), "
                 "np.zeros(40, np.float32))",
    "matmul": "import numpy as np; from kernels.matmul import matmul; "
              "matmul(np.ones((40, 50), np.float32), np.ones((50, 30), np.float32))",
    # the main job's first result: its default shape (B1 N8 S2048 D64 fp32), kernel run included
    "flash_attn": "import numpy as np; from kernels.flash_attention import flash_attention; "
                  "q = np.ones((1, 8, 2048, 64), np.float32); flash_attention(q, q, q)",
}
TIMED = ("import time, sys; t0 = time.perf_counter(); import numba, numpy; "
         "t1 = time.perf_counter(); {code}; t2 = time.perf_counter(); "
         "print(f'{{t1 - t0:.3f}} {{t2 - t1:.3f}}')")


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
