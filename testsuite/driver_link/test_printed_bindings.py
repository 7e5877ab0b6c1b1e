"""The one-shot generates its bytecode from the lowered module in memory, with what the printer
records of where its bindings print (script/printed_bindings.py), instead of reading the text
back: the bytecode must be the bytes the staged build's relaxas makes from that text."""

import pathlib

import pytest

from relax.driver.assemble import generate_bytecode, read_vms
from relax.driver.compile import CompileOptions
from relax.driver.compile_steps import check_module, parse_source, run_pipeline
from relax.ir import expr as rx
from relax.script import array_literals, script
from relax.script.printed_bindings import PrintedBindings
from relax.transform.pipeline import pipeline
from relax.vm.codegen.codegen_vm import generate

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
BENCH = ROOT.parent / "shared" / "bench"

# Each sample, and sources with what printing changes: parameters and sizes printed under other
# names (`shape_1`), bindings printed as bare statements, `if`s with bindings in both branches,
# nested functions lifted out, R.print and R.assert_op.
SOURCES = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "samples").glob("*.relax")) + [
    "testsuite/transform/static-plan-symbolic.relax",
    "testsuite/transform/static-plan-if.relax",
    "testsuite/transform/kill-after-last-use-match-cast.relax",
    "testsuite/transform/lambda-lift-recursive.relax",
    "testsuite/relaxc/void-bindings.relax",
    "testsuite/relaxc/unknown-rank-elementwise.relax",
    "testsuite/relaxc/emit-pyfunc.relax",
    "testsuite/relaxc/invoke-pure-closure.relax",
]

# A parameter and a size of one name: the parameter prints as `n_1`, the bytecode records that.
CLASHING_NAMES = '''
from tvm.script import relax as R

@R.function
def main(n: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
    m = R.add(n, n)
    R.print(m, format="m: {}")
    return m
'''


def _lowered(path: pathlib.Path, params: pathlib.Path | None = None):
    mod = parse_source(str(path))
    check_module(mod)
    options = CompileOptions(source=str(path), params=str(params) if params is not None else None)
    return run_pipeline(mod, options, tuple(pipeline(2)))


def _printed(lowered) -> tuple[str, PrintedBindings, dict]:
    printed, deferred = PrintedBindings(), {}
    with array_literals.printing(deferred):
        text = script(lowered, {}, printed)
    return text, printed, deferred


def _path(source: str, tmp_path: pathlib.Path) -> pathlib.Path:
    if source == "clashing-names":
        path = tmp_path / "clashing.relax"
        path.write_text(CLASHING_NAMES)
        return path
    return ROOT / source


def _bytecode_both_ways(lowered) -> tuple[bytes, bytes]:
    text, printed, deferred = _printed(lowered)
    assert printed.complete
    with array_literals.reading(deferred):
        read_back = read_vms(text, "model.vms")
    return (generate(lowered, printed=printed, source="model.vms").save_to_bytes(),
            generate_bytecode(read_back, "model.vms").save_to_bytes())


@pytest.mark.parametrize("source", [*SOURCES, "clashing-names"])
def test_the_bytecode_from_memory_is_that_of_the_text_read_back(source, tmp_path):
    in_memory, read_back = _bytecode_both_ways(_lowered(_path(source, tmp_path)))
    assert in_memory == read_back


@pytest.mark.skipif(not BENCH.is_dir(), reason="../shared/bench is not here")
@pytest.mark.parametrize("model", ["transformer", "cnn"])
def test_the_bench_models_bytecode_from_memory_is_that_of_the_text_read_back(model):
    lowered = _lowered(BENCH / f"{model}.relax", BENCH / f"{model}.params.npz")
    in_memory, read_back = _bytecode_both_ways(lowered)
    assert in_memory == read_back


def test_the_marks_leave_the_text_as_printed_without_them():
    lowered = _lowered(ROOT / "samples/control_flow.relax")
    deferred = {}
    with array_literals.printing(deferred):
        plain = script(lowered, {})
    text, printed, _ = _printed(lowered)
    assert text == plain and "\x01" not in text and "\x02" not in text
    assert printed.complete and len(printed.positions) == len(printed.marked) > 0


def _bindings(func) -> list:
    """`func`'s bindings in the order they print, those of an `if`'s branches after the `if`."""
    found = []

    def seq(node):
        for block in node.blocks:
            for binding in block.bindings:
                found.append(binding)
                if isinstance(binding.value, rx.If):
                    seq(binding.value.true_branch)
                    seq(binding.value.false_branch)

    seq(func.body)
    return found


def test_each_binding_is_where_the_text_read_back_puts_it():
    lowered = _lowered(ROOT / "samples/control_flow.relax")
    text, printed, deferred = _printed(lowered)
    with array_literals.reading(deferred):
        read_back = read_vms(text, "model.vms")
    for name in printed.order:
        if not isinstance(lowered[name], rx.Function):
            continue
        ours, theirs = _bindings(lowered[name]), _bindings(read_back[name])
        assert len(ours) == len(theirs) > 0
        for binding, back in zip(ours, theirs):
            assert printed.positions[id(binding)] == (back.span.line, back.span.column)
            assert (id(binding) in printed.bare) == (back.var.name_hint == "_")


def test_a_parameter_printed_under_another_name_is_recorded(tmp_path):
    lowered = _lowered(_path("clashing-names", tmp_path))
    text, printed, _ = _printed(lowered)
    (param,) = lowered["main"].params
    assert printed.names[id(param)] == "n_1" and "def main(n_1: R.Tensor((n,)" in text


def test_marks_out_of_order_leave_the_positions_incomplete():
    printed = PrintedBindings()
    first, second = printed.number("a"), printed.number("b")
    text = "\n".join(["x = 1", *PrintedBindings.mark(second, ["y = 2"]), *PrintedBindings.mark(first, ["z = 3"])])
    assert printed.unmark(text) == "x = 1\n\x011\x02y = 2\nz = 3"  # the stray one as it was
    assert not printed.complete and printed.positions == {id("a"): (3, 1)}


def test_what_only_looks_like_a_mark_stays_in_the_text():
    printed = PrintedBindings()
    number = printed.number("a")
    text = "\n".join(['s = "\x010\x02"', *("    " + line for line in PrintedBindings.mark(number, ["y = 2"]))])
    assert printed.unmark(text) == 's = "\x010\x02"\n    y = 2'
    assert printed.complete and printed.positions == {id("a"): (2, 5)}
