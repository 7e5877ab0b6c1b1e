"""A Relax function's kernel calls as one native function: LLVM IR, compiled with llvmlite.

exec_mode="compiled" turns a straight-line bytecode function whose shapes are all
static into a plan (vm/machine/native_mode.py): an ordered list of kernel calls, each with
the positions of its arguments. This module writes that plan as one LLVM function

    int32_t relax_host(void **slots, int64_t *frame);

and compiles it for the host with MCJIT. The code holds no address: everything that
varies lives in two tables the caller owns.

- `frame` holds, per call, the kernel's address, its context's address, a scalar
  word array and the kernel's argument array (buffer data pointers, in parameter
  order). Everything known when the VM loads (constants, the planned buffers) is
  written into the argument arrays once, then.
- `slots` holds what changes from one call to the next (the inputs' data, the
  result's storage); before each kernel the code copies the slots it names into
  that kernel's argument array.

    call i:   args_i[j] = slots[k]   (for each argument that changes per call)
              rc = kernel_i(args_i, scalars_i, ctx_i)
              if rc != 0: return i + 1

It returns 0, or the 1-based number of the first kernel that failed; the VM then
runs the function again on its Python path, which reports the error as usual
(kernels write only their outputs, so running them again is harmless). With no
dispatch loop and no Python between kernels, a whole model costs one foreign call.
Because the text holds no address, compiled functions are shared by every VM of the
process with the same plan shape (`compile_host_function` caches them).
"""

from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm

from ...records import record
from .host import host_target_machine, initialize_llvm

SYMBOL = "relax_host"
HOST_CFUNCTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)

# Words of a call's header in the frame: kernel address, context address, scalars address.
KERNEL_WORD, CONTEXT_WORD, SCALARS_WORD = 0, 1, 2
HEADER_WORDS = 3


@record
class CallLayout:
    """Where one kernel call's words are in the frame, and which arguments come from slots."""

    header: int                             # frame index of the call's header
    args: int                               # frame index of its argument array
    copies: tuple[tuple[int, int], ...]     # (argument position, slot index) filled per call


def host_function_ir(calls: tuple[CallLayout, ...], triple: str = "") -> str:
    """The LLVM module text of relax_host for these calls."""
    lines = [f'target triple = "{triple}"' if triple else "",
             f"define i32 @{SYMBOL}(ptr noalias %slots, ptr noalias %frame) {{", "entry:"]
    failures = []
    for number, call in enumerate(calls):
        label = "entry" if number == 0 else f"call{number}"
        if number:
            lines.append(f"{label}:")
        lines.append(f"  %args{number} = getelementptr inbounds i64, ptr %frame, i64 {call.args}")
        for position, slot in call.copies:
            lines += [f"  %s{number}.{position}.p = getelementptr inbounds ptr, ptr %slots, i64 {slot}",
                      f"  %s{number}.{position} = load ptr, ptr %s{number}.{position}.p, align 8",
                      f"  %a{number}.{position} = getelementptr inbounds ptr, ptr %args{number}, i64 {position}",
                      f"  store ptr %s{number}.{position}, ptr %a{number}.{position}, align 8"]
        for word, name in ((KERNEL_WORD, "kernel"), (CONTEXT_WORD, "ctx"), (SCALARS_WORD, "scalars")):
            lines += [f"  %{name}{number}.p = getelementptr inbounds i64, ptr %frame, i64 {call.header + word}",
                      f"  %{name}{number} = load ptr, ptr %{name}{number}.p, align 8"]
        lines += [f"  %rc{number} = call i32 %kernel{number}(ptr %args{number}, ptr %scalars{number}, ptr %ctx{number})",
                  f"  %bad{number} = icmp ne i32 %rc{number}, 0",
                  f"  br i1 %bad{number}, label %fail, label %{'call' + str(number + 1) if number + 1 < len(calls) else 'done'}"]
        failures.append(f"[{number + 1}, %{label}]")
    if not calls:
        lines.append("  br label %done")
    lines += ["done:", "  ret i32 0"]
    if calls:
        lines += ["fail:", f"  %which = phi i32 {', '.join(failures)}", "  ret i32 %which"]
    lines.append("}")
    return "\n".join(lines) + "\n"


class HostFunction:
    """relax_host compiled into this process; call it with the two tables' addresses."""

    def __init__(self, text: str):
        initialize_llvm()
        machine = host_target_machine()
        module = llvm.parse_assembly(text)
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        module.verify()
        self._engine = llvm.create_mcjit_compiler(module, machine)
        self._engine.finalize_object()
        self.address = self._engine.get_function_address(SYMBOL)
        self.call = HOST_CFUNCTYPE(self.address)


@functools.lru_cache(maxsize=256)
def compile_host_function(calls: tuple[CallLayout, ...]) -> HostFunction:
    """The compiled relax_host for this call layout (one per distinct layout and process)."""
    return HostFunction(host_function_ir(calls))
