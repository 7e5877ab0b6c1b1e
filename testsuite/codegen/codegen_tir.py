"""Helpers that build lowered TIR by hand for the codegen tests (the lowering's output form)."""

from __future__ import annotations

from relax.ir import FrozenDict, tir


def i64(value: int) -> tir.IntImm:
    return tir.IntImm("int64", value)


def param(name: str, dtype: str, shape) -> tuple[tir.Var, tir.Buffer]:
    """A handle parameter and its buffer; the flattened body reuses the same buffer (1-D)."""
    data = tir.Var(name, "handle")
    dims = tuple(i64(d) if isinstance(d, int) else d for d in shape)
    return data, tir.Buffer(name, dims, dtype, data=data)


def flat(buffer: tir.Buffer, extent) -> tir.Buffer:
    """The 1-D view of a parameter buffer over the same data handle."""
    return tir.Buffer(buffer.name + "_flat", (extent if not isinstance(extent, int) else i64(extent),),
                      buffer.dtype, data=buffer.data)


def kernel(params, body: tir.Stmt, noalias: bool = True) -> tir.PrimFunc:
    """A PrimFunc from [(handle, buffer) | scalar Var] in parameter order (tir.noalias as legalized ops have)."""
    param_vars, buffer_map = [], []
    for item in params:
        if isinstance(item, tuple):
            param_vars.append(item[0])
            buffer_map.append(item)
        else:
            param_vars.append(item)
    attrs = FrozenDict({"tir.noalias": True}) if noalias else FrozenDict()
    return tir.PrimFunc(tuple(param_vars), body, buffer_map=tuple(buffer_map), attrs=attrs)


def loop(var: tir.Var, extent, body: tir.Stmt, kind: str = "serial", start=0) -> tir.For:
    dtype = var.dtype
    to_imm = lambda x: tir.IntImm(dtype, x) if isinstance(x, int) else x  # noqa: E731
    return tir.For(var, to_imm(start), to_imm(extent), kind, body)


def load(buffer: tir.Buffer, index) -> tir.BufferLoad:
    return tir.BufferLoad(buffer, (index,))


def store(buffer: tir.Buffer, index, value) -> tir.BufferStore:
    return tir.BufferStore(buffer, value, (index,))


def elementwise(n: int, dtypes, result_dtype, compute, kind: str = "serial", noalias: bool = True) -> tir.PrimFunc:
    """C[i] = compute(A0[i], A1[i], ...) over n elements; the last dtype's buffer is the output."""
    params = [param(f"A{k}", dtype, (n,)) for k, dtype in enumerate(dtypes)]
    out = param("C", result_dtype, (n,))
    i = tir.Var("i", "int64")
    value = compute(*[load(buffer, i) for _, buffer in params])
    return kernel(params + [out], loop(i, i64(n), store(out[1], i, value), kind), noalias)
