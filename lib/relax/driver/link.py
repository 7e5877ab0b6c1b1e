"""What `relaxld` does: read a .vmo and .ko files, link them, write the .vmx.

    relaxld A.vmo K.ko [K2.ko ...] -o X.vmx [--allow-undefined NAME]... [--target-check] [--sign KEY] [-v]
    relaxld --gen-key KEY                  a new Ed25519 key pair: KEY (private, 0600) and KEY.pub

Inputs are told apart by their magic number, not their names; exactly one must be a
bytecode object. The linking itself is relax.vm.artifact.linker.link; this module reads and
writes files and says what was linked.
"""

from __future__ import annotations

import dataclasses
import sys

from ..diagnostics import Diagnostic, DiagnosticError, UserError
from ..records import record
from .io import read_bytes, write_bytes

DEFAULT_OUTPUT = "a.vmx"


@record
class LinkOptions:
    inputs: tuple[str, ...]
    output: str | None = None
    allow_undefined: tuple[str, ...] = ()
    target_check: bool = False
    exec_mode: str | None = None
    sign: str | None = None  # a private key file: the artifact is signed with it
    verbose: int = 0


def _kind(data: bytes) -> str | None:
    from ..runtime.kernels.container import MAGIC as KO_MAGIC
    from ..vm.bytecode.vmo import MAGIC_BYTES as VMO_MAGIC
    from ..vm.artifact.vmx import MAGIC as VMX_MAGIC

    for kind, magic in (("vmo", VMO_MAGIC), ("ko", KO_MAGIC), ("vmx", VMX_MAGIC)):
        if data[:len(magic)] == magic:
            return kind
    return None


def read_inputs(paths: tuple[str, ...]):
    """The bytecode object and the kernel objects among `paths`, in order; every problem reported."""
    from ..vm.artifact.linker import LinkInput

    problems, bytecode, kernels = [], [], []
    for path in paths:
        try:
            data = read_bytes(path)
        except UserError as exc:
            problems.append(str(exc))
            continue
        kind = _kind(data)
        if kind == "vmo":
            bytecode.append(LinkInput(path, data))
        elif kind == "ko":
            kernels.append(LinkInput(path, data))
        elif kind == "vmx":
            problems.append(f"'{path}' is already a linked artifact (.vmx); link the .vmo and .ko files it came from")
        else:
            problems.append(f"'{path}': not a bytecode object (.vmo) or a kernel object (.ko)")
    if not problems and not bytecode:
        problems.append("no bytecode object (.vmo) among the inputs")
    if len(bytecode) > 1:
        problems.append("more than one bytecode object: " + ", ".join(f"'{item.name}'" for item in bytecode))
    if problems:
        raise DiagnosticError([Diagnostic("error", message) for message in problems])
    return bytecode[0], kernels


def describe_link(result, verbose: int, output: str, names: list[str], tool: str = "relaxld",
                  signer=None) -> str:
    """The -v lines: inputs, targets, symbol counts, the output (-vv: every symbol)."""
    info = result.info
    exe = result.executable
    lines = [f"{tool}: bytecode '{names[0]}': {len(exe.func_table)} functions, {len(exe.constants)} constants"]
    for name, kernel_object in zip(names[1:], result.kernel_objects):
        targets = ", ".join(t.describe() for t in kernel_object.targets) or "no targets"
        count = len(kernel_object.kernels)
        lines.append(f"{tool}: kernels '{name}': {count} kernel{'' if count == 1 else 's'} for {targets}")
    counts = {r: len(info.symbols_resolved_as(r)) for r in ("kernel", "runtime", "undefined")}
    lines.append(f"{tool}: symbols: {counts['kernel']} kernel, {counts['runtime']} runtime, "
                 f"{counts['undefined']} left undefined")
    if verbose > 1:
        for symbol in info.symbols:
            where = {"runtime": "runtime", "undefined": "undefined (allowed; registered at run time)"}.get(
                symbol["resolution"], ", ".join(f"'{names[1 + i]}'" for i in symbol.get("kernel_objects", [])))
            lines.append(f"{tool}:   {symbol['name']} -> {where}")
    if signer is not None:
        lines.append(f"{tool}: signed with ed25519 key {signer.fingerprint} ('{signer.path}')")
    lines.append(f"{tool}: wrote '{output}' ({len(result.data)} bytes)")
    return "\n".join(lines) + "\n"


def read_signing_key(path: str | None):
    """The key of --sign (read before any work, so that a bad key fails fast), or None."""
    if path is None:
        return None  # the VM's modules are imported where the bytecode needs them
    from ..vm.artifact.signing import SigningKey

    return SigningKey.read(path)


def signed(result, key):
    """The link result with its artifact signed by `key` (unchanged when `key` is None)."""
    from ..vm.artifact import vmx

    return result if key is None else dataclasses.replace(result, data=vmx.sign(result.data, key))


def relaxld_main(options: LinkOptions) -> int:
    from ..vm.artifact.linker import link

    key = read_signing_key(options.sign)
    bytecode, kernels = read_inputs(options.inputs)
    result = signed(link(bytecode, kernels, options.allow_undefined, options.target_check, options.exec_mode), key)
    output = options.output or DEFAULT_OUTPUT
    write_bytes(output, result.data, "a linked artifact")
    if options.verbose:
        names = [bytecode.name] + [item.name for item in kernels]
        sys.stderr.write(describe_link(result, options.verbose, "<stdout>" if output == "-" else output, names,
                                       signer=key))
    return 0


def generate_key_main(path: str, verbose: int = 0) -> int:
    """`relaxld --gen-key KEY`: KEY (the private key, mode 0600) and KEY.pub, never over existing files."""
    from ..vm.artifact.signing import generate_key

    key = generate_key(path)
    if verbose:
        sys.stderr.write(f"relaxld: wrote '{path}' (private key) and '{path}.pub' (public key): "
                         f"ed25519 {key.fingerprint}\n")
    return 0
