"""TIR expressions to LLVM values (a mixin of FunctionCodegen).

Arithmetic follows TVM (division: codegen_division.py).
Comparisons give i1 (vectors of i1); float comparisons are ordered except `!=`,
which is true for NaN as in C and numpy. Min/Max are selects, as TVM emits them.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..diagnostics import UserError
from ..ir import dtype as dt
from ..ir import tir
from .constant_fold import fold_constants
from .llvm_types import I1, I32, I64, alignment, constant, is_signed, memory_type, splat_mask, undef_vector, value_type
from .value_numbering import numbered, value_key

_ICMP = {tir.EQ: "==", tir.NE: "!=", tir.LT: "<", tir.LE: "<=", tir.GT: ">", tir.GE: ">="}


def contiguous_ramp(index: tir.PrimExpr) -> bool:
    """Whether `index` is a vector index of consecutive elements (a ramp of stride 1)."""
    return isinstance(index, tir.Ramp) and isinstance(index.stride, tir.IntImm) and index.stride.value == 1


class ExprCodegen:
    """Needs from its host class: builder, module, vars, float_flags, buffer_pointer(), store_contiguous()."""

    builder: ir.IRBuilder
    module: ir.Module
    vars: dict

    def error(self, message: str) -> UserError:
        return UserError(f"codegen: kernel '{self.kernel_name}': {message}")

    # -- dispatch ------------------------------------------------------------------

    def emit(self, expr: tir.PrimExpr) -> ir.Value:
        for cls in type(expr).__mro__:
            method = getattr(self, "expr_" + cls.__name__, None)
            if method is not None:
                return method(expr)
        raise self.error(f"cannot generate code for {type(expr).__name__}")

    def expr_Var(self, var: tir.Var) -> ir.Value:
        try:
            return self.vars[var]
        except KeyError:
            raise self.error(f"variable '{var.name}' is used but never defined") from None

    def expr_IntImm(self, imm: tir.IntImm) -> ir.Value:
        return constant(imm.dtype, imm.value)

    def expr_FloatImm(self, imm: tir.FloatImm) -> ir.Value:
        return constant(imm.dtype, imm.value)

    def expr_StringImm(self, imm: tir.StringImm) -> ir.Value:
        return self.string_constant(imm.value)

    def string_constant(self, text: str) -> ir.Value:
        """A private NUL-terminated constant, one per distinct text in the module."""
        strings = self.module.__dict__.setdefault("_relax_strings", {})
        if text not in strings:
            data = bytearray(text.encode("utf-8")) + b"\0"
            array = ir.ArrayType(ir.IntType(8), len(data))
            variable = ir.GlobalVariable(self.module, array, f".str.{len(strings)}")
            variable.initializer = ir.Constant(array, data)
            variable.global_constant = True
            variable.linkage = "private"
            strings[text] = variable
        return strings[text]

    # -- arithmetic ----------------------------------------------------------------

    def _float_op(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        result = getattr(self.builder, op)(a, b)
        result.flags.extend(self.float_flags)
        return result

    def _int_op(self, op: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
        folded = fold_constants(op, a, b, is_signed(dtype))
        if folded is not None:
            return folded

        def build():
            result = getattr(self.builder, op)(a, b)
            # As TVM: signed arithmetic of 32 and 64 bits does not wrap (lets LLVM widen indices).
            if is_signed(dtype) and dt.bits(dtype) >= 32:
                result.flags.append("nsw")
            return result

        if not isinstance(a.type, ir.IntType):
            return build()
        return numbered(self, (op, dtype, value_key(a), value_key(b)), build)

    def operands(self, node: tir.BinaryOp) -> tuple[ir.Value, ir.Value]:
        """Both operands, integers of two widths extended to the wider, as TVM's binary
        operators promote int32 with int64: a schedule may index an int64 loop (an extent
        past 2^31) with int32 constants."""
        a, b = self.emit(node.a), self.emit(node.b)
        width_a, width_b = _int_width(a.type), _int_width(b.type)
        if width_a and width_b and width_a != width_b:
            if width_a < width_b:
                a = self._widen(a, node.a.dtype, b.type)
            else:
                b = self._widen(b, node.b.dtype, a.type)
        return a, b

    def _widen(self, value: ir.Value, dtype: str, to: ir.Type) -> ir.Value:
        return self.builder.sext(value, to) if is_signed(dtype) else self.builder.zext(value, to)

    def _binary(self, node: tir.BinaryOp, float_op: str, int_op: str) -> ir.Value:
        a, b = self.operands(node)
        if dt.is_float(node.dtype):
            return self._float_op(float_op, a, b)
        return self._int_op(int_op, a, b, node.dtype)

    def expr_Add(self, node):
        return self._binary(node, "fadd", "add")

    def expr_Sub(self, node):
        return self._binary(node, "fsub", "sub")

    def expr_Mul(self, node):
        return self._binary(node, "fmul", "mul")

    def _compare(self, op: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
        if dt.is_float(dtype):
            if op == "!=":
                return self.builder.fcmp_unordered(op, a, b)
            return self.builder.fcmp_ordered(op, a, b)
        if is_signed(dtype):
            return self.builder.icmp_signed(op, a, b)
        return self.builder.icmp_unsigned(op, a, b)

    def expr_Min(self, node):
        a, b = self.operands(node)
        return self.builder.select(self._compare("<", a, b, node.dtype), a, b)

    def expr_Max(self, node):
        a, b = self.operands(node)
        return self.builder.select(self._compare(">", a, b, node.dtype), a, b)

    def expr_CompareOp(self, node):
        if isinstance(node, (tir.And, tir.Or)):
            a, b = self.as_bool(self.emit(node.a)), self.as_bool(self.emit(node.b))
            return self.builder.and_(a, b) if isinstance(node, tir.And) else self.builder.or_(a, b)
        return self._compare(_ICMP[type(node)], *self.operands(node), node.a.dtype)

    def expr_Not(self, node):
        return self.builder.not_(self.as_bool(self.emit(node.a)))

    def as_bool(self, value: ir.Value) -> ir.Value:
        element = value.type.element if isinstance(value.type, ir.VectorType) else value.type
        if element == I1:
            return value
        return self.builder.icmp_unsigned("!=", value, ir.Constant(value.type, None))

    def expr_Select(self, node):
        condition = self.as_bool(self.emit(node.condition))
        return self.builder.select(condition, self.emit(node.true_value), self.emit(node.false_value))

    def expr_Let(self, node):
        self.vars[node.var] = self.emit(node.value)
        try:
            return self.emit(node.body)
        finally:
            del self.vars[node.var]

    # -- casts ---------------------------------------------------------------------

    def expr_Cast(self, node):
        return self.cast(self.emit(node.value), node.value.dtype, node.dtype)

    def cast(self, value: ir.Value, source: str, target: str) -> ir.Value:
        to_type = value_type(target)
        if source == target or value.type == to_type and dt.kind(source) == dt.kind(target):
            return value
        b = self.builder
        if dt.is_bool(target):
            if dt.is_float(source):
                return b.fcmp_unordered("!=", value, ir.Constant(value.type, None))
            return self.as_bool(value)
        if dt.is_float(source) and dt.is_float(target):
            if dt.bits(source) == dt.bits(target):
                return value
            return b.fpext(value, to_type) if dt.bits(target) > dt.bits(source) else b.fptrunc(value, to_type)
        if dt.is_float(source):
            return b.fptosi(value, to_type) if is_signed(target) else b.fptoui(value, to_type)
        if dt.is_float(target):
            return b.sitofp(value, to_type) if is_signed(source) else b.uitofp(value, to_type)
        from_bits, to_bits = dt.bits(source), dt.bits(target)
        if to_bits < from_bits:
            return b.trunc(value, to_type)
        if to_bits > from_bits:
            return b.sext(value, to_type) if is_signed(source) else b.zext(value, to_type)
        return value

    # -- vectors -------------------------------------------------------------------

    def broadcast(self, value: ir.Value, lanes: int) -> ir.Value:
        vector_type = ir.VectorType(value.type, lanes)
        single = self.builder.insert_element(undef_vector(vector_type), value, ir.Constant(I32, 0))
        return self.builder.shuffle_vector(single, undef_vector(vector_type), splat_mask(lanes))

    def expr_Broadcast(self, node):
        return self.broadcast(self.emit(node.value), node.lanes)

    def expr_Shuffle(self, node):
        """Lanes picked by constant indices from the concatenation of the vectors."""
        vectors = [self.emit(v) for v in node.vectors]
        if (len(vectors) in (1, 2) and len(node.indices) > 1 and all(isinstance(i, tir.IntImm) for i in node.indices)
                and isinstance(vectors[0].type, ir.VectorType) and all(v.type == vectors[0].type for v in vectors)):
            # One shufflevector (a transpose block's swaps): LLVM picks the instruction.
            second = vectors[1] if len(vectors) == 2 else undef_vector(vectors[0].type)
            mask = ir.Constant(ir.VectorType(I32, len(node.indices)), [ir.Constant(I32, i.value) for i in node.indices])
            return self.builder.shuffle_vector(vectors[0], second, mask)
        element = vectors[0].type.element if isinstance(vectors[0].type, ir.VectorType) else vectors[0].type
        lanes = []
        for vector in vectors:
            if isinstance(vector.type, ir.VectorType):
                lanes += [self.builder.extract_element(vector, ir.Constant(I32, k)) for k in range(vector.type.count)]
            else:
                lanes.append(vector)
        result = undef_vector(ir.VectorType(element, len(node.indices)))
        for position, index in enumerate(node.indices):
            if not isinstance(index, tir.IntImm):
                raise self.error("a Shuffle index must be a constant")
            result = self.builder.insert_element(result, lanes[index.value], ir.Constant(I32, position))
        return result if len(node.indices) > 1 else lanes[node.indices[0].value]

    def expr_Ramp(self, node):
        base, stride = self.emit(node.base), self.emit(node.stride)
        steps = constant(dt.with_lanes(node.base.dtype, node.lanes), 0)
        steps = ir.Constant(steps.type, [ir.Constant(base.type, i) for i in range(node.lanes)])
        offsets = self.builder.mul(self.broadcast(stride, node.lanes), steps)
        return self.builder.add(self.broadcast(base, node.lanes), offsets)

    # -- memory --------------------------------------------------------------------

    def _index64(self, index: ir.Value, dtype: str) -> ir.Value:
        if index.type == I64 or isinstance(index.type, ir.VectorType) and index.type.element == I64:
            return index
        target = I64 if not isinstance(index.type, ir.VectorType) else ir.VectorType(I64, index.type.count)
        return self.builder.sext(index, target) if is_signed(dtype) else self.builder.zext(index, target)

    def element_pointer(self, buffer: tir.Buffer, index: ir.Value) -> ir.Value:
        return self.pointer_at(self.buffer_pointer(buffer), memory_type(buffer.dtype), index)

    def pointer_at(self, base: ir.Value, element: ir.Type, index: ir.Value) -> ir.Value:
        """`base` plus `index` elements of `element`, built once per block (value_numbering.py)."""
        return numbered(self, ("gep", id(base), str(element), value_key(index)),
                        lambda: self.builder.gep(base, [index], inbounds=True, source_etype=element))

    def index_pointer(self, buffer: tir.Buffer, index: tir.PrimExpr) -> ir.Value:
        """The address of `buffer[index]` (a scalar index expression)."""
        return self.element_pointer(buffer, self._index64(self.emit(index), index.dtype))

    def access_pointer(self, buffer: tir.Buffer, start: tir.PrimExpr) -> ir.Value:
        """The address of `buffer[start]` (a scalar index): from a base hoisted out of an
        unrolled loop where there is one (hoisted_bases.py)."""
        pointer = self.hoisted_pointer(buffer, start) if self.hoisted else None
        return pointer if pointer is not None else self.index_pointer(buffer, start)

    def _single_index(self, buffer: tir.Buffer, indices) -> tir.PrimExpr:
        if len(indices) != 1:
            raise self.error(f"buffer '{buffer.name}' is accessed with {len(indices)} indices; "
                             "codegen expects flattened (1-D) accesses")
        return indices[0]

    def expr_BufferLoad(self, node: tir.BufferLoad):
        buffer, index = node.buffer, self._single_index(node.buffer, node.indices)
        element, lanes = buffer.dtype, dt.lanes(node.dtype)
        if lanes > 1 and contiguous_ramp(index):
            vector = ir.VectorType(memory_type(element), lanes)
            value = self.builder.load(self.access_pointer(buffer, index.base), typ=vector, align=alignment(element))
        elif lanes > 1:
            offsets = self._index64(self.emit(index), index.dtype)
            value = undef_vector(ir.VectorType(memory_type(element), lanes))
            for lane in range(lanes):
                offset = self.builder.extract_element(offsets, ir.Constant(I32, lane))
                item = self.builder.load(self.element_pointer(buffer, offset), typ=memory_type(element),
                                         align=alignment(element))
                value = self.builder.insert_element(value, item, ir.Constant(I32, lane))
        else:
            value = self.builder.load(self.access_pointer(buffer, index), typ=memory_type(element),
                                      align=alignment(element))
        return self.as_bool(value) if dt.is_bool(element) else value

    def store(self, buffer: tir.Buffer, index: tir.PrimExpr, value: ir.Value) -> None:
        element = buffer.dtype
        if dt.is_bool(element):
            target = memory_type(element)
            if isinstance(value.type, ir.VectorType):
                target = ir.VectorType(target, value.type.count)
            value = self.builder.zext(value, target)
        lanes = value.type.count if isinstance(value.type, ir.VectorType) else 1
        if lanes > 1 and contiguous_ramp(index):
            self.store_contiguous(buffer, index, self.access_pointer(buffer, index.base), value, alignment(element))
        elif lanes > 1:
            offsets = self._index64(self.emit(index), index.dtype)
            for lane in range(lanes):
                offset = self.builder.extract_element(offsets, ir.Constant(I32, lane))
                item = self.builder.extract_element(value, ir.Constant(I32, lane))
                self.builder.store(item, self.element_pointer(buffer, offset), align=alignment(element))
        else:
            self.builder.store(value, self.access_pointer(buffer, index), align=alignment(element))

    # -- calls ---------------------------------------------------------------------

    def call_llvm_intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        """Calls an intrinsic overloaded on its first argument's type (llvm.floor.v4f32, ...)."""
        value_ty = args[0].type
        function = self.declare(f"{name}.{_type_suffix(value_ty)}", ir.FunctionType(value_ty, [a.type for a in args]))
        return self.builder.call(function, args)

    def declare(self, name: str, function_type: ir.FunctionType) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, function_type, name)


def _type_suffix(llvm_type: ir.Type) -> str:
    if isinstance(llvm_type, ir.VectorType):
        return f"v{llvm_type.count}{_type_suffix(llvm_type.element)}"
    if isinstance(llvm_type, ir.HalfType):
        return "f16"
    if isinstance(llvm_type, ir.FloatType):
        return "f32"
    if isinstance(llvm_type, ir.DoubleType):
        return "f64"
    if isinstance(llvm_type, ir.IntType):
        return f"i{llvm_type.width}"
    raise TypeError(f"no intrinsic suffix for {llvm_type}")


def _int_width(llvm_type: ir.Type) -> int:
    """The bits of an integer type or of a vector of integers; 0 for anything else."""
    element = llvm_type.element if isinstance(llvm_type, ir.VectorType) else llvm_type
    return element.width if isinstance(element, ir.IntType) else 0
