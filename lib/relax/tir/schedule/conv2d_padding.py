"""The padding stage before a conv2d, as plain loops with no per-element test.

Legalized conv2d with padding first writes a padded copy of its input ("pad_temp"):
`pad[n, c, h, w] = if_then_else(h and w inside, data[n, c, h - top, w - left], 0)`,
a test per element. conv2d.fuse_epilogues replaces that nest by the border rows, then
for each inner row its left border, the copied source row and its right border, all
branch-free; only the last two axes may be padded.

    for n, c, h, w in T.grid(...):                     for n, c in T.grid(...):
        pad[n, c, h, w] = T.if_then_else(         ->       for h in range(top): for w: pad[n, c, h, w] = 0
            1 <= h and h < 33 and ..., data[...], 0)       for h in range(height): <left zeros, row copy, right zeros>
                                                           for h in range(bottom): for w: pad[n, c, ..., w] = 0

`padded_rows` writes a few rows of the same padded input into a buffer of their own
(conv2d_rows.py: each chunk of a convolution's output rows pads the rows it reads),
with one test per row, whether it is inside the source's rows or a border row.
"""

from __future__ import annotations

from ...ir import tir
from ..loop_nests import uses
from .nest import fresh, loop, match_nest, seq


def _evaluate(expr, env: dict):
    """The integer value of `expr` built from IntImm, the variables of `env`, + - *; None otherwise."""
    if isinstance(expr, tir.IntImm):
        return expr.value
    if isinstance(expr, tir.Var):
        return env.get(expr)
    if isinstance(expr, (tir.Add, tir.Sub, tir.Mul)):
        a, b = _evaluate(expr.a, env), _evaluate(expr.b, env)
        if a is None or b is None:
            return None
        return a + b if isinstance(expr, tir.Add) else a - b if isinstance(expr, tir.Sub) else a * b
    return None


def _offset(expr, var) -> int | None:
    """c when expr is var + c, else None."""
    values = [_evaluate(expr, {var: x}) for x in (0, 1, 2)]
    if None in values or values[1] - values[0] != 1 or values[2] - values[1] != 1:
        return None
    return values[0]


def _conjuncts(expr) -> list:
    if isinstance(expr, tir.And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


_MIRRORED = {tir.LE: tir.GE, tir.LT: tir.GT, tir.GE: tir.LE, tir.GT: tir.LT}


def _intervals(condition, variables) -> dict | None:
    """{var: [low, high)} that the condition (an And of `var + c  <op>  constant`, either side
    first: TVM prints `1 <= v`) allows, or None."""
    bounds = {}
    for part in _conjuncts(condition):
        if type(part) in _MIRRORED and isinstance(part.a, tir.IntImm) and not isinstance(part.b, tir.IntImm):
            part = _MIRRORED[type(part)](part.b, part.a)
        if not isinstance(part, (tir.GE, tir.GT, tir.LT, tir.LE)) or not isinstance(part.b, tir.IntImm):
            return None
        var = next((v for v in variables if uses(part.a, v)), None)
        offset = _offset(part.a, var) if var is not None else None
        if offset is None:
            return None
        limit = part.b.value - offset
        low, high = bounds.get(var, (None, None))
        if isinstance(part, (tir.GE, tir.GT)):
            limit += isinstance(part, tir.GT)
            low = limit if low is None else max(low, limit)
        else:
            limit += isinstance(part, tir.LE)
            high = limit if high is None else min(high, limit)
        bounds[var] = (low, high)
    return bounds


def pad_parts(stmt, buffer: tir.Buffer):
    """(nest, source load, fill, [(before, size, after)] per axis) when `stmt` writes `buffer` as
    `buffer[i] = if_then_else(i inside, source[i - before], fill)` padding only the last two axes."""
    nest = match_nest(stmt)
    if nest is None or nest.block.init is not None or any(iv.iter_type != "DataPar" for iv in nest.block.iter_vars):
        return None
    store = nest.block.body
    if store.buffer is not buffer or len(store.indices) != 4 or len(nest.block.iter_vars) != 4:
        return None
    value = store.value
    if not (isinstance(value, tir.Call) and value.op == "tir.if_then_else" and len(value.args) == 3):
        return None
    condition, source, fill = value.args
    if not isinstance(source, tir.BufferLoad) or len(source.indices) != 4 or not isinstance(fill, tir.FloatImm):
        return None
    variables = list(store.indices)
    bounds = _intervals(condition, variables)
    if bounds is None or any(not isinstance(d, tir.IntImm) for d in (*buffer.shape, *source.buffer.shape)):
        return None
    axes = []
    for position, (var, index) in enumerate(zip(variables, source.indices)):
        offset = _offset(index, var)
        if offset is None or offset > 0:
            return None
        before, size = -offset, source.buffer.shape[position].value
        after = buffer.shape[position].value - size - before
        inside = bounds.get(var, (None, None))
        if after < 0 or (position < 2 and (before or after)):
            return None
        if (before or after) and inside != (before, before + size):
            return None
        if not (before or after) and inside not in ((None, None), (0, size), (None, size), (0, None)):
            return None
        axes.append((before, size, after))
    return nest, source, fill, axes


def _names(nest):
    """The pad nest's loop variables, by its store's index variables (n, c, h, w)."""
    return [nest.loop_of(next(iv for iv in nest.block.iter_vars if iv.var is var)).loop_var
            for var in nest.block.body.indices]


def _inner_row(parts, write, n_value, c_value, row, w_like):
    """Row `row` of the padded buffer inside the source's rows: left fill, the copied row, right fill."""
    nest, source, fill, axes = parts
    n, c, h, w = nest.block.body.indices
    left, width, right = axes[3]
    const = lambda value: tir.IntImm(w_like.dtype, value)  # noqa: E731

    def run(start: int, count: int, value):
        var = fresh(w_like, "pad")
        return loop(var, const(count), write(row, var + const(start), value(var + const(start)))) if count > 0 else None

    pieces = [run(0, left, lambda column: fill),
              run(left, width, lambda column: nest.bound(source, {n: n_value, c: c_value, h: row, w: column})),
              run(left + width, right, lambda column: fill)]
    return seq([piece for piece in pieces if piece is not None])


def padding_as_loops(stmt, buffer: tir.Buffer) -> tir.Stmt | None:
    """The padding nest writing `buffer` as plain loops with no per-element test: the border
    rows, then for each inner row its left border, the copied source row and its right border."""
    parts = pad_parts(stmt, buffer)
    if parts is None:
        return None
    nest, source, fill, axes = parts
    (_, batch, _), (_, channels, _), (top, height, bottom), (left, width, right) = axes
    n_name, c_name, h_name, w_name = _names(nest)
    const = lambda value: tir.IntImm(w_name.dtype, value)  # noqa: E731
    n_var, c_var = fresh(n_name, "s"), fresh(c_name, "s")

    def write(row, column, value):
        return tir.BufferStore(buffer, value, (n_var, c_var, row, column))

    def rows(start: int, count: int, make):
        var = fresh(h_name, "pad")
        return loop(var, const(count), make(var + const(start))) if count > 0 else None

    def filled(row):
        var = fresh(w_name, "pad")
        return loop(var, const(left + width + right), write(row, var + const(0), fill))

    pieces = [rows(0, top, filled),
              rows(top, height, lambda row: _inner_row(parts, write, n_var, c_var, row, w_name)),
              rows(top + height, bottom, filled)]
    body = seq([piece for piece in pieces if piece is not None])
    return loop(n_var, const(batch), loop(c_var, const(channels), body, independent=True), independent=True)


def padded_rows(parts, local: tir.Buffer, n_value, first_row, count: int) -> tir.Stmt:
    """`local[c, r, w]` = the padded buffer's `[n_value, c, first_row + r, w]` for r < count, every
    channel c and column w, without the padded buffer: one test per row (inside the source's rows
    or a border row), none per element."""
    nest, source, fill, axes = parts
    (_, channels, _), (top, height, _), (left, width, right) = axes[1:]
    _, c_name, h_name, w_name = _names(nest)
    const = lambda value: tir.IntImm(w_name.dtype, value)  # noqa: E731
    c_var, r_var = fresh(c_name, "rows"), fresh(h_name, "rows")

    def write(row, column, value):
        return tir.BufferStore(local, value, (c_var, r_var, column))

    row = first_row + r_var
    inside = tir.And(tir.GE(row, const(top)), tir.LT(row, const(top + height)))
    column = fresh(w_name, "pad")
    border = loop(column, const(left + width + right), write(row, column, fill))
    body = tir.IfThenElse(inside, _inner_row(parts, write, n_value, c_var, row, w_name), border)
    return loop(c_var, const(channels), loop(r_var, const(count), body))
