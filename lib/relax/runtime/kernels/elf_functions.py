"""Checks of where a relocatable object's function symbols say its functions lie.

The code bytes themselves are not judged (corrupted or substituted code is for the code
hashes and the signature to catch: docs/signing.md), but the symbol table's account of
them is. An entry symbol moved into the middle of another function passes every check of
the tables, and the process jumps into an instruction's middle (SIGILL). So, for each
defined function symbol (STT_FUNC) of a relocatable object of a machine MCJIT loads
kernels for (elf_machines.RELOCATION_WIDTHS; elsewhere a function symbol may stand for
something else: on 64-bit PowerPC's ELFv1 it names a descriptor in .opd, a data section):

- it lies in an executable section, [st_value, st_value + st_size) inside that section;
- it does not overlap another function of its section (aliases, with the same start and
  size, aside);

and each kernel entry symbol the manifest names is such a function, of nonzero size, in
the target's native code (check_entry_symbols). A symbol moved to the start of another
function, or into padding between functions, passes: only the hashes catch that.
"""

from __future__ import annotations

from typing import NamedTuple

from .elf_machines import ObjectError

SHF_EXECINSTR = 0x4


class FunctionSymbol(NamedTuple):
    number: int  # in the symbol table
    section: int
    value: int
    size: int
    name: str


def check_functions(elf) -> None:
    """Raises ObjectError for a function symbol outside its executable section or
    overlapping another function (`elf`: an elf_check.ElfObject, its symbols read)."""
    by_section: dict[int, list[FunctionSymbol]] = {}
    for function in elf.functions:
        section = elf.sections[function.section]
        if not section.flags & SHF_EXECINSTR:
            raise ObjectError(f"function symbol {function.number} is defined in section {function.section}, "
                              "which is not executable")
        if function.value + function.size > section.size:
            raise ObjectError(f"function symbol {function.number} spans [{function.value}, "
                              f"{function.value + function.size}), past the end of its section {function.section} "
                              f"({section.size} bytes)")
        if function.size:
            by_section.setdefault(function.section, []).append(function)
    for functions in by_section.values():
        functions.sort(key=lambda f: (f.value, f.size))
        for before, after in zip(functions, functions[1:]):
            alias = (before.value, before.size) == (after.value, after.size)
            if not alias and after.value < before.value + before.size:
                raise ObjectError(f"function symbols {before.number} and {after.number} overlap in section "
                                  f"{before.section}: [{before.value}, {before.value + before.size}) and "
                                  f"[{after.value}, {after.value + after.size})")


def check_entry_symbols(objects: list, kernels) -> None:
    """Raises ObjectError unless each kernel's symbol is a defined function of nonzero size
    in one of `objects` (the checked ElfObjects of one target's native code)."""
    defined = {function.name: function for elf in objects for function in elf.functions}
    for kernel in kernels:
        function = defined.get(kernel.symbol)
        if function is None:
            raise ObjectError(f"kernel '{kernel.name}' has entry symbol '{kernel.symbol}', which the native code "
                              "does not define as a function")
        if not function.size:
            raise ObjectError(f"the entry symbol '{kernel.symbol}' of kernel '{kernel.name}' has size 0")
