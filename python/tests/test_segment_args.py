"""segment_reduce's offsets= and lengths=, and correction=, checked by one function on every
path (numpy, torch CPU and CUDA, CuPy, JAX, and tilec.torch.segment_reduce): a float or
bool array of offsets or lengths is refused, never truncated (3.7 is not 3); negative
lengths are refused; with the axis's extent (torch.segment_reduce's rule) lengths must sum
to it. torch is not importable here, so the check is tested directly, with an array that
spells its dtype as torch does, and through the numpy path; correction=True is refused as a
bool on every path, never taken as 1. The oracle is the arguments themselves."""
import numpy as np
import pytest

import tilec

@pytest.mark.parametrize("bad", [True, False, np.True_])
def test_bool_correction_refused_everywhere(bad):
    a = np.arange(6, dtype=np.float32)
    for call in (lambda: tilec.reduce(a, "var", correction=bad),
                 lambda: tilec.var(a, ddof=bad), lambda: tilec.std(a, correction=bad),
                 lambda: tilec.var_mean(a, correction=bad),
                 lambda: tilec.segment_reduce(a, [0, 6], "var", correction=bad),
                 lambda: tilec.segment_reduce(a, [0, 6], "std", correction=bad)):
        with pytest.raises(TypeError, match="must be an int, not"):
            call()
    with pytest.raises(ValueError, match="from 0 to 2\\^63 - 1"):
        tilec.segment_reduce(a, [0, 6], "var", correction=-1)


# ---- segment_reduce's offsets= and lengths=: one check for every path --------------------------

class TorchLike:
    """An array that names its dtype as torch does ("torch.float32") and answers < 0, sum,
    indexing: what the check reads of a torch tensor (CPU or CUDA)."""

    def __init__(self, values, dtype):
        self.a, self.dtype, self.shape = np.asarray(values), "torch." + dtype, np.shape(values)

    def __lt__(self, v):
        return self.a < v

    def sum(self):
        return self.a.sum()

    def __getitem__(self, i):
        return self.a[i]

    def __len__(self):
        return len(self.a)


@pytest.mark.parametrize("make", [list, np.array, lambda v: TorchLike(v, "float32")],
                         ids=["list", "numpy", "torch"])
def test_float_offsets_and_lengths_refused(make):
    for kw in ({"offsets": make([0.0, 3.7, 10.0])}, {"lengths": make([3.7, 6.3])},
               {"lengths": make([3.0, 7.0])}):
        with pytest.raises(TypeError, match="1-D array of integers, not float"):
            tilec._segment_arg(kw.get("offsets"), kw.get("lengths"))
        with pytest.raises(TypeError, match="not rounded"):
            tilec._segment_arg(kw.get("offsets"), kw.get("lengths"), 10)
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(TypeError, match="integers, not float64"):
        tilec.segment_reduce(x, [0, 3.7, 10], "sum")
    with pytest.raises(TypeError, match="integers, not float64"):
        tilec.segment_reduce(x, lengths=[3.7, 6.3], op="sum")


def test_bool_and_2d_index_arrays_refused():
    for v in (np.array([True, False]), TorchLike([True, False], "bool")):
        with pytest.raises(TypeError, match="integers, not bool"):
            tilec._segment_arg(None, v)
    with pytest.raises(TypeError, match="1-D"):
        tilec._segment_arg(np.array([[0, 5]]), None)
    with pytest.raises(TypeError, match="one of the two"):
        tilec._segment_arg([0, 5], [5])
    with pytest.raises(ValueError, match="at least one"):
        tilec._segment_arg(np.array([], np.int64), None)


@pytest.mark.parametrize("make", [list, np.array, lambda v: TorchLike(v, "int64")],
                         ids=["list", "numpy", "torch"])
def test_negative_lengths_refused(make):
    with pytest.raises(ValueError, match="lengths must be 0 or more; lengths\\[1\\] is -2"):
        tilec._segment_arg(None, make([5, -2, 7]))
    with pytest.raises(ValueError, match="0 or more"):
        tilec.segment_reduce(np.arange(10.0), lengths=[5, -2, 7], op="sum")
    name, a = tilec._segment_arg(None, make([5, 0, 5]))
    assert name == "lengths"


def test_torch_rule_lengths_sum_to_the_extent():
    ok = tilec._segment_arg(None, np.array([3, 0, 7]), 10)
    assert ok[0] == "lengths"
    for lengths in ([3, 0, 6], [3, 0, 8], TorchLike([4, 4], "int32")):
        with pytest.raises(ValueError, match="sum to %d; they must sum to the axis's extent, 10"
                           % int(np.sum(getattr(lengths, "a", lengths)))):
            tilec._segment_arg(None, lengths, 10)
    with pytest.raises(ValueError, match="must sum to the axis's extent, 4"):
        tilec._segment_arg(None, [], 4)
    assert tilec._segment_arg(None, np.array([], np.int64), 0)[0] == "lengths"
    assert tilec._segment_arg([0, 4, 10], None, 10)[0] == "offsets"
    for offsets in ([1, 4, 10], [0, 4, 9]):
        with pytest.raises(ValueError, match="must run from 0 to the axis's extent, 10"):
            tilec._segment_arg(offsets, None, 10)
    # the package's own segment_reduce keeps CSR offsets that need not cover the axis
    assert tilec.segment_reduce(np.arange(10.0), [2, 4], "sum").tolist() == [5.0]


class CupyLike(TorchLike):
    """A GPU array as CuPy's: a numpy dtype, __cuda_array_interface__, get() to the host."""

    def __init__(self, values, dtype):
        super().__init__(values, dtype)
        self.dtype = np.dtype(dtype)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str}

    def get(self):
        return self.a

    def __array__(self, *args, **kw):  # as CuPy's: no implicit copy to the host
        raise TypeError("Implicit conversion to a NumPy array is not allowed")


def test_offsets_of_a_gpu_array_for_a_host_input():
    x = np.arange(10, dtype=np.float64)
    got = tilec.segment_reduce(x, CupyLike([0, 3, 10], "int64"), "sum")
    assert got.tolist() == [3.0, 42.0]
    assert tilec.segment_reduce(x, lengths=CupyLike([4, 6], "int32"), op="max").tolist() == [3.0, 9.0]
    with pytest.raises(TypeError, match="integers, not float32"):
        tilec.segment_reduce(x, CupyLike([0, 3, 10], "float32"), "sum")
