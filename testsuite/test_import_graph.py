"""The packages of lib/relax import each other in one direction: the module-level imports
between packages (relax.ir, relax.tir, relax.transform, ...) form no cycle, so each
package can be read, tested and loaded on top of the ones below it. Imports inside
functions are left out: they are how a lower package reaches an optional upper one."""

import ast
import pathlib

LIB = pathlib.Path(__file__).resolve().parents[1] / "lib"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: pathlib.Path, module: str):
    """The names a module imports at its top level (inside if/try blocks too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for statement in ast.parse(path.read_text()).body:
        for node in ast.walk(statement) if isinstance(statement, (ast.If, ast.Try)) else [statement]:
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                yield target
                yield from (f"{target}.{alias.name}" for alias in node.names)


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in LIB.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        module = _module_name(path)
        for name in _imported(path, module):
            if name.startswith("relax.") and _package(name) != _package(module):
                graph.setdefault(_package(module), set()).add(_package(name))
    return graph


def _cycle(graph):
    """One cycle of `graph` as a list of nodes, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == 1:
                return path[path.index(successor):] + [successor]
            if successor not in state:
                found = visit(successor)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_packages_import_each_other_without_a_cycle():
    assert _cycle(package_graph()) is None, " -> ".join(_cycle(package_graph()))


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_low_packages_stay_low():
    graph = package_graph()
    assert not graph.get("relax.records") and graph.get("relax.diagnostics", set()) <= {"relax.records"}
    assert graph.get("relax.ir", set()) <= {"relax.diagnostics", "relax.records"}
    # LLVM's C functions, for the build and the loader alike
    assert not graph.get("relax.llvm_library") and graph.get("relax.llvm_capi", set()) <= {"relax.llvm_library"}
    assert graph.get("relax.runtime", set()) <= {"relax.diagnostics", "relax.records", "relax.version",
                                                 "relax.llvm_capi"}
    assert "relax.transform" not in graph.get("relax.tir", set())
    assert "relax.codegen" not in graph.get("relax.transform", set())


def test_the_cpu_code_generators_load_no_cuda():
    # relaxc imports the codegen backends for every build; the cuda code generator loads
    # only for a cuda target (a few ms of every CPU build otherwise).
    import subprocess
    import sys

    code = ("import sys, relax.codegen.backends; "
            "print(sorted(m for m in sys.modules if m.startswith('relax.codegen.cuda')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == ["[]"]
