"""Pass infrastructure: the Pass base, the registry of passes by name, PassContext,
instruments, and `run_passes`, which applies a list of passes the way relaxc's
flags ask (print before/after, verify each, time each).

    with PassContext(opt_level=2, instruments=[PassTimingInstrument()]):
        mod = run_passes(mod, ["legalize-ops", "fuse-ops"])
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import sys
import time
from dataclasses import field
from typing import Any, ClassVar, Iterable, TextIO

from ..diagnostics import UserError
from ..records import record
from .expr import Function, PyFunction
from .module import IRModule
from .node import FrozenDict


class Pass:
    """A module-to-module transformation. Subclasses set `name` and implement `run`."""

    name: ClassVar[str] = ""
    opt_level: ClassVar[int] = 0  # the lowest -O level that runs it in a pipeline

    def run(self, mod: IRModule) -> IRModule:
        raise NotImplementedError(f"pass {type(self).__name__} has no run()")

    @classmethod
    def description(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    def __call__(self, mod: IRModule) -> IRModule:
        return run_passes(mod, [self])


class FunctionPass(Pass):
    """A pass applied to each Relax function of the module on its own."""

    def run(self, mod: IRModule) -> IRModule:
        functions = dict(mod.functions)
        changed = False
        for name, func in mod.functions.items():
            if isinstance(func, Function):
                new = self.transform_function(func, mod)
                if new is not func:
                    functions[name] = new
                    changed = True
        if not changed:
            return mod
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)

    def transform_function(self, func: Function, mod: IRModule) -> Function:
        raise NotImplementedError


PASSES: dict[str, type[Pass]] = {}

# Modules that define passes; importing one registers its pass. A list as data, so
# that `--list-passes` and the pipelines see every pass without importing by hand, and
# the infrastructure, below its users, imports none of them until a pass is named.
PASS_MODULES: list[str] = [
    "relax.transform.normalize",
    "relax.transform.lambda_lift",
    "relax.transform.legalize_ops",
    "relax.transform.to_non_dataflow",
    "relax.transform.call_tir_rewrite",
    "relax.transform.vm_builtin_lower",
    "relax.transform.vm_shape_lower",
    "relax.transform.dead_code_elimination",
    "relax.transform.canonicalize_bindings",
    "relax.transform.eliminate_common_subexpr",
    "relax.transform.annotate_tir_op_pattern",
    "relax.transform.fuse_ops",
    "relax.transform.fuse_tir",
    "relax.transform.static_plan_block_memory",
    "relax.transform.kill_after_last_use",
    "relax.transform.fold_constant",
    "relax.transform.bind_params",
    "relax.transform.pack_constant_weights",
    "relax.transform.propagate_sharding",
    "relax.transform.lower_global_view_to_local_view",
    "relax.transform.lower_dist_ir",
    "relax.tir.module_passes",  # lower-tir and each of its steps
]


def register_pass(cls: type[Pass]) -> type[Pass]:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in PASSES and PASSES[cls.name] is not cls:
        raise ValueError(f"pass {cls.name} registered twice")
    PASSES[cls.name] = cls
    return cls


def _load_passes() -> None:
    for module in PASS_MODULES:
        importlib.import_module(module)


def get_pass(name: str) -> Pass:
    # The pass modules in order until one registers `name`: not all of them for every
    # name (the lowering's reach LLVM; relaxas wants "normalize", the first).
    cls = PASSES.get(name)
    modules = iter(PASS_MODULES)
    while cls is None and (module := next(modules, None)) is not None:
        importlib.import_module(module)
        cls = PASSES.get(name)
    if cls is None:
        import difflib

        hint = difflib.get_close_matches(name, PASSES, n=1)
        suffix = f"; did you mean '{hint[0]}'?" if hint else " (see --list-passes)"
        raise UserError(f"unknown pass '{name}'{suffix}")
    return cls()


def list_passes_text() -> str:
    """What `relaxc --list-passes` prints: every pass and one line about it."""
    _load_passes()
    width = max((len(name) for name in PASSES), default=0)
    return "".join(f"{name:<{width}}  {cls.description()}\n" for name, cls in sorted(PASSES.items()))


class PassInstrument:
    """Hooks around every pass run inside a PassContext."""

    def should_run(self, mod: IRModule, pass_: Pass) -> bool:
        return True

    def run_before_pass(self, mod: IRModule, pass_: Pass) -> None:
        pass

    def run_after_pass(self, mod: IRModule, pass_: Pass) -> None:
        pass


class PassTimingInstrument(PassInstrument):
    """Times each pass; `report()` is the table `--time-passes` prints."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []
        self._start = 0.0

    def run_before_pass(self, mod, pass_) -> None:
        self._start = time.perf_counter()

    def run_after_pass(self, mod, pass_) -> None:
        self.times.append((pass_.name, time.perf_counter() - self._start))

    def report(self) -> str:
        total = sum(t for _, t in self.times) or 1e-12
        width = max((len(name) for name, _ in self.times), default=4)
        lines = [f"{'pass':<{width}}  {'time (ms)':>10}  {'share':>6}"]
        for name, seconds in self.times:
            lines.append(f"{name:<{width}}  {seconds * 1e3:>10.3f}  {seconds / total:>6.1%}")
        lines.append(f"{'total':<{width}}  {total * 1e3:>10.3f}  {1:>6.1%}")
        return "\n".join(lines) + "\n"


class PrintInstrument(PassInstrument):
    """Prints the module before and/or after chosen passes (or all of them) to stderr."""

    def __init__(self, before: Iterable[str] = (), after: Iterable[str] = (), after_all: bool = False,
                 stream: TextIO | None = None):
        self.before, self.after, self.after_all = set(before), set(after), after_all
        self.stream = stream

    def _print(self, when: str, mod: IRModule, pass_: Pass) -> None:
        from ..script import script

        stream = self.stream or sys.stderr
        stream.write(f"# IR {when} {pass_.name}\n{script(mod)}\n")

    def run_before_pass(self, mod, pass_) -> None:
        if pass_.name in self.before:
            self._print("before", mod, pass_)

    def run_after_pass(self, mod, pass_) -> None:
        if self.after_all or pass_.name in self.after:
            self._print("after", mod, pass_)


class VerifyInstrument(PassInstrument):
    """Checks well-formedness after every pass (`--verify-each`); a failure names the pass."""

    def run_after_pass(self, mod, pass_) -> None:
        from .well_formed import check_well_formed

        problems = [d for d in check_well_formed(mod) if d.severity == "error"]
        if problems:
            raise UserError(f"the module is not well formed after pass '{pass_.name}': {problems[0].message}")


@record(mutable=True)
class PassContext:
    """Settings every pass run sees: -O level, per-pass config, disabled passes, instruments."""

    opt_level: int = 2
    config: dict[str, Any] = field(default_factory=dict)
    disabled: set[str] = field(default_factory=set)
    instruments: list[PassInstrument] = field(default_factory=list)

    def __enter__(self) -> "PassContext":
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._token)

    @staticmethod
    def current() -> "PassContext":
        return _CURRENT.get()

    def get_config(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)


_CURRENT: contextvars.ContextVar[PassContext] = contextvars.ContextVar("relax_pass_context", default=PassContext())


def run_passes(mod: IRModule, passes: Iterable[str | Pass], context: PassContext | None = None) -> IRModule:
    """Runs the passes in order under the context's instruments; disabled ones are skipped."""
    context = context or PassContext.current()
    for item in passes:
        pass_ = get_pass(item) if isinstance(item, str) else item
        if pass_.name in context.disabled:
            continue
        if not all(instrument.should_run(mod, pass_) for instrument in context.instruments):
            continue
        for instrument in context.instruments:
            instrument.run_before_pass(mod, pass_)
        # Passes read settings through PassContext.current(): make it this context.
        with context if PassContext.current() is not context else contextlib.nullcontext():
            mod = run_without_python(pass_, mod)
        for instrument in context.instruments:
            instrument.run_after_pass(mod, pass_)
    return mod


def run_without_python(pass_: Pass, mod: IRModule) -> IRModule:
    """`pass_.run(mod)` with the module's Python functions (`@I.py_func`) set aside and put
    back first: they are source text that runs in Python, which no pass reads or changes."""
    python = {name: func for name, func in mod.functions.items() if isinstance(func, PyFunction)}
    if not python:
        return pass_.run(mod)
    rest = {name: func for name, func in mod.functions.items() if name not in python}
    result = pass_.run(IRModule(FrozenDict(rest), mod.attrs, mod.global_infos, span=mod.span))
    functions = {**python, **{name: func for name, func in result.functions.items() if name not in python}}
    return IRModule(FrozenDict(functions), result.attrs, result.global_infos, span=result.span)
