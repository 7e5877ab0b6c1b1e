"""VMShapeLower: symbolic shapes and parameter checks through the VM's shape heap.

Each function gets a shape heap (an int64 tensor) with one slot per symbolic
variable and per composite size (`n * 8`). Parameters are checked on entry
(`vm.builtin.check_tensor_info`, then `vm.builtin.match_shape`, which stores a
size at its first occurrence and checks it at the others); a ShapeExpr or
PrimValue with symbolic values becomes `vm.builtin.make_shape` /
`vm.builtin.make_prim_value` reading the heap; composite sizes are computed into
the heap by small TIR functions (`shape_func`) called like kernels.

    def main(x: R.Tensor((n, 4), dtype="float32")):
        storage = R.vm.alloc_storage(R.shape([n * 16]), ...)
becomes
    def main(x: R.Tensor((n, 4), dtype="float32")):
        shape_heap = R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", (R.prim_value(2),))
        R.call_packed("vm.builtin.check_tensor_info", x, 2, R.dtype("float32"), R.str("ErrorContext(...)"))
        R.call_packed("vm.builtin.match_shape", x, shape_heap, 2, 1, 0, 0, 4, R.str("ErrorContext(...)"))
        cls.shape_func(shape_heap)                      # heap[1] = heap[0] * 16
        lv = R.call_packed("vm.builtin.make_shape", shape_heap, 1, 1, 1)
        storage = R.vm.alloc_storage(lv, ...)
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.module import IRModule
from ..ir.names import NameSupply
from ..ir.node import FrozenDict
from ..ir.struct_info import (
    FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo,
    TupleStructInfo,
)
from ..op.legalize_context import substitute_prim, symbolic_vars
from ..ir.pass_infra import Pass, register_pass

ASSERT_EQUAL_TO_IMM, STORE_TO_HEAP, NO_OP, ASSERT_EQUAL_TO_LOAD = range(4)
USE_IMM, LOAD_SHAPE = range(2)
VOID = TupleStructInfo(())
HEAP_INFO = TensorStructInfo(None, "int64", 1)


def _int(value: int) -> rx.PrimValue:
    return rx.PrimValue(tir.IntImm("int64", value))


def _packed(name: str, args, info=VOID) -> rx.Call:
    return rx.Call(rx.ExternFunc(name), tuple(args), sinfo_args=(info,))


def _is_static(expr: tir.PrimExpr) -> bool:
    return isinstance(expr, tir.IntImm)


def _annotation_text(info: StructInfo) -> str:
    try:
        return info.script().strip()
    except Exception:  # noqa: BLE001 - an error context is a message, never a failure
        return type(info).__name__


def _expr_key(expr: tir.PrimExpr) -> tuple:
    """A dict key equal for structurally equal sizes (variables by identity): a lookup, not
    a comparison with every size computed before (a long program has hundreds)."""
    from ..ir.structural import structural_key

    return tuple(structural_key(expr, map_free_vars=False))


class _FunctionShapeLowerer:
    def __init__(self, func_name: str, names: NameSupply):
        self.func_name = func_name
        self.names = names
        self.slots: dict[int, int] = {}  # id(tir.Var) -> heap slot
        self.composites: list[tuple[tir.PrimExpr, int]] = []
        self.composite_slots: dict[tuple, int] = {}  # structural key of a composite size -> its slot
        self.heap = rx.Var("shape_heap", HEAP_INFO)
        self.shape_funcs: dict[str, tir.PrimFunc] = {}
        self.used_heap = False
        # (value, builtin, sizes, error context) of matches with composite sizes (n * 2),
        # checked once the variables they use are stored: see check_composites.
        self.composite_checks: list[tuple] = []

    # -- heap slots ---------------------------------------------------------------------
    def _new_slot(self) -> int:
        return len(self.slots) + len(self.composites)

    def _composite_slot(self, expr: tir.PrimExpr) -> int | None:
        return self.composite_slots.get(_expr_key(expr))

    def _ensure_computed(self, exprs, out: list[rx.Binding]) -> None:
        """Emits one shape function computing every composite size in `exprs` not yet in the heap."""
        pending = []
        for expr in exprs:
            if _is_static(expr) or isinstance(expr, tir.Var) or self._composite_slot(expr) is not None:
                continue
            if any(p is expr for p, _ in pending):
                continue
            for var in symbolic_vars([expr]):
                if id(var) not in self.slots:
                    raise ValueError(f"symbolic variable '{var.name}' is used before it is defined")
            slot = self._new_slot()
            self.composites.append((expr, slot))
            self.composite_slots[_expr_key(expr)] = slot
            pending.append((expr, slot))
        if not pending:
            return
        size = tir.Var("heap_size", "int64")
        heap_buffer = tir.Buffer("H", (size,), "int64", tir.Var("H", "handle"))
        loads = {key: tir.BufferLoad(heap_buffer, (tir.IntImm("int64", slot),)) for key, slot in self.slots.items()}
        stores = tuple(
            tir.BufferStore(heap_buffer, substitute_prim(expr, loads), (tir.IntImm("int64", slot),))
            for expr, slot in pending
        )
        body = stores[0] if len(stores) == 1 else tir.SeqStmt(stores)
        name = self.names.fresh("shape_func")
        handle = tir.Var("H", "handle")  # apart from the buffer's data, as the parser reads it back
        self.shape_funcs[name] = tir.PrimFunc((handle,), body, None, ((handle, heap_buffer),),
                                              FrozenDict({"tirx.noalias": True}))
        self.used_heap = True
        out.append(rx.VarBinding(rx.Var("_", VOID), rx.Call(rx.GlobalVar(name), (self.heap,))))

    def _load_code(self, expr: tir.PrimExpr) -> tuple[int, int]:
        if _is_static(expr):
            return USE_IMM, expr.value
        self.used_heap = True
        if isinstance(expr, tir.Var):
            if id(expr) not in self.slots:
                raise ValueError(f"symbolic variable '{expr.name}' is used before it is defined")
            return LOAD_SHAPE, self.slots[id(expr)]
        return LOAD_SHAPE, self._composite_slot(expr)

    # -- matching (definitions) -----------------------------------------------------------
    def _match_codes(self, values) -> list[int]:
        codes: list[int] = []
        for value in values:
            if _is_static(value):
                codes += [ASSERT_EQUAL_TO_IMM, value.value]
            elif isinstance(value, tir.Var):
                self.used_heap = True
                if id(value) in self.slots:
                    codes += [ASSERT_EQUAL_TO_LOAD, self.slots[id(value)]]
                else:
                    slot = self._new_slot()
                    self.slots[id(value)] = slot
                    codes += [STORE_TO_HEAP, slot]
            else:
                codes += [NO_OP, 0]
        return codes

    def match(self, value: rx.Expr, info: StructInfo, context: str, out: list[rx.Binding]) -> None:
        """Bindings that check `value` against `info` and store its new symbolic sizes."""
        error_context = rx.StringImm(f"ErrorContext(fn={self.func_name}, {context}, annotation={_annotation_text(info)}) ")
        if isinstance(info, TensorStructInfo):
            dtype = rx.DataTypeImm(info.dtype)
            out.append(rx.VarBinding(rx.Var("_", VOID), _packed(
                "vm.builtin.check_tensor_info", (value, _int(info.ndim), dtype, error_context))))
            if info.shape_values is not None:
                self._match_shape(value, info.shape_values, error_context, out)
        elif isinstance(info, ShapeStructInfo):
            out.append(rx.VarBinding(rx.Var("_", VOID), _packed(
                "vm.builtin.check_shape_info", (value, _int(info.ndim), error_context))))
            if info.values is not None:
                self._match_shape(value, info.values, error_context, out)
        elif isinstance(info, PrimStructInfo):
            out.append(rx.VarBinding(rx.Var("_", VOID), _packed(
                "vm.builtin.check_prim_value_info", (value, rx.DataTypeImm(info.dtype), error_context))))
            if info.value is not None and isinstance(info.value, tir.Var):
                code, operand = self._match_codes([info.value])
                out.append(rx.VarBinding(rx.Var("_", VOID), _packed(
                    "vm.builtin.match_prim_value", (value, self.heap, _int(code), _int(operand), error_context))))
            elif info.value is not None and not _is_static(info.value):
                self.composite_checks.append((value, "vm.builtin.match_prim_value", (info.value,), error_context))
        elif isinstance(info, TupleStructInfo):
            out.append(rx.VarBinding(rx.Var("_", VOID), _packed(
                "vm.builtin.check_tuple_info", (value, _int(len(info.fields)), error_context))))
            for index, field in enumerate(info.fields):
                item = rx.Var("item", field)
                out.append(rx.VarBinding(item, rx.TupleGetItem(value, index)))
                self.match(item, field, f"{context}[{index}]", out)
        elif isinstance(info, FuncStructInfo):
            out.append(rx.VarBinding(rx.Var("_", VOID), _packed("vm.builtin.check_func_info", (value, error_context))))

    def _match_shape(self, value: rx.Expr, sizes, error_context: rx.StringImm, out: list[rx.Binding]) -> None:
        codes = self._match_codes(sizes)
        out.append(rx.VarBinding(rx.Var("_", VOID), _packed(
            "vm.builtin.match_shape", (value, self.heap, _int(len(sizes))) + tuple(_int(c) for c in codes) + (error_context,))))
        if any(not _is_static(v) and not isinstance(v, tir.Var) for v in sizes):
            self.composite_checks.append((value, "vm.builtin.match_shape", tuple(sizes), error_context))

    def check_composites(self, out: list[rx.Binding]) -> None:
        """Checks the composite sizes of the matches so far (a parameter of shape (n * 2,)
        once n is stored), as TVM's second matching round does: each is computed into
        the heap and compared with the value's size. A composite size whose variables
        no match defines is not checked (well-formedness refuses it first)."""
        checks, self.composite_checks = self.composite_checks, []
        for value, builtin, sizes, error_context in checks:
            checked = [v if not (_is_static(v) or isinstance(v, tir.Var))
                       and all(id(var) in self.slots for var in symbolic_vars([v])) else None for v in sizes]
            if not any(v is not None for v in checked):
                continue
            self._ensure_computed([v for v in checked if v is not None], out)
            codes: list[int] = []
            for v in checked:
                codes += [NO_OP, 0] if v is None else [ASSERT_EQUAL_TO_LOAD, self._composite_slot(v)]
            if builtin == "vm.builtin.match_shape":
                args = (value, self.heap, _int(len(sizes))) + tuple(_int(c) for c in codes)
            else:
                args = (value, self.heap) + tuple(_int(c) for c in codes)
            out.append(rx.VarBinding(rx.Var("_", VOID), _packed(builtin, args + (error_context,))))

    # -- making (uses) -----------------------------------------------------------------------
    def lower_arg(self, expr: rx.Expr, out: list[rx.Binding]) -> rx.Expr:
        if isinstance(expr, rx.ShapeExpr) and not all(_is_static(v) for v in expr.values):
            self._ensure_computed(expr.values, out)
            codes: list[int] = []
            for value in expr.values:
                codes += self._load_code(value)
            var = rx.Var("shape", ShapeStructInfo(expr.values))
            out.append(rx.VarBinding(var, _packed(
                "vm.builtin.make_shape", (self.heap, _int(len(expr.values))) + tuple(_int(c) for c in codes),
                ShapeStructInfo(ndim=len(expr.values)))))
            return var
        if isinstance(expr, rx.PrimValue) and not isinstance(expr.value, (tir.IntImm, tir.FloatImm)):
            self._ensure_computed([expr.value], out)
            code, operand = self._load_code(expr.value)
            var = rx.Var("prim", PrimStructInfo(expr.value.dtype))
            out.append(rx.VarBinding(var, _packed("vm.builtin.make_prim_value", (self.heap, _int(code), _int(operand)),
                                                  PrimStructInfo(expr.value.dtype))))
            return var
        if isinstance(expr, rx.Tuple):
            fields = tuple(self.lower_arg(f, out) for f in expr.fields)
            return expr if all(a is b for a, b in zip(fields, expr.fields)) else dataclasses.replace(expr, fields=fields)
        return expr

    def seq(self, seq: rx.SeqExpr) -> rx.SeqExpr:
        blocks = []
        for block in seq.blocks:
            out: list[rx.Binding] = []
            for binding in block.bindings:
                self.binding(binding, out)
            blocks.append(dataclasses.replace(block, bindings=tuple(out)))
        tail: list[rx.Binding] = []
        body = self.lower_arg(seq.body, tail)
        if tail:
            blocks.append(rx.BindingBlock(tuple(tail)))
        return dataclasses.replace(seq, blocks=tuple(blocks), body=body)

    def binding(self, binding: rx.Binding, out: list[rx.Binding]) -> None:
        value = binding.value
        if isinstance(binding, rx.MatchCast):
            source = self.lower_arg(value, out)
            self.match(source, binding.struct_info, f"loc=match_cast, var={binding.var.name_hint}", out)
            self.check_composites(out)
            # The binding stays a match_cast, as in TVM: CodeGenVM treats it as an alias, and the
            # printed module (.vms) still defines the symbolic variables it annotates.
            out.append(dataclasses.replace(binding, value=source))
            return
        if isinstance(value, rx.Call):
            args = tuple(self.lower_arg(a, out) for a in value.args)
            if any(a is not b for a, b in zip(args, value.args)):
                value = dataclasses.replace(value, args=args)
        elif isinstance(value, rx.If):
            value = dataclasses.replace(value, true_branch=self.seq(value.true_branch),
                                        false_branch=self.seq(value.false_branch))
        elif isinstance(value, (rx.ShapeExpr, rx.PrimValue, rx.Tuple)):
            value = self.lower_arg(value, out)
        out.append(dataclasses.replace(binding, value=value) if value is not binding.value else binding)

    def function(self, func: rx.Function) -> rx.Function:
        prologue: list[rx.Binding] = []
        for index, param in enumerate(func.params):
            info = param.struct_info or ObjectStructInfo()
            self.match(param, info, f"loc=param[{index}], param={param.name_hint}", prologue)
        self.check_composites(prologue)
        body = self.seq(func.body)
        heap_size = len(self.slots) + len(self.composites)
        allocate = rx.VarBinding(self.heap, rx.Call(
            rx.Op("relax.call_builtin_with_ctx"),
            (rx.ExternFunc("vm.builtin.alloc_shape_heap"), rx.Tuple((_int(heap_size),))), sinfo_args=(HEAP_INFO,)))
        if not self.used_heap:
            null = rx.VarBinding(self.heap, _packed("vm.builtin.null_value", (), ObjectStructInfo()))
            allocate = null
        first = rx.BindingBlock(tuple([allocate] + prologue))
        return dataclasses.replace(func, body=dataclasses.replace(body, blocks=(first,) + body.blocks))


@register_pass
class VMShapeLower(Pass):
    """Check parameters and compute symbolic shapes through the VM's shape heap."""

    name = "vm-shape-lower"

    def run(self, mod: IRModule) -> IRModule:
        names = NameSupply(mod.functions)
        functions = {}
        new_kernels = {}
        for name, func in mod.functions.items():
            if isinstance(func, rx.Function):
                lowerer = _FunctionShapeLowerer(name, names)
                functions[name] = lowerer.function(func)
                new_kernels.update(lowerer.shape_funcs)
            else:
                functions[name] = func
        functions.update(new_kernels)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
