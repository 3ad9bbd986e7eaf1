#!/usr/bin/python3
"""tilec from Python: numpy arrays on the simulator, and a torch or CuPy tensor on its GPU
when one is here. Run from the source tree after `ninja -C build`:

    PYTHONPATH=python /usr/bin/python3 examples/reduce.py
"""
import numpy as np

import tilec

x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6)
print("sum of every element:", tilec.sum(x))                        # -12.0
print("row maxima:", tilec.max(x, axis=1))                          # [-7. -1.  5. 11.]
print("column sums of the transpose's view:", tilec.sum(x.T, axis=1))
print("argmin of each column:", tilec.argmin(x[::-1], axis=0))      # [3 3 3 3 3 3]
print("var, numpy's ddof=0:", tilec.var(x, axis=1))
print("i32 sum widened to i64:", tilec.sum(np.full(8, 2**30, np.int32), dtype=np.int64))
try:
    tilec.max(np.zeros((2, 0), np.float32), axis=1)
except tilec.Error as e:
    print("an error, with the library's diagnostics:", e.status)

try:
    import torch
    if torch.cuda.is_available():
        t = torch.randn(1024, 32, device="cuda")
        print("torch, rows of 32 on the GPU:", tilec.sum(t, axis=1)[:4])
except ImportError:
    pass
