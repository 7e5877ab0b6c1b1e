"""relaxrun --input syntax: files, npz, names, inline values, splats, zeros, scalars."""

import re

import numpy as np
import pytest

from relax.diagnostics import UserError
from relax.driver.run_inputs import INLINE_LIMIT, materialize, parse_dtype, parse_value, type_spec


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
    with pytest.raises(UserError, match="holds Python objects, which would be read with pickle: refused"):
        parse_value(str(tmp_path / "obj.npy"))


def test_type_spec():
    assert type_spec(np.zeros((2, 3), np.float32)) == "2x3xf32"
    assert type_spec(np.zeros((), np.bool_)) == "i1"
    assert type_spec(np.zeros((4,), np.uint8)) == "4xu8"


def test_splats_and_zeros_take_no_memory_until_materialized():
    (item,) = parse_value("100000x100000x100000xf32=1")  # 4 PB: a MemoryError before (issue 16)
    assert item.value.shape == (100000,) * 3 and not item.value.flags.writeable
    with pytest.raises(UserError, match=f"takes 4000000000000000 bytes; an inline value takes at most {INLINE_LIMIT}"):
        materialize(item)
    small = materialize(parse_value("2x2xi64=7")[0])
    assert small.flags.writeable and small.flags.c_contiguous and small.tolist() == [[7, 7], [7, 7]]
    with pytest.raises(UserError, match="100000000000000000000 elements of float32 do not fit in memory"):
        parse_value("100000x100000x100000x100000xf32")
    with pytest.raises(UserError, match=r"3 values for shape 100000x100000x100000xf32 \(1000000000000000 elements\)"):
        parse_value("100000x100000x100000xf32=1,2,3")


def _npy_header(shape, descr="<f4") -> bytes:
    import io
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": descr, "fortran_order": False, "shape": shape})
    return stream.getvalue()


def test_npy_header_promising_more_than_the_file_holds(tmp_path):
    # numpy allocates what the header promises before reading: a MemoryError before (issue 16).
    (tmp_path / "big.npy").write_bytes(_npy_header((100000, 100000, 1000)) + bytes(16))
    with pytest.raises(UserError, match=r"'.*big.npy': the .npy header promises a 100000x100000x1000 float32 array "
                                        r"\(40000000000000 bytes of data\), but the file holds 16 bytes after the header"):
        parse_value(str(tmp_path / "big.npy"))
    import zipfile
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("x.npy", _npy_header((1 << 40,)) + bytes(8))
    with pytest.raises(UserError, match=r"big.npz' \(array 'x'\): the .npy header promises a 1099511627776 float32"):
        parse_value(str(tmp_path / "big.npz"))
    with zipfile.ZipFile(tmp_path / "text.npz", "w") as archive:
        archive.writestr("notes.txt", "not an array")
    with pytest.raises(UserError, match=r"text.npz' \(array 'notes.txt'\): not a numpy"):
        parse_value(str(tmp_path / "text.npz"))


def _npy_text(header: str, data: bytes = bytes(8), version: bytes = b"\x01\x00") -> bytes:
    text = header.encode("latin1") + b"\n"
    return b"\x93NUMPY" + version + len(text).to_bytes(2, "little") + text + data


@pytest.mark.parametrize("header, message", [
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", "not a Python dictionary literal"),  # TokenError before
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1" * 5000 + ",), }", "not a Python dictionary literal"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (0x" + "f" * 5000 + ",), }", "shape is not a tuple of sizes"),
    ("-" * 3000 + "1", "not a Python dictionary literal"),
    ("{[1]: 2}", "not a Python dictionary literal"),
    ("[1, 2]", "not a dictionary of 'descr', 'fortran_order' and 'shape'"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "shape is not a tuple of sizes"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,), }", "shape is not a tuple of sizes"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (1,) * 65, }", "not a Python dictionary literal"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': " + repr((1,) * 65) + ", }", "65 dimensions; arrays have "
                                                                                      "at most 64"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1 << 62, 4), }", "not a Python dictionary literal"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }", "too large for an array"),
    ("{'descr': '<f4', 'fortran_order': 'yes', 'shape': (2,), }", "fortran_order is not True or False"),
    ("{'descr': 'garbage', 'fortran_order': False, 'shape': (2,), }", "descr 'garbage' is not a numpy element type"),
    ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", "structured arrays cannot be passed"),
    ("{'descr': '(2,)<f4', 'fortran_order': False, 'shape': (1,), }", "dtype '('<f4', (2,))' cannot be passed"),
    ("{'descr': '|S0', 'fortran_order': False, 'shape': (1,), }", "dtype '|S0' cannot be passed"),
])
def test_every_malformed_npy_header_is_a_user_error_naming_the_file(tmp_path, header, message):
    # A header cut short was an internal error (TokenError from numpy's header parser).
    (tmp_path / "bad.npy").write_bytes(_npy_text(header))
    with pytest.raises(UserError, match=r"^'.*bad.npy': .*" + re.escape(message)):
        parse_value(str(tmp_path / "bad.npy"))


@pytest.mark.parametrize("data, message", [
    (b"", "the file is empty"),
    (b"\x93NUMPY", "format version missing is not supported"),
    (b"\x93NUMPY\x09\x09", "format version 9.9 is not supported (1.0, 2.0 and 3.0 are)"),
    (b"\x93NUMPY\x01\x00\x01", "the .npy header is cut short (the file holds 9 bytes)"),
    (b"\x93NUMPY\x01\x00\xff\x00{", "cut short: it takes 255 bytes, the file holds 1 after the header length"),
    (b"\x93NUMPY\x02\x00\xff\xff\x00\x00", "the .npy header takes 65535 bytes; at most 10000 are read"),
])
def test_npy_preamble_errors(tmp_path, data, message):
    (tmp_path / "bad.npy").write_bytes(data)
    with pytest.raises(UserError, match=r"^'.*bad.npy': .*" + re.escape(message)):
        parse_value(str(tmp_path / "bad.npy"))


def test_fortran_order_and_zero_sized_npy_files(tmp_path):
    x = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(tmp_path / "f.npy", x)
    np.save(tmp_path / "z.npy", np.zeros((0, 3), np.int8))
    value = parse_value(str(tmp_path / "f.npy"))[0].value
    assert value.flags.c_contiguous and value.flags.writeable and value.tolist() == x.tolist()
    assert parse_value(str(tmp_path / "z.npy"))[0].value.shape == (0, 3)


def test_empty_npz_archives_are_named_as_such(tmp_path):
    # An .npz of no arrays was refused with "the magic string is not correct" (issue 16).
    np.savez(tmp_path / "none.npz")
    with pytest.raises(UserError, match=r"'.*none.npz': the .npz archive holds no arrays"):
        parse_value(f"@{tmp_path / 'none.npz'}")
    (tmp_path / "zero.npz").write_bytes(b"")
    with pytest.raises(UserError, match=r"'.*zero.npz': the file is empty \(not a numpy .npz archive\)"):
        parse_value(f"@{tmp_path / 'zero.npz'}")


@pytest.mark.parametrize("spec, message", [
    # A 200-dim spec was refused with "1 elements do not fit in memory" (issue 16).
    ("1x" * 200 + "f32", "--input " + "1x" * 200 + "f32: 200 dimensions; arrays have at most 64"),
    ("9" * 5000 + "xf32", "size of 5000 digits is larger than 9223372036854775807"),  # ValueError before
    ("99999999999999999999xf32=1", "size 99999999999999999999 is larger than 9223372036854775807"),
    ("0x4611686018427387904x4xf32", "18446744073709551616 elements of float32 do not fit in memory (numpy counts"),
])
def test_inline_shape_limits(spec, message):
    with pytest.raises(UserError, match=re.escape(message)):
        parse_value(spec)


def test_big_endian_arrays_are_read_in_native_order(tmp_path):
    # They were refused with "element type float32, expected float32" (issue 16).
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "be.npy", x.astype(">f4"))
    np.savez(tmp_path / "be.npz", y=x.astype(">i8"))
    value = parse_value(str(tmp_path / "be.npy"))[0].value
    assert value.dtype == np.float32 and value.dtype.isnative
    np.testing.assert_array_equal(value, x)
    (named,) = parse_value(f"@{tmp_path / 'be.npz'}")
    assert named.value.dtype == np.int64 and named.value.dtype.isnative and named.value.tolist() == x.tolist()
