"""Symbolic sizes in one canonical form (relax/op/canonical.py), and what binds them.

R.concat((x, x)) on x of shape (n,) inferred (0 + n + n,); the add after it built a
kernel whose buffers were all (0 + n + n,), so nothing bound n ("cannot bind symbolic
size 'n'"). Shapes written n * 2 and 2 * n did not compare equal, so R.add of the two
inferred no shape and was never legalized.
"""

from relax.ir import expr as rx
from relax.ir import tir
from relax.ir.struct_info import TensorStructInfo
from relax.op.canonical import canonical_dim, canonical_struct_info, same_size
from relax.op.shape import same_dim
from relax.script import parse
from relax.transform.legalize_ops import LegalizeOps
from relax.transform.normalize import Normalize

N = tir.Var("n", "int64")


def _int(value: int) -> tir.IntImm:
    return tir.IntImm("int64", value)


def _main(text: str):
    mod = Normalize().run(parse(text, "canonical.relax"))
    return mod, mod["main"]


def test_sizes_take_tvm_canonical_form():
    twice = canonical_dim(tir.Add(tir.Add(_int(0), N), N))
    assert isinstance(twice, tir.Mul) and twice.a is N and twice.b.value == 2
    assert canonical_dim(N) is N
    info = TensorStructInfo(rx.ShapeExpr((tir.Add(N, N), _int(4))), "float32")
    assert canonical_struct_info(info).script().strip() == 'R.Tensor((n * 2, 4), dtype="float32")'


def test_n_times_2_and_2_times_n_are_one_size():
    assert same_size(tir.Mul(N, _int(2)), tir.Mul(_int(2), N))
    assert same_dim(tir.Mul(N, _int(2)), tir.Add(N, N)) is True
    assert not same_size(tir.Mul(N, _int(2)), tir.Add(N, _int(2)))
    assert same_dim(tir.Mul(N, _int(2)), tir.Add(N, _int(2))) is None  # may agree for n = 2


def test_concat_infers_n_times_2_and_add_passes_n():
    mod, main = _main('''
from tvm.script import relax as R

@R.function
def main(x: R.Tensor(("n",), "float32")):
    y = R.concat((x, x))
    z = R.add(y, y)
    return z
''')
    assert main.ret_struct_info.script().strip() == 'R.Tensor((n * 2,), dtype="float32")'
    legalized = LegalizeOps().run(mod)
    call = legalized["main"].body.blocks[0].bindings[1].value
    assert len(call.args) == 3 and [v.name for v in call.args[2].values] == ["n"]  # tir_vars
    kernel = legalized[call.args[0].name_hint]
    assert [p.dtype for p in kernel.params] == ["handle", "handle", "handle", "int64"]


def test_add_of_n_times_2_and_2_times_n_is_legalized():
    mod, main = _main('''
from tvm.script import relax as R
from tvm.script import tir as T

@R.function
def main(x: R.Tensor(("n",), "float32"), a: R.Tensor(("n * 2",), "float32"), b: R.Tensor(("2 * n",), "float32")):
    n = T.int64()
    z = R.add(a, b)
    return z
''')
    assert main.ret_struct_info.script().strip() == 'R.Tensor((n * 2,), dtype="float32")'
    call = LegalizeOps().run(mod)["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_tir"


def test_operators_fold_as_the_parser_does():
    """x * 1, x + 0 and constant arithmetic fold when built (as TVM's operators and the
    parser fold them), so a kernel printed and read back is the one built in memory."""
    assert N * 1 is N and 1 * N is N and N + 0 is N and N - 0 is N
    six = _int(2) * _int(3)
    assert isinstance(six, tir.IntImm) and six.value == 6
    assert isinstance(N * 2, tir.Mul)
    assert type(tir.FloatImm("float32", 0).value) is float
