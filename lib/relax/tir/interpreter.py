"""A reference interpreter for TIR: slow, exact, TVM's semantics (see semantics.py).

    run(prim_func, a, b, c)      # numpy arrays for buffer parameters, written in place

It runs both forms: schedulable TIR (blocks with iterators, `init`, predicates and
`alloc_buffers`) and the lowered form of tir/__init__.py, so a pass is checked by
running its input and output on the same random arrays. Memory is keyed by a
buffer's `data` variable; a buffer access turns its indices into a flat offset
(row-major, or by the buffer's strides), so a flattened view and the original
buffer share storage exactly as they do in compiled code. Symbolic shape variables
bind from the argument shapes. New allocations start as NaN (floats) or a fixed
junk pattern (integers), so reading memory before writing it shows.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir import tir
from . import semantics


class InterpreterError(Exception):
    """The program did something the interpreter cannot or must not do."""


_BINARY = {cls.__name__ for cls in (
    tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Mod, tir.FloorDiv, tir.FloorMod, tir.Min, tir.Max,
    tir.EQ, tir.NE, tir.LT, tir.LE, tir.GT, tir.GE, tir.And, tir.Or)}


class Interpreter:
    def __init__(self, step_limit: int | None = None) -> None:
        self.env: dict = {}
        self.storage: dict = {}
        self.steps_left = step_limit

    # -- expressions ------------------------------------------------------------------
    def eval(self, expr):
        name = type(expr).__name__
        if name in _BINARY:
            return semantics.binary(name, self.eval(expr.a), self.eval(expr.b), expr.a.dtype)
        method = getattr(self, "eval_" + name, None)
        if method is None:
            raise InterpreterError(f"cannot evaluate {name}")
        return method(expr)

    def eval_Var(self, var):
        try:
            return self.env[var]
        except KeyError:
            raise InterpreterError(f"variable '{var.name}' is unbound") from None

    eval_SizeVar = eval_Var

    def eval_IntImm(self, imm):
        return semantics.wrap(imm.value, imm.dtype)

    def eval_FloatImm(self, imm):
        return semantics.wrap(imm.value, imm.dtype)

    def eval_StringImm(self, imm):
        return imm.value

    def eval_Cast(self, cast):
        return semantics.cast(self.eval(cast.value), cast.dtype)

    def eval_Not(self, node):
        value = self.eval(node.a)
        return np.logical_not(value) if isinstance(value, np.ndarray) else not value

    def eval_Select(self, node):
        condition = self.eval(node.condition)
        true_value, false_value = self.eval(node.true_value), self.eval(node.false_value)
        if isinstance(condition, np.ndarray):
            return np.where(condition, true_value, false_value)
        return true_value if condition else false_value

    def eval_Let(self, node):
        self.env[node.var] = self.eval(node.value)
        return self.eval(node.body)

    def eval_Ramp(self, node):
        base, stride = self.eval(node.base), self.eval(node.stride)
        return semantics.wrap(np.array([base + i * stride for i in range(node.lanes)]), node.dtype)

    def eval_Broadcast(self, node):
        return semantics.wrap(np.full(node.lanes, self.eval(node.value)), node.dtype)

    def eval_BufferLoad(self, load):
        memory, offset = self._address(load.buffer, load.indices)
        value = memory[offset]
        if isinstance(value, np.ndarray):
            return value
        return semantics.wrap(value.item() if dt.is_int(load.dtype) or dt.is_uint(load.dtype)
                              or dt.is_bool(load.dtype) else value, load.dtype)

    def eval_Shuffle(self, node):
        lanes = np.concatenate([np.atleast_1d(self.eval(v)) for v in node.vectors])
        picked = lanes[[self.eval(i) for i in node.indices]]
        return picked if len(picked) > 1 else semantics.wrap(picked[0].item(), node.dtype)

    def eval_Call(self, call):
        if call.op == "tir.tvm_storage_sync":
            raise InterpreterError("a barrier needs threads running together; "
                                   "the interpreter runs threads one after another")
        if call.op == "tir.assume":
            return True
        if call.op == "tir.if_then_else":
            condition = self.eval(call.args[0])
            return self.eval(call.args[1] if condition else call.args[2])
        if call.op == semantics.CHECKED_INDEX:
            return self._checked_index(call)
        args = [self.eval(arg) for arg in call.args]
        with np.errstate(all="ignore"):
            if call.op == "tir.fma":  # a * b + c; codegen may fuse it, the interpreter rounds twice
                return semantics.wrap(args[0] * args[1] + args[2], call.dtype)
            if call.op in semantics.UNARY:
                return semantics.cast(semantics.UNARY[call.op](args[0]), call.dtype) \
                    if dt.is_bool(call.dtype) else semantics.wrap(semantics.UNARY[call.op](args[0]), call.dtype)
            if call.op in semantics.BINARY:
                return semantics.wrap(semantics.BINARY[call.op](args[0], args[1]), call.dtype)
        raise InterpreterError(f"no interpreter rule for the intrinsic '{call.op}'")

    def _checked_index(self, call):
        """A position from index data, or the op's error when the index is out of range."""
        position, bad = semantics.checked_index(self.eval(call.args[0]), self.eval(call.args[1]))
        if bad is not None:
            raise InterpreterError(semantics.index_out_of_range(*bad, self.eval(call.args[2])))
        return semantics.wrap(position, call.dtype)

    # -- memory -----------------------------------------------------------------------
    def _address(self, buffer, indices):
        key = buffer.data if buffer.data is not None else buffer
        if key not in self.storage:
            raise InterpreterError(f"buffer '{buffer.name}' has no storage here")
        offset = self._offset(buffer, indices)
        memory = self.storage[key]
        bad = np.any((np.asarray(offset) < 0) | (np.asarray(offset) >= memory.size))
        if bad:
            raise InterpreterError(f"access to '{buffer.name}' at offset {offset} is outside "
                                   f"its {memory.size} elements")
        return memory, offset

    def _offset(self, buffer, indices):
        """The flat element offset of `indices` in `buffer`: row-major, or by its strides."""
        values = [self.eval(index) for index in indices]
        if len(values) != len(buffer.shape):
            raise InterpreterError(f"buffer '{buffer.name}' has {len(buffer.shape)} dimensions, "
                                   f"accessed with {len(values)} indices")
        if buffer.strides:
            strides = [self.eval(s) for s in buffer.strides]
        else:
            strides, running = [], 1
            for extent in reversed(buffer.shape):
                strides.insert(0, running)
                running = running * self.eval(extent)
        offset = self.eval(buffer.elem_offset) if buffer.elem_offset is not None else 0
        for value, stride in zip(values, strides):
            offset = offset + value * stride
        return offset

    def _allocate(self, key, dtype: str, count: int) -> None:
        scalar = dt.element(dtype)
        if scalar not in dt.SUPPORTED_NUMPY:
            raise InterpreterError(f"cannot hold {scalar} values: numpy has no such type")
        if dt.is_float(scalar):
            self.storage[key] = np.full(count, np.nan, dtype=dt.to_numpy(scalar))
        else:
            self.storage[key] = np.full(count, 0x5A if not dt.is_bool(scalar) else False,
                                        dtype=dt.to_numpy(scalar))

    # -- statements ---------------------------------------------------------------------
    def exec(self, stmt) -> None:
        if self.steps_left is not None:
            self.steps_left -= 1
            if self.steps_left < 0:
                raise InterpreterError("the step limit was reached")
        method = getattr(self, "exec_" + type(stmt).__name__, None)
        if method is None:
            raise InterpreterError(f"cannot execute {type(stmt).__name__}")
        method(stmt)

    def exec_SeqStmt(self, stmt):
        for child in stmt.seq:
            self.exec(child)

    def exec_BufferStore(self, store):
        memory, offset = self._address(store.buffer, store.indices)
        memory[offset] = self.eval(store.value)

    def exec_For(self, loop):
        start, extent = self.eval(loop.min), self.eval(loop.extent)
        for value in range(start, start + extent):
            self.env[loop.loop_var] = semantics.wrap(value, loop.loop_var.dtype)
            self.exec(loop.body)

    def exec_While(self, loop):
        while self.eval(loop.condition):
            self.exec(loop.body)

    def exec_IfThenElse(self, stmt):
        if self.eval(stmt.condition):
            self.exec(stmt.then_case)
        elif stmt.else_case is not None:
            self.exec(stmt.else_case)

    def exec_LetStmt(self, stmt):
        self.env[stmt.var] = self.eval(stmt.value)
        self.exec(stmt.body)

    def exec_Allocate(self, stmt):
        count = 1
        for extent in stmt.extents:
            count *= self.eval(extent)
        self._allocate(stmt.buffer_var, stmt.dtype, count)
        self.exec(stmt.body)

    def exec_DeclBuffer(self, stmt):
        key = stmt.buffer.data if stmt.buffer.data is not None else stmt.buffer
        if key not in self.storage:
            raise InterpreterError(f"DeclBuffer '{stmt.buffer.name}' has no storage behind it")
        self.exec(stmt.body)

    def exec_AttrStmt(self, stmt):
        if stmt.attr_key in ("thread_extent", "virtual_thread") and isinstance(stmt.node, tir.IterVar):
            # Threads run one after another: exact for kernels without barriers.
            for value in range(self.eval(stmt.value)):
                self.env[stmt.node.var] = value
                self.exec(stmt.body)
            return
        self.exec(stmt.body)

    def exec_AssertStmt(self, stmt):
        if not self.eval(stmt.condition):
            raise InterpreterError(f"assertion failed: {self.eval(stmt.message)}")
        self.exec(stmt.body)

    def exec_Evaluate(self, stmt):
        self.eval(stmt.value)

    def exec_BlockRealize(self, realize):
        block = realize.block
        if block.match_buffers:
            raise InterpreterError(f"block '{block.name_hint}': match_buffer is not supported")
        if not self.eval(realize.predicate):
            return
        values = [self.eval(value) for value in realize.iter_values]
        for iter_var, value in zip(block.iter_vars, values):
            self.env[iter_var.var] = value
        for buffer in block.alloc_buffers:
            count = 1
            for extent in buffer.shape:
                count *= self.eval(extent)
            self._allocate(buffer.data if buffer.data is not None else buffer, buffer.dtype, count)
        if block.init is not None and all(
            self.env[iv.var] == self.eval(iv.dom.min)
            for iv in block.iter_vars if iv.iter_type == "CommReduce"
        ):
            self.exec(block.init)
        self.exec(block.body)

    # -- functions -----------------------------------------------------------------------
    def bind_arguments(self, func: tir.PrimFunc, args) -> None:
        if len(args) != len(func.params):
            raise InterpreterError(f"the function takes {len(func.params)} arguments, got {len(args)}")
        buffers = []
        for param, arg in zip(func.params, args):
            buffer = func.buffer_of(param)
            if buffer is None:
                self.env[param] = semantics.wrap(arg, param.dtype)
                continue
            buffers.append((buffer, arg))
            # Shape variables bind first, so any buffer may use them in an expression.
            for extent, size in zip(buffer.shape, getattr(arg, "shape", ())):
                if isinstance(extent, tir.Var) and extent not in self.env:
                    self.env[extent] = size
        for buffer, arg in buffers:
            self._bind_buffer(buffer, arg)

    def _bind_buffer(self, buffer, array) -> None:
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise InterpreterError(f"buffer '{buffer.name}' needs a C-contiguous numpy array")
        if array.dtype != dt.to_numpy(buffer.dtype):
            raise InterpreterError(f"buffer '{buffer.name}' is {buffer.dtype}, got {array.dtype}")
        if array.ndim != len(buffer.shape):
            raise InterpreterError(f"buffer '{buffer.name}' has {len(buffer.shape)} dimensions, "
                                   f"got an array of shape {array.shape}")
        for extent, size in zip(buffer.shape, array.shape):
            if self.eval(extent) != size:
                raise InterpreterError(f"buffer '{buffer.name}' expects shape "
                                       f"{[str(e) for e in buffer.shape]}, got {array.shape}")
        self.storage[buffer.data if buffer.data is not None else buffer] = array.reshape(-1)


def run(func: tir.PrimFunc, *args, step_limit: int | None = None) -> None:
    """Runs `func` on numpy arrays (buffer parameters) and numbers (scalar parameters);
    with `step_limit`, stops with an InterpreterError after that many statements."""
    machine = Interpreter(step_limit)
    machine.bind_arguments(func, args)
    with np.errstate(all="ignore"):
        machine.exec(func.body)
