"""FuseTIR: every primitive Relax function (made by FuseOps) becomes one PrimFunc.

The kernels the primitive function calls are merged into a single PrimFunc of the
same name (fusion_kernel.py), and its callers call that kernel directly:

    lv3: R.Tensor((1, 128)) = cls.fused_matmul_add_relu(x, w, b)
becomes
    lv3 = R.call_tir(cls.fused_matmul_add_relu, (x, w, b), out_sinfo=R.Tensor((1, 128)))
with
    @T.prim_func(private=True)
    def fused_matmul_add_relu(x: T.Buffer(...), w: T.Buffer(...), b: T.Buffer(...),
                              compute_intermediate: T.Buffer((1, 128))):
        matmul_intermediate = T.sblock_alloc_buffer((1, 128))
        T_add_intermediate = T.sblock_alloc_buffer((1, 128))
        ... the blocks of matmul, add and relu, in order ...

Kernels that only the primitive functions called are removed from the module,
and dead code after the rewrite with them (as TVM's FuseTIR ends with DCE).
Symbolic sizes the fused kernel cannot read from its buffers' shapes arrive as
scalar parameters (call_tir's tir_vars).
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.analysis import all_global_vars
from ..ir.module import IRModule
from ..ir.struct_info import ShapeStructInfo, TupleStructInfo
from ..ir.visitor import ExprMutator
from ..records import record
from .fusion_kernel import FusedKernelBuilder
from ..ir.pass_infra import Pass, get_pass, register_pass


@record(mutable=True)
class _Fused:
    func: rx.Function
    kernel: tir.PrimFunc
    scalars: list[tir.Var]


class _CallRewriter(ExprMutator):
    """Calls of primitive functions become call_tir of their fused kernels."""

    def __init__(self, fused: dict[str, _Fused]):
        super().__init__()
        self.fused = fused

    def visit_VarBinding(self, binding: rx.VarBinding) -> rx.VarBinding:
        binding = super().visit_VarBinding(binding)
        call = binding.value
        if not (isinstance(call, rx.Call) and isinstance(call.op, rx.GlobalVar) and call.op.name_hint in self.fused):
            return binding
        info = self.fused[call.op.name_hint]
        tensors, sizes = [], None
        for param, arg in zip(info.func.params, call.args):
            if isinstance(param.struct_info, ShapeStructInfo):
                sizes = dict(zip((id(v) for v in param.struct_info.values), arg.values))
            else:
                tensors.append(arg)
        args = [call.op, rx.Tuple(tuple(tensors))]
        if info.scalars:
            args.append(rx.ShapeExpr(tuple(sizes[id(v)] for v in info.scalars)))
        out_sinfo = binding.var.struct_info
        if out_sinfo is None or (isinstance(out_sinfo, TupleStructInfo) and not out_sinfo.fields):
            out_sinfo = info.func.ret_struct_info
        new_call = rx.Call(rx.Op("relax.call_tir"), tuple(args), sinfo_args=(out_sinfo,), span=call.span)
        return dataclasses.replace(binding, value=new_call)


@register_pass
class FuseTIR(Pass):
    """Merge the kernels of each primitive function into one PrimFunc."""

    name = "fuse-tir"

    def run(self, mod: IRModule) -> IRModule:
        fused: dict[str, _Fused] = {}
        called: set[str] = set()
        for name, func in mod.functions.items():
            if isinstance(func, rx.Function) and func.attrs.get("Primitive"):
                builder = FusedKernelBuilder(mod, func)
                kernel, scalars = builder.build()
                fused[name] = _Fused(func, kernel, scalars)
                called.update(builder.kernels)
        if not fused:
            return mod
        functions = {}
        for name, func in mod.functions.items():
            if name in fused:
                functions[name] = fused[name].kernel
            elif isinstance(func, rx.Function):
                functions[name] = _CallRewriter(fused).visit(func)
            else:
                functions[name] = func
        still_called = {n for f in functions.values() if isinstance(f, rx.Function) for n in all_global_vars(f)}
        for name in called - still_called - set(fused):
            functions.pop(name, None)
        # As TVM's FuseTIR does, finish with dead-code elimination: values that only
        # fed a fused group through a tuple are gone now.
        result = IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
        return get_pass("dead-code-elimination").run(result)
