"""Kernel metadata: what the loader must know to call a kernel, as plain JSON.

The code generator writes one KernelInfo per kernel into the .ko manifest; the
loader reads it back to check arguments before a call. Shape expressions are
small JSON trees over the symbolic size variables:

    7                      an integer
    "n"                    a symbolic variable
    ["mul", "n", 4]        an operation of SHAPE_OPS applied to its operands
"""

from __future__ import annotations

from dataclasses import field

from ...diagnostics import UserError
from ...records import record


def _floordiv(a: int, b: int) -> int:
    return a // b


def _truncdiv(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _truncmod(a: int, b: int) -> int:
    return a - _truncdiv(a, b) * b


# The operations a shape expression may use, with TVM's integer semantics.
SHAPE_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _truncdiv,
    "mod": _truncmod,
    "floordiv": _floordiv,
    "floormod": lambda a, b: a % b,
    "min": min,
    "max": max,
}


def evaluate(expr, values: dict[str, int]) -> int:
    """The value of a shape expression; raises KeyError naming an unbound variable."""
    if isinstance(expr, bool):
        return int(expr)
    if isinstance(expr, int):
        return expr
    if isinstance(expr, str):
        return values[expr]
    op, *operands = expr
    args = [evaluate(operand, values) for operand in operands]
    if op in ("div", "mod", "floordiv", "floormod") and args[1] == 0:
        raise ZeroDivisionError(f"division by zero in shape expression {format_expr(expr)}")
    return SHAPE_OPS[op](*args)


_INFIX = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "div": "/", "mod": "%t"}


def format_expr(expr) -> str:
    """A shape expression as people write it: `n * 4 + 1`."""
    if isinstance(expr, (int, str)):
        return str(expr)
    op, *operands = expr
    texts = [format_expr(operand) for operand in operands]
    if op in _INFIX:
        return f"({texts[0]} {_INFIX[op]} {texts[1]})"
    return f"{op}({', '.join(texts)})"


# A kernel's scratch space, fixed at build time: what the code generators emit is a few
# blocks of shared data; a bound keeps a forged manifest from asking for terabytes at load.
MAX_WORKSPACE_BYTES = 1 << 32


def _check_expr(expr, where: str) -> None:
    if isinstance(expr, (int, str)):
        return
    if not isinstance(expr, list) or not expr or expr[0] not in SHAPE_OPS or len(expr) != 3:
        raise UserError(f"kernel metadata: bad shape expression {expr!r} in {where}")
    for operand in expr[1:]:
        _check_expr(operand, where)


@record
class ParamInfo:
    """One kernel parameter: a buffer (dtype + shape) or a scalar (dtype only)."""

    name: str
    kind: str  # "buffer" or "scalar"
    dtype: str
    shape: tuple = ()  # shape expressions, for buffers

    def to_json(self) -> dict:
        data = {"name": self.name, "kind": self.kind, "dtype": self.dtype}
        if self.kind == "buffer":
            data["shape"] = list(self.shape)
        return data

    @staticmethod
    def from_json(data: dict, where: str) -> "ParamInfo":
        try:
            kind = data["kind"]
            if kind not in ("buffer", "scalar"):
                raise UserError(f"kernel metadata: parameter kind '{kind}' in {where}")
            shape = tuple(data.get("shape", ()))
            for dim in shape:
                _check_expr(dim, where)
            return ParamInfo(str(data["name"]), kind, str(data["dtype"]), shape)
        except (KeyError, TypeError) as exc:
            raise UserError(f"kernel metadata: malformed parameter in {where}: {exc}") from None


@record
class LaunchInfo:
    """One GPU launch of a cuda kernel: its `__global__` symbol and its grid and block
    (3 shape expressions each, over the kernel's symbolic sizes and scalar parameters)."""

    symbol: str
    grid: tuple
    block: tuple
    shared_bytes: object = 0  # dynamic shared memory in bytes, a shape expression

    def to_json(self) -> dict:
        return {"symbol": self.symbol, "grid": list(self.grid), "block": list(self.block),
                "shared_bytes": self.shared_bytes}

    @staticmethod
    def from_json(data: dict, where: str, names: set) -> "LaunchInfo":
        try:
            symbol = data["symbol"]
            if not isinstance(symbol, str) or not symbol:
                raise UserError(f"kernel metadata: launch without a symbol in {where}")
            grid, block = tuple(data["grid"]), tuple(data["block"])
            if len(grid) != 3 or len(block) != 3:
                raise UserError(f"kernel metadata: launch '{symbol}' in {where} needs 3 grid and 3 block dimensions")
            shared = data.get("shared_bytes", 0)
            for expr in grid + block + (shared,):
                _check_expr(expr, where)
                unknown = sorted(_names(expr) - names)
                if unknown:
                    raise UserError(f"kernel metadata: launch '{symbol}' in {where} uses unknown size "
                                    f"'{unknown[0]}'")
            return LaunchInfo(symbol, grid, block, shared)
        except (KeyError, TypeError) as exc:
            raise UserError(f"kernel metadata: malformed launch in {where}: {exc}") from None


def _names(expr) -> set:
    if isinstance(expr, str):
        return {expr}
    if isinstance(expr, list):
        return set().union(*(_names(operand) for operand in expr[1:]))
    return set()


@record
class KernelInfo:
    """Everything the loader checks and passes for one kernel symbol."""

    name: str
    symbol: str
    abi_version: int
    params: tuple[ParamInfo, ...]
    symbolic_vars: tuple[str, ...] = ()  # passed after the scalar parameters, in this order
    workspace_bytes: object = 0  # a shape expression
    parallel: bool = False  # whether the kernel has a parallel loop
    noalias: bool = False  # whether buffers are assumed not to overlap (TVM's tir.noalias)
    writes: tuple[str, ...] = ()  # the buffer parameters the kernel stores to
    ret_dtype: str = ""  # the dtype of a scalar result (T.ret), "" when there is none
    attrs: dict = field(default_factory=dict)
    launches: tuple[LaunchInfo, ...] = ()  # cuda kernels only: the launches, in execution order

    @property
    def buffers(self) -> tuple[ParamInfo, ...]:
        return tuple(p for p in self.params if p.kind == "buffer")

    @property
    def scalars(self) -> tuple[ParamInfo, ...]:
        return tuple(p for p in self.params if p.kind == "scalar")

    def to_json(self) -> dict:
        data = {
            "name": self.name,
            "symbol": self.symbol,
            "abi_version": self.abi_version,
            "params": [p.to_json() for p in self.params],
            "symbolic_vars": list(self.symbolic_vars),
            "workspace_bytes": self.workspace_bytes,
            "parallel": self.parallel,
            "noalias": self.noalias,
            "writes": list(self.writes),
            "ret_dtype": self.ret_dtype,
            "attrs": dict(sorted(self.attrs.items())),
        }
        if self.launches:  # absent for CPU kernels: their manifests stay as they were
            data["launches"] = [launch.to_json() for launch in self.launches]
        return data

    @staticmethod
    def from_json(data: dict) -> "KernelInfo":
        if not isinstance(data, dict):
            raise UserError(f"kernel metadata: a kernel entry is {type(data).__name__}, not an object")
        where = f"kernel '{data.get('name', '?')}'"
        try:
            params = tuple(ParamInfo.from_json(p, where) for p in data["params"])
            workspace = data.get("workspace_bytes", 0)
            _check_expr(workspace, where)
            if isinstance(workspace, int) and not 0 <= workspace <= MAX_WORKSPACE_BYTES:
                raise UserError(f"kernel metadata: {where} asks for a workspace of {workspace} bytes "
                                f"(the limit is {MAX_WORKSPACE_BYTES})")
            symbolic = tuple(str(v) for v in data.get("symbolic_vars", ()))
            names = set(symbolic) | {p.name for p in params if p.kind == "scalar"}
            launches = data.get("launches", [])
            if not isinstance(launches, list):
                raise UserError(f"kernel metadata: 'launches' of {where} is not a list")
            return KernelInfo(
                name=str(data["name"]),
                symbol=str(data["symbol"]),
                abi_version=int(data["abi_version"]),
                params=params,
                symbolic_vars=symbolic,
                workspace_bytes=workspace,
                parallel=bool(data.get("parallel", False)),
                noalias=bool(data.get("noalias", False)),
                writes=tuple(str(name) for name in data.get("writes", ())),
                ret_dtype=str(data.get("ret_dtype", "")),
                attrs=dict(data.get("attrs", {})),
                launches=tuple(LaunchInfo.from_json(launch, where, names) for launch in launches),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"kernel metadata: malformed {where}: {exc}") from None
