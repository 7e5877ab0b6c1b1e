"""Well-formedness of TIR PrimFuncs: scoping of variables and buffers.

- every variable is used inside the scope that defines it: a parameter, a loop,
  a let, a block iterator, an allocate, a thread binding, or (at its first
  occurrence) a buffer_map or match_buffer shape;
- a variable is defined once in a function (SSA); a loop variable defined again
  is reported as such;
- the sizes of a function's signature (its scalar parameters and the variables of
  its buffer_map shapes) are different names for different variables: the printed
  function reads two variables of one name back as one, and codegen binds a size by
  its name (two n's, one a parameter and one a buffer's dimension, are a kernel
  whose n is bound twice or not at all);
- a call to another function names one of the module (a GlobalVar callee);
- a buffer is loaded and stored with one index per dimension;
- every buffer that is loaded, stored or named in a region is declared: by the
  buffer_map, a block's alloc_buffers or match_buffers, a DeclBuffer, or (the
  legacy T.allocate style) backed by the handle of an enclosing Allocate.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..diagnostics import Diagnostic
from . import tir_expr as tir
from . import tir_stmt as stmt
from .node import field_values
from .reporting_visitor import ReportingVisitor


class _PrimFuncChecker(ReportingVisitor):
    def __init__(self, diagnostics: list[Diagnostic], name: str, function_names: set[str] | None) -> None:
        super().__init__(diagnostics)
        self.name = name
        self.function_names = function_names
        self.visible: list[set[int]] = [set()]
        self.buffers: list[set[int]] = [set()]
        self.defined: set[int] = set()

    @contextmanager
    def _scope(self):
        self.visible.append(set())
        self.buffers.append(set())
        try:
            yield
        finally:
            self.visible.pop()
            self.buffers.pop()

    def _is_visible(self, var: tir.Var) -> bool:
        return any(id(var) in scope for scope in self.visible)

    def define(self, var: tir.Var, what: str = "variable") -> None:
        if id(var) in self.defined:
            notes = self.defined_here(var.name, var, "first defined")
            if what == "loop variable":
                self.error(f"loop variable '{var.name}' is already defined", notes=notes)
            else:
                self.error(f"{what} '{var.name}' is defined twice", notes=notes)
        self.defined.add(id(var))
        self.visible[-1].add(id(var))

    def _define_if_new(self, value) -> None:
        if isinstance(value, tir.Var) and not self._is_visible(value):
            self.defined.add(id(value))
            self.visible[-1].add(id(value))

    def declare(self, buffer: tir.Buffer, shape_defines: bool) -> None:
        """Declares `buffer`; with `shape_defines`, bare variables in its shape are defined."""
        self._define_if_new(buffer.data)
        if shape_defines:
            for value in buffer.shape + buffer.strides + (buffer.elem_offset,):
                self._define_if_new(value)
        for value in buffer.shape + buffer.strides:
            self.visit(value)
        if buffer.elem_offset is not None:
            self.visit(buffer.elem_offset)
        self.buffers[-1].add(id(buffer))

    def check(self, func: stmt.PrimFunc) -> None:
        for param in func.params:
            self.define(param, "parameter")
        for _, buffer in func.buffer_map:
            self.declare(buffer, shape_defines=True)
        self._check_size_names(func)
        self.visit(func.body)

    def _check_size_names(self, func: stmt.PrimFunc) -> None:
        """Two different size variables of one name in the signature are an error (see above)."""
        first: dict[str, tir.Var] = {}
        sizes = [p for p in func.params if p.dtype != "handle"]
        for _, buffer in func.buffer_map:
            for dim in buffer.shape + buffer.strides:
                sizes += _vars_of(dim)
        for var in sizes:
            other = first.setdefault(var.name, var)
            if other is not var:
                self.error(f"the signature of '{self.name}' has two different variables named '{var.name}'",
                           once=("size name", var.name))

    # -- scopes ---------------------------------------------------------------------

    def visit_For(self, loop: stmt.For) -> None:
        self.visit(loop.min)
        self.visit(loop.extent)
        with self._scope():
            self.define(loop.loop_var, "loop variable")
            self.visit(loop.body)
            self.visit_value(loop.annotations)

    def _let(self, node) -> None:
        self.visit(node.value)
        with self._scope():
            self.define(node.var)
            self.visit(node.body)

    def visit_tir_Let(self, node: tir.Let) -> None:
        self._let(node)

    def visit_LetStmt(self, node: stmt.LetStmt) -> None:
        self._let(node)

    def visit_Allocate(self, node: stmt.Allocate) -> None:
        self.visit_value(node.extents)
        self.visit(node.condition)
        with self._scope():
            self.define(node.buffer_var)
            self.visit(node.body)
            self.visit_value(node.annotations)

    def visit_DeclBuffer(self, node: stmt.DeclBuffer) -> None:
        with self._scope():
            self.declare(node.buffer, shape_defines=False)
            self.visit(node.body)

    def visit_Block(self, block: stmt.Block) -> None:
        with self._scope():
            for iter_var in block.iter_vars:
                if iter_var.dom is not None:
                    self.visit(iter_var.dom)
                self.define(iter_var.var, "block iterator")
            for buffer in block.alloc_buffers:
                self.declare(buffer, shape_defines=False)
            for match in block.match_buffers:
                self.visit(match.source)
                self.declare(match.buffer, shape_defines=True)
            self.visit_value(block.reads)
            self.visit_value(block.writes)
            if block.init is not None:
                self.visit(block.init)
            self.visit(block.body)
            self.visit_value(block.annotations)

    def visit_AttrStmt(self, node: stmt.AttrStmt) -> None:
        self.visit(node.value)
        with self._scope():
            if isinstance(node.node, tir.IterVar):
                # A thread axis may be launched by several AttrStmts: not a redefinition.
                if node.node.dom is not None:
                    self.visit(node.node.dom)
                self._define_if_new(node.node.var)
            elif isinstance(node.node, (tir.Var, tir.Buffer)):
                self.visit(node.node)
            self.visit(node.body)

    # -- uses -----------------------------------------------------------------------

    def visit_tir_Var(self, var: tir.Var) -> None:
        if not self._is_visible(var):
            self.error(f"variable '{var.name}' is used but not defined in '{self.name}'", once=id(var))

    def visit_GlobalVar(self, gvar) -> None:
        if self.function_names is not None and gvar.name_hint not in self.function_names:
            self.error(f"function '{self.name}' refers to unknown function '{gvar.name_hint}'",
                       once=("global", gvar.name_hint))

    def visit_BufferLoad(self, load: tir.BufferLoad) -> None:
        self._check_indices(load.buffer, load.indices)
        self.generic_visit(load)

    def visit_BufferStore(self, store: stmt.BufferStore) -> None:
        self._check_indices(store.buffer, store.indices)
        self.generic_visit(store)

    def _check_indices(self, buffer: tir.Buffer, indices) -> None:
        # axis_separators do not change the count: a buffer is indexed per dimension.
        if len(indices) != len(buffer.shape):
            self.error(f"buffer '{buffer.name}' has {len(buffer.shape)} dimension"
                       f"{'s' if len(buffer.shape) != 1 else ''} but is indexed with {len(indices)}")

    def visit_Buffer(self, buffer: tir.Buffer) -> None:
        if any(id(buffer) in scope for scope in self.buffers):
            return
        if buffer.data is not None and self._is_visible(buffer.data):
            return  # backed by an enclosing Allocate's handle
        self.error(f"buffer '{buffer.name}' is used but not declared in '{self.name}'", once=id(buffer))


def _vars_of(expr) -> list[tir.Var]:
    """The variables in a buffer dimension (a bare variable or an expression of some)."""
    if isinstance(expr, tir.Var):
        return [expr]
    if not isinstance(expr, tir.PrimExpr):
        return []
    found = []
    for _, value in field_values(expr):
        for item in value if isinstance(value, tuple) else (value,):
            found += _vars_of(item)
    return found


def check_prim_func(func: stmt.PrimFunc, name: str, function_names: set[str] | None = None) -> list[Diagnostic]:
    """The violations in `func`; with `function_names`, calls to other functions are checked too."""
    diagnostics: list[Diagnostic] = []
    _PrimFuncChecker(diagnostics, name, function_names).check(func)
    return diagnostics
