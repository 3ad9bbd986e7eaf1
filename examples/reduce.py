#!/usr/bin/python3
"""tilec from Python: numpy arrays (on a GPU when one is usable, copied there and back, else
on tilec's simulator, with one warning), a kernel of your own .tile program on arrays, and a
torch tensor on its GPU when one is here. Run from the source tree after `ninja -C build`:

    PYTHONPATH=python /usr/bin/python3 examples/reduce.py
"""
import os

import numpy as np

import tilec

x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6)
print("sum of every element:", tilec.sum(x))                        # -12.0
print("row maxima:", tilec.max(x, axis=1))                          # [-7. -1.  5. 11.]
print("column sums of the transpose's view:", tilec.sum(x.T, axis=1))
print("argmin of each column:", tilec.argmin(x[::-1], axis=0))      # [3 3 3 3 3 3]
print("var, numpy's ddof=0:", tilec.var(x, axis=1))
print("var and mean, ddof=0 too:", tilec.var_mean(x, axis=1))
print("i32 sum in int64, as numpy's:", tilec.sum(np.full(8, 2**30, np.int32)))  # 8589934592
print("nanmean skips NaN:", tilec.nanmean(np.array([1.0, np.nan, 3.0])))       # 2.0
try:
    tilec.max(np.zeros((2, 0), np.float32), axis=1)
except tilec.Error as e:  # a ValueError too (tilec.ArgumentError), as numpy's
    print("an error, with the library's diagnostics:", e.status)

# a kernel of your own: examples/row_sum.tile sums each row of a 4x8 f32 tile
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "row_sum.tile")) as f:
    row_sum = f.read()
a = np.arange(32, dtype=np.float32).reshape(4, 8)
b = np.empty(4, np.float32)
tilec.run_kernel(row_sum, a, b)                                     # b is written in place
print("row_sum.tile's kernel:", b)                                  # [ 28.  92. 156. 220.]

try:
    import torch
    if torch.cuda.is_available():
        t = torch.randn(1024, 32, device="cuda")
        print("torch, rows of 32 on the GPU:", tilec.sum(t, dim=1)[:4])
except ImportError:
    pass
