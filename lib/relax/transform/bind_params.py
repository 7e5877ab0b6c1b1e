"""BindParams: the weights of `main` become constants of the module.

    @R.function                                         @R.function
    def main(x: R.Tensor((1, 2), "float32"),            def main(x: R.Tensor((1, 2), "float32")):
             w: R.Tensor((2, 2), "float32")):     ->        lv = R.matmul(x, R.const([[1, 2], [3, 4]], "float32"))
        R.func_attr({"num_input": 1})                       return lv
        lv = R.matmul(x, w)
        return lv
                                    with params = {"w": [[1, 2], [3, 4]]}

The parameters after `num_input` (TVM's convention for weights) are bound by name,
each array checked against the parameter's struct info: same dtype, same rank, each
static dimension equal, each symbolic dimension the same size wherever it appears
(that size is then substituted in the whole function, inputs included). Bound
parameters leave the signature; `num_input` goes too once every weight is bound.
A name that is not a weight of the function, or an array that does not fit, is an
error at the parameter's declaration; every such error is reported.

The arrays come from the pass's constructor (`relax.build(mod, params=...)`) or from
the PassContext config key `relax.BindParams.params`: a mapping of arrays or the path
of an .npz (what `relaxc --params weights.npz` sets). With neither, the pass is the
identity. Constant folding after it then computes everything that depends on weights
only (a transposed weight is transposed once, at build time).
"""

from __future__ import annotations

import dataclasses
import os
import zipfile
from collections.abc import Mapping

import numpy as np

from ..diagnostics import Diagnostic, DiagnosticError, UserError
from ..ir import expr as rx
from ..ir import tir
from ..ir.analysis import substitute
from ..ir.module import IRModule
from ..ir.node import FrozenDict
from ..ir.struct_info import TensorStructInfo
from ..ir.struct_info_check import describe
from ..ir.visitor import ExprMutator
from ..op.shape import static_value
from ..ir.pass_infra import Pass, PassContext, register_pass

CONFIG_KEY = "relax.BindParams.params"


def load_params(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by name (no pickled objects), read-only; a bad file is a UserError."""
    if not os.path.exists(path):
        raise UserError(f"'{path}': no such file or directory")
    if not zipfile.is_zipfile(path):
        raise UserError(f"'{path}': not an .npz archive (numpy.savez writes one)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, Mapping):
                raise UserError(f"'{path}': the parameters must be an .npz archive of named arrays")
            return {name: rx.frozen(archive[name]) for name in archive.files}  # the file's arrays are ours
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise UserError(f"'{path}': cannot read the parameters: {exc}") from None


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class _Binder:
    """Checks each array against its parameter; collects errors and symbolic sizes."""

    def __init__(self, func_name: str, origin: str):
        self.func_name, self.origin = func_name, origin
        self.errors: list[Diagnostic] = []
        self.sizes: dict[tir.Var, tuple[int, str]] = {}  # symbolic dim -> (size, the parameter that set it)

    def error(self, message: str, span) -> None:
        self.errors.append(Diagnostic("error", message, span))

    def check(self, param: rx.Var, array: np.ndarray) -> None:
        info = param.struct_info
        name = param.name_hint
        if not isinstance(info, TensorStructInfo):
            self.error(f"parameter '{name}' of {self.func_name} is {describe(info)}, not a tensor: "
                       f"it cannot be bound to the array '{name}' of {self.origin}", param.span)
            return
        got = f"{_shape_text(array.shape)} {array.dtype}"
        wants = describe(info)
        if info.dtype != "void" and str(array.dtype) != info.dtype:
            self.error(f"parameter '{name}' is {wants}, but '{name}' in {self.origin} is {got}", param.span)
            return
        if info.ndim != -1 and info.ndim != array.ndim:
            self.error(f"parameter '{name}' is {wants}, but '{name}' in {self.origin} is {got}", param.span)
            return
        for dim, size in zip(info.shape_values or (), array.shape):
            value = static_value(dim)
            if value is not None and value != size:
                self.error(f"parameter '{name}' is {wants}, but '{name}' in {self.origin} is {got}", param.span)
                return
            if value is None and isinstance(dim, tir.Var):
                known = self.sizes.setdefault(dim, (size, name))
                if known[0] != size:
                    self.error(f"parameter '{name}' is {wants}, but '{name}' in {self.origin} is {got}: "
                               f"'{dim.name}' is {known[0]} (from '{known[1]}')", param.span)


def bind_params(func: rx.Function, params: Mapping[str, np.ndarray], func_name: str = "main",
                origin: str = "the parameters") -> rx.Function:
    """`func` with the named weights replaced by constants (see the module docstring)."""
    num_input = func.attrs.get("num_input")
    num_input = int(num_input.value if isinstance(num_input, tir.IntImm) else num_input) if num_input is not None else 0
    by_name: dict[str, rx.Var] = {}
    for param in func.params:
        by_name.setdefault(param.name_hint, param)
    inputs = {p.name_hint for p in func.params[:num_input]}
    weights = [p.name_hint for p in func.params[num_input:]]
    binder = _Binder(func_name, origin)
    bound: dict[rx.Var, rx.Expr] = {}
    # In the order of the signature, then the names that are not in it.
    position = {p.name_hint: i for i, p in reversed(list(enumerate(func.params)))}
    for name in sorted(params, key=lambda n: (position.get(n, len(position)), n)):
        array = np.asarray(params[name])
        if not array.dtype.isnative:  # a big-endian .npz: the same values, in this host's order
            array = array.astype(array.dtype.newbyteorder("="))
        if name in inputs:
            binder.error(f"'{name}' in {origin} is an input of {func_name} (num_input={num_input}), not a weight",
                         by_name[name].span)
        elif name not in by_name:
            listed = ", ".join(f"'{w}'" for w in weights) or "none"
            binder.errors.append(Diagnostic("error", f"'{name}' in {origin} is not a parameter of {func_name} "
                                                     f"(its weights: {listed})", None))
        elif sum(p.name_hint == name for p in func.params) > 1:
            binder.error(f"{func_name} has several parameters named '{name}': bind them by position", by_name[name].span)
        else:
            binder.check(by_name[name], array)
            bound[by_name[name]] = rx.Constant(np.ascontiguousarray(array), span=by_name[name].span)
    if binder.errors:
        raise DiagnosticError(binder.errors)
    if not bound:
        return func
    # The parameters are definitions, which a substitution leaves alone: their uses in
    # the body are replaced by a mutator told what each one now stands for.
    replacer = ExprMutator()
    for param, constant in bound.items():
        replacer.remember(param, constant)
    func = dataclasses.replace(func, params=tuple(p for p in func.params if p not in bound),
                               body=replacer.visit(func.body))
    sizes = {var: tir.IntImm(var.dtype, size) for var, (size, _) in binder.sizes.items()}
    func = substitute(func, sizes)
    kept = func.params
    attrs = dict(func.attrs)
    if "num_input" in attrs and len(kept) <= num_input:
        del attrs["num_input"]
    return dataclasses.replace(func, params=kept, attrs=FrozenDict(attrs))


@register_pass
class BindParams(Pass):
    """Bind the weights of main (parameters after num_input) to constant arrays, by name."""

    name = "bind-params"

    def __init__(self, params: Mapping[str, np.ndarray] | str | None = None, func_name: str = "main"):
        self.params = params
        self.func_name = func_name

    def run(self, mod: IRModule) -> IRModule:
        params = self.params if self.params is not None else PassContext.current().get_config(CONFIG_KEY)
        origin = "the parameters"
        if isinstance(params, (str, os.PathLike)):
            origin = f"'{os.fspath(params)}'"
            params = load_params(os.fspath(params))
        if not params:
            return mod
        func = mod.functions.get(self.func_name)
        if not isinstance(func, rx.Function):
            raise UserError(f"cannot bind parameters: the module has no Relax function '{self.func_name}'")
        new = bind_params(func, params, self.func_name, origin)
        return mod if new is func else mod.with_function(self.func_name, new)


__all__ = ["BindParams", "bind_params", "load_params", "CONFIG_KEY"]
