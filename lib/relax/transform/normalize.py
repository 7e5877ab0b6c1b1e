"""Normalize: struct info on every binding, and nested calls bound to variables.

    lv = R.add(R.multiply(x, y), z)
becomes
    lv1: R.Tensor((4,), dtype="float32") = R.multiply(x, y)
    lv: R.Tensor((4,), dtype="float32") = R.add(lv1, z)

Every later pass may then assume A-normal form: a call's arguments are leaves
(variables, constants, shapes, prim values, tuples of leaves), and every bound
variable carries struct info (inferred through the operator registry when the
source did not annotate it).
"""

from __future__ import annotations

import dataclasses

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir import expr as rx
from ..ir.analysis import collect, free_vars
from ..ir.module import IRModule
from ..ir import tir
from ..ir.names import fresh_name
from ..ir.struct_info import (
    INT64_MAX, MAX_NESTING, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo,
    nesting_depth, oversized_tensor,
)
from ..ir.struct_info_check import conflict, describe
from ..op.infer import struct_info_of
from ..ir.pass_infra import Pass, register_pass

LEAVES = (rx.Var, rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.DataTypeImm, rx.GlobalVar,
          rx.ExternFunc, rx.Op)


def is_leaf(expr: rx.Expr) -> bool:
    if isinstance(expr, rx.Tuple):
        return all(is_leaf(field) for field in expr.fields)
    return isinstance(expr, LEAVES)


class _FunctionNormalizer:
    def __init__(self, mod: IRModule, errors: list):
        self.mod = mod
        self.renamed: dict[int, rx.Var] = {}
        self.emitted: list[rx.Binding] | None = None
        self.in_dataflow = False
        # Errors are collected so that independent ones are all reported; a value
        # computed from one that failed is not inferred again (no cascades).
        self.errors = errors
        self.failed: set[int] = set()
        # Shape variables of unknown sizes already given fresh ones in this block (id -> cast var),
        # and the symbolic variable names taken in the function.
        self.sized_shapes: dict[int, rx.Var] = {}
        self.symbol_names: set[str] | None = None

    def infer(self, value: rx.Expr, fallback=None):
        """The struct info of `value`, or `fallback` after recording why it has none."""
        returned = value.body if isinstance(value, rx.SeqExpr) else value  # a function's result: at its return
        if self.failed and any(id(v) in self.failed for v in (*free_vars(value), *free_vars(returned))):
            return None
        try:
            info = struct_info_of(value, self.mod)
        except DiagnosticError as error:
            self.errors.extend(error.diagnostics)
            return None
        return info if self.allowed(info, returned.span or value.span) else None

    def allowed(self, info, span) -> bool:
        """Whether `info` nests few enough tuples and callables to be printed (MAX_NESTING)
        and its tensors' sizes fit in int64; else the error, at `span` (where the value or
        annotation is written)."""
        if nesting_depth(info) > MAX_NESTING:
            self.errors.append(Diagnostic("error", f"tuples or callables nest more than {MAX_NESTING} levels deep"
                                                   f" here; at most {MAX_NESTING} are supported", span))
            return False
        oversized = oversized_tensor(info)
        if oversized is not None:
            tensor, size = oversized
            self.errors.append(Diagnostic("error", f"the size of {describe(tensor)}, {_describe_size(size)} bytes,"
                                                   f" does not fit in int64 (at most {INT64_MAX})", span))
            return False
        return True

    # -- values -----------------------------------------------------------------------
    def leaf(self, expr: rx.Expr) -> rx.Expr:
        """The expression normalized and, unless it is a leaf, bound to a new variable."""
        value = self.value(expr)
        if is_leaf(value):
            return value
        var_class = rx.DataflowVar if self.in_dataflow else rx.Var
        info = self.infer(value)
        var = var_class("lv", info or ObjectStructInfo(), span=expr.span)
        if info is None:
            self.failed.add(id(var))
        self.emitted.append(rx.VarBinding(var, value, span=expr.span))
        return var

    def value(self, expr: rx.Expr) -> rx.Expr:
        if isinstance(expr, rx.Var):
            return self.renamed.get(id(expr), expr)
        if isinstance(expr, rx.Call):
            op = expr.op if isinstance(expr.op, (rx.Op, rx.GlobalVar, rx.ExternFunc)) else self.leaf(expr.op)
            args = tuple(self.leaf(arg) for arg in expr.args)
            if isinstance(op, rx.Op):
                args = self.sized_shapes_of(expr, op, args)
            if op is expr.op and all(a is b for a, b in zip(args, expr.args)):
                return expr
            return dataclasses.replace(expr, op=op, args=args)
        if isinstance(expr, rx.Tuple):
            fields = tuple(self.leaf(field) for field in expr.fields)
            return expr if all(a is b for a, b in zip(fields, expr.fields)) else dataclasses.replace(expr, fields=fields)
        if isinstance(expr, rx.TupleGetItem):
            value = self.leaf(expr.tuple_value)
            return expr if value is expr.tuple_value else dataclasses.replace(expr, tuple_value=value)
        if isinstance(expr, rx.If):
            cond = self.leaf(expr.cond)
            return dataclasses.replace(expr, cond=cond, true_branch=self.seq(expr.true_branch),
                                       false_branch=self.seq(expr.false_branch))
        if isinstance(expr, rx.SeqExpr):
            return self.seq(expr)
        if isinstance(expr, rx.Function):
            return self.function(expr)
        return expr

    def sized_shapes_of(self, expr: rx.Call, op: rx.Op, args: tuple) -> tuple:
        """The call's arguments, the shape operand that gives its result's shape cast to
        fresh symbolic sizes when only its rank is known (R.reshape(x, R.tensor_to_shape(s))):
        `lv_cast = R.match_cast(lv, R.Shape([lv_0, lv_1]))`. What is computed from the
        result then has sizes the VM binds at run time; with the rank alone (TVM's result)
        no kernel can be built for it or for anything that uses it."""
        shapes = [a for a in args if isinstance(a, rx.Var) and isinstance(a.struct_info, ShapeStructInfo)
                  and a.struct_info.values is None and a.struct_info.ndim >= 0 and id(a) not in self.failed]
        if not shapes or self.emitted is None:
            return args
        try:
            result = struct_info_of(dataclasses.replace(expr, op=op, args=args), self.mod)
        except (DiagnosticError, ValueError):
            return args  # reported where the call is inferred
        shape = result.shape if isinstance(result, TensorStructInfo) else None
        if all(shape is not a for a in shapes):
            return args
        return tuple(self.sized_shape(a) if a is shape else a for a in args)

    def sized_shape(self, arg: rx.Var) -> rx.Var:
        info = arg.struct_info
        cast = self.sized_shapes.get(id(arg))
        if cast is None:
            sizes = tuple(tir.Var(fresh_name(f"{arg.name_hint}_{axis}", self.symbol_names), "int64")
                          for axis in range(info.ndim))
            cast_info = ShapeStructInfo(sizes)
            var_class = rx.DataflowVar if self.in_dataflow else rx.Var
            cast = var_class(f"{arg.name_hint}_cast", cast_info, span=arg.span)
            self.emitted.append(rx.MatchCast(cast, arg, cast_info, span=arg.span))
            self.sized_shapes[id(arg)] = cast
        return cast

    # -- blocks -----------------------------------------------------------------------
    def seq(self, expr: rx.Expr) -> rx.SeqExpr:
        if not isinstance(expr, rx.SeqExpr):
            expr = rx.SeqExpr((), expr, span=expr.span)
        outer_emitted, outer_dataflow, outer_sized = self.emitted, self.in_dataflow, self.sized_shapes
        blocks = [self.block(block) for block in expr.blocks]
        self.emitted, self.in_dataflow, self.sized_shapes = [], False, {}
        body = self.leaf(expr.body)
        if self.emitted:
            blocks.append(rx.BindingBlock(tuple(self.emitted)))
        self.emitted, self.in_dataflow, self.sized_shapes = outer_emitted, outer_dataflow, outer_sized
        return rx.SeqExpr(tuple(blocks), body, span=expr.span)

    def block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        self.emitted = []
        self.in_dataflow = isinstance(block, rx.DataflowBlock)
        self.sized_shapes = {}  # a cast in another block is out of scope (a dataflow variable)
        for binding in block.bindings:
            self.emitted.append(self.binding(binding))
        return dataclasses.replace(block, bindings=tuple(self.emitted))

    def binding(self, binding: rx.Binding) -> rx.Binding:
        if isinstance(binding, rx.MatchCast):
            value = self.leaf(binding.value)
            if not self.allowed(binding.struct_info, binding.struct_info.span or binding.span):
                self.failed.add(id(binding.var))
            var = self.define(binding.var, binding.struct_info)
            return dataclasses.replace(binding, var=var, value=value)
        value = self.value(binding.value)
        written = binding.var.struct_info
        if written is not None and not self.allowed(written, written.span or binding.var.span):
            self.failed.add(id(binding.var))  # refused where it is written; its value is not checked again
            return dataclasses.replace(binding, value=value)
        if binding.var.struct_info is not None and not isinstance(value, rx.Call):
            return dataclasses.replace(binding, value=value)
        # Calls are inferred even when annotated: that is where operator errors show.
        info = self.infer(value)
        if info is None:
            var = self.define(binding.var, ObjectStructInfo())
            self.failed.update((id(binding.var), id(var)))
        else:
            self.check_annotation(binding.var, info)
            var = self.define(binding.var, None if binding.var.struct_info else info)
        return dataclasses.replace(binding, var=var, value=value)

    def check_annotation(self, var: rx.Var, inferred) -> None:
        """An annotation the call's value can never match is an error (it would be trusted by
        every later pass: a 3x2 result annotated 3x5 made main return nothing)."""
        annotation = var.struct_info
        if conflict(annotation, inferred):
            self.errors.append(Diagnostic("error", f"variable '{var.name_hint}' is annotated {describe(annotation)} "
                                                   f"but its value is {describe(inferred)}",
                                          annotation.span or var.span))

    def define(self, var: rx.Var, inferred) -> rx.Var:
        if var.struct_info is not None or inferred is None:
            return var
        new = dataclasses.replace(var, struct_info=inferred)
        self.renamed[id(var)] = new
        return new

    def function(self, func: rx.Function) -> rx.Function:
        if self.symbol_names is None:
            self.symbol_names = {v.name for v in collect(func, lambda n: isinstance(n, tir.Var))}
        params = tuple(p if p.struct_info is not None else self.define(p, ObjectStructInfo()) for p in func.params)
        for param in func.params:
            if param.struct_info is not None and not self.allowed(param.struct_info, param.struct_info.span or func.span):
                self.failed.add(id(param))  # what is computed from it is not checked again
        if func.ret_struct_info is not None:
            self.allowed(func.ret_struct_info, func.ret_struct_info.span or func.span)
        body = self.seq(func.body)
        ret = func.ret_struct_info or _erase_body_definitions(self.infer(body), params, body) or ObjectStructInfo()
        if params == func.params and body is func.body and ret is func.ret_struct_info:
            return func
        return dataclasses.replace(func, params=params, body=body, ret_struct_info=ret)


def _erase_body_definitions(info, params, body: rx.SeqExpr):
    """The inferred result of a function without what only its body defines, as TVM's
    EraseToWellDefined: a size a match_cast introduces (m in R.Tensor((m, k))) or a shape
    variable bound inside (R.Tensor(lv)) becomes unknown, the rank kept. The signature
    must read back on its own: a printed `-> R.Tensor((m, k))` names m out of scope."""
    if info is None:
        return None
    inner = {id(v) for v in collect(body, lambda n: isinstance(n, rx.Var))} - {id(p) for p in params}
    casts = collect(body, lambda n: isinstance(n, rx.MatchCast))
    symbols = {id(v) for cast in casts for v in collect(cast.struct_info, lambda n: isinstance(n, tir.Var))}
    symbols -= {id(v) for p in params if p.struct_info is not None
                for v in collect(p.struct_info, lambda n: isinstance(n, tir.Var))}
    if not inner and not symbols:
        return info

    def undefined(values) -> bool:
        return any(id(v) in symbols for d in values for v in collect(d, lambda n: isinstance(n, tir.Var)))

    def erase(item):
        if isinstance(item, TensorStructInfo):
            values = item.shape_values
            if (values is None and id(item.shape) in inner) or (values is not None and undefined(values)):
                return TensorStructInfo(None, item.dtype, item.ndim, item.vdevice)
        elif isinstance(item, ShapeStructInfo) and item.values is not None and undefined(item.values):
            return ShapeStructInfo(ndim=item.ndim)
        elif isinstance(item, PrimStructInfo) and item.value is not None and undefined((item.value,)):
            return PrimStructInfo(item.dtype)
        elif isinstance(item, TupleStructInfo):
            fields = tuple(erase(f) for f in item.fields)
            return item if all(a is b for a, b in zip(fields, item.fields)) else TupleStructInfo(fields)
        return item

    return erase(info)


def _describe_size(size: int) -> str:
    return str(size) if size < 10**30 else f"more than 2**{size.bit_length() - 1}"


@register_pass
class Normalize(Pass):
    """Give every binding struct info and bind nested calls to variables (A-normal form)."""

    name = "normalize"

    def run(self, mod: IRModule) -> IRModule:
        # Callees first, so that a call to a function without a return annotation
        # gets the struct info its body computes (recursion needs annotations).
        errors: list = []
        done: dict[str, rx.Function] = {}
        started: set[str] = set()

        def normalize(name: str) -> None:
            if name in started:
                return
            started.add(name)
            func = mod.functions[name]
            for callee in collect(func, lambda n: isinstance(n, rx.GlobalVar)):
                if isinstance(mod.functions.get(callee.name_hint), rx.Function):
                    normalize(callee.name_hint)
            view = IRModule.from_functions({**mod.functions, **done}, attrs=mod.attrs)
            done[name] = _FunctionNormalizer(view, errors).function(func)

        for name, func in mod.functions.items():
            if isinstance(func, rx.Function):
                normalize(name)
        if errors:
            raise DiagnosticError(errors)
        if all(done[name] is mod.functions[name] for name in done):
            return mod
        return IRModule.from_functions({**mod.functions, **done}, attrs=mod.attrs, global_infos=mod.global_infos)
