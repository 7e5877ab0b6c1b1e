"""The one-shot's kernels, built from the lowered module it printed rather than from the
text read back: the same kernels, named as the text names them.

`relaxc model.relax -o model.vmx` must give the bytes of the staged build, whose
`relaxc --emit kernels model.vms` reads its kernels from the printed text. After the
default pipeline a kernel read back is the kernel printed, but for the names that
printing changes: TVMScript writes a buffer parameter under its buffer's name, so the
parameter `var_A` of buffer `A` reads back as `A`, and kernel metadata records
parameter names. `as_printed` renames those parameters. A kernel whose printing gave
any variable or buffer a name of its own (two in one scope with one name, a name that
is not an identifier) is read back from the text instead.

The text is still read back for the bytecode, but the kernels built from memory as
signatures only (script.parse's signatures_only): kernel bodies are most of the text.
"""

from __future__ import annotations

from ..ir import tir


def as_printed(lowered, printed_params: dict) -> dict:
    """The PrimFuncs of `lowered` that read back as themselves but for their buffer
    parameters' names, so named, by name: those `script(lowered, printed_params)` printed
    without renaming anything inside them."""
    kernels = {}
    for name, func in lowered.functions.items():
        names = printed_params.get(name) if isinstance(func, tir.PrimFunc) else None
        if names is not None and len(names) == len(func.params):
            renamed = _renamed(func, names)
            if renamed is not None:
                kernels[name] = renamed
    return kernels


def with_kernels(read_back, kernels: dict):
    """The module read back with `kernels` in place of its PrimFuncs of those names."""
    return read_back.with_fields(functions=type(read_back.functions)({**read_back.functions, **kernels}))


def _renamed(func: tir.PrimFunc, names: tuple[str, ...]) -> tir.PrimFunc | None:
    """`func` with its buffer parameters named `names`; None if a scalar parameter printed
    under another name (it would need renaming in the body too)."""
    if all(param.name == name for param, name in zip(func.params, names)):
        return func
    buffers = dict(func.buffer_map)
    params, handles = [], {}
    for param, name in zip(func.params, names):
        if param.name != name:
            if param not in buffers or _used_in(func, param):
                return None
            handles[param] = tir.Var(name, param.dtype, span=param.span)
        params.append(handles.get(param, param))
    buffer_map = tuple((handles.get(param, param), buffer) for param, buffer in func.buffer_map)
    return func.with_fields(params=tuple(params), buffer_map=buffer_map)


def _used_in(func: tir.PrimFunc, param: tir.Var) -> bool:
    """Whether the body names the parameter's handle itself (not through its buffer)."""
    from ..tir.rewrite import walk

    found = []
    walk(func.body, lambda var: found.append(var) if var is param else None, tir.Var)
    return bool(found)
