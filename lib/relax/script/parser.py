"""TVMScript text -> IRModule: the file header, the module class and its functions.

The text is read once with Python's `ast` (never executed). The header's imports set
the dialect aliases (`from tvm.script import relax as R`); the `# from tvm.script
import ...` comments that TVM prints need nothing. The file holds either one
`@I.ir_module class Module:` or a single `@R.function` / `@T.prim_func`.

All global function names are known before any body is read, so functions may call
each other in any order (`cls.f`, `Module.f`). Relax functions go to
relax_parser, PrimFuncs to tir_parser. Errors are collected across the whole file
and raised together as one DiagnosticError.
"""

from __future__ import annotations

import ast
import gc
import re
import warnings

from .. import ir
from ..diagnostics import Diagnostic, DiagnosticError, Span
from . import array_literals
from .context import ModuleRef, ParseAbort, ParseContext, Scope
from .relax_literals import attr_dict, attr_value
from .py_function import is_py_func_decorator, parse_py_function
from .relax_dtensor import MESH_NAMES, read_device_mesh
from .relax_parser import RelaxFunctionParser, symbolic_declarations
from .signature_bodies import without_bodies
from .tir_parser import parse_prim_func

# `from tvm.script import tirx as T` is what newer TVM prints for the TIR dialect.
_DIALECT_MODULES = {"ir": "ir", "relax": "relax", "tir": "tir", "tirx": "tir"}
# `from relax.script import I, R, T`: the spelling of a BasePyModule written in a .py file.
_OWN_DIALECTS = {"I": "ir", "R": "relax", "T": "tir", "ir": "ir", "relax": "relax", "tir": "tir"}


def parse_module(text: str, source_name: str = "<string>", signatures_only=()) -> ir.IRModule:
    # The syntax tree of a large file holds millions of objects and parsing creates
    # no garbage cycles: the cyclic collector would only traverse them again and again.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse_module(text, source_name, signatures_only)
    finally:
        if collecting:
            gc.enable()


def _parse_module(text: str, source_name: str, signatures_only) -> ir.IRModule:
    ctx = ParseContext(source_name, text)
    ctx.signatures_only = frozenset(signatures_only)
    ast_text, ctx.array_literals = array_literals.extract(text)
    try:
        tree = _syntax_tree(ast_text, source_name, ctx.signatures_only)
    except SyntaxError as error:
        raise DiagnosticError([_syntax_error(error, source_name, ast_text)]) from None
    except (ValueError, RecursionError, MemoryError) as error:  # NUL bytes, absurd nesting
        raise DiagnosticError([Diagnostic("error", f"cannot read {source_name}: {error}")]) from None
    try:
        module = ModuleParser(ctx).parse(tree)
    except RecursionError:
        ctx.error("expressions or blocks are nested too deeply to parse", None)
        module = None
    # Functions are read in two passes; report in source order, as a reader expects.
    ctx.diagnostics.sort(key=lambda d: (d.span.line, d.span.column) if d.span else (0, 0))
    ctx.raise_if_errors()
    return module


def _syntax_tree(text: str, source_name: str, signatures_only) -> ast.Module:
    """Python's syntax tree of `text`; with `signatures_only`, of the text with those kernels'
    loops blanked (signature_bodies.py) when that reads, else of the whole text."""
    # Python's own warnings (such as "invalid escape sequence") are not ours to print.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if signatures_only:
            cut = without_bodies(text, signatures_only)
            if cut is not text:
                try:
                    return ast.parse(cut, filename=source_name)
                except SyntaxError:
                    pass  # reported from the whole text
        return ast.parse(text, filename=source_name)


def _syntax_error(error: SyntaxError, source_name: str, text: str) -> Diagnostic:
    message = (error.msg or "invalid syntax").rstrip(".")
    if not message.startswith("invalid syntax"):
        message = f"invalid syntax: {message}"
    line = error.lineno or 1
    column = max(error.offset or 1, 1)
    source_line = "".join(text.split("\n")[line - 1:line]) if "integer string conversion" in message else ""
    literal = re.search(r"\d{4301,}", source_line)
    if literal:  # Python's own message names sys.set_int_max_str_digits, which is not the user's to call
        message = f"an integer literal of {len(literal.group())} digits; at most 4300 are read"
        column = literal.start() + 1
    return Diagnostic("error", message, Span(source_name, line, column, line, column + 1))


class ModuleParser:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.scope = Scope()
        self.symbols: dict[str, str] = {}  # module-level symbolic names -> dtype
        self.global_vars: dict[str, ir.GlobalVar] = {}
        self.attrs: dict = {}
        self.global_infos: dict = {}
        self.module_class: ast.ClassDef | None = None

    def parse(self, tree: ast.Module) -> ir.IRModule:
        module_class = None
        loose_functions: list[ast.FunctionDef] = []
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._import(stmt)
            elif isinstance(stmt, ast.ClassDef):
                if not self._is_ir_module(stmt):
                    self.ctx.error(f"class '{stmt.name}' must be decorated with @I.ir_module", stmt)
                elif module_class is not None:
                    self.ctx.error("a file holds one module; this is a second @I.ir_module class", stmt,
                                   (self.ctx.note("the first module is here", module_class),))
                else:
                    module_class = self.module_class = stmt
            elif isinstance(stmt, ast.FunctionDef):
                loose_functions.append(stmt)
            elif isinstance(stmt, ast.Assign):
                self._module_assign(stmt)
            elif not _is_docstring(stmt):
                self.ctx.error("expected an @I.ir_module class or a decorated function at the top level", stmt)
        if module_class is not None:
            for stmt in loose_functions:
                self.ctx.error("functions belong inside the @I.ir_module class", stmt)
            return self._module(module_class.name, module_class.body, module_class)
        if len(loose_functions) > 1:
            self.ctx.error("a file without an @I.ir_module class holds one function", loose_functions[1])
        if not loose_functions:
            self.ctx.error("the file defines no module and no function", None)
            return ir.IRModule()
        return self._module(None, loose_functions[:1], tree)

    # -- header --------------------------------------------------------------------------
    def _import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        if isinstance(stmt, ast.ImportFrom):
            own = stmt.module == "relax.script"
            if own or stmt.module in ("tvm.script", "tvm.script.parser", "tvm"):
                for alias in stmt.names:
                    dialect = (_OWN_DIALECTS if own else _DIALECT_MODULES).get(alias.name)
                    if dialect is not None:
                        self.ctx.aliases[alias.asname or alias.name] = dialect
            return
        for alias in stmt.names:
            # `import tvm.script.relax as R` binds R to the dialect.
            dialect = _DIALECT_MODULES.get(alias.name.rsplit(".", 1)[-1])
            if alias.asname and alias.name.startswith("tvm.") and dialect is not None:
                self.ctx.aliases[alias.asname] = dialect

    def _module_assign(self, stmt: ast.Assign) -> None:
        """`n = T.int64()` (or `n = TypeVar("n")`) at module level: a symbolic name
        that each function using it gets its own variable for."""
        declared = symbolic_declarations(self.ctx, stmt)
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if declared is not None:
            self.symbols.update((var.name, var.dtype) for var in declared)
        elif isinstance(target, ast.Name) and _is_type_var(stmt.value):
            self.symbols[target.id] = "int64"
        else:
            self.ctx.error("only symbolic variable declarations such as `n = T.int64()` may appear here", stmt)

    def _is_ir_module(self, stmt: ast.ClassDef) -> bool:
        for decorator in stmt.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.ctx.dialect_of(target) == ("ir", "ir_module") or _dotted(target) in (
                "tvm.script.ir_module", "tvm.script.ir.ir_module", "ir_module"
            ):
                return True
        return False

    # -- the module ------------------------------------------------------------------------------
    def _module(self, class_name: str | None, body: list[ast.stmt], where: ast.AST) -> ir.IRModule:
        functions = self._declare_functions(body)
        module_ref = ModuleRef(class_name or "Module", self.global_vars)
        if class_name is not None:
            self.scope.define(class_name, module_ref)
        parsed: dict[str, object] = {}
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef):
                kind, decorator = functions.get(id(stmt), (None, None))
                if kind is None:
                    continue
                try:
                    parsed[stmt.name] = self._function(stmt, kind, decorator)
                except ParseAbort:
                    pass
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._module_call(stmt.value)
            elif isinstance(stmt, ast.Assign) and class_name is not None:
                self._module_assign(stmt)
            elif not _is_docstring(stmt) and not isinstance(stmt, ast.Pass):
                self.ctx.error("expected a function, I.module_attrs(...) or I.module_global_infos(...)", stmt)
        order = [name for name in self.global_vars if name in parsed]
        return ir.IRModule(
            ir.FrozenDict({name: parsed[name] for name in order}),
            ir.FrozenDict(self.attrs) if self.attrs else ir.EMPTY,
            ir.FrozenDict(self.global_infos) if self.global_infos else ir.EMPTY,
            span=self.ctx.span(where) if isinstance(where, ast.stmt) else None,
        )

    def _declare_functions(self, body: list[ast.stmt]) -> dict[int, tuple[str, ast.expr]]:
        """Every function's GlobalVar, before any body is read; returns the kind of each."""
        kinds: dict[int, tuple[str, ast.expr]] = {}
        first_definition: dict[str, ast.FunctionDef] = {}
        for stmt in body:
            if not isinstance(stmt, ast.FunctionDef):
                continue
            kind, decorator = self._function_kind(stmt)
            if kind is None:
                continue
            if stmt.name in first_definition:
                self.ctx.error(f"redefinition of function '{stmt.name}'", stmt,
                               (self.ctx.note("previous definition is here", first_definition[stmt.name]),))
                continue
            first_definition[stmt.name] = stmt
            self.global_vars[stmt.name] = ir.GlobalVar(stmt.name, span=self.ctx.span(stmt))
            kinds[id(stmt)] = (kind, decorator)
        return kinds

    def _function_kind(self, stmt: ast.FunctionDef) -> tuple[str | None, ast.expr | None]:
        if len(stmt.decorator_list) != 1:
            what = "has no decorator" if not stmt.decorator_list else "has more than one decorator"
            self.ctx.error(f"function '{stmt.name}' {what}; use @R.function or @T.prim_func", stmt)
            return None, None
        decorator = stmt.decorator_list[0]
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        dialect = self.ctx.dialect_of(target)
        if dialect == ("relax", "function"):
            return "relax", decorator
        if dialect == ("tir", "prim_func"):
            return "tir", decorator
        if is_py_func_decorator(self.ctx, decorator):
            return "python", decorator
        self.ctx.error(f"unknown decorator '{_dotted(target) or '?'}'; use @R.function or @T.prim_func", decorator)
        return None, None

    def _function(self, stmt: ast.FunctionDef, kind: str, decorator: ast.expr):
        if kind == "tir":
            return parse_prim_func(stmt, self.ctx, self.scope)
        if kind == "python":
            return parse_py_function(self.ctx, stmt, self.module_class)
        parser = RelaxFunctionParser(self.ctx, self.scope, self.symbols)
        return parser.parse_function(stmt, decorator, top_level=True)

    def _module_call(self, call: ast.Call) -> None:
        dialect = self.ctx.dialect_of(call.func)
        if dialect not in (("ir", "module_attrs"), ("ir", "module_global_infos")):
            self.ctx.error("expected a function, I.module_attrs(...) or I.module_global_infos(...)", call)
            return
        if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Dict):
            self.ctx.error(f"I.{dialect[1]} takes one dictionary", call)
            return
        try:
            if dialect[1] == "module_attrs":
                self.attrs.update(attr_dict(call.args[0], self.ctx))
            else:
                self.global_infos.update(attr_dict(call.args[0], self.ctx, self._global_info))
        except ParseAbort:
            pass

    def _global_info(self, node: ast.expr):
        """`I.vdevice("llvm", 0, "global")` as a dictionary of its fields."""
        if isinstance(node, ast.Call) and self.ctx.dialect_of(node.func) == ("ir", "vdevice"):
            names = ("target", "vdevice_id", "memory_scope")
            fields = dict(zip(names, (attr_value(a, self.ctx) for a in node.args)))
            for keyword in node.keywords:
                fields[keyword.arg] = attr_value(keyword.value, self.ctx)
            return ir.FrozenDict({"kind": "vdevice", **fields})
        if isinstance(node, ast.Call) and self.ctx.dialect_of(node.func) in MESH_NAMES:
            return read_device_mesh(node, self.ctx, attr_value)
        raise self.ctx.fail("expected a global info such as I.vdevice(\"llvm\", 0, \"global\")", node)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_type_var(value: ast.expr) -> bool:
    return (isinstance(value, ast.Call) and _dotted(value.func) in ("TypeVar", "typing.TypeVar")
            and len(value.args) >= 1)


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
