"""Build entry points: TIR kernels to LLVM IR, assembly, .ko kernel objects, or a loaded library.

    build_kernel_object(mod, [Target, ...]) -> bytes    what `relaxc --emit kernels` writes
    emit_llvm_ir(mod, target) -> str                    `relaxc --emit llvm` (optimized IR)
    emit_assembly(mod, target) -> str                   `relaxc --emit asm`
    build_host_library(mod, target=None)                the kernels linked into this process

    start_kernel_object(mod, [Target, ...]).result()    the same, LLVM left running meanwhile

`mod` is an IRModule (its PrimFuncs are the kernels), a {name: PrimFunc} dict or
one PrimFunc. Kernels not yet in the lowered form are lowered first with
relax.tir.pipeline.lower_for_codegen. Each kernel (with the kernels that differ
from it only in their names, which share its body: kernel_dedup.py) becomes a
small LLVM module of its own; for a .ko these are cut into parts that LLVM
compiles on worker threads while the next kernels are generated, one object per
part with one symbol per kernel (object_parts.py); for `--emit llvm` and `asm`
they are linked into one module.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import llvmlite.ir as ir

from ..diagnostics import UserError
from ..ir import tir
from ..ir.module import IRModule
from ..ir.pass_infra import PassContext
from ..ir.node import Node
from ..llvm_capi import Context, Module, optimize
from ..runtime.kernels.llvm_compile import slp_is_safe
from .kernel_cache import KernelCache, cache_key
from .kernel_codegen import (DEFAULT_FLOAT_FLAGS, emit_signature, generate_forwarding_kernel,
                             generate_shareable_kernel)
from .kernel_dedup import identical_kernels
from .fresh_stack import call_on_fresh_stack
from .kernel_object import CompiledTarget, pack_kernel_object
from .kernel_order import generation_groups
from .loop_hints import resolve_loop_hints
from ..target.llvm_target import TargetSpec, target_machine, target_spec
from .object_parts import PartCompiler, cut_parts
from .parallel import link_launcher
from ..runtime.kernels.libmvec import to_libmvec, uses_libmvec
from .vector_math import declare_vector_variants
from ..target.vector_width import vector_extensions

if TYPE_CHECKING:
    from ..runtime.kernels.library import KernelLibrary


def prim_funcs(mod) -> dict[str, tir.PrimFunc]:
    if isinstance(mod, IRModule):
        return dict(mod.prim_funcs())
    if isinstance(mod, tir.PrimFunc):
        return {str(mod.attrs.get("global_symbol", "main")): mod}
    if isinstance(mod, dict):
        return dict(mod)
    return dict(mod)


def is_lowered(func: tir.PrimFunc) -> bool:
    """Whether a PrimFunc is already in the form codegen consumes (no blocks, 1-D accesses)."""
    if func.attrs and func.attrs.get("tir.lowered"):
        return True
    seen: set[int] = set()

    def lowered(value) -> bool:
        if isinstance(value, (tuple, list)):
            return all(lowered(item) for item in value)
        if not isinstance(value, Node) or id(value) in seen:
            return True
        seen.add(id(value))
        if isinstance(value, (tir.Block, tir.BlockRealize)):
            return False
        if isinstance(value, (tir.BufferLoad, tir.BufferStore)) and len(value.indices) != 1:
            return False
        if isinstance(value, tir.Buffer):
            return True
        return all(lowered(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name != "span")

    return lowered(func.body)


def lower(func: tir.PrimFunc, target, context=None) -> tir.PrimFunc:
    if is_lowered(func):
        return func
    from ..tir.pipeline import lower_for_codegen

    return lower_for_codegen(func, target, context)


def kernel_groups(funcs: dict[str, tir.PrimFunc]) -> list[list[str]]:
    """The kernels' names in groups, in sorted order of each group's first: a kernel, then
    those that equal it but for their names (kernel_dedup.py), which share its body."""
    shares = identical_kernels(funcs)
    groups: dict[str, list[str]] = {}
    for name in sorted(funcs):
        groups.setdefault(shares.get(name, name), []).append(name)
    return list(groups.values())


def generate_kernel_groups(funcs: dict[str, tir.PrimFunc], spec: TargetSpec, target=None, groups=None,
                           context=None):
    """Yields, group by group (`groups`, default kernel_groups), the unoptimized LLVM IR text of
    a module holding the group's kernels, and their KernelInfo. Lowering happens here, one
    kernel at a time."""
    layout = target_machine(spec).data_layout
    flags = ("fast",) if spec.fast_math else DEFAULT_FLOAT_FLAGS
    lowering_target = target if not isinstance(target, (TargetSpec, type(None))) else None
    for names in kernel_groups(funcs) if groups is None else groups:
        module = ir.Module(name="relax_kernels")
        module.triple = spec.triple
        module.data_layout = layout
        # A kernel whose PrimFunc equals the group's first but for its name forwards to that
        # one's entry: its body is lowered, optimized and compiled once (kernel_dedup.py).
        first = generate_shareable_kernel(module, names[0], lower(funcs[names[0]], lowering_target, context), flags)
        infos = [first.info]
        for name in names[1:]:
            if first.names_itself:
                own = lower(funcs[name], lowering_target, context)
                infos.append(generate_shareable_kernel(module, name, own, flags).info)
            else:
                infos.append(generate_forwarding_kernel(module, name, first, funcs[name]))
        for info in infos:  # each kernel's code bound to its own signature (.ko format 0.5)
            emit_signature(module, info)
        text = resolve_loop_hints(str(module))
        if uses_libmvec(spec.triple):
            text = declare_vector_variants(text, vector_extensions(spec))
        yield text, infos


def generate_llvm_module(funcs: dict[str, tir.PrimFunc], spec: TargetSpec, llvm_context: Context, target=None,
                         context=None):
    """The unoptimized LLVM module of all kernels (parsed into `llvm_context`, the groups linked
    into one) and the KernelInfo of each kernel, by name."""
    machine = target_machine(spec)
    module, infos = None, []
    try:
        for text, group_infos in generate_kernel_groups(funcs, spec, target, context=context):
            infos += group_infos
            parsed = Module.parse(text, llvm_context)
            if module is None:
                module = parsed
            else:
                module.link_in(parsed)
        if module is None:
            module = Module.parse("", llvm_context)
            module.set_triple(spec.triple)
            module.set_data_layout(machine.data_layout)
        link_launcher(module, llvm_context, machine)
        module.verify()
    except RuntimeError as exc:
        raise RuntimeError(f"codegen produced invalid LLVM IR: {exc}") from None
    return module, sorted(infos, key=lambda info: info.name)


def _compile(mod, target, context, llvm_context: Context):
    target = _parsed(target)
    spec = target_spec(target)
    module, infos = generate_llvm_module(prim_funcs(mod), spec, llvm_context, target, context)
    machine = target_machine(spec)
    optimize(module, machine, spec.opt_level, slp_is_safe(str(module)))
    to_libmvec(module, spec.triple, vector_extensions(spec))
    return machine, module


def emit_llvm_ir(mod, target=None, optimized: bool = True, context=None) -> str:
    with Context() as llvm_context:
        if optimized:
            _, module = _compile(mod, target, context, llvm_context)
        else:
            module, _ = generate_llvm_module(prim_funcs(mod), target_spec(target), llvm_context, target, context)
        return str(module)


def emit_assembly(mod, target=None, context=None) -> str:
    with Context() as llvm_context:
        machine, module = _compile(mod, target, context, llvm_context)
        return machine.emit(module, assembly=True).decode()


def build_kernel_object(mod, targets, cache: KernelCache | None = None, context=None) -> bytes:
    """A .ko holding, for each target, its native object(s), bitcode and the kernels' metadata.

    `cache`: a kernel_cache.KernelCache to read and fill (relaxc passes the one the
    environment names, kernel_cache.default_cache()); a hit returns the bytes of the
    build that stored it. None, the default, builds every time."""
    return start_kernel_object(mod, targets, cache, context).result()


class PendingKernelObject:
    """A kernel object whose parts may still be compiling on worker threads; `result()` waits
    for them and packs the .ko (storing it in the cache, when there is one)."""

    def __init__(self, data: bytes | None = None, compiler: PartCompiler | None = None, pending=(),
                 cache: KernelCache | None = None, key: str | None = None):
        self._data = data
        self._compiler = compiler
        self._pending = pending  # per target: (spec, kernel infos, futures of its parts)
        self._cache, self._key = cache, key

    def result(self) -> bytes:
        if self._data is None:
            if self._compiler is None:
                raise RuntimeError("codegen: the kernel build was cancelled")
            self._data = self._finish()
        return self._data

    def all_cores(self) -> None:
        """Lets LLVM compile on every core: the caller has little Python left to run."""
        if self._compiler is not None:
            self._compiler.all_cores()

    def cancel(self) -> None:
        """Drops the parts not started yet and waits for the running ones (nothing is cached)."""
        if self._data is None and self._compiler is not None:
            self._compiler.close()
            self._compiler = None

    def _finish(self) -> bytes:
        self._compiler.all_cores()
        try:
            compiled = []
            for spec, infos, futures in self._pending:
                parts = [future.result() for future in futures]
                compiled.append(CompiledTarget(spec, tuple(part.native_object for part in parts),
                                               tuple(part.bitcode for part in parts), tuple(infos)))
        finally:
            self._compiler.close()
        data = pack_kernel_object(compiled)
        if self._cache is not None:
            self._cache.put(self._key, data)
        return data


def start_kernel_object(mod, targets, cache: KernelCache | None = None, context=None) -> PendingKernelObject:
    """build_kernel_object, returning once every kernel is lowered and generated: LLVM goes on
    compiling the parts on worker threads (object_parts.py) while the caller does other work
    (relaxc generates the bytecode meanwhile). Errors of lowering and code generation are
    raised here; LLVM's from `result()`."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    if not targets:
        raise UserError("codegen: no target to build kernels for")
    targets = [_parsed(target) for target in targets]
    # The build's configuration (-O level, pass config), handed down to the schedules; read
    # once here from the current PassContext when the caller gives none.
    context = context if context is not None else PassContext.current()
    key = None
    if cache is not None:
        key = cache_key(prim_funcs(mod), targets, [target_spec(target) for target in targets], context)
        cached = cache.get(key)
        if cached is not None:
            return PendingKernelObject(cached)
    compiler = PartCompiler()
    try:
        # The lowering recurses deeply: on a thread of its own it runs at the bottom of
        # CPython's frame stack (fresh_stack.py).
        with compiler.generating():
            pending = call_on_fresh_stack(_generate_and_submit, prim_funcs(mod), targets, compiler, context)
    except BaseException:
        compiler.close()
        raise
    return PendingKernelObject(compiler=compiler, pending=pending, cache=cache, key=key)


def _generate_and_submit(funcs, targets, compiler: PartCompiler, context) -> list:
    """Per target: its spec, the kernels' metadata, and the futures of its parts, submitted
    as they are cut from the generated kernels."""
    pending = []
    for target in targets:
        spec = target_spec(target)
        infos, futures = [], []
        # The heaviest kernels first, so that LLVM's tail is a light one (kernel_order.py).
        groups = generate_kernel_groups(funcs, spec, target, generation_groups(funcs), context)
        for texts in cut_parts(_collect(groups, infos)):
            futures.append(compiler.submit(texts, spec))
        if not futures:  # no kernels: one empty part, so that every target has its object
            futures.append(compiler.submit([_empty_module_text(spec)], spec))
        pending.append((spec, sorted(infos, key=lambda info: info.name), futures))
    return pending


def _empty_module_text(spec: TargetSpec) -> str:
    """The LLVM IR of a module with no kernels, for `spec`'s triple and data layout."""
    module = ir.Module(name="relax_kernels")
    module.triple = spec.triple
    module.data_layout = target_machine(spec).data_layout
    return str(module)


def _collect(groups, infos: list):
    """The texts of `groups` ((text, infos) pairs), adding their infos to `infos` on the way."""
    for text, group_infos in groups:
        infos += group_infos
        yield text


def _parsed(target):
    if isinstance(target, str):
        from ..target import Target

        return Target.parse(target)
    return target


def build_host_library(mod, target=None, prefer: str = "native", context=None) -> KernelLibrary:
    """The kernels of `mod` compiled for this host and linked in-process."""
    from ..runtime.kernels.library import load_kernel_library  # the loader: none of a build's own work

    return load_kernel_library(build_kernel_object(mod, [target], context=context), "<built>", prefer=prefer)
