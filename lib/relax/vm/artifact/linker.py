"""The linker behind relaxld: a .vmo and kernel objects in, one checked .vmx out.

    result = link(LinkInput("mlp.vmo", vmo_bytes), [LinkInput("mlp.ko", ko_bytes)],
                  allow_undefined=("samples.*",), target_check=True)
    result.data       the .vmx bytes (relax.vm.artifact.vmx)
    result.info       its manifest (LinkInfo), what `-v` and `--dump stats` print

Every packed function the bytecode names is a symbol. It resolves, in this order,
to the runtime (the vm.builtin.* table and whatever relax modules register at
import), to a kernel, or, when it matches an --allow-undefined pattern, stays
undefined to be registered by the user at run time. Every call of a kernel is then
compared with the kernel's metadata (kernel_calls.py: argument count, kinds, dtypes,
ranks and static dimensions, as far as the bytecode knows them); a call that cannot
run is an error naming both signatures. Kernel objects are grouped by
target (triple, CPU, features): within one target a kernel defined twice is a
duplicate symbol, and every target must define every kernel symbol, so that any
host matching one of the targets can run the artifact. Errors are collected, all
reported, in the words of ld. Nothing here imports the compiler.
"""

from __future__ import annotations

import fnmatch
from typing import Sequence

from ...diagnostics import Diagnostic, DiagnosticError, UserError
from ...records import record
from ...runtime.kernels import container
from . import vmx
from .kernel_calls import check_kernel_calls
from ..bytecode.executable import EXEC_MODES, Executable
from ..bytecode.isa import ArgKind, FuncKind, Opcode, decode_arg

VMTIR_PREFIX = "__vmtir__"


@record
class LinkInput:
    name: str   # as given on the command line; the manifest records its base name
    data: bytes


@record
class ReadBytecode:
    """A bytecode object read for link() (read_bytecode): its executable, the symbols it
    names and its digest. Made before the kernels are ready, it takes that work off the
    link's own time (relaxc's one-shot reads its bytecode while LLVM compiles)."""

    input: LinkInput
    executable: Executable
    references: dict  # symbol_references(executable)
    sha256: str


def read_bytecode(bytecode: LinkInput) -> ReadBytecode:
    exe = Executable.load_from_bytes(bytecode.data, bytecode.name, views=True)  # checked, never run
    return ReadBytecode(bytecode, exe, symbol_references(exe), vmx.sha256_hex(bytecode.data))


@record
class LinkResult:
    data: bytes
    info: vmx.LinkInfo
    executable: Executable
    kernel_objects: tuple  # decoded KernelObjects, in link order


def runtime_symbols() -> frozenset[str]:
    """Names the runtime defines: the builtin table and every function a relax module registers."""
    from ...runtime.registry import get_global_func, list_global_funcs
    from ..machine.builtins import BUILTINS

    registered = {name for name in list_global_funcs()
                  if getattr(get_global_func(name), "__module__", "").startswith("relax.")}
    return frozenset(BUILTINS) | registered


def _symbol(info) -> str:
    return VMTIR_PREFIX + info.name if info.kind == FuncKind.VM_TIR_FUNC else info.name


def symbol_references(exe: Executable) -> dict[str, list[str]]:
    """Each symbol the bytecode needs -> the bytecode functions that name it, in table order."""
    external = {index: _symbol(info) for index, info in enumerate(exe.func_table)
                if info.kind in (FuncKind.PACKED_FUNC, FuncKind.VM_TIR_FUNC)}
    references: dict[str, list[str]] = {name: [] for name in external.values()}
    for info in exe.func_table:
        if info.kind != FuncKind.VM_FUNC:
            continue
        for instruction in exe.instructions(info):
            if instruction.opcode != Opcode.CALL:
                continue
            indices = [instruction.field("func_index")]
            indices += [value for kind, value in map(decode_arg, instruction.args) if kind == ArgKind.FUNC_INDEX]
            for index in indices:
                name = external.get(index)
                if name is not None and info.name not in references[name]:
                    references[name].append(info.name)
    return references


def _target_key(target) -> str:
    return target.describe()


def _definitions(kernel_objects, names: list[str], problems: list[str]) -> dict[str, dict[str, int]]:
    """Target key -> {kernel name -> index of the kernel object defining it}; duplicates are problems."""
    defined: dict[str, dict[str, int]] = {}
    for index, kernel_object in enumerate(kernel_objects):
        for key in dict.fromkeys(_target_key(t) for t in kernel_object.targets):
            table = defined.setdefault(key, {})
            for kernel in kernel_object.kernels:
                if kernel.name in table and table[kernel.name] != index:
                    problems.append(f"duplicate symbol '{kernel.name}' for target {key}: defined in "
                                    f"'{names[table[kernel.name]]}' and in '{names[index]}'")
                else:
                    table.setdefault(kernel.name, index)
    return defined


def _check_targets(kernel_objects, names: list[str], problems: list[str]) -> None:
    """--target-check: every kernel object speaks the runtime's kernel ABI."""
    from ...runtime.kernels.abi import KERNEL_ABI_VERSION

    for name, kernel_object in zip(names, kernel_objects):
        versions = {t.abi_version for t in kernel_object.targets} | {k.abi_version for k in kernel_object.kernels}
        for version in sorted(versions - {KERNEL_ABI_VERSION}):
            problems.append(f"'{name}' was built for kernel ABI version {version}; this runtime speaks "
                            f"version {KERNEL_ABI_VERSION}")


def _resolve(references, runtime, defined, allow_undefined, kernel_names, problems):
    symbols = []
    for symbol in sorted(references):
        users = references[symbol] or ["<function table>"]
        if symbol in runtime:
            if symbol in kernel_names:
                problems.append(f"duplicate symbol '{symbol}': defined by the runtime and in "
                                f"'{kernel_names[symbol]}'")
            symbols.append({"name": symbol, "resolution": "runtime"})
            continue
        # A cuda artifact splits its kernels: GPU kernels in a cuda .ko, shape functions in a host
        # .ko. A symbol must be defined for every target of each platform that defines it.
        platforms = {_platform(key) for key, table in defined.items() if symbol in table}
        missing = [key for key, table in defined.items()
                   if symbol not in table and (_platform(key) in platforms or not platforms)]
        if symbol in kernel_names and not missing:
            objects = sorted({table[symbol] for table in defined.values() if symbol in table})
            symbols.append({"name": symbol, "resolution": "kernel", "kernel_objects": objects})
        elif any(fnmatch.fnmatchcase(symbol, pattern) for pattern in allow_undefined):
            symbols.append({"name": symbol, "resolution": "undefined"})
        elif symbol in kernel_names:
            for user in users:
                for key in missing:
                    problems.append(f"undefined reference to '{symbol}' in function '{user}' for target {key}")
        else:
            problems.extend(f"undefined reference to '{symbol}' in function '{user}'" for user in users)
    return symbols


def _platform(target_key: str) -> str:
    """"cuda" for a GPU target, "host" for a CPU one (target keys start with the triple)."""
    return "cuda" if target_key.startswith("nvptx") else "host"


def _basename(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def link(bytecode: LinkInput | ReadBytecode, kernel_inputs: Sequence[LinkInput], allow_undefined: Sequence[str] = (),
         target_check: bool = False, exec_mode: str | None = None) -> LinkResult:
    """Resolves every symbol of `bytecode` (a .vmo, or one read_bytecode read already) and
    packs a .vmx; a DiagnosticError lists every problem."""
    read = bytecode if isinstance(bytecode, ReadBytecode) else read_bytecode(bytecode)
    vmo, exe = read.input, read.executable
    kernel_objects = [container.read(item.data, item.name) for item in kernel_inputs]
    names = [item.name for item in kernel_inputs]
    problems: list[str] = []
    if target_check:
        _check_targets(kernel_objects, names, problems)
    defined = _definitions(kernel_objects, names, problems)
    kernel_names = {}
    for index, kernel_object in enumerate(kernel_objects):
        for kernel in kernel_object.kernels:
            kernel_names.setdefault(kernel.name, names[index])
    symbols = _resolve(read.references, runtime_symbols(), defined, tuple(allow_undefined),
                       kernel_names, problems)
    problems += check_kernel_calls(exe, vmo.name, list(zip(names, kernel_objects)),
                                   {symbol["name"] for symbol in symbols if symbol["resolution"] == "kernel"})
    if problems:
        raise DiagnosticError([Diagnostic("error", message) for message in problems])
    flags = {"allow_undefined": list(dict.fromkeys(allow_undefined)), "target_check": bool(target_check)}
    if exec_mode is not None:
        if exec_mode not in EXEC_MODES:
            raise UserError(f"unknown exec mode '{exec_mode}' (expected one of: {', '.join(EXEC_MODES)})")
        flags["exec_mode"] = exec_mode
    info = vmx.LinkInfo(
        producer=vmx.PRODUCER,
        flags=flags,
        inputs=tuple({"kind": kind, "name": _basename(item.name), "size": len(item.data),
                      "sha256": read.sha256 if item is vmo else vmx.sha256_hex(item.data)}
                     for kind, item in [("vmo", vmo)] + [("ko", k) for k in kernel_inputs]),
        targets=tuple({"kernel_object": index, **target.to_json()}
                      for index, kernel_object in enumerate(kernel_objects) for target in kernel_object.targets),
        symbols=tuple(symbols),
    )
    data = vmx.write(vmx.Artifact(info, vmo.data, tuple(item.data for item in kernel_inputs)))
    return LinkResult(data, info, exe, tuple(kernel_objects))


__all__ = ["LinkInput", "LinkResult", "ReadBytecode", "link", "read_bytecode", "runtime_symbols",
           "symbol_references"]
