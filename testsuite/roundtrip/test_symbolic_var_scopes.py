"""Symbolic variables stay their function's own, with their dtype, through print -> parse.

A PrimFunc and a Relax function that both use `n` (int32 in the PrimFunc, int64 in the
Relax signature) print one module-level TypeVar `n` for the int64 one only; the
PrimFunc declares its int32 `n` in its body, so parsing the print gives the same module.
Before, the int32 `n` printed as the TypeVar too and came back int64; so did an int32
`n` of a Relax signature (`R.Prim(value=n)`), which now is declared in its body too.
"""

from relax.ir import tir
from relax.ir.structural import assert_structural_equal
from relax.script import parse, script

SOURCE = '''
from tvm.script import ir as I, tirx as T, relax as R

@I.ir_module
class Module:
    @T.prim_func
    def add_one(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,))
        B = T.match_buffer(b, (n,))
        for i in range(n):
            B[i] = A[i] + T.float32(1)

    @T.prim_func
    def wide(a: T.handle):
        n, m = T.int32(), T.int8()
        A = T.match_buffer(a, (n, m))
        A[0, 0] = T.float32(0)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        cls = Module
        y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
        return y

    @R.function
    def count(x: R.Prim(value="n")) -> R.Prim(value="n"):
        n = T.int32()
        return x
'''


def _size_dtypes(func) -> list[str]:
    return [dim.dtype for _, buffer in func.buffer_map for dim in buffer.shape if isinstance(dim, tir.Var)]


def test_shared_symbolic_names_keep_their_functions_and_dtypes():
    first = parse(SOURCE, "shared.relax")
    text = script(first)
    assert 'n = TypeVar("n")' in text and "m = TypeVar" not in text
    assert "        n = T.int32()\n" in text and "        n, m = T.int32(), T.int8()\n" in text
    second = parse(text, "printed.relax")
    assert _size_dtypes(second["add_one"]) == ["int32", "int32"]
    assert _size_dtypes(second["wide"]) == ["int32", "int8"]
    assert second["count"].params[0].struct_info.value.dtype == "int32"
    assert_structural_equal(second, first)
    assert script(second) == text
