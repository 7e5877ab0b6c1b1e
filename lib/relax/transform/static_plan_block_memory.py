"""StaticPlanBlockMemory: intermediate tensors share storages planned at compile time.

    alloc: R.Tensor((2, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
    cls.exp(x, alloc)
    alloc1: R.Tensor((2, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 8]), ...)
    cls.exp(alloc, alloc1)                       # last use of alloc
    alloc2: R.Tensor((2, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 8]), ...)
    cls.exp(alloc1, alloc2)
    return alloc2
becomes
    storage: R.Object = R.memory.alloc_storage(R.shape([64]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
    alloc: ... = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 8]), R.dtype("float32"), R.prim_value(0))
    cls.exp(x, alloc)
    storage1: R.Object = R.memory.alloc_storage(R.shape([64]), ...)
    alloc1: ... = R.memory.alloc_tensor(storage1, ...)
    cls.exp(alloc, alloc1)
    alloc2: ... = R.builtin.alloc_tensor(...)    # returned: never planned
    cls.exp(alloc1, alloc2)
    return alloc2

and a later tensor of the same dtype takes `storage` again once `alloc` is dead.

The policy (TVM's): free storages are pooled by dtype (and device). A request of static size S
takes the smallest free storage of size in [S, 16 S]; failing that the largest in
[S / 16, S), which grows to S (the storage is allocated once, at its final size);
failing that a new storage. A symbolic size is bounded with the function's
`tir_var_upper_bound` attribute when every variable in it has a bound, and is then
planned like a static one (a call with larger sizes than promised fails in
alloc_tensor, whose storage is too small); otherwise it reuses only a free storage of a
structurally equal size. Which tensors take part, and where each dies, is
memory_tokens.py's analysis: tensors that escape keep their own allocation. A
storage first allocated inside a branch of an `if` is used in that branch only.
Kills are KillAfterLastUse's job. Expects CallTIRRewrite's output.

Storages are byte arrays (dtype uint8) of their exact size in bytes. TVM prints the
tensor's dtype there while the size is already in bytes, and its runtime multiplies
by the dtype's width again (a float32 storage takes 4x the memory it needs).
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.module import IRModule
from ..ir.struct_info import ObjectStructInfo
from ..ir.structural import structural_equal
from ..op.infer import literal_of
from ..op.shape import static_value
from ..records import record
from .binding_rewriter import BindingRewriter
from .memory_alloc import Names, storage_call, tensor_call
from .memory_sizes import function_upper_bounds, tensor_bytes, upper_bound_bytes
from .memory_tokens import Token, TokenAnalysis, TokenCollector
from ..ir.pass_infra import FunctionPass, register_pass

MATCH_RANGE = 16


@record(mutable=True, eq=False)
class Storage:
    dtype: str
    device: object  # the runtime device index
    size: int | tir.PrimExpr  # bytes: an int when static
    scope: tuple[int, ...]  # the branch it was first allocated in
    first: Token
    var: rx.Var | None = None


def _within(scope: tuple[int, ...], inner: tuple[int, ...]) -> bool:
    return inner[:len(scope)] == scope


class StoragePlanner:
    """Assigns every planned token a storage, walking bindings in program order."""

    def __init__(self, analysis: TokenAnalysis, bounds: dict[str, int]):
        self.analysis = analysis
        self.bounds = bounds
        self.free: list[Storage] = []
        self.storage_of: dict[Token, Storage] = {}
        self.storages: list[Storage] = []
        self.remaining = {token: token.uses for token in analysis.tokens.values()}

    def plan(self, func: rx.Function) -> dict[Token, Storage]:
        self.seq(func.body)
        return self.storage_of

    def seq(self, seq: rx.Expr) -> None:
        if not isinstance(seq, rx.SeqExpr):
            return
        for block in seq.blocks:
            for binding in block.bindings:
                self.binding(binding)

    def binding(self, binding: rx.Binding) -> None:
        token = self.analysis.tokens.get(id(binding))
        if token is not None and not token.escaped:
            self.storage_of[token] = self.request(token)
            if token.uses == 0:
                self.release(token)
        value = binding.value
        if isinstance(value, rx.If):
            for branch in (value.true_branch, value.false_branch):
                self.branch(branch)
        for used in self.analysis.reads.get(id(binding), ()):
            self.remaining[used] -= 1
            if self.remaining[used] == 0 and not used.escaped:
                self.release(used)

    def branch(self, branch: rx.Expr) -> None:
        before = len(self.storages)
        self.seq(branch)
        created = self.storages[before:]
        # Storages first allocated in this branch do not exist on the other path.
        self.free = [s for s in self.free if s not in created]

    # ---- the pool ---------------------------------------------------------------------

    def request(self, token: Token) -> Storage:
        size = self.size_of(token)
        device = literal_of(token.device) if token.device is not None else 0
        candidates = [s for s in self.free if s.dtype == token.dtype and s.device == device
                      and _within(s.scope, token.scope)]
        chosen = self.best_fit(candidates, size) if isinstance(size, int) else next(
            (s for s in candidates if not isinstance(s.size, int) and structural_equal(s.size, size)), None)
        if chosen is None:
            chosen = Storage(token.dtype, device, size, token.scope, token)
            self.storages.append(chosen)
        else:
            self.free.remove(chosen)
            if isinstance(size, int) and size > chosen.size:
                chosen.size = size
        return chosen

    @staticmethod
    def best_fit(candidates: list[Storage], size: int) -> Storage | None:
        static = [s for s in candidates if isinstance(s.size, int)]
        larger = [s for s in static if size <= s.size <= size * MATCH_RANGE]
        if larger:
            return min(larger, key=lambda s: s.size)
        smaller = [s for s in static if s.size < size and s.size * MATCH_RANGE >= size]
        if smaller:
            return max(smaller, key=lambda s: s.size)
        return None

    def release(self, token: Token) -> None:
        storage = self.storage_of.get(token)
        if storage is not None and storage not in self.free:
            self.free.append(storage)

    def size_of(self, token: Token) -> int | tir.PrimExpr:
        size = tensor_bytes(token.shape, token.dtype)
        if static_value(size) is not None:
            return static_value(size)
        bounded = upper_bound_bytes(token.shape, token.dtype, self.bounds)
        return bounded if bounded is not None else size


class _Rewriter(BindingRewriter):
    """Replaces planned allocations by alloc_storage (at a storage's first use) + alloc_tensor."""

    def __init__(self, analysis: TokenAnalysis, storage_of: dict[Token, Storage], names: Names):
        self.analysis = analysis
        self.storage_of = storage_of
        self.names = names

    def rewrite(self, binding: rx.Binding) -> list[rx.Binding]:
        value = binding.value
        token = self.analysis.tokens.get(id(binding))
        storage = self.storage_of.get(token) if token is not None else None
        if storage is None:
            return [binding]
        out: list[rx.Binding] = []
        if storage.first is token:
            storage.var = rx.Var(self.names.fresh("storage"), ObjectStructInfo())
            out.append(rx.VarBinding(storage.var, storage_call(storage.size, value.span, token.device), span=binding.span))
        out.append(dataclasses.replace(binding, value=tensor_call(
            storage.var, value.args[0], value.args[1], value.span, token.device)))
        return out


@register_pass
class StaticPlanBlockMemory(FunctionPass):
    """Plan storage for intermediate tensors: reuse a dead tensor's storage for a later one."""

    name = "static-plan-block-memory"
    opt_level = 2

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        analysis = TokenCollector(mod).run(func)
        if not analysis.tokens:
            return func
        storage_of = StoragePlanner(analysis, function_upper_bounds(func.attrs)).plan(func)
        if not storage_of:
            return func
        body = _Rewriter(analysis, storage_of, Names(func)).seq(func.body)
        return dataclasses.replace(func, body=body)
