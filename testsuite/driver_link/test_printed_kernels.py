"""The one-shot builds its kernels from the lowered module it printed and reads the text
back for the bytecode with those kernels as signatures only (driver/printed_kernels.py,
script.parse's signatures_only). Its kernel objects and bytecode must be the bytes the
staged build makes from the whole text read back."""

import pathlib

import pytest

from relax.codegen.backends import start_kernels
from relax.driver import assemble
from relax.driver.assemble import generate_bytecode, read_vms
from relax.driver.compile import CompileOptions, compile_main
from relax.driver.compile_steps import check_module, parse_source, run_pipeline
from relax.driver.printed_kernels import as_printed, with_kernels
from relax.ir import tir
from relax.ir.pass_infra import PassContext
from relax.ir.structural import assert_structural_equal
from relax.script import array_literals, parse, script
from relax.target import host_target
from relax.tir.rewrite import collect
from relax.transform.pipeline import pipeline

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
# Sources whose kernels' buffer parameters are handles named other than their buffers
# (fold-constant's `a`, the symbolic ones' `var_A`), and a hand-written kernel.
SOURCES = [
    "testsuite/transform/fold-constant.relax",
    "testsuite/transform/static-plan-symbolic.relax",
    "testsuite/script_tir/symbolic-tuple-declarations.relax",
    "samples/custom_kernel.relax",
]

# avg_pool2d's kernel allocates a buffer named as its output, pool_avg: printed, it is
# pool_avg_1. The add's kernel prints under its own names.
POOL_AND_ADD = '''
from tvm.script import relax as R

@R.function
def main(x: R.Tensor((1, 2, 8, 8), "float32"), y: R.Tensor((1, 2, 4, 4), "float32")):
    with R.dataflow():
        p = R.nn.avg_pool2d(x, pool_size=(2, 2), strides=(2, 2))
        s = R.add(y, y)
        R.output(p, s)
    return (p, s)
'''

# A hand-written kernel whose inner loop variable shadows the outer one: printed, the
# inner one is i_1, a renaming the one-shot leaves to the text read back.
SHADOWED = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def shadowed(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
        for i in range(4):
            for i in range(4):
                B[i, i] = A[i, i]

    @R.function
    def main(x: R.Tensor((4, 4), "float32"), y: R.Tensor((4, 4), "float32")):
        cls = Module
        a = R.call_tir(cls.shadowed, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
        s = R.add(a, y)
        return s
'''


TWO_KERNELS = '''
from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(a: T.handle, s: T.float32):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        T.func_attr({"tirx.noalias": True, "op_pattern": 0})
        for i in range(n):
            A[i] = A[i] * s

    @T.prim_func(private=True)
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i]
'''


def _lowered(path: pathlib.Path):
    mod = parse_source(str(path))
    check_module(mod)
    return run_pipeline(mod, CompileOptions(source=str(path)), tuple(pipeline(2)))


def _objects(mod) -> list[bytes]:
    parts = start_kernels(mod, [host_target()], None, PassContext(opt_level=2))
    return [part.result() for part in parts]


def test_signatures_only_reads_the_named_kernels_without_their_bodies():
    whole = parse(TWO_KERNELS, "m.vms")
    read = parse(TWO_KERNELS, "m.vms", signatures_only={"scale"})
    assert_structural_equal(read["copy"], whole["copy"])
    scale, full = read["scale"], whole["scale"]
    assert [(p.name, p.dtype) for p in scale.params] == [(p.name, p.dtype) for p in full.params]
    assert dict(scale.attrs) == dict(full.attrs) == {"tirx.noalias": True, "op_pattern": 0}
    assert isinstance(scale.body, tir.Evaluate)
    assert not isinstance(full.body, tir.Evaluate)


def test_the_printer_reports_the_names_parameters_print_as():
    printed = {}
    text = script(parse(TWO_KERNELS, "m.relax"), printed)
    # `a` is the handle of buffer A: the text declares it as `A: T.Buffer(...)`.
    assert printed == {"copy": (("A", "B"), ()), "scale": (("A", "s"), ())}
    assert [p.name for p in parse(text, "m.vms")["scale"].params] == ["A", "s"]


def _source(tmp_path, text: str) -> pathlib.Path:
    path = tmp_path / "model.relax"
    path.write_text(text)
    return path


def test_buffers_printed_under_other_names_are_renamed_in_memory(tmp_path):
    lowered = _lowered(_source(tmp_path, POOL_AND_ADD))
    printed = {}
    script(lowered, printed)
    params, renamed = printed["avg_pool2d"]
    assert [(buffer.name, name) for buffer, name in renamed] == [("pool_avg", "pool_avg_1")]
    kernel = as_printed(lowered, printed)["avg_pool2d"]
    names = {block.alloc_buffers[0].name for block in collect(kernel.body, tir.Block) if block.alloc_buffers}
    assert names == {"pool_avg_1"}


def test_a_kernel_printed_under_other_names_is_read_back_whole(tmp_path):
    lowered = _lowered(_source(tmp_path, SHADOWED))
    printed = {}
    script(lowered, printed)
    assert printed["shadowed"] is None and printed["add"] == (("A", "B", "T_add"), ())
    assert set(as_printed(lowered, printed)) == {"add"}


@pytest.mark.parametrize("source", [*SOURCES, "pool-and-add", "shadowed"])
def test_kernels_from_memory_are_the_kernels_read_back(source, tmp_path, monkeypatch):
    monkeypatch.setenv("RELAX_CACHE", "0")
    inline = {"pool-and-add": POOL_AND_ADD, "shadowed": SHADOWED}
    lowered = _lowered(_source(tmp_path, inline[source]) if source in inline else ROOT / source)
    deferred, printed = {}, {}
    with array_literals.printing(deferred):
        text = script(lowered, printed)
    kept = as_printed(lowered, printed)
    assert kept
    with array_literals.reading(deferred):
        whole = read_vms(text, "model.vms")
        signatures = read_vms(text, "model.vms", signatures_only=kept)
    assert generate_bytecode(signatures, "model.vms").save_to_bytes() == \
        generate_bytecode(whole, "model.vms").save_to_bytes()
    assert _objects(with_kernels(signatures, kept)) == _objects(whole)


def test_parameters_named_as_printed_are_what_keeps_the_bytes():
    lowered = _lowered(ROOT / "testsuite/transform/static-plan-symbolic.relax")
    printed = {}
    text = script(lowered, printed)
    whole = read_vms(text, "model.vms")
    kept = as_printed(lowered, printed)
    unrenamed = {name: lowered[name] for name in kept}
    assert _objects(with_kernels(whole, unrenamed)) != _objects(whole)


@pytest.mark.parametrize("explicit_passes", [False, True], ids=["default", "passes"])
def test_the_one_shot_reads_back_only_what_it_did_not_build_from_memory(explicit_passes, tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.setenv("RELAX_CACHE", "0")
    reads = []
    original = assemble.read_vms

    def recording(text, source, signatures_only=()):
        reads.append(set(signatures_only))
        return original(text, source, signatures_only)

    monkeypatch.setattr(assemble, "read_vms", recording)
    source = _source(tmp_path, SHADOWED)
    # --passes naming the whole pipeline still reads every kernel back: it may name any passes.
    passes = tuple(pipeline(2)) if explicit_passes else None
    options = CompileOptions(source=str(source), emit="vmx", output=str(tmp_path / "m.vmx"), passes=passes,
                             verbose=1)
    assert compile_main(options) == 0
    assert reads == [set() if explicit_passes else {"add"}]
    # The shadowed kernel comes from the text: the kernels start once it is read back.
    stages = [line.split(":")[1].strip().split(" for ")[0] for line in capsys.readouterr().err.splitlines()
              if line.startswith("relaxc: ") and line.endswith(" s")]
    assert stages[-5:] == ["read .vms", "kernels", "bytecode", "LLVM", "link"]


def test_two_sizes_of_one_name_read_back_as_one_variable():
    from relax.tir.rewrite import substitute

    func = parse('''
from tvm.script import tir as T

@T.prim_func
def f(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    T.evaluate(0)
''', "f.relax")["f"]
    (a, buffer_a), (b, buffer_b) = func.buffer_map
    n = buffer_b.shape[0]
    other_n = substitute(buffer_b, {n: tir.Var("n", "int64")})
    printed = {}
    script(func, printed)
    assert printed == {"f": (("A", "B"), ())}
    script(func.with_fields(buffer_map=((a, buffer_a), (b, other_n))), printed)
    assert printed == {"f": None}


def _copy_reading(index_of) -> tir.PrimFunc:
    """TWO_KERNELS' copy, reading A at index_of(i) instead of i, built in memory."""
    from relax.tir.rewrite import Rewriter

    class Reindex(Rewriter):
        def visit_BufferLoad(self, load):
            return load.with_fields(indices=(index_of(load.indices[0]),))

    copy = parse(TWO_KERNELS, "m.relax")["copy"]
    return copy.with_fields(body=Reindex().visit(copy.body))


def _int(value: int) -> tir.IntImm:
    return tir.IntImm("int32", value)


# Nodes a pass may build as written that the parser folds as it reads their text back:
# operators with an identity operand, and T.min, T.max, T.truncmod of constants.
FOLDED_ON_READ = {
    "x % 1": lambda i: tir.FloorMod(i, _int(1)),
    "x + 0": lambda i: tir.Add(i, _int(0)),
    "0 + x": lambda i: tir.Add(_int(0), i),
    "x * 1": lambda i: tir.Mul(i, _int(1)),
    "x // 1": lambda i: tir.FloorDiv(i, _int(1)),
    "T.min(x, T.max(2, 3))": lambda i: tir.Min(i, tir.Max(_int(2), _int(3))),
    "T.truncmod(x, 1)": lambda i: tir.Mod(i, _int(1)),
}
READ_AS_WRITTEN = {
    "x": lambda i: i,
    "x % 3": lambda i: tir.FloorMod(i, _int(3)),
    "x + 2 - 2": lambda i: tir.Sub(tir.Add(i, _int(2)), _int(2)),
    "T.min(x, 3)": lambda i: tir.Min(i, _int(3)),
    "T.Add(1, 2) - 3 + x": lambda i: tir.Add(tir.Sub(tir.Add(_int(1), _int(2)), _int(3)), i),
}


@pytest.mark.parametrize("index", FOLDED_ON_READ, ids=list(FOLDED_ON_READ))
def test_a_kernel_with_an_expression_the_parser_folds_is_read_back_whole(index):
    func = _copy_reading(FOLDED_ON_READ[index])
    printed = {}
    text = script(func, printed)  # a private PrimFunc on its own prints as `main`
    assert printed == {"main": None}
    assert not _same_kernel(parse(text, "m.vms")["main"], func)  # what the one-shot would have built otherwise


@pytest.mark.parametrize("index", READ_AS_WRITTEN, ids=list(READ_AS_WRITTEN))
def test_a_kernel_whose_text_reads_back_as_written_is_kept(index):
    func = _copy_reading(READ_AS_WRITTEN[index])
    printed = {}
    text = script(func, printed)
    assert printed == {"main": (("A", "B"), ())}
    assert _same_kernel(parse(text, "m.vms")["main"], func)


def _same_kernel(a: tir.PrimFunc, b: tir.PrimFunc) -> bool:
    from relax.ir.structural import structural_equal

    return structural_equal(a, b, map_free_vars=True)


def test_a_relax_expression_the_parser_folds_leaves_the_bindings_incomplete():
    from relax.ir import expr as rx
    from relax.ir.visitor import ExprMutator
    from relax.script.printed_bindings import PrintedBindings

    mod = parse('''
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Shape(ndim=1):
        n = T.int64()
        s = R.shape([n])
        return s
''', "m.relax")

    class PlusZero(ExprMutator):
        def visit_ShapeExpr(self, shape):
            return shape.with_fields(values=tuple(tir.Add(value, tir.IntImm("int64", 0)) for value in shape.values))

    kept, folded = PrintedBindings(), PrintedBindings()
    script(mod, {}, kept)
    changed = mod.with_fields(functions=type(mod.functions)({"main": PlusZero().visit(mod["main"])}))
    assert isinstance(changed["main"].body.blocks[0].bindings[0].value, rx.ShapeExpr)
    script(changed, {}, folded)
    assert kept.complete and not folded.complete
