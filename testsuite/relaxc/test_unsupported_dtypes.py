"""Relax tensors of a data type the runtime cannot hold are refused where they are
written (driver/lowering_check.check_scalar_tensors, legalize-ops, op inference).

TVM spells more element types than numpy has: a parameter of "handle" made LLVM code
generation fail, one of "float8_e4m3fn" raised a ValueError in ir/dtype.py when an
operator's inference read it: relaxc exited 70 (issue 16).
"""

from __future__ import annotations

from relaxc.cli import main

SUPPORTED = "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64"
HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"


def _compile(tmp_path, capsys, lines: list[str]) -> list[str]:
    source = tmp_path / "dtypes.relax"
    source.write_text(HEADER + "".join(f"    {line}\n" for line in lines))
    assert main([str(source), "-o", str(tmp_path / "dtypes.vmx")]) == 1
    err = capsys.readouterr().err.replace(f"{tmp_path}/", "")
    return [line for line in err.splitlines() if ": error: " in line or ": note: " in line]


def test_unsupported_element_types_are_refused_at_the_annotation(tmp_path, capsys):
    found = _compile(tmp_path, capsys, [
        "@R.function",
        'def main(x: R.Tensor((4,), "handle"), y: R.Tensor((4,), "bfloat16"), n: R.Prim("int4")):',
        "    return x",
    ])
    assert found == [
        f"dtypes.relax:7:17: error: relax tensors cannot have the data type 'handle'; the supported ones are {SUPPORTED}",
        f"dtypes.relax:7:46: error: relax tensors cannot have the data type 'bfloat16'; the supported ones are {SUPPORTED}",
        f"dtypes.relax:7:77: error: R.Prim values cannot have the data type 'int4'; the supported ones are {SUPPORTED}",
    ]


def test_an_operator_on_a_type_ir_dtype_does_not_know_is_an_error_at_the_call(tmp_path, capsys):
    found = _compile(tmp_path, capsys, [
        "@R.function",
        'def main(x: R.Tensor((3, 4), "float8_e4m3fn")):',
        "    m = R.mean(x, axis=[1])",
        "    return m",
    ])
    assert found == [
        f"dtypes.relax:8:13: error: R.mean cannot compute on the data type 'float8_e4m3fn' of 'x';"
        f" the supported ones are {SUPPORTED}",
        "dtypes.relax:7:17: note: 'x' is declared here",
    ]


def test_an_attribute_asking_for_such_a_tensor_is_an_error_at_the_call(tmp_path, capsys):
    found = _compile(tmp_path, capsys, [
        "@R.function",
        "def main():",
        '    z = R.zeros(R.shape([2]), "handle")',
        "    return z",
    ])
    assert found == [f"dtypes.relax:8:13: error: R.zeros would give a tensor of the data type 'handle', which relax"
                     f" tensors cannot have; the supported ones are {SUPPORTED}"]
