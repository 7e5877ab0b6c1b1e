"""relaxas on a lowered TVMScript module (.vms): parse it, normalize it, generate bytecode.

    relaxc -S model.relax -o model.vms      the lowered module as text (relax.driver.vms_stage)
    relaxas model.vms -o model.vmo          this module: text -> Executable

A .vms is VM-ready: the -O pipeline already ran, so only `normalize` runs here (the
parser leaves struct info of expression statements to it) before CodeGenVM.
Source locations recorded in the bytecode name the .vms by its base name
(`model.vms:12:9`), so that the bytes do not depend on the build directory and
`relaxc model.relax -o model.vmx`, which goes through the same text in memory,
gives the same bytes as the staged pipeline.
"""

from __future__ import annotations

import os

from ..diagnostics import SOURCES, Diagnostic, DiagnosticError


def vms_location_name(source: str) -> str:
    """The file name the bytecode's source locations use for a .vms read from `source`."""
    return os.path.basename(source) if source not in ("-", "<stdin>") else "<stdin>"


def read_vms(text: str, source: str, signatures_only=()):
    """The IRModule of a .vms text (diagnostics quote `source`); the PrimFuncs named in
    `signatures_only` without their bodies (script.parse), which the bytecode never needs."""
    from ..script import parse
    from ..ir.pass_infra import PassContext, run_passes

    SOURCES.add(source, text)
    mod = parse(text, source, signatures_only)
    return run_passes(mod, ["normalize"], PassContext())


def generate_bytecode(mod, source: str):
    """CodeGenVM on a VM-ready module, source locations renamed to the .vms base name."""
    from ..vm.codegen.codegen_vm import generate

    try:
        exe = generate(mod)
    except DiagnosticError as exc:
        hint = Diagnostic("note", "relaxas reads lowered modules (.vms); write one with `relaxc -S`")
        if any("reached code generation" in d.message for d in exc.diagnostics):
            raise DiagnosticError([*exc.diagnostics, hint]) from None
        raise
    prefix, name = f"{source}:", vms_location_name(source)
    exe.source_locations = {
        index: name + location[len(source):] if location.startswith(prefix) else location
        for index, location in exe.source_locations.items()
    }
    return exe


def assemble_vms(text: str, source: str):
    """What relaxas does with a .vms: the Executable of its Relax functions (kernels stay symbols)."""
    return generate_bytecode(read_vms(text, source), source)
