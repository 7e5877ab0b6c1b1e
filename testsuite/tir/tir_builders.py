"""Small constructors for hand-built PrimFuncs in the TIR tests."""

from relax.ir import tir


def i32(value: int) -> tir.IntImm:
    return tir.IntImm("int32", value)


def f32(value: float) -> tir.FloatImm:
    return tir.FloatImm("float32", value)


TRUE = tir.IntImm("bool", 1)


def buffer(name: str, shape, dtype: str = "float32") -> tir.Buffer:
    dims = tuple(i32(d) if isinstance(d, int) else d for d in shape)
    return tir.Buffer(name, dims, dtype, tir.Var(name, "handle"))


def prim_func(buffers, body, scalars=()) -> tir.PrimFunc:
    handles = tuple(tir.Var(b.name + "_handle", "handle") for b in buffers)
    return tir.PrimFunc(handles + tuple(scalars), body, buffer_map=tuple(zip(handles, buffers)))


def loops(names_extents, body, kind: str = "serial"):
    """Nested serial loops; returns (stmt, vars) where body is a function of the vars."""
    variables = [tir.Var(name) for name, _ in names_extents]
    stmt = body(*variables)
    for var, (_, extent) in reversed(list(zip(variables, names_extents))):
        stmt = tir.For(var, i32(0), i32(extent) if isinstance(extent, int) else extent, kind, stmt)
    return stmt


def block(name, iters, values, body_fn, init_fn=None, predicate=TRUE, alloc=()):
    """A BlockRealize: iters are (name, extent, "DataPar"|"CommReduce") triples."""
    iter_vars = tuple(
        tir.IterVar(tir.Var("v" + n), tir.Range(i32(0), i32(e) if isinstance(e, int) else e), kind)
        for n, e, kind in iters
    )
    variables = [iv.var for iv in iter_vars]
    body = body_fn(*variables)
    init = init_fn(*variables) if init_fn else None
    return tir.BlockRealize(tuple(values), predicate,
                            tir.Block(name, iter_vars, (), (), body, init, tuple(alloc)))


def matmul_func(m=16, n=4, k=8):
    """C[i, j] = sum_k A[i, k] * B[k, j] as one block with an init."""
    A, B, C = buffer("A", (m, k)), buffer("B", (k, n)), buffer("C", (m, n))

    def body(i, j, r):
        return block(
            "C", [("i", m, "DataPar"), ("j", n, "DataPar"), ("k", k, "CommReduce")], (i, j, r),
            lambda vi, vj, vk: tir.BufferStore(
                C, tir.Add(tir.BufferLoad(C, (vi, vj)),
                           tir.Mul(tir.BufferLoad(A, (vi, vk)), tir.BufferLoad(B, (vk, vj)))), (vi, vj)),
            lambda vi, vj, vk: tir.BufferStore(C, f32(0.0), (vi, vj)),
        )

    return prim_func([A, B, C], loops([("i", m), ("j", n), ("k", k)], body))
