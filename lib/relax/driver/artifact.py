"""relaxc's lowered outputs: `-S` (.vms), `--emit vmo`, and the one-shot `-o model.vmx`.

    relaxc -S model.relax -o model.vms        parse, -O pipeline, print
    relaxc model.relax -o model.vmx           ... then bytecode, kernels and link, in one process
    relaxc --sign key.pem model.relax -o model.vmx    ... signed as relaxld --sign signs

The one-shot runs exactly the staged pipeline in memory, so its .vmx is byte-identical
to the Makefile's:

    relaxc -S model.relax -o model.vms        (the same text as stage 3 below)
    relaxas model.vms -o model.vmo            (read_vms + generate_bytecode, stage 4)
    relaxc --emit kernels --target T model.vms -o model.ko     (stage 5)
    relaxld model.vmo model.ko -o model.vmx   (stage 6)

What the staged build reads back is the module printed, but for what printing
changes, which the one-shot takes from the printer rather than from reading the text
back. After the default pipeline the kernels printed are the kernels read back but for
the names printing changes, so the one-shot builds them from the lowered module in
memory, renamed as the text names them (printed_kernels.py); a kernel where printing
renamed more than buffers is read back whole and built from the text. When every
kernel comes from memory, so does the bytecode, generated as from the text read back:
at the text's lines, a bare statement's call without a register, parameters under
their printed names (script/printed_bindings.py). Otherwise the text is read back for
the bytecode, its kernels from memory as signatures only. After --passes the whole
text is read back and every kernel built from it, as the staged build does.
The intermediates are named after the source (`models/mlp.relax`: mlp.vms, mlp.vmo,
mlp.ko), as a Makefile names them, and never after the output: `-o a.vmx`, `-o b.vmx`
and `-o -` give the same bytes.

The one-shot starts the CPU kernels before it generates the bytecode, and before it
reads the text back when it does and all of them come from memory: once Python has
lowered and generated them, LLVM compiles them on worker threads
(codegen/object_parts.py) while the bytecode is generated, and the link waits for them
(the "LLVM" stage of -v). Errors come in the order of the stages above: a
kernel's is held until the bytecode is done, and a bytecode error wins.
"""

from __future__ import annotations

import os
import sys

from .compile_steps import (
    CompileOptions, check_module, kernel_cache, kernel_context, parse_source, resolve_targets, run_pipeline,
)
from .io import write_bytes, write_text
from .lowering_check import check_lowered, default_pipeline, reading_lowered
from .printed_kernels import as_printed, with_kernels
from .progress import StageProgress
from ..records import record

# --emit kind -> number of stages it runs
STAGES = {"vms": 3, "vmo": 4, "vmx": 8}


def intermediate_stem(options: CompileOptions) -> str:
    """The base name the one-shot gives its in-memory .vms/.vmo/.ko: the source's, since
    names and source locations of the intermediates are written into the artifact."""
    path = options.source
    stem = os.path.splitext(os.path.basename(path))[0] if path not in (None, "-") else ""
    return stem or "stdin"


@record
class LoweredText:
    """What stages 1-3 leave (lower_to_text)."""

    text: str  # the lowered module printed: what `relaxc -S` writes
    kernels: dict  # its kernels that read back as themselves, named as the text names them
    every_kernel: bool  # whether `kernels` holds all of them
    module: object = None  # the lowered module, when `kernels` was asked for
    printed: object = None  # where its Relax bindings print (script.printed_bindings), likewise


def lower_to_text(options: CompileOptions, progress: StageProgress, deferred: dict | None = None,
                  target_kind: str | None = None, keep_kernels: bool = False) -> LoweredText:
    """Stages 1-3: parse, the -O pipeline (or --passes) for `target_kind`, print: what
    `relaxc -S` writes (with `deferred`, large weights as placeholders:
    script.array_literals.printing). With `keep_kernels`, also the lowered module, where
    its bindings print, and its kernels that read back as themselves, named as the text
    names them (printed_kernels.as_printed)."""
    from ..script import array_literals, script
    from ..script.printed_bindings import PrintedBindings
    from ..transform.pipeline import for_target_kind, pipeline

    progress.stage(f"parse {options.source}")
    mod = parse_source(options.source)
    if options.check:
        check_module(mod)
    names = options.passes if options.passes is not None else pipeline(options.opt_level)
    passes = tuple(for_target_kind(names, target_kind))
    progress.stage(f"passes (-O{options.opt_level})")
    mod = run_pipeline(mod, options, passes)
    if options.emit != "vms" or default_pipeline(options):  # -S after --passes may print any module
        check_lowered(mod, passes, options)
    progress.stage("print .vms")
    printed_params = {} if keep_kernels else None
    printed = PrintedBindings() if keep_kernels else None
    with array_literals.printing(deferred):
        text = script(mod, printed_params, printed)
    if not keep_kernels:
        return LoweredText(text, {}, False)
    kernels = as_printed(mod, printed_params)
    return LoweredText(text, kernels, len(kernels) == len(printed_params), mod, printed)


def compile_artifact(options: CompileOptions) -> int:
    """`relaxc -S`, `--emit vmo` and the one-shot `-o model.vmx`."""
    from .link import read_signing_key

    key = read_signing_key(options.sign) if options.emit == "vmx" else None  # a bad key fails before the build
    targets = resolve_targets(options.targets, options.verbose) if options.emit == "vmx" else []
    kinds = {target.kind for target in targets}
    stem = intermediate_stem(options)
    # The one-shot's printed text stays in memory: large weights need not go through text.
    deferred = {} if options.emit != "vms" else None
    with StageProgress("relaxc", STAGES[options.emit]) as progress:
        keep_kernels = options.emit == "vmx" and default_pipeline(options)
        lowered = lower_to_text(options, progress, deferred, kinds.pop() if len(kinds) == 1 else None, keep_kernels)
        if options.emit == "vms":
            write_text(options.output, lowered.text)
        else:
            _assemble_and_link(options, lowered, deferred, targets, stem, progress, key)
    if options.verbose:
        sys.stderr.write(progress.report())
    return 0


def _assemble_and_link(options: CompileOptions, lowered: LoweredText, deferred, targets, stem: str, progress, key):
    """Stages 4-6 of `--emit vmo` and the one-shot: bytecode, kernels, link. The bytecode
    comes from the module in memory when every kernel does (see the module docstring)."""
    kernels = _start_kernels(lowered.kernels, targets, stem, progress, options) if lowered.every_kernel else None
    if kernels is not None and lowered.printed.complete:
        bytecode = _bytecode_in_memory(options, lowered, kernels, stem, progress)
    else:
        bytecode, kernels = _bytecode(options, lowered, deferred, kernels, targets, stem, progress)
    if options.emit == "vmo":
        write_bytes(options.output, bytecode, "a bytecode object")
    else:
        _link(options, bytecode, kernels, stem, progress, key)


def _bytecode_in_memory(options: CompileOptions, lowered: LoweredText, kernels, stem: str, progress) -> bytes:
    """Stage 4 when every kernel comes from memory: the bytecode of the lowered module as
    its text reads back (the printed positions, bare statements and names that
    script.printed_bindings records), without reading it back."""
    from .assemble import vms_location_name
    from ..vm.codegen.codegen_vm import generate

    progress.total -= 1  # no "read .vms" stage
    progress.stage("bytecode")
    try:
        with reading_lowered(f"{stem}.vms", default_pipeline(options)):
            exe = generate(lowered.module, printed=lowered.printed, source=vms_location_name(f"{stem}.vms"))
        return exe.save_to_bytes()
    except BaseException:
        kernels.cancel()
        raise


def _bytecode(options: CompileOptions, lowered: LoweredText, deferred, kernels, targets, stem: str, progress):
    """Stage 4: the text read back, the kernels from memory as signatures only, and its
    bytecode; the one-shot's kernels started after the read-back unless `kernels` (all
    from memory) already were, so that LLVM compiles them while the text is read."""
    from ..script import array_literals
    from .assemble import generate_bytecode, read_vms

    default = default_pipeline(options)
    try:
        progress.stage("bytecode" if options.emit == "vmo" else "read .vms")
        with array_literals.reading(deferred), reading_lowered(f"{stem}.vms", default):
            mod = read_vms(lowered.text, f"{stem}.vms", signatures_only=lowered.kernels)
        if options.emit == "vmx":
            if kernels is None:
                kernels = _start_kernels(with_kernels(mod, lowered.kernels), targets, stem, progress, options)
            progress.stage("bytecode")
        with reading_lowered(f"{stem}.vms", default):
            return generate_bytecode(mod, f"{stem}.vms").save_to_bytes(), kernels
    except BaseException:
        if kernels is not None:
            kernels.cancel()
        raise


class _PendingKernels:
    """The kernel objects of the one-shot (codegen/backends.py parts, the CPU ones still
    compiling), or the error that building them raised, held until the bytecode is done."""

    def __init__(self, parts=(), stem: str = "", error: BaseException | None = None):
        self._parts, self._stem, self._error = parts, stem, error

    def result(self) -> list:
        from ..vm.artifact.linker import LinkInput

        if self._error is not None:
            raise self._error
        return [LinkInput(part.file_name(self._stem), part.result()) for part in self._parts]

    def all_cores(self) -> None:
        for part in self._parts:
            part.all_cores()

    def cancel(self) -> None:
        for part in self._parts:
            part.cancel()


def _start_kernels(mod, targets, stem: str, progress, options: CompileOptions) -> _PendingKernels:
    """Stage 5: the kernels for every target lowered and generated, LLVM started on them."""
    from ..codegen.backends import start_kernels

    progress.stage("kernels for " + ", ".join(getattr(t, "mtriple", "") or str(t) for t in targets))
    try:
        return _PendingKernels(start_kernels(mod, targets, kernel_cache(options), kernel_context(options)), stem)
    except Exception as error:  # raised after the bytecode's own errors, as the stages go
        return _PendingKernels(error=error)


def _link(options: CompileOptions, bytecode: bytes, kernels: _PendingKernels, stem: str, progress, key) -> None:
    """Stage 6: waiting for LLVM, then the link (relaxld's checks and all), signed with `key` if given."""
    from ..vm.artifact.linker import LinkInput, link, read_bytecode
    from .link import describe_link, signed

    progress.stage("LLVM")
    kernels.all_cores()  # what is left here to run in Python is short
    try:
        read = read_bytecode(LinkInput(f"{stem}.vmo", bytecode))  # the link's first step, while LLVM works
    except BaseException:
        kernels.cancel()
        raise
    kernel_inputs = kernels.result()
    progress.stage("link")
    result = signed(link(read, kernel_inputs, options.allow_undefined, exec_mode=options.exec_mode), key)
    write_bytes(options.output, result.data, "a linked artifact")
    if options.verbose:
        names = [f"{stem}.vmo"] + [item.name for item in kernel_inputs]
        sys.stderr.write(describe_link(result, options.verbose, options.output or "<stdout>", names, "relaxc", key))
