"""relaxrun --input syntax: files, npz, names, inline values, splats, zeros, scalars."""

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.driver.run_inputs import parse_dtype, parse_value, type_spec


def test_inline_values_and_short_and_long_dtypes():
    (item,) = parse_value("2x3xf32=1,2,3,4,5,6")
    np.testing.assert_array_equal(item.value, np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    assert item.value.dtype == np.float32 and item.name is None and item.origin == "--input 2x3xf32=1,2,3,4,5,6"
    (same,) = parse_value("2x3xfloat32=[[1,2,3],[4,5,6]]")
    np.testing.assert_array_equal(same.value, item.value)


def test_splat_zeros_scalar_bool():
    assert parse_value("2x2xi64=7")[0].value.tolist() == [[7, 7], [7, 7]]
    zeros = parse_value("3xint8")[0].value
    assert zeros.dtype == np.int8 and zeros.tolist() == [0, 0, 0]
    scalar = parse_value("f32=3.5")[0].value
    assert scalar.shape == () and scalar.dtype == np.float32 and scalar == 3.5
    assert parse_value("2xi1=true,0")[0].value.tolist() == [True, False]
    assert parse_dtype("bool") == np.bool_ and parse_dtype("u16") == np.uint16


def test_files_and_names(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "in.npz", a=x, b=np.int64(4))
    for spec in (str(tmp_path / "x.npy"), "@" + str(tmp_path / "x.npy")):
        np.testing.assert_array_equal(parse_value(spec)[0].value, x)
    named = parse_value(f"w=@{tmp_path / 'x.npy'}")[0]
    assert named.name == "w"
    both = parse_value(f"@{tmp_path / 'in.npz'}")
    assert [(i.name, i.value.shape) for i in both] == [("a", (2, 3)), ("b", ())]
    assert both[0].origin.endswith("(array 'a')")
    assert parse_value("k=i32=3")[0].value.dtype == np.int32


@pytest.mark.parametrize("spec, message", [
    ("2x3xf32=1,2", "2 values for shape 2x3xf32 (6 elements)"),
    ("2xi8=300", "300 is out of range for int8"),
    ("2xf32=a,b", "'a' is not a float32 value"),
    ("missing.npy", "'missing.npy': no such file or directory"),
    ("a-b=1", "is neither a parameter name nor a type"),
])
def test_errors(spec, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_value(spec)


def test_not_numpy_and_no_pickle(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"hello")
    with pytest.raises(UserError, match="not a numpy .npy or .npz file"):
        parse_value(str(tmp_path / "bad.npy"))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UserError, match="not a numpy"):
        parse_value(str(tmp_path / "obj.npy"))


def test_type_spec():
    assert type_spec(np.zeros((2, 3), np.float32)) == "2x3xf32"
    assert type_spec(np.zeros((), np.bool_)) == "i1"
    assert type_spec(np.zeros((4,), np.uint8)) == "4xu8"
