"""The one-shot's kernels, built from the lowered module it printed rather than from the
text read back: the same kernels, named as the text names them.

`relaxc model.relax -o model.vmx` must give the bytes of the staged build, whose
`relaxc --emit kernels model.vms` reads its kernels from the printed text. After the
default pipeline a kernel read back is the kernel printed, but for the names that
printing changes, and kernel metadata and messages record names:

- TVMScript writes a buffer parameter under its buffer's name, so the parameter `var_A`
  of buffer `A` reads back as `A`;
- two buffers of one name in one scope print as `T_add_intermediate` and
  `T_add_intermediate_1` (a fused chain of adds), each read back over a handle of its
  printed name.

`as_printed` makes both renamings. A kernel where printing renamed anything else (a loop
variable, two sizes of one name), or with an expression the parser folds as it reads it
back (`x % 1`, which a legalization may build and the text reads back as 0), is read
back from the text instead.

Where every kernel comes from memory the bytecode does too (script/printed_bindings.py);
where one is read back, the text is read back for the bytecode too, the kernels built from
memory as signatures only (script.parse's signatures_only): kernel bodies are most of the
text.
"""

from __future__ import annotations

from ..ir import tir
from ..tir.loop_nests import uses
from ..tir.rewrite import Rewriter


def as_printed(lowered, printed_params: dict) -> dict:
    """The PrimFuncs of `lowered` that read back as themselves but for the names
    `script(lowered, printed_params)` printed them under, so named, by name."""
    kernels = {}
    for name, func in lowered.functions.items():
        printed = printed_params.get(name) if isinstance(func, tir.PrimFunc) else None
        if printed is not None and len(printed[0]) == len(func.params):
            renamed = _renamed(_with_buffers_renamed(func, printed[1]), printed[0])
            if renamed is not None:
                kernels[name] = renamed
    return kernels


def with_kernels(read_back, kernels: dict):
    """The module read back with `kernels` in place of its PrimFuncs of those names."""
    return read_back.with_fields(functions=type(read_back.functions)({**read_back.functions, **kernels}))


def _renamed(func: tir.PrimFunc, names: tuple[str, ...]) -> tir.PrimFunc | None:
    """`func` with its buffer parameters named `names`; None if a scalar parameter, or a
    handle its body names, printed under another name."""
    if all(param.name == name for param, name in zip(func.params, names)):
        return func
    params, handles = [], {}
    for param, name in zip(func.params, names):
        if param.name != name:
            # A scalar, or a handle the body names itself, would need renaming in the body.
            if func.buffer_of(param) is None or uses(func.body, param):
                return None
            handles[param] = tir.Var(name, param.dtype, span=param.span)
        params.append(handles.get(param, param))
    buffer_map = tuple((handles.get(param, param), buffer) for param, buffer in func.buffer_map)
    return func.with_fields(params=tuple(params), buffer_map=buffer_map)


class _BufferRenamer(Rewriter):
    """Puts renamed buffers in place of theirs, and their new handles in place of the old
    ones (in other buffers over the same memory too)."""

    def __init__(self, buffers: dict[int, tir.Buffer], handles: dict[tir.Var, tir.Var]):
        self.buffers, self.handles = buffers, handles
        self._others: dict[int, tir.Buffer] = {}

    def visit_Buffer(self, buffer: tir.Buffer) -> tir.Buffer:
        renamed = self.buffers.get(id(buffer))
        if renamed is not None:
            return renamed
        if buffer.data not in self.handles:
            return buffer
        other = self._others.get(id(buffer))
        if other is None:
            other = self._others[id(buffer)] = buffer.with_fields(data=self.handles[buffer.data])
        return other

    def visit_Var(self, var: tir.Var) -> tir.Var:
        return self.handles.get(var, var)


def _with_buffers_renamed(func: tir.PrimFunc, renamed: tuple) -> tir.PrimFunc:
    """`func` with each (buffer, name) of `renamed` named `name`, over a handle of that name,
    as the text declares it."""
    if not renamed:
        return func
    buffers, handles = {}, {}
    for buffer, name in renamed:
        handle = tir.Var(name, buffer.data.dtype, span=buffer.data.span)
        handles[buffer.data] = handle
        buffers[id(buffer)] = buffer.with_fields(name=name, data=handle)
    renamer = _BufferRenamer(buffers, handles)
    buffer_map = tuple((param, renamer.visit_Buffer(buffer)) for param, buffer in func.buffer_map)
    return func.with_fields(body=renamer.visit(func.body), buffer_map=buffer_map)

