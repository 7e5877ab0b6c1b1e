"""Relax functions: decorators, attributes, parameters, symbolic variables, module layout."""

from __future__ import annotations

from parse_helpers import bindings, function, module

from relax import ir
from relax.ir import tir
from relax.script import parse


def test_global_symbol_is_set_for_public_functions_only():
    mod = module('''
        @R.function(private=True)
        def helper(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

        @R.function
        def main(x: R.Tensor((2,), "float32")):
            R.func_attr({"num_input": 1, "flags": [1, 2], "nested": {"a": True}, "rate": 0.5})
            return x
    ''')
    assert list(mod.functions) == ["helper", "main"]
    assert mod["helper"].is_private and "global_symbol" not in mod["helper"].attrs
    main = mod["main"]
    assert main.attrs["global_symbol"] == "main"
    assert main.attrs["num_input"] == 1
    assert main.attrs["flags"] == (1, 2)
    assert isinstance(main.attrs["nested"], ir.FrozenDict) and main.attrs["nested"]["a"] is True
    assert main.attrs["rate"] == 0.5
    assert main.ret_struct_info is None


def test_purity_and_return_struct_info():
    func = function('''
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
            return x
    ''')
    assert func.is_pure is False
    ret = func.ret_struct_info
    assert isinstance(ret, ir.TensorStructInfo) and ret.dtype == "float32"
    assert [(d.dtype, d.value) for d in ret.shape_values] == [("int64", 2), ("int64", 3)]
    assert func.body.body is func.params[0]


def test_forward_references_share_one_global_var():
    mod = module('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            cls = Module
            a = cls.helper(x)
            b = Module.helper(a)
            return b

        @R.function
        def helper(x: R.Tensor((2,), "float32")):
            return x
    ''')
    first, second = bindings(mod["main"])
    assert isinstance(first.value.op, ir.GlobalVar) and first.value.op.name_hint == "helper"
    assert first.value.op is second.value.op
    assert second.value.args[0] is first.var


def test_symbolic_variables_from_body_prelude_are_shared_with_params():
    func = function('''
        @R.function
        def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
            n = T.int64()
            y: R.Tensor((n * 2, 4), dtype="float32") = R.concat((x, x), axis=0)
            return y
    ''')
    n = func.params[0].struct_info.shape_values[0]
    assert isinstance(n, tir.Var) and n.name == "n" and n.dtype == "int64"
    assert func.ret_struct_info.shape_values[0] is n
    doubled = bindings(func)[0].var.struct_info.shape_values[0]
    assert isinstance(doubled, tir.Mul) and doubled.a is n


def test_string_dims_define_variables_at_first_use():
    func = function('''
        @R.function
        def main(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(("m",), "float32")) -> R.Shape(["n * m"]):
            return R.shape_of(x)
    ''')
    n, m = func.params[0].struct_info.shape_values
    assert func.params[1].struct_info.shape_values[0] is m
    product = func.ret_struct_info.values[0]
    assert isinstance(product, tir.Mul) and product.a is n and product.b is m


def test_module_level_symbolic_names_are_per_function():
    mod = parse('''
from typing import TypeVar
n = TypeVar("n")
m = T.int64()
@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((n, m), "float32")):
        return x

    @R.function
    def g(x: R.Tensor((n,), "float32")):
        return x
''')
    n_f, m_f = mod["f"].params[0].struct_info.shape_values
    (n_g,) = mod["g"].params[0].struct_info.shape_values
    assert n_f.name == n_g.name == "n" and n_f is not n_g
    assert m_f.dtype == "int64"


def test_single_function_file_is_a_module():
    mod = parse('''
from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2,), "float32")):
    return x
''')
    assert list(mod.functions) == ["main"]
    assert mod["main"].attrs["global_symbol"] == "main"


def test_real_imports_set_aliases():
    mod = parse('''
import tvm
from tvm.script import ir as ir_
from tvm.script import relax as rx

@tvm.script.ir_module
class Mod:
    @rx.function
    def main(x: rx.Tensor((2,), "float32")):
        y = rx.nn.relu(x)
        return y
''')
    (binding,) = bindings(mod["main"])
    assert binding.value.op.name == "relax.nn.relu"


def test_module_attrs_and_global_infos():
    mod = module('''
        I.module_attrs({"system_lib_prefix": "lib_", "opt_level": 3})
        I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global")]})

        @R.function
        def main(x: R.Tensor((2,), "float32")):
            return x
    ''')
    assert mod.attrs == {"system_lib_prefix": "lib_", "opt_level": 3}
    (device,) = mod.global_infos["vdevice"]
    assert device["target"] == "llvm" and device["vdevice_id"] == 0


def test_local_function_is_bound_to_a_var():
    func = function('''
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            @R.function
            def inner(y: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
                z = R.add(y, y)
                return z
            r = inner(x)
            return r
    ''')
    local, call = bindings(func)
    assert isinstance(local.value, ir.Function) and local.var.name_hint == "inner"
    assert "global_symbol" not in local.value.attrs
    assert call.value.op is local.var


def test_string_dim_named_like_a_parameter_keeps_the_parameter():
    func = function('''
        @R.function
        def main(n: R.Tensor(("n",), "float32")):
            m = R.match_cast(n, R.Tensor(("n",), "float32"))
            return n
    ''')
    (cast,) = bindings(func)
    assert cast.value is func.params[0] and func.body.body is func.params[0]
    assert cast.struct_info.shape_values[0] is func.params[0].struct_info.shape_values[0]
