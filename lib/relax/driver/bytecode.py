"""What relaxas does: assemble a listing into a .vmo, or dump an executable as text.

    relaxas --dump text|python|stats [--func NAME] FILE    FILE: .vmo, .vmx (or a listing)
    relaxas LISTING.vmasm [-o X.vmo]                       assemble

Inputs are told apart by content (a binary file by its magic number), so `-` works
for every kind. A lowered TVMScript module (.vms, what `relaxc -S` writes) is another
input kind: relax.driver.assemble generates its bytecode.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from ..diagnostics import UserError
from ..records import record
from .io import read_bytes, write_bytes, write_text
from ..vm.codegen.assembler import assemble
from ..vm.bytecode.executable import Executable
from ..vm.bytecode.loader import LOADERS, load_bytes

DUMPS = ("text", "python", "stats")


@record
class AssembleOptions:
    source: str
    dump: str | None = None
    func: str | None = None
    output: str | None = None
    verbose: int = 0


def _lower_vms(text: str, source: str) -> Executable:
    from .assemble import assemble_vms  # the compiler side (parser, passes, CodeGenVM)

    return assemble_vms(text, source)


# input kind -> reader(text, source) -> Executable
INPUT_KINDS: dict[str, Callable[[str, str], Executable]] = {"vmasm": assemble, "vms": _lower_vms}


def _is_binary(data: bytes) -> bool:
    """A file that starts with a magic number, or is cut short inside one, is binary."""
    from ..vm.artifact.vmx import MAGIC as VMX_MAGIC  # its loader registers only once imported

    magics = (*LOADERS, VMX_MAGIC)
    return any(data.startswith(magic) or magic.startswith(data) for magic in magics) or b"\0" in data[:64]


def _text_kind(text: str, source: str) -> str:
    if source.endswith((".vms", ".relax", ".py")) or "@I.ir_module" in text or "import tvm" in text:
        return "vms"
    return "vmasm"


def read_executable(source: str) -> tuple[Executable, bool]:
    """An executable from a binary file or a listing, whichever `source` holds; and whether it was binary.

    A .vmx is read whole and checked, but its kernels are not loaded: dumping works on
    an artifact built for another machine."""
    data = read_bytes(source)
    name = "<stdin>" if source == "-" else source
    if not data:
        raise UserError(f"'{name}': empty file (neither a relax executable nor a listing)")
    if _is_binary(data):
        from ..vm.artifact.vmx import is_vmx

        if is_vmx(data):
            from ..vm.artifact.load_export import load_artifact

            return load_artifact(data, name, import_kernels=False), True
        return load_bytes(data, name), True
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"'{name}': neither a relax executable nor a UTF-8 listing") from None
    return INPUT_KINDS[_text_kind(text, name)](text, name), False


def _dump(exe: Executable, options: AssembleOptions) -> str:
    if options.func is not None:
        if options.dump != "text":
            raise UserError("--func works with --dump text only")
        if not exe.has_function(options.func):
            raise UserError(f"no function '{options.func}' in '{options.source}'")
        return exe.as_text(options.func)
    text = {"text": exe.as_text, "python": exe.as_python, "stats": exe.stats}[options.dump]()
    link_info = exe.link_info  # set on executables read from a .vmx
    if options.dump == "stats" and link_info is not None:
        text += link_info.describe(exe.signature)
    return text


def _default_output(source: str) -> str | None:
    if source == "-":
        return None
    root, _ = os.path.splitext(source)
    return root + ".vmo"


def relaxas_main(options: AssembleOptions) -> int:
    exe, binary = read_executable(options.source)
    if options.dump is not None:
        write_text(options.output, _dump(exe, options))
        return 0
    if options.func is not None:
        raise UserError("--func works with --dump text only")
    if binary and options.output is None:
        raise UserError(f"'{options.source}' is already an executable; use --dump to print it, "
                        "or -o to write it as a .vmo")
    output = options.output or _default_output(options.source)
    if output is not None and output != "-" and os.path.abspath(output) == os.path.abspath(options.source):
        raise UserError(f"'{output}': refusing to overwrite the input; use -o")
    data = exe.save_to_bytes()
    write_bytes(output, data, "a bytecode object")
    if options.verbose:
        sys.stderr.write(f"relaxas: wrote {output or '<stdout>'} ({len(data)} bytes, "
                         f"{len(exe.func_table)} functions, {len(exe.constants)} constants)\n")
    return 0
