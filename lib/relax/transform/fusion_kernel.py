"""The TIR side of FuseTIR: one PrimFunc from a primitive Relax function's kernels.

Each call_tir of the primitive function is inlined in order: the kernel's blocks
are copied with fresh loop and block variables, its parameter buffers replaced by
the buffers of the values it reads and writes, and its symbolic sizes by the
fused function's. A value that leaves the function is an output parameter; a
value only used inside becomes an alloc_buffer of the root block, named like the
kernel's output with "_intermediate" appended, as TVM names them.
"""

from __future__ import annotations

import dataclasses

from ..diagnostics import UserError
from ..ir import expr as rx
from ..ir import tir
from ..ir.module import IRModule
from ..ir.node import FrozenDict
from ..ir.struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ..ir.visitor import ExprMutator, Mutator
from ..tir.rewrite import collect

TRUE = tir.IntImm("bool", 1)


class _KernelCopy(ExprMutator):
    """A kernel's statements with buffers and sizes replaced and every definition renewed."""

    def __init__(self, buffers: dict[int, tir.Buffer], values: dict[int, tir.PrimExpr]):
        super().__init__()
        self.buffers = buffers
        self.values = values

    def visit_buffer_use(self, buffer: tir.Buffer) -> tir.Buffer:
        mapped = self.buffers.get(id(buffer))
        return mapped if mapped is not None else self.visit_buffer_def(buffer)

    def visit_buffer_def(self, buffer: tir.Buffer) -> tir.Buffer:
        mapped = self.buffers.get(id(buffer))
        if mapped is not None:
            return mapped
        shape = tuple(self.visit(dim) for dim in buffer.shape)
        data = tir.Var(buffer.data.name, buffer.data.dtype) if buffer.data is not None else None
        new = dataclasses.replace(buffer, shape=shape, data=data)
        self.buffers[id(buffer)] = new
        return new

    def visit_var_def(self, var):
        if isinstance(var, tir.Var):
            return type(var)(var.name, var.dtype)
        return super().visit_var_def(var)

    def visit_var_use(self, var):
        value = self.values.get(id(var))
        if value is not None:
            return value
        return super().visit_var_use(var)


def _tensor_infos(info) -> list[TensorStructInfo]:
    fields = info.fields if isinstance(info, TupleStructInfo) else (info,)
    if not all(isinstance(f, TensorStructInfo) and f.shape_values is not None for f in fields):
        raise UserError("fuse-tir: every value of a primitive function needs a known tensor shape")
    return list(fields)


def _new_buffer(name: str, info: TensorStructInfo) -> tir.Buffer:
    return tir.Buffer(name, tuple(info.shape_values), info.dtype, tir.Var(name, "handle"))


class FusedKernelBuilder:
    """Builds the PrimFunc for one primitive function `func` of module `mod`."""

    def __init__(self, mod: IRModule, func: rx.Function):
        self.mod = mod
        self.func = func
        self.buffers_of: dict[int, list[tir.Buffer]] = {}
        self.statements: list[tir.Stmt] = []
        self.allocations: list[tir.Buffer] = []
        self.kernels: list[str] = []

    def build(self) -> tuple[tir.PrimFunc, list[tir.Var]]:
        """The fused PrimFunc, and the symbolic sizes it takes as scalar parameters."""
        inputs: list[tir.Buffer] = []
        for param in self.func.params:
            if isinstance(param.struct_info, ShapeStructInfo):
                continue
            (info,) = _tensor_infos(param.struct_info) if isinstance(param.struct_info, TensorStructInfo) else (None,)
            if info is None:
                raise UserError(f"fuse-tir: parameter '{param.name_hint}' of a primitive function is not a tensor")
            buffer = _new_buffer(param.name_hint, info)
            self.buffers_of[id(param)] = [buffer]
            inputs.append(buffer)
        body = self.func.body
        for block in body.blocks:
            for binding in block.bindings:
                self._binding(binding)
        results = body.body.fields if isinstance(body.body, rx.Tuple) else (body.body,)
        outputs = [buffer for result in results for buffer in self.buffers_of[id(result)]]
        allocations = [b for b in self.allocations if all(b is not o for o in outputs)]
        scalars = self._scalar_params(inputs + outputs)
        handles = tuple(tir.Var(b.name, "handle") for b in inputs + outputs)  # apart from the data, as te's
        params = handles + tuple(scalars)
        statements = _unique_block_names(self.statements)
        seq = statements[0] if len(statements) == 1 else tir.SeqStmt(tuple(statements))
        root = tir.Block("root", (), (), (), seq, alloc_buffers=tuple(allocations))
        prim = tir.PrimFunc(params, tir.BlockRealize((), TRUE, root), None,
                            tuple(zip(handles, inputs + outputs)), FrozenDict({"tirx.noalias": True}))
        return prim, scalars

    def _scalar_params(self, buffers: list[tir.Buffer]) -> list[tir.Var]:
        """Sizes passed as tir_vars that no parameter buffer's shape defines."""
        defined = {id(dim) for buffer in buffers for dim in buffer.shape if isinstance(dim, tir.Var)}
        scalars = []
        for param in self.func.params:
            info = param.struct_info
            if isinstance(info, ShapeStructInfo) and info.values is not None:
                scalars += [v for v in info.values if isinstance(v, tir.Var) and id(v) not in defined]
        return scalars

    def _binding(self, binding: rx.Binding) -> None:
        value = binding.value
        if isinstance(value, rx.TupleGetItem):
            self.buffers_of[id(binding.var)] = [self.buffers_of[id(value.tuple_value)][value.index]]
        elif isinstance(value, rx.Var):
            self.buffers_of[id(binding.var)] = self.buffers_of[id(value)]
        elif isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == "relax.call_tir":
            self.buffers_of[id(binding.var)] = self._inline(value)
        else:
            raise UserError("fuse-tir: a primitive function may only hold call_tir and tuple-get-item bindings")

    def _inline(self, call: rx.Call) -> list[tir.Buffer]:
        kernel_name = call.args[0].name_hint
        kernel = self.mod[kernel_name]
        self.kernels.append(kernel_name)
        args = call.args[1].fields if isinstance(call.args[1], rx.Tuple) else (call.args[1],)
        sizes = call.args[2].values if len(call.args) > 2 and isinstance(call.args[2], rx.ShapeExpr) else ()
        out_infos = _tensor_infos(call.sinfo_args[0])
        # The kernel's parameters, in order: the call's arguments (tensors as buffers,
        # scalars as values), then the outputs, then the sizes passed as tir_vars.
        params = list(kernel.params)
        buffers: dict[int, tir.Buffer] = {}
        values: dict[int, tir.PrimExpr] = {}
        pairs: list[tuple[tir.Buffer, tir.Buffer]] = []
        out_buffers: list[tir.Buffer] = []

        def take(want_buffer: bool) -> tir.Var:
            if not params or (kernel.buffer_of(params[0]) is not None) != want_buffer:
                raise UserError(f"fuse-tir: the parameters of kernel '{kernel_name}' do not match its call")
            return params.pop(0)

        for arg in args:
            if isinstance(arg, rx.PrimValue):
                values[id(take(False))] = arg.value
            else:
                pairs.append((kernel.buffer_of(take(True)), self._buffer_of(arg)))
        for info in out_infos:
            inner = kernel.buffer_of(take(True))
            out_buffers.append(_new_buffer(f"{inner.name}_intermediate", info))
            pairs.append((inner, out_buffers[-1]))
        for size in sizes:
            values[id(take(False))] = size
        for inner, outer in pairs:
            buffers[id(inner)] = outer
            for inner_dim, outer_dim in zip(inner.shape, outer.shape):
                _match_size(inner_dim, outer_dim, values)
        body = _KernelCopy(buffers, values).visit(kernel.body)
        if isinstance(body, tir.BlockRealize) and body.block.name_hint == "root":
            self.allocations.extend(body.block.alloc_buffers)
            body = body.block.body
        self.statements.extend(body.seq if isinstance(body, tir.SeqStmt) else (body,))
        self.allocations.extend(out_buffers)
        return out_buffers

    def _buffer_of(self, arg: rx.Expr) -> tir.Buffer:
        buffers = self.buffers_of.get(id(arg)) if isinstance(arg, rx.Var) else None
        if not buffers or len(buffers) != 1:
            raise UserError("fuse-tir: a kernel argument in a primitive function must be one tensor")
        return buffers[0]


def _match_size(inner: tir.PrimExpr, outer: tir.PrimExpr, values: dict[int, tir.PrimExpr]) -> None:
    """Binds the kernel's size variables in `inner` to the parts of `outer` in the same place.

    `n + k` in a kernel's buffer shape against `m + 2` in the fused one binds n to m
    and leaves the constant alone; a kernel variable already bound keeps its value.
    """
    if isinstance(inner, tir.Var):
        values.setdefault(id(inner), outer)
    elif type(inner) is type(outer) and isinstance(inner, tir.BinaryOp):
        _match_size(inner.a, outer.a, values)
        _match_size(inner.b, outer.b, values)
    elif type(inner) is type(outer) and isinstance(inner, tir.Cast):
        _match_size(inner.value, outer.value, values)


def _unique_block_names(statements: list[tir.Stmt]) -> list[tir.Stmt]:
    """Block names made unique (name, name_1, name_2, ...): the schedule finds blocks by name."""
    names = [block.name_hint for stmt in statements for block in collect(stmt, tir.Block)]
    if len(set(names)) == len(names):
        return statements  # nothing to rename: no rebuild of every statement
    seen: dict[str, int] = {}

    class _Renamer(Mutator):
        memoize = False

        def visit_Block(self, block: tir.Block) -> tir.Block:
            block = self.generic_visit(block)
            count = seen.get(block.name_hint, 0)
            seen[block.name_hint] = count + 1
            if count == 0:
                return block
            name = f"{block.name_hint}_{count}"
            while name in seen:
                count += 1
                name = f"{block.name_hint}_{count}"
            seen[name] = 1
            return dataclasses.replace(block, name_hint=name)

        def visit_PrimExpr(self, expr):
            return expr

    renamer = _Renamer()
    return [renamer.visit(stmt) for stmt in statements]
