"""Signature records: written by the code generator, read back by the runtime from .vmo files."""

from relax.build import build
from relax.script import parse
from relax.vm import Executable
from relax.vm.bytecode.signature import evaluate_dim, format_signature, function_signatures

DYNAMIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), s: R.Shape(["n", 2]), p: R.Prim("int64"),
             t: R.Tuple(R.Tensor((2,), dtype="int32"), R.Tensor(dtype="float32", ndim=1))) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        return x
'''


def test_records_survive_the_vmo_format():
    exe = build(parse(DYNAMIC))
    again = Executable.load_from_bytes(exe.save_to_bytes())
    record = function_signatures(again)["main"]
    assert [p["name"] for p in record["params"]] == ["x", "s", "p", "t"]
    assert record["params"][0]["info"] == {"kind": "tensor", "dtype": "float32", "shape": ["n", 4]}
    assert record["params"][1]["info"] == {"kind": "shape", "values": ["n", 2]}
    assert record["params"][2]["info"] == {"kind": "prim", "dtype": "int64"}
    assert format_signature(record) == (
        'main(x: R.Tensor((n, 4), dtype="float32"), s: R.Shape([n, 2]), p: R.Prim("int64"), '
        't: R.Tuple(R.Tensor((2,), dtype="int32"), R.Tensor(dtype="float32", ndim=1))) '
        '-> R.Tensor((n, 4), dtype="float32")')


def test_record_constants_follow_the_code_constants():
    exe = build(parse(DYNAMIC))
    assert isinstance(exe.constants[-1], str) and exe.constants[-1].startswith("relax.signature/1 ")


def test_dimension_expressions():
    assert evaluate_dim(["mul", "n", ["add", "m", 1]], {"n": 3, "m": 4}) == 15
    assert evaluate_dim(["floordiv", "n", 0], {"n": 3}) is None
    assert evaluate_dim("k", {"n": 3}) is None


def test_malformed_records_are_not_used():
    # A record whose parameter had lost its "name" made relaxrun exit 70 with KeyError: 'name' (issue 16).
    class Exe:
        constants = []

    good = '{"name":"f","params":[{"info":{"kind":"tensor","dtype":"float32","shape":[2,"n"]},"name":"x"}]}'
    bad = ['{"name":"g","params":[{"info":{"kind":"object"},"":"x"}]}',
           '{"name":"g","params":{}}',
           '{"name":"g","params":[{"name":"x","info":{"kind":"tensor","shape":[' + "9" * 5000 + ']}}]}',
           '{"name":"g","params":[{"name":"x","info":{"kind":"tensor","shape":[1e400]}}]}',
           '{"name":"g","params":[{"name":"x","info":{"kind":"tensor","shape":[' + '["add",' * 100 + '1' + ',1]' * 100
           + ']}}]}',
           '{"name":"g","params":[],"ret":' + '{"kind":"tuple","fields":[' * 100 + ']}' * 100 + '}',
           '{"name":"g","params":[{"name":"x","info":{"kind":"prim","dtype":7}}]}',
           '{"name":"g","params":[{"name":"x","info":{"kind":"tensor","ndim":true}}]}',
           '[' * 50000 + ']' * 50000]
    Exe.constants = ["relax.signature/1 " + text for text in [good, *bad]]
    assert list(function_signatures(Exe)) == ["f"]
