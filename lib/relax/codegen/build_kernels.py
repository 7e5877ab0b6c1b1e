"""Build entry points: TIR kernels to LLVM IR, assembly, .ko kernel objects, or a loaded library.

    build_kernel_object(mod, [Target, ...]) -> bytes    what `relaxc --emit kernels` writes
    emit_llvm_ir(mod, target) -> str                    `relaxc --emit llvm` (optimized IR)
    emit_assembly(mod, target) -> str                   `relaxc --emit asm`
    build_host_library(mod, target=None)                the kernels linked into this process

`mod` is an IRModule (its PrimFuncs are the kernels), a {name: PrimFunc} dict or
one PrimFunc. Kernels not yet in the lowered form are lowered first with
relax.tir.pipeline.lower_for_codegen. All kernels of a module go into one LLVM
module per target: one object with one symbol per kernel. Kernels that differ only in
their names share one body (kernel_dedup.py).
"""

from __future__ import annotations

import dataclasses

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..diagnostics import UserError
from ..ir import tir
from ..ir.module import IRModule
from ..ir.node import Node
from ..runtime.kernels.library import KernelLibrary, load_kernel_library
from ..runtime.kernels.llvm_compile import optimize
from .kernel_cache import KernelCache, cache_key
from .kernel_codegen import DEFAULT_FLOAT_FLAGS, generate_forwarding_kernel, generate_shareable_kernel
from .kernel_dedup import identical_kernels
from .kernel_object import CompiledTarget, pack_kernel_object
from .loop_hints import resolve_loop_hints
from .llvm_target import TargetSpec, target_machine, target_spec
from .parallel import LAUNCHER, link_launcher
from .vector_math import declare_vector_variants, map_to_libmvec, uses_libmvec


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


def lower(func: tir.PrimFunc, target) -> tir.PrimFunc:
    if is_lowered(func):
        return func
    from ..tir.pipeline import lower_for_codegen

    return lower_for_codegen(func, target)


def generate_llvm_module(funcs: dict[str, tir.PrimFunc], spec: TargetSpec, target=None):
    """The unoptimized LLVM module (a parsed ModuleRef) and the KernelInfo of each kernel."""
    machine = target_machine(spec)
    module = ir.Module(name="relax_kernels")
    module.triple = spec.triple
    module.data_layout = str(machine.target_data)
    flags = ("fast",) if spec.fast_math else DEFAULT_FLOAT_FLAGS
    lowering_target = target if not isinstance(target, (TargetSpec, type(None))) else None
    # A kernel whose PrimFunc equals an earlier one's but for its name forwards to that
    # one's entry: its body is lowered, optimized and compiled once (kernel_dedup.py).
    shares = identical_kernels(funcs)
    generated = {}
    infos = []
    for name in sorted(funcs):
        first = generated.get(shares.get(name))
        if first is not None and not first.names_itself:
            infos.append(generate_forwarding_kernel(module, name, first))
            continue
        lowered = first.func if first is not None else lower(funcs[name], lowering_target)
        generated[name] = generate_shareable_kernel(module, name, lowered, flags)
        infos.append(generated[name].info)
    try:
        text = resolve_loop_hints(str(module))
        if uses_libmvec(spec.triple):
            text = declare_vector_variants(text, spec.features)
        parsed = llvm.parse_assembly(text)
        if LAUNCHER in module.globals:
            link_launcher(parsed)
        parsed.verify()
    except RuntimeError as exc:
        raise RuntimeError(f"codegen produced invalid LLVM IR: {exc}") from None
    return parsed, infos


def _compile(mod, target):
    if isinstance(target, str):
        from ..target import Target

        target = Target.parse(target)
    spec = target_spec(target)
    module, infos = generate_llvm_module(prim_funcs(mod), spec, target)
    machine = target_machine(spec)
    bitcode = module.as_bitcode()
    optimize(module, machine, spec.opt_level)
    if uses_libmvec(spec.triple):
        text = str(module)
        mapped = map_to_libmvec(text, spec.features)
        if mapped != text:
            module = llvm.parse_assembly(mapped)
            module.verify()
    return spec, machine, module, bitcode, infos


def emit_llvm_ir(mod, target=None, optimized: bool = True) -> str:
    if optimized:
        _, _, module, _, _ = _compile(mod, target)
        return str(module)
    spec = target_spec(target)
    module, _ = generate_llvm_module(prim_funcs(mod), spec, target)
    return str(module)


def emit_assembly(mod, target=None) -> str:
    _, machine, module, _, _ = _compile(mod, target)
    return machine.emit_assembly(module)


def build_kernel_object(mod, targets, cache: KernelCache | None = None) -> bytes:
    """A .ko holding, for each target, its native object, its bitcode and the kernels' metadata.

    `cache`: a kernel_cache.KernelCache to read and fill (relaxc passes the one the
    environment names, kernel_cache.default_cache()); a hit returns the bytes of the
    build that stored it. None, the default, builds every time."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    if not targets:
        raise UserError("codegen: no target to build kernels for")
    targets = [_parsed(target) for target in targets]
    key = None
    if cache is not None:
        key = cache_key(prim_funcs(mod), targets, [target_spec(target) for target in targets])
        cached = cache.get(key)
        if cached is not None:
            return cached
    compiled = []
    for target in targets:
        spec, machine, module, code, infos = _compile(mod, target)
        compiled.append(CompiledTarget(spec, machine.emit_object(module), code, tuple(infos)))
    data = pack_kernel_object(compiled)
    if cache is not None:
        cache.put(key, data)
    return data


def _parsed(target):
    if isinstance(target, str):
        from ..target import Target

        return Target.parse(target)
    return target


def build_host_library(mod, target=None, prefer: str = "native") -> KernelLibrary:
    """The kernels of `mod` compiled for this host and linked in-process."""
    return load_kernel_library(build_kernel_object(mod, [target]), "<built>", prefer=prefer)
