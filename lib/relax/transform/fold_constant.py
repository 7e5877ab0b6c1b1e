"""FoldConstant: calls whose inputs are all constants are computed at compile time.

    lv: R.Tensor((2, 2), dtype="float32") = R.call_tir(cls.transpose, (metadata["relax.expr.Constant"][0],),
                                                       out_sinfo=R.Tensor((2, 2), dtype="float32"))
becomes
    lv: R.Tensor((2, 2), dtype="float32") = metadata["relax.expr.Constant"][1]   # the transposed array

A `call_tir` is run through the real kernel: its PrimFunc is compiled for this host
(build_host_library; plain loop nests on one thread, on every core past
PARALLEL_FOLD_BYTES, no LLVM optimization: FOLD_TARGET) and called in
destination-passing style on the constant inputs.
An operator call left after legalization whose operands are constants is legalized
on the spot and run the same way. Variables bound to constants (or tuples of them)
count as constants, so chains fold in one pass, one kernel compilation per round.
Left alone: anything impure (packed calls, call_dps_packed), symbolic output shapes
or `tir_vars`, and PrimFuncs that cannot be compiled here. PrimFuncs that only the
folded calls referred to are dropped from the module.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.module import IRModule
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from ..ir.structural import structural_hash
from ..ir.visitor import ExprMutator, pre_order
from ..op import registry
from ..op.infer import bind_call
from ..op.legalize_context import LegalizeContext
from ..op.shape import static_value
from ..ir.pass_infra import Pass, PassContext, register_pass
from ..runtime.allocator import aligned_array

MAX_ROUNDS = 64
# Folding kernels are built for this host without default schedules (-O0's plain loop
# nests), on one core (no parallel loops: those would need the kernel thread pool, an
# LLVM build of its own) and without LLVM optimization: each runs once, so compiling it
# quickly matters more than running it quickly. The plain nests also make a folded
# reduction add up in one order, the same on every build host.
FOLD_TARGET = "llvm -opt-level=0 -num-cores=1"
# ... unless a round's kernels hold more than this in their buffers: then their outer
# loops run on every core (the default CPU schedule, the same sums), which saves more
# than the thread pool's build costs.
PARALLEL_FOLD_TARGET = "llvm -opt-level=0"
PARALLEL_FOLD_BYTES = 1 << 28


def _static_shape(info) -> tuple[int, ...] | None:
    if not isinstance(info, TensorStructInfo) or info.shape is None or not isinstance(info.shape, rx.ShapeExpr):
        return None
    dims = [static_value(d) for d in info.shape.values]
    return None if any(d is None for d in dims) else tuple(dims)


def _numpy_dtype(dtype: str):
    try:
        return dt.to_numpy(dtype)
    except ValueError:  # unknown ("") or without a numpy type: not folded, later checks name it
        return None


def _output_infos(call: rx.Call):
    """([(static shape, numpy dtype)], is a tuple) of the call's outputs; None unless all are known."""
    out = call.sinfo_args[0] if call.sinfo_args else None
    fields = out.fields if isinstance(out, TupleStructInfo) else (out,)
    shapes = [_static_shape(f) for f in fields]
    dtypes = [_numpy_dtype(getattr(f, "dtype", "")) for f in fields]
    if any(s is None for s in shapes) or any(d is None for d in dtypes):
        return None
    return list(zip(shapes, dtypes)), isinstance(out, TupleStructInfo)


class _Folder(ExprMutator):
    """One round: replaces foldable calls whose kernels `run_kernel` can run."""

    def __init__(self, mod: IRModule, kernels: dict[str, tir.PrimFunc], run_kernel):
        super().__init__()
        self.mod = mod
        self.kernels = kernels
        self.run_kernel = run_kernel
        self.constants: dict[int, rx.Expr] = {}  # id(var) -> Constant or Tuple of them
        self.wanted: list[tir.PrimFunc] = []  # kernels to compile for the next round
        self.folded = 0

    def constant_of(self, expr: rx.Expr) -> rx.Expr | None:
        if isinstance(expr, rx.Constant):
            return expr
        if isinstance(expr, rx.Var):
            return self.constants.get(id(expr))
        if isinstance(expr, rx.Tuple):
            fields = [self.constant_of(f) for f in expr.fields]
            return None if any(f is None for f in fields) else rx.Tuple(tuple(fields))
        if isinstance(expr, rx.TupleGetItem):
            inner = self.constant_of(expr.tuple_value)
            if isinstance(inner, rx.Tuple) and 0 <= expr.index < len(inner.fields):
                return inner.fields[expr.index]
        return None

    def visit_VarBinding(self, binding: rx.VarBinding) -> rx.VarBinding:
        binding = super().visit_VarBinding(binding)
        value = binding.value
        folded = self.fold(value)
        if folded is not None:
            self.folded += 1
            binding = dataclasses.replace(binding, value=folded)
            value = folded
        known = self.constant_of(value) if isinstance(value, (rx.Constant, rx.Tuple, rx.TupleGetItem, rx.Var)) else None
        if known is not None:
            self.constants[id(binding.var)] = known
        return binding

    def fold(self, value: rx.Expr) -> rx.Expr | None:
        if isinstance(value, rx.TupleGetItem) and isinstance(self.constant_of(value), rx.Constant):
            return self.constant_of(value)
        if not (isinstance(value, rx.Call) and isinstance(value.op, rx.Op)):
            return None
        if value.op.name == "relax.call_tir":
            return self.fold_call_tir(value, value.args[0].name_hint if isinstance(value.args[0], rx.GlobalVar) else None,
                                      self.kernels)
        return self.fold_operator(value)

    def fold_call_tir(self, call: rx.Call, kernel: str | None, kernels) -> rx.Expr | None:
        if kernel is None or kernel not in kernels or len(call.args) != 2:
            return None
        inputs = self.constant_of(call.args[1])
        outputs = _output_infos(call)
        if inputs is None or outputs is None:
            return None
        fields = inputs.fields if isinstance(inputs, rx.Tuple) else (inputs,)
        if not all(isinstance(f, rx.Constant) for f in fields):
            return None
        infos, is_tuple = outputs
        arrays = [np.asarray(f.data, order="C") for f in fields]  # 0-d stays 0-d; kernels only read them
        results = [aligned_array(shape, dtype) for shape, dtype in infos]  # kept by the constant pool as they are
        if not self.run_kernel(kernels[kernel], arrays + results):
            self.wanted.append(kernels[kernel])
            return None
        constants = tuple(rx.Constant(rx.frozen(r), span=call.span) for r in results)
        return rx.Tuple(constants, span=call.span) if is_tuple else constants[0]

    def fold_operator(self, call: rx.Call) -> rx.Expr | None:
        op = registry.get(call.op.name)
        if op is None or op.legalize is None or not op.pure:
            return None
        if any(self.constant_of(a) is None for a in call.args if isinstance(a, (rx.Var, rx.Tuple))):
            return None
        if not any(isinstance(a, rx.Constant) or id(a) in self.constants for a in call.args):
            return None
        args = tuple(self.constant_of(a) if isinstance(a, rx.Var) else a for a in call.args)
        context = LegalizeContext(set(self.mod.functions))
        try:
            legalized = op.legalize(bind_call(dataclasses.replace(call, args=args), self.mod), context)
        except Exception:  # an operand the legalization cannot take stays unfolded
            return None
        if not (isinstance(legalized, rx.Call) and isinstance(legalized.op, rx.Op)
                and legalized.op.name == "relax.call_tir" and isinstance(legalized.args[0], rx.GlobalVar)):
            return None
        name = legalized.args[0].name_hint
        kernels = {name: context.new_functions.get(name) or self.kernels.get(name)}
        if kernels[name] is None:
            return None
        return self.fold_call_tir(legalized, name, kernels)


class _KernelRunner:
    """Compiles the kernels a round asks for, all in one library, and runs them.

    Kernels are known by their structure (a legalization made again in the next
    round is the same kernel) and renamed apart inside a library."""

    def __init__(self):
        self.compiled: dict[int, tuple[object, str]] = {}  # structural hash -> (library, name)
        self.failed: set[int] = set()

    def __call__(self, func: tir.PrimFunc, arrays) -> bool:
        found = self.compiled.get(structural_hash(func, map_free_vars=True))
        if found is None:
            return False
        library, name = found
        library.get_function(name)(*arrays)
        return True

    def compile(self, kernels: list[tir.PrimFunc]) -> bool:
        todo: dict[int, tir.PrimFunc] = {}
        for func in kernels:
            key = structural_hash(func, map_free_vars=True)
            if key not in self.compiled and key not in self.failed:
                todo[key] = func
        if not todo:
            return False
        from ..codegen.build_kernels import build_host_library  # a module with nothing to fold skips it

        names = {key: f"fold_constant_{index}" for index, key in enumerate(todo)}
        try:
            # Each kernel runs once, on the weights: its plain loop nest, unoptimized
            # (FOLD_TARGET), costs less to compile than it could ever save in running.
            context = PassContext(opt_level=0, config=PassContext.current().config)
            library = build_host_library(IRModule.from_functions({names[k]: f for k, f in todo.items()}),
                                         _fold_target(todo.values()), context=context)
        except Exception:  # a kernel this host cannot compile is simply not folded
            self.failed.update(todo)
            return False
        for key in todo:
            self.compiled[key] = (library, names[key])
        return True


def _fold_target(kernels) -> str:
    """FOLD_TARGET, or PARALLEL_FOLD_TARGET for kernels whose buffers hold more than
    PARALLEL_FOLD_BYTES (shapes that are not all constants count as large)."""
    total = 0
    for func in kernels:
        for _, buffer in func.buffer_map:
            dims = [static_value(dim) for dim in buffer.shape]
            if any(dim is None for dim in dims):
                return PARALLEL_FOLD_TARGET
            total += math.prod(dims) * dt.itemsize(buffer.dtype)
    return PARALLEL_FOLD_TARGET if total > PARALLEL_FOLD_BYTES else FOLD_TARGET


@register_pass
class FoldConstant(Pass):
    """Compute calls whose inputs are all constants at compile time, through the real kernels."""

    name = "fold-constant"
    opt_level = 1

    def run(self, mod: IRModule) -> IRModule:
        runner = _KernelRunner()
        current = mod
        for _ in range(MAX_ROUNDS):
            kernels = current.prim_funcs()
            functions = dict(current.functions)
            wanted: list[tir.PrimFunc] = []
            folded = 0
            for name, func in current.functions.items():
                if isinstance(func, rx.Function):
                    folder = _Folder(current, kernels, runner)
                    new = folder.visit(func)
                    wanted.extend(folder.wanted)
                    if folder.folded:
                        functions[name] = new
                        folded += folder.folded
            if folded:
                current = IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
            if not runner.compile(wanted) and not folded:
                break
        if current is mod:
            return mod
        return _drop_unreferenced(current, before=mod)


def _referenced(mod: IRModule) -> set[str]:
    names: set[str] = set()
    for func in mod.functions.values():
        if isinstance(func, rx.Function):
            names.update(n.name_hint for n in pre_order(func) if isinstance(n, rx.GlobalVar))
    return names


def _drop_unreferenced(mod: IRModule, before: IRModule) -> IRModule:
    """PrimFuncs referenced before folding and by nothing after it go away."""
    was, now = _referenced(before), _referenced(mod)
    dropped = {n for n, f in mod.functions.items() if isinstance(f, tir.PrimFunc) and n in was and n not in now}
    if not dropped:
        return mod
    functions = {n: f for n, f in mod.functions.items() if n not in dropped}
    return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
