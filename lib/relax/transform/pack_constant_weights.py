"""PackConstantWeights: constant matmul weights stored, once, at build time, in the layout their kernel's rule reads.

    lv: R.Tensor((784, 512), "float32") = R.const(W)                   (W: 784 x 512)
    gv = R.call_tir(cls.fused_matmul_add_relu, (x, lv, b), ...)
->
    gv = R.call_tir(cls.fused_matmul_add_relu, (x, R.const(P), b), ...)   (P: 32 x 784 x 16 for AVX2)

with the kernel reading `lv[v_k, v_i1]` as `lv[v_i1 // 16, v_k, v_i1 % 16]`
(tir/schedule/packed_weights.py). Two layouts, by the rule that takes the kernel, in
the widths of the CPU the kernels are built for (tir/schedule/cpu.py):

- a register-tiled matmul (several rows of C) reads panels as wide as its register tile
  (16 columns on AVX2, 64 on AVX-512): each k step's floats contiguous, straight from
  the constant. Without it, every call copied the weight into panels again, reading
  rows 2 KiB apart, with those copies outside the multiply-adds;
- a gemv (one row of C, batch 1) reads strips (64 columns on AVX2, 256 on AVX-512), one
  strip per thread: each thread streams one contiguous panel. Row-major, a thread's strip
  is half of every row, so the gemv rule splits big products by rows instead (its
  columns would land in half of the L2's sets on some CPUs) and adds the partial sums after.

The target comes from the PassContext's config under TARGET_KEY (a Target or its
string): `relax.build`, `relax.build.lower(mod, target=...)` and relaxc set it to the llvm
target they build kernels for (relaxc without --target: this host); without it (`lower`
called with no target) the layouts are those of the generic target `llvm`,
`relax.build`'s default. Kernels built for another CPU read any layout (their tile
narrows to divide its panels), only not as fast: AVX-512 kernels reading the generic
target's 8-column panels ran a 1024 x 1024 weight 4 times slower.

A kernel is rewritten only when every call of it passes a constant at the packed
position (a kernel shared by a constant and a computed operand keeps its layout), and
a constant's binding goes when no use of it is left, so the artifact carries each
weight once. The rewritten kernel computes the same as before on any target: only the
CPU rules read the layouts faster (figures: docs/tir-lowering.md). The pass runs after
fusion (the kernels it looks at are the ones that get built); it is left out for cuda
builds, whose matmul schedule reads B in its own tiles.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import expr as rx
from ..ir.analysis import collect, free_vars
from ..ir.module import IRModule
from ..ir.visitor import ExprMutator
from ..tir.schedule.packed_weights import pack_array, packable_params, read_packed
from ..ir.pass_infra import Pass, PassContext, register_pass

TARGET_KEY = "relax.PackConstantWeights.target"  # the llvm target whose CPU model decides the widths
DEFAULT_TARGET = "llvm"


def _call_tir_kernel(call) -> str | None:
    """The kernel a `call_tir` with a tuple of arguments calls, or None."""
    if (isinstance(call, rx.Call) and isinstance(call.op, rx.Op) and call.op.name == "relax.call_tir"
            and len(call.args) == 2 and isinstance(call.args[0], rx.GlobalVar) and isinstance(call.args[1], rx.Tuple)):
        return call.args[0].name_hint
    return None


def _constants(func: rx.Function) -> dict[int, rx.Constant]:
    """id(var) -> the constant it is bound to, for every variable of `func` bound to one."""
    return {id(b.var): b.value for b in collect(func, lambda n: isinstance(n, rx.VarBinding))
            if isinstance(b.value, rx.Constant)}


def _weight(arg, constants) -> rx.Constant | None:
    constant = arg if isinstance(arg, rx.Constant) else constants.get(id(arg)) if isinstance(arg, rx.Var) else None
    if constant is None or constant.data.dtype != np.float32 or constant.data.ndim != 2:
        return None
    return constant


def _chosen_positions(mod: IRModule, cpu) -> dict[str, dict[int, int]]:
    """Kernel name -> {argument position: panel width} for the positions every one of its
    calls passes a packable constant at."""
    kernels = mod.prim_funcs()
    chosen: dict[str, dict[int, int]] = {}
    references: dict[str, int] = {}
    calls: dict[str, int] = {}
    for func in mod.relax_functions().values():
        constants = _constants(func)
        for gv in _all_global_vars(func):
            references[gv] = references.get(gv, 0) + 1
        for call in collect(func, lambda n: _call_tir_kernel(n) is not None):
            name = _call_tir_kernel(call)
            if name not in kernels:
                continue
            calls[name] = calls.get(name, 0) + 1
            if name not in chosen:
                chosen[name] = packable_params(kernels[name], cpu)
            args = call.args[1].fields
            chosen[name] = {p: width for p, width in chosen[name].items()
                            if p < len(args) and _weight(args[p], constants) is not None}
    # A kernel referred to other than by these calls (a packed call, a second use of its
    # GlobalVar object) keeps its layout.
    return {name: positions for name, positions in chosen.items()
            if positions and references.get(name) == calls.get(name)}


def _all_global_vars(func: rx.Function):
    """The name of every reference to a GlobalVar in `func`, one per use (shared objects count each time)."""
    names = []

    class _Uses(ExprMutator):
        memoize = False

        def visit_GlobalVar(self, gv):
            names.append(gv.name_hint)
            return gv

    _Uses().visit(func)
    return names


class _PassPacked(ExprMutator):
    """Calls of the rewritten kernels get the packed constants; each weight packed once."""

    def __init__(self, positions: dict[str, dict[int, int]], constants: dict[int, rx.Constant]):
        super().__init__()
        self.positions, self.constants = positions, constants
        self.packed: dict[tuple[int, int], rx.Constant] = {}  # (id(original constant), width) -> packed one

    def visit_Call(self, call: rx.Call) -> rx.Expr:
        call = self.generic_visit(call)
        name = _call_tir_kernel(call)
        if name not in self.positions:
            return call
        fields = list(call.args[1].fields)
        for position, width in self.positions[name].items():
            weight = _weight(fields[position], self.constants)
            packed = self.packed.get((id(weight), width))
            if packed is None:
                # A view of the read-only weight (frozen leaves it as it is), or a new array.
                packed = rx.Constant(rx.frozen(pack_array(np.asarray(weight.data), width)), span=weight.span)
                self.packed[(id(weight), width)] = packed
            fields[position] = packed
        args = (call.args[0], dataclasses.replace(call.args[1], fields=tuple(fields)))
        return dataclasses.replace(call, args=args)


def _drop_unused_constants(func: rx.Function) -> rx.Function:
    """`func` without the bindings of constants that nothing uses any more."""
    used = {id(v) for b in collect(func, lambda n: isinstance(n, rx.VarBinding)) for v in free_vars(b.value)}
    used |= {id(v) for s in collect(func, lambda n: isinstance(n, rx.SeqExpr)) for v in free_vars(s.body)}

    class _Drop(ExprMutator):
        def visit_SeqExpr(self, seq: rx.SeqExpr) -> rx.SeqExpr:
            seq = self.generic_visit(seq)
            blocks = []
            for block in seq.blocks:
                kept = tuple(b for b in block.bindings
                             if not (isinstance(b, rx.VarBinding) and isinstance(b.value, rx.Constant)
                                     and id(b.var) not in used))
                blocks.append(block if len(kept) == len(block.bindings) else dataclasses.replace(block, bindings=kept))
            blocks = [b for b in blocks if b.bindings]
            return dataclasses.replace(seq, blocks=tuple(blocks))

    return _Drop().visit(func)


@register_pass
class PackConstantWeights(Pass):
    """Store constant matmul weights in the layout their kernel's schedule reads (panels, strips)."""

    name = "pack-constant-weights"
    opt_level = 1

    def run(self, mod: IRModule) -> IRModule:
        from ..tir.schedule.cpu import cpu_info

        target = PassContext.current().get_config(TARGET_KEY) or DEFAULT_TARGET
        positions = _chosen_positions(mod, cpu_info(target))
        if not positions:
            return mod
        functions = dict(mod.functions)
        for name, chosen in positions.items():
            functions[name] = read_packed(functions[name], chosen)
        for name, func in mod.relax_functions().items():
            rewritten = _PassPacked(positions, _constants(func)).visit(func)
            if rewritten is not func:
                functions[name] = _drop_unused_constants(rewritten)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)


__all__ = ["DEFAULT_TARGET", "PackConstantWeights", "TARGET_KEY"]
