"""Symbol resolution in relax.vm.artifact.linker: references by function, runtime names, globs,
duplicates, and fat artifacts whose every target must define every kernel."""

import pytest

from elf_objects import compiled_object
from relax.diagnostics import DiagnosticError
from relax.runtime.kernels import container
from relax.vm import ExecBuilder
from relax.vm.artifact.linker import LinkInput, link, runtime_symbols, symbol_references


def _program():
    """main calls kernel 'k' and host function 'user.f'; helper passes 'user.g' as a value."""
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("k", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("user.f", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_call("vm.builtin.copy", args=[ib.r(2)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    with ib.function("helper", num_inputs=0):
        ib.emit_call("vm.builtin.copy", args=[ib.f("user.g")], dst=ib.r(0))
        ib.emit_call("user.f", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    return ib.get()


def _kernel_object(triple: str, names=("k",)) -> bytes:
    from relax.runtime.kernels.kernel_signatures import signature_digest, signature_symbol
    from relax.runtime.kernels.metadata import KernelInfo

    # One buffer parameter: main calls 'k' with one argument (kernel_calls.py compares them).
    param = {"name": "A", "kind": "buffer", "dtype": "float32", "shape": ["n"]}
    kernels = tuple(KernelInfo.from_json({
        "name": name, "symbol": "relaxk_" + name, "abi_version": 1, "params": [param], "symbolic_vars": ["n"],
        "workspace_bytes": 0, "parallel": False, "noalias": False, "writes": [], "ret_dtype": "", "attrs": {},
    }) for name in names)
    target = container.TargetEntry(triple, "generic", "")
    # The native code defines each kernel's entry symbol, as elf_functions requires, and the
    # digest of its signature (.ko 0.5, kernel_signatures.py).
    text = "".join(f'define void @"relaxk_{name}"() {{\n  ret void\n}}\n' for name in names)
    for info in kernels:
        digest = "".join(f"\\{byte:02X}" for byte in signature_digest(info))
        text += f'@"{signature_symbol(info)}" = constant [32 x i8] c"{digest}", align 1\n'
    code = compiled_object(triple, text)
    return container.write(container.KernelObject((target,), kernels, {0: code}, {}))


def _messages(excinfo) -> list[str]:
    return [d.message for d in excinfo.value.diagnostics]


def test_references_name_each_calling_function_in_table_order():
    references = symbol_references(_program())
    assert references["user.f"] == ["main", "helper"]
    assert references["user.g"] == ["helper"]  # a function value passed as an argument
    assert references["k"] == ["main"]


def test_runtime_symbols_are_the_builtins_and_nothing_of_the_user():
    from relax.runtime import register_func

    register_func("user.registered_in_this_process", lambda: None, override=True)
    names = runtime_symbols()
    assert "vm.builtin.copy" in names and "vm.builtin.match_shape" in names
    assert "user.registered_in_this_process" not in names


def test_every_undefined_reference_is_reported():
    vmo = _program().save_to_bytes()
    with pytest.raises(DiagnosticError) as excinfo:
        link(LinkInput("m.vmo", vmo), [])
    assert _messages(excinfo) == [
        "undefined reference to 'k' in function 'main'",
        "undefined reference to 'user.f' in function 'main'",
        "undefined reference to 'user.f' in function 'helper'",
        "undefined reference to 'user.g' in function 'helper'",
    ]


def test_allow_undefined_takes_globs_and_is_recorded():
    vmo = _program().save_to_bytes()
    result = link(LinkInput("m.vmo", vmo), [LinkInput("x.ko", _kernel_object("x86_64-linux-gnu"))], ["user.?"])
    assert result.info.symbols_resolved_as("undefined") == ["user.f", "user.g"]
    assert result.info.symbols_resolved_as("kernel") == ["k"]
    assert result.info.flags["allow_undefined"] == ["user.?"]


def test_each_target_of_a_fat_artifact_must_define_every_kernel():
    vmo = _program().save_to_bytes()
    inputs = [LinkInput("x.ko", _kernel_object("x86_64-linux-gnu")),
              LinkInput("arm.ko", _kernel_object("aarch64-linux-gnu", names=("other",)))]
    with pytest.raises(DiagnosticError) as excinfo:
        link(LinkInput("m.vmo", vmo), inputs, ["user.*"])
    assert _messages(excinfo) == [
        "undefined reference to 'k' in function 'main' for target aarch64-linux-gnu -mcpu=generic"]
    inputs[1] = LinkInput("arm.ko", _kernel_object("aarch64-linux-gnu"))
    result = link(LinkInput("m.vmo", vmo), inputs, ["user.*"])
    assert [s for s in result.info.symbols if s["name"] == "k"] == [
        {"name": "k", "resolution": "kernel", "kernel_objects": [0, 1]}]
    assert [t["triple"] for t in result.info.targets] == ["x86_64-linux-gnu", "aarch64-linux-gnu"]


def test_a_kernel_named_like_a_builtin_is_a_duplicate():
    vmo = _program().save_to_bytes()
    kernels = LinkInput("x.ko", _kernel_object("x86_64-linux-gnu", names=("k", "vm.builtin.copy")))
    with pytest.raises(DiagnosticError) as excinfo:
        link(LinkInput("m.vmo", vmo), [kernels], ["user.*"])
    assert _messages(excinfo) == ["duplicate symbol 'vm.builtin.copy': defined by the runtime and in 'x.ko'"]


def test_a_bytecode_read_ahead_links_to_the_same_bytes():
    """relaxc's one-shot reads its bytecode for the link while LLVM compiles the kernels."""
    from relax.vm.artifact.linker import read_bytecode

    vmo = LinkInput("app.vmo", _program().save_to_bytes())
    ko = [LinkInput("k.ko", _kernel_object("x86_64-unknown-linux-gnu"))]
    read = read_bytecode(vmo)
    assert read.references == symbol_references(read.executable)
    ahead = link(read, ko, allow_undefined=("user.*",))
    assert ahead.data == link(vmo, ko, allow_undefined=("user.*",)).data
    assert ahead.info.inputs[0]["sha256"] == read.sha256
