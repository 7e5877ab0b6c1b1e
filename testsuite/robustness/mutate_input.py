"""Mutators for relaxrun's inputs: .npy and .npz files and inline `--input` specs.

INPUT_MUTATORS is the table. Each takes one array (the value of the parameter it
damages) and rng, and returns what stands for it on the command line (a spec, or a
file name with the file's bytes) and a detail. The .npy writer here builds headers
by hand, so that a header may lie: about the shape (more data than the file holds,
negative dims), the element type (pickled objects, big-endian, complex), its own
length or version. The other parameters get valid files, bound by name or by position.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from mutate_bytes import BYTE_MUTATORS

SHORT_TYPES = {"float": "f", "int": "i", "uint": "u", "bool": "i1"}
HUGE_SHAPES = ((10 ** 6, 10 ** 6), (1 << 40,), (100000, 100000, 100000), (1 << 62, 4), (1 << 63,), (2, 1 << 61))


def npy_bytes(header: str, data: bytes, version: tuple[int, int] = (1, 0), length: int | None = None) -> bytes:
    """A .npy file with this header text, written as numpy writes one unless told otherwise."""
    text = header.encode("latin1")
    width = 2 if version[0] == 1 else 4
    padding = -(10 + width - 2 + len(text) + 1) % 64
    text += b" " * padding + b"\n"
    size = len(text) if length is None else length
    return b"\x93NUMPY" + bytes(version) + size.to_bytes(width, "little") + text + data


def _header(descr: str, shape, fortran: bool = False) -> str:
    return f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {tuple(shape)!r}, }}"


def _descr(array: np.ndarray) -> str:
    return np.lib.format.dtype_to_descr(array.dtype)


def type_spec(array: np.ndarray) -> str:
    kind = array.dtype.name
    short = "i1" if kind == "bool" else next((s + kind[len(k):] for k, s in SHORT_TYPES.items()
                                             if kind.startswith(k) and k != "bool"), kind)
    return "".join(f"{d}x" for d in array.shape) + short


# ---- .npy files ------------------------------------------------------------------------------

def lying_shape(array: np.ndarray, rng):
    shape = rng.choice(HUGE_SHAPES + ((array.size + 1,), (-1,), (-5, 2), ("a",), (1.5,), ((2,),), (1,) * 100))
    return "file", npy_bytes(_header(_descr(array), shape), array.tobytes()), f"shape={str(shape)[:40]}"


def odd_descr(array: np.ndarray, rng):
    descr = rng.choice(("|O", ">f4", ">i4", "<c8", "<U4", "|V8", "<M8[s]", "<f2", "<f8", "|b1", "garbage", "<f4x",
                        "<i16", "|S0", [("a", "<f4")]))
    return "file", npy_bytes(_header(descr, array.shape), array.tobytes()), f"descr={descr}"


def bad_header(array: np.ndarray, rng):
    good = _header(_descr(array), array.shape)
    choice = rng.choice(("fortran", "not-dict", "missing-key", "extra-key", "syntax", "call", "length", "version",
                         "magic", "cut-header", "empty"))
    data = array.tobytes()
    texts = {"fortran": _header(_descr(array), array.shape, True).replace("True", rng.choice(("True", "'yes'", "2"))),
             "not-dict": "[1, 2, 3]", "missing-key": f"{{'descr': {_descr(array)!r}, }}",
             "extra-key": good[:-1] + "'extra': 1, }", "syntax": good[:-5], "call": "__import__('os').getcwd()"}
    if choice in texts:
        return "file", npy_bytes(texts[choice], data), f"header-{choice}"
    if choice == "length":
        return "file", npy_bytes(good, data, length=rng.choice((0, 1, 0xFFFF, 63))), "header-length"
    if choice == "version":
        version = rng.choice(((3, 0), (9, 9), (2, 0), (0, 1)))
        return "file", npy_bytes(good, data, version=version), f"version={version}"
    if choice == "magic":
        return "file", b"\x93NUMPX" + npy_bytes(good, data)[6:], "magic"
    whole = npy_bytes(good, data)
    return "file", whole[:rng.choice((0, 3, 8, 9, 20))] if choice == "cut-header" else b"", choice


def bad_data(array: np.ndarray, rng):
    whole = npy_bytes(_header(_descr(array), array.shape), array.tobytes())
    header_end = len(whole) - array.nbytes
    choice = rng.choice(("cut", "extra", "bytes"))
    if choice == "cut":
        return "file", whole[:rng.randrange(header_end, len(whole)) if array.nbytes else header_end - 1], "data-cut"
    if choice == "extra":
        return "file", whole + b"\0" * rng.choice((1, 4, 1024)), "data-extra"
    name = rng.choice(sorted(BYTE_MUTATORS))
    return "file", BYTE_MUTATORS[name](whole, rng), f"bytes-{name}"


def wrong_shape(array: np.ndarray, rng):
    shape = rng.choice(((), (0,), array.shape + (1,), array.shape[::-1], (array.size,), (1,) + array.shape,
                        tuple(d + 1 for d in array.shape), (1,) * 40))
    values = np.resize(array, shape) if np.prod(shape) else np.zeros(shape, array.dtype)
    return "file", _saved(values), f"shape={shape}"


def wrong_dtype(array: np.ndarray, rng):
    dtype = rng.choice(("float64", "float16", "int32", "int64", "int8", "uint8", "uint64", "bool", "complex64",
                        "datetime64[s]", "U3", [("a", "<f4")]))
    try:
        values = array.astype(dtype)
    except (TypeError, ValueError):
        values = np.zeros(array.shape, dtype)
    return "file", _saved(values), f"dtype={dtype}"


def _saved(values: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, values, allow_pickle=False)
    return buffer.getvalue()


# ---- .npz archives ---------------------------------------------------------------------------

def bad_npz(array: np.ndarray, rng):
    buffer = io.BytesIO()
    choice = rng.choice(("bytes", "bad-member", "object-array", "empty", "not-npy-member"))
    if choice == "object-array":
        np.savez(buffer, x=np.array([{"a": 1}, None], dtype=object))
    elif choice == "empty":
        np.savez(buffer)
    else:
        with zipfile.ZipFile(buffer, "w") as archive:
            member = {"bad-member": npy_bytes(_header(_descr(array), (1 << 40,)), array.tobytes()),
                      "not-npy-member": b"hello"}.get(choice, _saved(array))
            archive.writestr("x.npy", member)
    data = buffer.getvalue()
    if choice == "bytes":
        name = rng.choice(sorted(BYTE_MUTATORS))
        data = BYTE_MUTATORS[name](data, rng)
        choice = f"bytes-{name}"
    return "npz", data, choice


# ---- inline specs ----------------------------------------------------------------------------

def inline_spec(array: np.ndarray, rng):
    spec = type_spec(array)
    shape_part, _, dtype_part = spec.rpartition("x") if "x" in spec else ("", "", spec)
    shape_part = shape_part + "x" if shape_part else ""
    choice = rng.choice(("shape", "dtype", "values", "values", "spelling"))
    if choice == "shape":
        shape = rng.choice(("100000x100000x100000x", "0x", "1x" * 200, "-1x", "99999999999999999999x", "x", "2x3x"))
        return "spec", f"{shape}{dtype_part}" + rng.choice(("", "=1", "=0")), "shape"
    if choice == "dtype":
        dtype = rng.choice(("f33", "float64x4", "bf16", "i1", "u64", "f8", "", "float8_e4m3fn", "i128", "handle"))
        return "spec", f"{shape_part}{dtype}=1", f"dtype={dtype}"
    if choice == "values":
        values = rng.choice(("", "nan", "inf", "-inf", "1e999", "99999999999999999999", "0x7fffffffffffffff", "-1",
                             "1,2", ",,,", "[[1 2] [3 4]]", "true", "1" + ",1" * (array.size + 1), "a", "1e-400",
                             "0b101", "1_0", "100000", "2147483647"))
        return "spec", f"{spec}={values}", f"values={values[:20]}"
    spelling = rng.choice(("=", "@", "@missing.npy", "-", "nosuch=@missing.npy", "x=y=1", ".", "@.", "name=", "=1",
                           "1=@a.npy", f"{spec}={spec}=1"))
    return "spec", spelling, f"spelling={spelling!r}"


INPUT_MUTATORS = {
    "npy-lying-shape": lying_shape,
    "npy-descr": odd_descr,
    "npy-header": bad_header,
    "npy-data": bad_data,
    "npy-wrong-shape": wrong_shape,
    "npy-wrong-dtype": wrong_dtype,
    "npz": bad_npz,
    "inline": inline_spec,
}


def mutate_inputs(arrays: dict[str, np.ndarray], rng, option: str = "--input") -> tuple[list[str], dict, str]:
    """The `option` arguments for `arrays` (by parameter name, in order) with one of them
    damaged, or one too many or too few: (arguments, files to write, label)."""
    names = list(arrays)
    files = {f"{option[2:]}-{name}.npy": _saved(arrays[name]) for name in names}
    by_name = rng.random() < 0.5
    values = [f"{name}=@{option[2:]}-{name}.npy" if by_name else f"@{option[2:]}-{name}.npy" for name in names]
    if not names or rng.random() < 0.1:
        values = values[:-1] if values and rng.random() < 0.5 else values + ["f32=1"]
        return [part for value in values for part in (option, value)], files, "count"
    target = rng.randrange(len(names))
    mutator = rng.choice(sorted(INPUT_MUTATORS))
    how, payload, detail = INPUT_MUTATORS[mutator](arrays[names[target]], rng)
    if how == "spec":
        value = payload
    else:
        path = f"{option[2:]}-damaged.{how}"
        files[path], value = payload, f"@{path}"
    values[target] = f"{names[target]}={value}" if by_name and how != "npz" else value
    return [part for value in values for part in (option, value)], files, f"{mutator}({detail}):{names[target]}"
