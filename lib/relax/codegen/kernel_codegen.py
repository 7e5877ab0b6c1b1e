"""One lowered PrimFunc to LLVM: the kernel body, its ABI entry point and its metadata.

For a kernel `add` the module gets

    internal i32 @add.impl(ptr noalias A, ..., <scalar params>, <symbolic sizes>, ptr ctx)
    i32 @relaxk_add(ptr buffers, ptr scalars, ptr ctx)     the ABI entry (runtime/kernels/abi.py)

The entry checks the context's ABI version and workspace size, unpacks the
argument arrays and calls the body, which LLVM then inlines. KernelInfo records
what the loader checks: each parameter's dtype and shape expressions, the
symbolic sizes in the order they are passed, and the workspace size expression.
"""

from __future__ import annotations

import dataclasses

import llvmlite.ir as ir

from ..diagnostics import UserError
from ..ir import dtype as dt
from ..ir import tir
from ..records import record
from ..runtime.kernels import abi
from ..runtime.kernels.kernel_signatures import DIGEST_BYTES, signature_digest, signature_symbol
from ..runtime.kernels.metadata import KernelInfo, ParamInfo
from ..tir.loop_nests import statements
from .codegen_division import DivisionCodegen
from .codegen_expr import ExprCodegen
from .hoisted_bases import HoistedBases
from .codegen_intrin import IntrinsicCodegen
from .codegen_stmt import StmtCodegen
from .llvm_types import I32, I64, POINTER, alignment, scalar_type
from .nontemporal import NontemporalCodegen
from .parallel import ParallelCodegen, referenced_keys
from .shape_expr import shape_to_json, workspace_plan
from .unroll_policy import rolled_loops

CONTEXT_TYPE = ir.LiteralStructType([{"i32": I32, "i64": I64, "ptr": POINTER}[t] for _, t in abi.CONTEXT_LAYOUT])

# Float add/sub/mul may be reassociated (lets LLVM vectorize reductions); no other
# fast-math assumption is made, so NaN and infinity behave as in numpy.
DEFAULT_FLOAT_FLAGS = ("reassoc",)


class FunctionCodegen(ExprCodegen, DivisionCodegen, HoistedBases, IntrinsicCodegen, StmtCodegen, ParallelCodegen,
                      NontemporalCodegen):
    """Emits one LLVM function body from TIR; `child` makes one for an outlined worker."""

    def __init__(self, module: ir.Module, kernel_name: str, function: ir.Function, context: ir.Value,
                 float_flags=DEFAULT_FLOAT_FLAGS, in_parallel: bool = False):
        self.module = module
        self._kernel_name = kernel_name
        self.name_reads = [0]  # shared with the outlined workers' codegens (child)
        self.function = function
        self.context = context
        self.context_type = CONTEXT_TYPE
        self.float_flags = tuple(float_flags)
        self.in_parallel = in_parallel
        self.noalias = False
        self.parallel_used = False  # set by ParallelCodegen when a loop is outlined onto threads
        self.rolled_loops: frozenset[int] = frozenset()  # ids of serial loops kept rolled (unroll_policy.py)
        self.vars: dict = {}
        self.workspace_offsets: dict = {}
        self.int_values: dict = {}  # value_numbering.py
        self.hoisted: dict = {}  # hoisted_bases.py
        self.builder = ir.IRBuilder(function.append_basic_block("entry"))

    @property
    def kernel_name(self) -> str:
        """The kernel's name, as messages spell it. Reads are counted (name_reads): a body
        that never named its kernel can serve other names too (generate_forwarding_kernel)."""
        self.name_reads[0] += 1
        return self._kernel_name

    def child(self, function: ir.Function, context: ir.Value) -> "FunctionCodegen":
        child = FunctionCodegen(self.module, self._kernel_name, function, context, self.float_flags, in_parallel=True)
        child.noalias = self.noalias
        child.name_reads = self.name_reads
        child.rolled_loops = self.rolled_loops
        return child

    def buffer_pointer(self, buffer: tir.Buffer) -> ir.Value:
        key = buffer.data if buffer.data is not None else ("buffer", buffer.name)
        pointer = self.vars.get(key)
        if pointer is None:
            raise self.error(f"buffer '{buffer.name}' is used but neither a parameter nor allocated")
        return pointer


def symbolic_vars(func: tir.PrimFunc) -> list[tir.Var]:
    """Variables in parameter buffer shapes that are not parameters, in first-use order, one per
    name: the kernel's trailing int64 parameters, in this order on every target (KernelInfo
    records it; the CUDA code generator passes them the same way)."""
    params = {p.name for p in func.params}
    found: dict[str, tir.Var] = {}
    for _, buffer in func.buffer_map:
        for key in referenced_keys(buffer.shape, {}):
            if isinstance(key, tir.Var) and key.name not in params:
                found.setdefault(key.name, key)
    return list(found.values())


def has_noalias(func: tir.PrimFunc) -> bool:
    """TVM's `tir.noalias` function attribute (spelled `tirx.noalias` by newer printers)."""
    attrs = func.attrs or {}
    return bool(attrs.get("tir.noalias", attrs.get("tirx.noalias", False)))


def written_buffers(func: tir.PrimFunc) -> tuple[str, ...]:
    """Names of the buffer parameters some BufferStore writes to."""
    stored = set()
    for stmt in statements(func.body):  # stores are statements: expressions need no walk
        if isinstance(stmt, tir.BufferStore):
            buffer = stmt.buffer
            stored.add(buffer.data if buffer.data is not None else ("buffer", buffer.name))
    names = []
    for param, buffer in func.buffer_map:
        if buffer.data in stored or ("buffer", buffer.name) in stored or param in stored:
            names.append(param.name)
    return tuple(names)


def kernel_info(name: str, func: tir.PrimFunc, symbolic: list[tir.Var], workspace, parallel: bool) -> KernelInfo:
    params = []
    for param in func.params:
        buffer = func.buffer_of(param)
        if buffer is not None:
            params.append(ParamInfo(param.name, "buffer", buffer.dtype, tuple(shape_to_json(d) for d in buffer.shape)))
        else:
            params.append(ParamInfo(param.name, "scalar", param.dtype))
    return KernelInfo(name=name, symbol=abi.kernel_symbol(name), abi_version=abi.KERNEL_ABI_VERSION,
                      params=tuple(params), symbolic_vars=tuple(v.name for v in symbolic),
                      workspace_bytes=shape_to_json(workspace), parallel=parallel,
                      noalias=has_noalias(func), writes=written_buffers(func),
                      ret_dtype=func.ret_type if func.ret_type not in (None, "void", "") else "")


@record
class GeneratedKernel:
    """A kernel added to a module, with what another name for the same body needs."""

    info: KernelInfo
    func: tir.PrimFunc  # the lowered PrimFunc the body was generated from
    workspace: tir.PrimExpr  # its workspace size expression
    names_itself: bool  # whether a run-time message of the body spells the kernel's name


def generate_kernel(module: ir.Module, name: str, func: tir.PrimFunc,
                    float_flags=DEFAULT_FLOAT_FLAGS) -> KernelInfo:
    """Adds `name`'s body and ABI entry to `module`; returns its metadata."""
    return generate_shareable_kernel(module, name, func, float_flags).info


def _signature(name: str, func: tir.PrimFunc):
    """(buffer parameters, scalar parameters, symbolic sizes) of a kernel, in ABI order."""
    buffers = [(p, func.buffer_of(p)) for p in func.params if func.buffer_of(p) is not None]
    scalars = [p for p in func.params if func.buffer_of(p) is None]
    for param in scalars:
        if param.dtype == "handle":
            raise UserError(f"codegen: kernel '{name}': parameter '{param.name}' is a handle without a buffer")
    return buffers, scalars, symbolic_vars(func)


def generate_shareable_kernel(module: ir.Module, name: str, func: tir.PrimFunc,
                              float_flags=DEFAULT_FLOAT_FLAGS) -> GeneratedKernel:
    """generate_kernel, keeping what generate_forwarding_kernel needs to give the body other names."""
    buffers, scalars, symbolic = _signature(name, func)
    arg_types = ([POINTER] * len(buffers) + [scalar_type(p.dtype) for p in scalars]
                 + [scalar_type(v.dtype) for v in symbolic] + [POINTER])
    impl = ir.Function(module, ir.FunctionType(I32, arg_types), f"{name}.impl")
    impl.linkage = "internal"
    noalias = has_noalias(func)
    for argument, (_, buffer) in zip(impl.args, buffers):
        if noalias:
            argument.add_attribute("noalias")
        argument.attributes.align = alignment(buffer.dtype)
    codegen = FunctionCodegen(module, name, impl, impl.args[-1], float_flags)
    codegen.noalias = noalias
    arguments = iter(impl.args)
    for param, buffer in buffers:
        pointer = next(arguments)
        codegen.vars[param] = pointer
        codegen.vars[buffer.data if buffer.data is not None else ("buffer", buffer.name)] = pointer
    for param in scalars + symbolic:
        codegen.vars[param] = next(arguments)
    for var in symbolic:  # shapes may spell one size with several Var objects of one name
        for _, buffer in func.buffer_map:
            for key in referenced_keys(buffer.shape, {}):
                if isinstance(key, tir.Var) and key.name == var.name:
                    codegen.vars.setdefault(key, codegen.vars[var])
    codegen.workspace_offsets, workspace = workspace_plan(func.body)
    codegen.rolled_loops = rolled_loops(func.body)
    codegen.emit_stmt(func.body)
    if not codegen.builder.block.is_terminated:
        codegen.builder.ret(ir.Constant(I32, 0))
    names_itself = codegen.name_reads[0] > 0
    _entry(module, name, buffers, scalars, symbolic, workspace, codegen.vars, impl=impl)
    return GeneratedKernel(kernel_info(name, func, symbolic, workspace, codegen.parallel_used), func, workspace,
                           names_itself)


def generate_forwarding_kernel(module: ir.Module, name: str, shared: GeneratedKernel, func: tir.PrimFunc) -> KernelInfo:
    """Adds kernel `name`, whose PrimFunc `func` equals `shared`'s but for its name and the names
    of its buffer parameters (kernel_dedup.py): an ABI entry that checks the call as `name`'s
    own entry would, with its own messages, then tail-calls `shared`'s entry. Returns `name`'s
    metadata: shared's, with `func`'s name for each parameter."""
    if shared.names_itself:
        raise ValueError(f"codegen: the body of '{shared.info.name}' names its kernel; '{name}' cannot share it")
    buffers, scalars, symbolic = _signature(name, shared.func)
    target = module.get_global(shared.info.symbol)
    _entry(module, name, buffers, scalars, symbolic, shared.workspace, referenced_keys(shared.workspace, {}),
           forward=target)
    return renamed_info(shared.info, name, func)


def renamed_info(info: KernelInfo, name: str, func: tir.PrimFunc) -> KernelInfo:
    """`info` for kernel `name`, whose parameters are `func`'s, in the same order, named as `func` names them."""
    names = [param.name for param in func.params]
    if len(names) != len(info.params):
        raise ValueError(f"codegen: '{name}' has {len(names)} parameters, its shared body {len(info.params)}")
    own_name = {param.name: mine for param, mine in zip(info.params, names)}
    return dataclasses.replace(info, name=name, symbol=abi.kernel_symbol(name),
                               params=tuple(dataclasses.replace(param, name=mine)
                                            for param, mine in zip(info.params, names)),
                               writes=tuple(own_name[written] for written in info.writes))


def emit_signature(module: ir.Module, info: KernelInfo) -> None:
    """`@__relax_signature_<symbol>`: the SHA-256 of the kernel's canonical signature, a
    constant the reader compares with the manifest before LLVM loads the object, so that
    another kernel's code under this kernel's metadata is refused (kernel_signatures.py).
    External and named, so that neither the optimizer nor the linker drops or merges it."""
    array = ir.ArrayType(ir.IntType(8), DIGEST_BYTES)
    variable = ir.GlobalVariable(module, array, signature_symbol(info))
    variable.global_constant = True
    variable.initializer = ir.Constant(array, bytearray(signature_digest(info)))
    variable.align = 1


def _entry(module, name, buffers, scalars, symbolic, workspace, body_keys, impl=None, forward=None) -> None:
    """The ABI entry of kernel `name`: checks the context, unpacks the argument arrays and
    calls `impl`, or (`forward`) checks the same and passes the arrays on to another entry.
    `body_keys`: the variables the body and the workspace expression refer to."""
    entry = ir.Function(module, ir.FunctionType(I32, [POINTER, POINTER, POINTER]), abi.kernel_symbol(name))
    buffer_array, scalar_array, context = entry.args
    codegen = FunctionCodegen(module, name, entry, context)
    b = codegen.builder
    version_ok = b.icmp_signed("==", codegen.load_context("abi_version"), ir.Constant(I32, abi.KERNEL_ABI_VERSION))
    with b.if_then(b.not_(version_ok), likely=False):
        codegen.fail(abi.BAD_CONTEXT, f"{name}: the caller's kernel ABI version is not {abi.KERNEL_ABI_VERSION}")
    args = []
    if forward is None:
        for position in range(len(buffers)):
            slot = b.gep(buffer_array, [ir.Constant(I64, position)], inbounds=True, source_etype=POINTER)
            args.append(b.load(slot, typ=POINTER))
    for position, var in enumerate(scalars + symbolic):
        slot = b.gep(scalar_array, [ir.Constant(I64, position)], inbounds=True, source_etype=I64)
        word = b.load(slot, typ=I64)
        args.append(_from_word(codegen, word, var.dtype))
        codegen.vars[var] = args[-1]
    for var in symbolic:
        for key in body_keys:
            if isinstance(key, tir.Var) and key.name == var.name:
                codegen.vars.setdefault(key, codegen.vars[var])
    if not (isinstance(workspace, tir.IntImm) and workspace.value == 0):
        needed = codegen.cast(codegen.emit(workspace), workspace.dtype, "int64")
        enough = b.icmp_signed("<=", needed, codegen.load_context("workspace_size"))
        with b.if_then(b.not_(enough), likely=False):
            codegen.fail(abi.WORKSPACE_TOO_SMALL, f"{name}: the workspace is smaller than the kernel needs")
    if forward is not None:
        # noinline: the shared body stays one copy; a tail call, so the forwarding costs a jump.
        b.ret(b.call(forward, [buffer_array, scalar_array, context], tail=True, attrs=("noinline",)))
    else:
        b.ret(b.call(impl, args + [context]))


def _from_word(codegen: FunctionCodegen, word: ir.Value, dtype: str) -> ir.Value:
    """A scalar parameter from its 64-bit argument word (floats travel as double bits)."""
    b = codegen.builder
    if dt.is_float(dtype):
        return codegen.cast(b.bitcast(word, ir.DoubleType()), "float64", dtype)
    return codegen.cast(word, "int64", dtype)
