"""Flattening results, their text form, files, JSON values, and the --expected-output comparison."""

import numpy as np

from relax.driver.run_compare import compare
from relax.driver.run_inputs import Supplied
from relax.driver.run_outputs import flatten, format_array, json_value, write_output_dir
from relax.runtime import ShapeTuple


def test_flatten_depth_first_with_shapes_and_prims():
    a, b = np.ones((2,), np.float32), np.zeros((1, 1), np.int32)
    info = {"kind": "tuple", "fields": [{"kind": "tuple", "fields": [{"kind": "tensor"}, {"kind": "prim",
                                                                                      "dtype": "int32"}]},
                                        {"kind": "shape"}, {"kind": "tensor"}]}
    arrays = flatten(((a, 5), ShapeTuple([3, 4]), b), info)
    assert [x.dtype.name for x in arrays] == ["float32", "int32", "int64", "int32"]
    assert arrays[1].shape == () and arrays[2].tolist() == [3, 4]


def test_text_form():
    assert format_array(np.array([[1, 3, 5], [7, 9, 11]], np.float32), 1024) == "2x3xf32=[[1 3 5] [7 9 11]]"
    assert format_array(np.array(2.5, np.float64), 1024) == "f64=2.5"
    assert format_array(np.array([True, False]), 1024) == "2xi1=[1 0]"
    assert format_array(np.arange(10, dtype=np.int64), 4) == "10xi64=[0 1 2 ... 7 8 9]"


def test_output_dir_and_json(tmp_path):
    paths = write_output_dir([np.ones(2, np.float32), np.array(3)], str(tmp_path / "out"))
    assert [p.rsplit("/", 1)[1] for p in paths] == ["00.npy", "01.npy"]
    assert np.load(paths[1]) == 3
    assert json_value(np.array([1.0, np.nan, np.inf])) == [1.0, "nan", "inf"]


def expected(*arrays):
    return [Supplied(a, "--expected-output e.npz", f"{i:02d}") for i, a in enumerate(arrays)]


def test_compare_reports_first_index_and_errors():
    actual = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert compare([actual], expected(actual + 1e-6), atol=1e-5, rtol=0) == []
    (problem,) = compare([actual], expected(np.array([[1.0, 2.0], [3.5, 4.1]], np.float32)), atol=1e-5, rtol=1e-4)
    text = str(problem)
    assert text.startswith("[FAILED] result[0]: 2 of 4 elements differ; first at [1, 0]: got 3.0, expected 3.5")
    assert "max abs error 0.5" in text and "max rel error 0.142857" in text


def test_compare_counts_dtypes_and_integers():
    ints = np.array([1, 2, 3], np.int64)
    assert "got 3xi64, expected 3xi32" in str(compare([ints], expected(ints.astype(np.int32)), 1, 1)[0])
    assert "first at [2]" in str(compare([ints], expected(np.array([1, 2, 4])), 10, 10)[0])
    assert "2 result(s), but 1 expected output(s)" in str(compare([ints, ints], expected(ints), 0, 0)[0])
    nan = np.array([np.nan], np.float32)
    assert compare([nan], expected(nan), 0, 0) == []
