"""Binding and checking inputs against a signature before anything runs."""

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.driver.run_check import bind_inputs
from relax.driver.run_inputs import Supplied, parse_values
from relax.runtime import ShapeTuple


def tensor(shape, dtype="float32"):
    return {"kind": "tensor", "dtype": dtype, "shape": shape}


PARAMS = [
    ("x", tensor(["n", 4])),
    ("w", tensor([4, "m"])),
    ("y", tensor([["mul", "n", 2], "m"])),
]


def test_binds_positionally_and_by_name():
    args = bind_inputs("main", PARAMS, parse_values(("y=6x5xf32", "3x4xf32", "4x5xf32")))
    assert [a.shape for a in args] == [(3, 4), (4, 5), (6, 5)]


@pytest.mark.parametrize("inputs, message", [
    (("3x4xf32", "5x5xf32", "6x5xf32"),
     "function 'main', parameter 'w': expected R.Tensor((4, m), dtype=\"float32\"), got 5x5xf32 "
     "from --input 5x5xf32: shape[0] is 5, expected 4"),
    (("3x4xf32", "4x5xf32", "6x7xf32"),
     "parameter 'y': expected R.Tensor((n * 2, m), dtype=\"float32\"), got 6x7xf32 from --input 6x7xf32: "
     "shape[1] is 7, but m = 5 (from w shape[1])"),
    (("3x4xf32", "4x5xf32", "5x5xf32"), "shape[0] is 5, expected n * 2 = 6"),
    (("3x4xi32", "4x5xf32", "6x5xf32"), "element type int32, expected float32"),
    (("3x4x1xf32", "4x5xf32", "6x5xf32"), "rank 3, expected 2"),
    (("3x4xf32",), "takes 3 input(s), got 1: no --input for 'w' (R.Tensor((4, m), dtype=\"float32\")), 'y'"),
    (("3x4xf32", "4x5xf32", "6x5xf32", "f32=1"), "--input f32=1 is one too many"),
    (("x=3x4xf32", "x=3x4xf32", "4x5xf32"), "parameter 'x' is already given by --input x=3x4xf32"),
])
def test_mismatches_name_function_parameter_struct_info_and_origin(inputs, message):
    with pytest.raises(UserError) as error:
        bind_inputs("main", PARAMS, parse_values(inputs))
    assert message in str(error.value)


def test_huge_inline_inputs_are_checked_before_anything_is_allocated():
    # A MemoryError (exit 70) before: the array was made before the check (issue 16).
    with pytest.raises(UserError, match=r"got 100000x100000x100000xf32 from --input 100000x100000x100000xf32=1: "
                                        r"rank 3, expected 2"):
        bind_inputs("main", PARAMS, parse_values(("100000x100000x100000xf32=1", "4x5xf32", "6x5xf32")))
    with pytest.raises(UserError, match=r"parameter 'w'.*got 100000x5xf32.*shape\[0\] is 100000, expected 4"):
        bind_inputs("main", PARAMS, parse_values(("3x4xf32", "100000x5xf32", "6x5xf32")))
    dynamic = [("x", tensor(["a", "b", "c"]))]
    with pytest.raises(UserError, match="an inline value takes at most 1073741824"):
        bind_inputs("main", dynamic, parse_values(("100000x100000x100000xf32=1",)))
    (array,) = bind_inputs("main", dynamic, parse_values(("2x1x2xf32=1.5",)))
    assert array.flags.writeable and array.tolist() == [[[1.5, 1.5]], [[1.5, 1.5]]]
    with pytest.raises(UserError, match="a shape of 100000 values"):
        bind_inputs("f", [("s", {"kind": "shape", "ndim": -1})], parse_values(("100000xi64",)))


def test_shape_prim_and_tuple_parameters():
    params = [("s", {"kind": "shape", "values": ["n", 2]}), ("p", {"kind": "prim", "dtype": "int64"}),
              ("t", {"kind": "tuple", "fields": [tensor(["n"]), {"kind": "tuple", "fields": [tensor([2], "int32")]}]})]
    s, p, t = bind_inputs("f", params, parse_values(("2xi64=3,2", "i64=7", "3xf32", "2xi32=1,2")))
    assert isinstance(s, ShapeTuple) and s == (3, 2)
    assert p == 7 and isinstance(p, int)
    assert t[0].shape == (3,) and t[1][0].tolist() == [1, 2]
    by_leaf = bind_inputs("f", params, parse_values(("t.1.0=2xi32", "2xi64=3,2", "i64=7", "3xf32")))
    assert by_leaf[2][1][0].dtype == np.int32
    with pytest.raises(UserError, match=r"parameter 't.0'.*shape\[0\] is 4, but n = 3 \(from s value\[0\]\)"):
        bind_inputs("f", params, parse_values(("2xi64=3,2", "i64=7", "4xf32", "2xi32")))
    with pytest.raises(UserError, match="a prim value is given as a 0-d array"):
        bind_inputs("f", params, parse_values(("2xi64=3,2", "1xi64=7", "3xf32", "2xi32")))
    with pytest.raises(UserError, match="a shape is given as a 1-D integer array"):
        bind_inputs("f", params, parse_values(("2xf32=3,2", "i64=7", "3xf32", "2xi32")))


def test_npz_arrays_bind_by_key_and_savez_positional():
    items = [Supplied(np.zeros((3, 4), np.float32), "--input @a.npz (array 'x')", "x"),
             Supplied(np.zeros((4, 5), np.float32), "--input @a.npz (array 'arr_0')", "arr_0"),
             Supplied(np.zeros((6, 5), np.float32), "--input @a.npz (array 'arr_1')", "arr_1")]
    assert [a.shape for a in bind_inputs("main", PARAMS, items)] == [(3, 4), (4, 5), (6, 5)]
