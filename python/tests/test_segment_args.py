"""segment_reduce's offsets= and lengths=, and correction=, checked by one function on every
path (numpy, torch CPU and CUDA, CuPy, JAX, and tilec.torch.segment_reduce): a float or
bool array of offsets or lengths is refused, never truncated (3.7 is not 3); negative
lengths are refused, and lengths whose sum passes 2^63 - 1; with the axis's extent
(torch.segment_reduce's rule) lengths must sum to it. torch is not importable here, so the
check is tested directly, with an array that spells its dtype as torch does, and through
the numpy path; correction=True is refused as a bool on every path, never taken as 1. The
oracle is the arguments themselves."""
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
    max, indexing: what the check reads of a torch tensor (CPU or CUDA)."""

    def __init__(self, values, dtype):
        self.a, self.dtype, self.shape = np.asarray(values), "torch." + dtype, np.shape(values)

    def __lt__(self, v):
        return self.a < v

    def sum(self):
        return self.a.sum()

    def max(self):
        return self.a.max()

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


U64 = np.uint64
# lengths whose running sum (the offsets they make) passes 2^63 - 1, and the words that say so
PAST_INT64 = [
    (np.array([2**64 - 1], U64), "lengths\\[0\\] is 18446744073709551615, past 2\\^63 - 1"),
    (np.array([5, 2**63], U64), "lengths\\[1\\] is 9223372036854775808, past 2\\^63 - 1"),
    (np.array([2**62] * 3), "lengths\\[0\\] to lengths\\[1\\] sum to 9223372036854775808"),
    ([2**63 - 1, 0, 1], "lengths\\[0\\] to lengths\\[2\\] sum to 9223372036854775808"),
    (np.array([3] * 10 + [2**63 - 2], U64),
     "lengths\\[0\\] to lengths\\[10\\] sum to 9223372036854775836"),
]


@pytest.mark.parametrize("lengths,words", PAST_INT64, ids=range(len(PAST_INT64)))
def test_lengths_whose_sum_passes_int64_are_refused_as_lengths(lengths, words):
    """A sum of lengths past 2^63 - 1 once wrapped in the cumulative sum into offsets the
    caller never gave (a segment "from 0 to -1, which falls"): the lengths are refused, in
    their own words, exactly (Python's integers are the oracle), on every path's check."""
    exact = 0
    for v in np.asarray(lengths).tolist():
        exact += v
        if v > 2**63 - 1 or exact > 2**63 - 1:
            break
    else:
        raise AssertionError("not a case: the lengths fit")
    dt = str(np.asarray(lengths).dtype)
    for make in (lambda v: v, lambda v: TorchLike(v, dt), lambda v: CupyLike(v, dt)):
        with pytest.raises(ValueError, match=words):
            tilec._segment_arg(None, make(lengths))
        with pytest.raises(ValueError, match=words):  # torch's rule: not a wrapped sum either
            tilec._segment_arg(None, make(lengths), 10)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(ValueError, match=words) as e:
        tilec.segment_reduce(x, lengths=lengths, axis=1)
    assert "offset" not in str(e.value) and "must sum to at most the axis's extent" in str(e.value)
    # lengths that come to 2^63 - 1 exactly fit: the library's own check of the offsets
    with pytest.raises(tilec.ArgumentError, match="ends past the extent"):
        tilec.segment_reduce(x, lengths=[2**63 - 2, 1], axis=1)
