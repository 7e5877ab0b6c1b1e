"""Relax statements: bindings, dataflow blocks, match_cast, if/else, expression statements."""

from __future__ import annotations

from parse_helpers import bindings, function

from relax import ir


def test_dataflow_outputs_are_vars_and_locals_are_dataflow_vars():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            a = R.add(x, x)
            with R.dataflow():
                b: R.Tensor((2,), dtype="float32") = R.multiply(a, a)
                c = R.exp(b)
                R.output(c)
            return c
    ''')
    plain, dataflow = func.body.blocks
    assert type(plain) is ir.BindingBlock and type(dataflow) is ir.DataflowBlock
    b, c = dataflow.bindings
    assert type(b.var) is ir.DataflowVar and b.var.struct_info.dtype == "float32"
    assert type(c.var) is ir.Var and c.var.struct_info is None
    assert func.body.body is c.var
    assert plain.bindings[0].var.struct_info is None


def test_rebinding_a_name_makes_a_new_var():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.add(x, x)
            y = R.add(y, x)
            return y
    ''')
    first, second = bindings(func)
    assert first.var is not second.var and second.value.args[0] is first.var
    assert func.body.body is second.var


def test_match_cast_binding():
    func = function('''
        @R.function
        def main(x: R.Tensor(ndim=2, dtype="float32")):
            n = T.int64()
            y: R.Tensor((n, 4), dtype="float32") = R.match_cast(x, R.Tensor((n, 4), dtype="float32"))
            z = R.match_cast(y, R.Tensor(("n", 4), "float32"))
            return z
    ''')
    y, z = bindings(func)
    assert isinstance(y, ir.MatchCast) and y.value is func.params[0]
    assert y.struct_info.shape_values[0] is z.struct_info.shape_values[0]
    assert z.var.struct_info is z.struct_info


def test_if_else_binds_the_last_assigned_name():
    func = function('''
        @R.function
        def main(c: R.Tensor((), "bool"), x: R.Tensor((2,), "float32")):
            if c:
                y_then = R.add(x, x)
                y: R.Tensor((2,), dtype="float32") = y_then
            else:
                y: R.Tensor((2,), dtype="float32") = R.multiply(x, x)
            z = R.exp(y)
            return z
    ''')
    if_binding, exp = bindings(func)
    value = if_binding.value
    assert isinstance(value, ir.If) and value.cond is func.params[0]
    then, other = value.true_branch, value.false_branch
    assert isinstance(then, ir.SeqExpr) and then.body is then.blocks[0].bindings[0].var
    # As in TVM 0.27, a computed branch result is bound to `<name>_else` first.
    (computed,) = other.blocks[0].bindings
    assert computed.var.name_hint == "y_else" and computed.value.op.name == "relax.multiply"
    assert other.body is computed.var and computed.var.struct_info.dtype == "float32"
    assert if_binding.var.name_hint == "y" and if_binding.var.struct_info.dtype == "float32"
    assert exp.value.args[0] is if_binding.var


def test_nested_if_in_else_branch():
    func = function('''
        @R.function
        def main(c: R.Tensor((), "bool"), d: R.Tensor((), "bool"), x: R.Tensor((2,), "float32")):
            if c:
                y = x
            else:
                if d:
                    y = R.add(x, x)
                else:
                    y = R.negative(x)
            return y
    ''')
    (binding,) = bindings(func)
    then, other = binding.value.true_branch, binding.value.false_branch
    assert then.blocks == () and then.body is func.params[2]
    (nested,) = other.blocks[0].bindings
    assert nested.var.name_hint == "y_else" and isinstance(nested.value, ir.If)
    assert nested.value.false_branch.body.name_hint == "y_else"


def test_expression_statements_bind_underscore():
    func = function('''
        @R.function(pure=False)
        def main(x: R.Tensor((2,), "float32")):
            R.print(x, format=R.str("x = {}"))
            R.assert_op(R.const(True, "bool"), x, format="checked {}")
            R.call_packed("my.void", x, ty_args=(R.Tuple,))
            return x
    ''')
    printed, asserted, packed = bindings(func)
    assert printed.var.name_hint == "_" and printed.value.op.name == "relax.print"
    assert [type(a) for a in printed.value.args] == [ir.StringImm, ir.Var]
    assert printed.value.args[0].value == "x = {}"
    assert asserted.value.op.name == "relax.assert_op"
    assert asserted.value.args[1].value == "checked {}" and asserted.value.args[2] is func.params[0]
    assert isinstance(packed.value.op, ir.ExternFunc) and packed.value.sinfo_args == (ir.TupleStructInfo(),) or \
        isinstance(packed.value.sinfo_args[0], ir.TupleStructInfo)


def test_tuples_and_tuple_get_item():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            t = (x, x)
            u = x, R.tuple()
            a = t[1]
            return (a, u)
    ''')
    t, u, a = bindings(func)
    assert isinstance(t.value, ir.Tuple) and len(t.value.fields) == 2
    assert isinstance(u.value.fields[1], ir.Tuple) and u.value.fields[1].fields == ()
    assert isinstance(a.value, ir.TupleGetItem) and a.value.index == 1 and a.value.tuple_value is t.var
    assert isinstance(func.body.body, ir.Tuple)


def test_closure_call_and_prim_value_bindings():
    func = function('''
        @R.function
        def main(f: R.Callable((R.Tensor((2,), "float32"),), R.Tensor((2,), "float32")), x: R.Tensor((2,), "float32")):
            n = T.int64()
            y = f(x)
            p: T.int64 = 5
            q: R.Prim(value=n) = n
            s = n * 2
            return (y, p, q, s)
    ''')
    y, p, q, s = bindings(func)
    assert y.value.op is func.params[0]
    assert isinstance(p.value, ir.PrimValue) and p.value.value.dtype == "int64" and p.value.value.value == 5
    assert p.var.struct_info.dtype == "int64"
    assert q.var.struct_info.value is q.value.value
    assert isinstance(s.value, ir.PrimValue) and s.value.value.a is q.value.value


def test_branches_may_end_with_calls_made_for_their_effect():
    func = function('''
        @R.function(pure=False)
        def main(c: R.Tensor((), "bool"), x: R.Tensor((), "int32")):
            if c:
                R.print(x, format="yes {}")
            else:
                R.print(x, format="no {}")
            return x
    ''')
    (binding,) = bindings(func)
    assert binding.var.name_hint == "_" and isinstance(binding.value, ir.If)
    then = binding.value.true_branch
    assert then.blocks[0].bindings[0].var.name_hint == "__then"
    assert then.blocks[0].bindings[0].value.op.name == "relax.print"


def test_symbolic_declarations_in_tuples_and_blocks_and_signature_order():
    func = function('''
        @R.function
        def main(x: R.Tensor(("m + 1",), "float32"), y: R.Tensor(("m",), "float32")):
            n, k = T.int64(), T.int64()
            a = R.match_cast(x, R.Tensor((n, k), "float32"))
            with R.dataflow():
                j = T.int64()
                b = R.match_cast(y, R.Tensor((j,), "float32"))
                R.output(b)
            c = R.match_cast(b, R.Tensor((j,), "float32"))
            return c
    ''')
    plus_one = func.params[0].struct_info.shape_values[0]
    (m,) = func.params[1].struct_info.shape_values
    assert plus_one.a is m
    a, c = func.body.blocks[0].bindings[0], func.body.blocks[2].bindings[0]
    assert [v.name for v in a.struct_info.shape_values] == ["n", "k"]
    (b,) = func.body.blocks[1].bindings
    assert c.struct_info.shape_values[0] is b.struct_info.shape_values[0]


def test_constructor_spellings_and_methods():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            t = R.tuple(x, x)
            a = R.TupleGetItem(t, 1)
            s = R.ShapeExpr((2, 1))
            h = a.astype("float16")
            return (s, h)
    ''')
    _, item, shape, cast = bindings(func)
    assert isinstance(item.value, ir.TupleGetItem) and item.value.index == 1
    assert isinstance(shape.value, ir.ShapeExpr) and len(shape.value.values) == 2
    assert cast.value.op.name == "relax.astype" and cast.value.attrs["dtype"] == "float16"
    assert cast.value.args == (item.var,)


def test_only_the_last_binding_of_an_output_name_leaves_the_dataflow_block():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            with R.dataflow():
                gv = R.add(x, x)
                y = R.add(gv, gv)
                gv = R.multiply(y, y)
                R.output(gv)
            return gv
    ''')
    first, y, last = func.body.blocks[0].bindings
    assert type(first.var) is ir.DataflowVar and type(y.var) is ir.DataflowVar
    assert type(last.var) is ir.Var and func.body.body is last.var
