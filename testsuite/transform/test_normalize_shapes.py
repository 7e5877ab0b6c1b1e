"""Normalize and shapes known only by rank, or only inside a function.

`R.reshape(x, R.tensor_to_shape(s))` gave y the struct info R.Tensor(lv) over the
shape variable the normalizer bound; main's inferred signature then named `lv`, out
of scope ("undefined variable" reading the .vms back), and no kernel could be built
for y or for what used it. A size a match_cast introduces leaked into the signature
the same way.
"""

from relax.ir import expr as rx
from relax.script import parse, script
from relax.transform.normalize import Normalize


def _main(text: str):
    return Normalize().run(parse(text, "shapes.relax"))["main"]


def test_a_shape_of_known_rank_gets_fresh_sizes_through_a_match_cast():
    main = _main('''
from tvm.script import relax as R

@R.function
def main(x: R.Tensor((6,), "float32"), s: R.Tensor((2,), "int64")):
    y = R.reshape(x, R.tensor_to_shape(s))
    return y
''')
    bindings = main.body.blocks[0].bindings
    cast = bindings[1]
    assert isinstance(cast, rx.MatchCast) and cast.value is bindings[0].var
    assert cast.struct_info.script().strip() == "R.Shape([lv_0, lv_1])"
    assert bindings[2].var.struct_info.script().strip() == 'R.Tensor((lv_0, lv_1), dtype="float32")'
    assert main.ret_struct_info.script().strip() == 'R.Tensor(dtype="float32", ndim=2)'
    parse(script(main), "printed.relax")  # the signature names nothing out of scope


def test_sizes_a_match_cast_defines_stay_out_of_the_signature():
    main = _main('''
from tvm.script import relax as R
from tvm.script import tir as T

@R.function
def main(x: R.Tensor(("n",), "float32"), s: R.Shape(ndim=2)):
    n = T.int64()
    m = T.int64()
    k = T.int64()
    t = R.match_cast(s, R.Shape([m, k]))
    y = R.reshape(x, t)
    return (x, y)
''')
    assert main.ret_struct_info.script().strip() == \
        'R.Tuple(R.Tensor((n,), dtype="float32"), R.Tensor(dtype="float32", ndim=2))'
