"""The Executable: function table, constant pool, memory scopes, bytecode and imports.

It is what the ExecBuilder (and the code generator through it) produces, what a .vmo
file holds, and what the VirtualMachine runs. Saving, loading and the listings live
in their own modules (serialization, verifier, listing); this one holds the data and
the few questions asked of it.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Any, Callable

from ...diagnostics import UserError
from ...records import record
from .isa import FuncKind, Instruction, decode_instruction


# How a VM runs an executable's bytecode functions: the dispatch loop, or each function as
# one Python function (vm/machine/compiled_mode.py). A .vmx may ask for one (vmx.py).
EXEC_MODES = ("interp", "compiled")

# Writers of other containers, by file suffix: the linker registers ".vmx" here.
EXPORTERS: dict[str, Callable[["Executable", str], None]] = {}


@record
class FuncInfo:
    """One row of the function table (TVM's VMFuncInfo)."""

    kind: FuncKind
    name: str
    start_instr: int = 0
    end_instr: int = 0
    num_args: int = -1
    register_file_size: int = 0
    param_names: tuple[str, ...] = ()


@record(mutable=True, eq=False)  # identity equality: compare executables by their bytes
class Executable:
    func_table: list[FuncInfo] = field(default_factory=list)
    constants: list[Any] = field(default_factory=list)
    memory_scopes: dict[int, str] = field(default_factory=dict)  # constant index -> scope
    instr_offset: list[int] = field(default_factory=list)
    instr_data: list[int] = field(default_factory=list)
    # Where each instruction came from ("model.relax:7:5"), by global instruction index; for
    # VM backtraces. Optional: an instruction without an entry has no known location.
    source_locations: dict[int, str] = field(default_factory=dict)
    # Kernel libraries (objects with get_function(name)); in memory only, never in a .vmo.
    imports: list[Any] = field(default_factory=list)
    # What a build or a .vmx brings beside the bytecode, in memory only: the kernel objects
    # (.ko bytes, for export) with the role of each ("" CPU kernels, "cuda", "host": they
    # name the files, model.cuda.ko), the GPU ones read for a cuda VM as (name, KernelObject),
    # and the link record of a .vmx (vmx.LinkInfo) with its signature (signing.Signature, or
    # None: unsigned).
    kernel_objects: list[bytes] = field(default_factory=list)
    kernel_object_roles: list[str] = field(default_factory=list)
    device_kernel_objects: list[tuple[str, Any]] = field(default_factory=list)
    link_info: Any = None
    signature: Any = None
    # The Python functions it names (py_functions.PyFunctionEntry, sorted by name): those its
    # bytecode calls through vm.builtin.call_py_func and the sources relaxc embedded. In the .vmo.
    py_functions: tuple = ()
    # Whether a VM may run the embedded sources (relax.load(..., allow_python=True)); in memory only.
    allow_python: bool = False

    # ---- questions -----------------------------------------------------------------

    @property
    def func_map(self) -> dict[str, int]:
        return {info.name: index for index, info in enumerate(self.func_table)}

    def function_index(self, name: str) -> int:
        for index, info in enumerate(self.func_table):
            if info.name == name:
                return index
        raise KeyError(name)

    def has_function(self, name: str) -> bool:
        return any(info.name == name for info in self.func_table)

    def get_instruction(self, index: int) -> Instruction:
        return decode_instruction(self.instr_data, self.instr_offset[index])[0]

    def instructions(self, info: FuncInfo) -> list[Instruction]:
        return [self.get_instruction(index) for index in range(info.start_instr, info.end_instr)]

    def import_module(self, library: Any) -> None:
        """Adds a kernel library (anything with get_function(name) -> callable | None)."""
        self.imports.append(library)

    # ---- files ---------------------------------------------------------------------

    def save_to_bytes(self) -> bytes:
        from .vmo import save_executable

        return save_executable(self)

    @staticmethod
    def load_from_bytes(data: bytes, source: str = "<bytes>", views: bool = False) -> "Executable":
        """`views`: tensors as read-only views of `data`, for inspection (vmo.load_executable)."""
        from .vmo import load_executable

        return load_executable(data, source, views)

    def export(self, path: str) -> None:
        """Writes the executable to `path`: .vmo bytes, or what the exporter of its suffix writes."""
        suffix = os.path.splitext(path)[1]
        if suffix == ".vmx" and suffix not in EXPORTERS:
            from ..artifact import vmx  # noqa: F401 - registers the .vmx exporter (the linker)
        if suffix in EXPORTERS:
            EXPORTERS[suffix](self, path)
            return
        if suffix == ".vmx":
            raise UserError(f"'{path}': writing a linked .vmx needs the linker, which is not available")
        with open(path, "wb") as handle:
            handle.write(self.save_to_bytes())

    # ---- listings ------------------------------------------------------------------

    def as_text(self, func: str | None = None) -> str:
        from .listing import as_text

        return as_text(self, func)

    def as_python(self) -> str:
        from .listing import as_python

        return as_python(self)

    def stats(self) -> str:
        from .listing import stats

        return stats(self)
