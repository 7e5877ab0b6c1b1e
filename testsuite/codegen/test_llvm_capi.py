"""relax.llvm_capi: libllvmlite's C functions as a build calls them, checked against
llvmlite.binding, which declares and calls the same functions."""

import ctypes

import llvmlite.binding as llvm
import pytest

from relax import llvm_capi, llvm_library
from relax.diagnostics import UserError
from relax.llvm_capi import Context, Module, TargetMachine, optimize
from relax.target import Target
from relax.target.llvm_target import TargetSpec, target_machine, target_spec

LOOP = ("define i32 @f(ptr %p, i64 %n) {\nentry:\n  br label %loop\nloop:\n"
        "  %i = phi i64 [0, %entry], [%j, %loop]\n  %q = getelementptr i32, ptr %p, i64 %i\n"
        "  store i32 7, ptr %q\n  %j = add i64 %i, 1\n  %c = icmp slt i64 %j, %n\n"
        "  br i1 %c, label %loop, label %done\ndone:\n  ret i32 0\n}\n")


@pytest.mark.parametrize("name", sorted(llvm_library.PROTOTYPES))
def test_each_prototype_is_llvmlites(name):
    """PROTOTYPES against the installed llvmlite's declarations (its handle types as c_void_p)."""
    result, arguments = llvm_library.declared_prototype(name)
    ours_result, ours_arguments = llvm_library.PROTOTYPES[name]
    assert ours_result is (result or ctypes.c_int)  # ctypes' default result is an int
    if arguments is not None:  # llvmlite leaves a few undeclared (no arguments, or a string to free)
        assert list(ours_arguments) == list(arguments)


def test_the_host_is_the_one_llvmlite_sees():
    assert llvm_capi.process_triple() == llvm.get_process_triple()
    assert llvm_capi.host_cpu_name() == llvm.get_host_cpu_name()
    assert llvm_capi.host_cpu_features() == llvm.get_host_cpu_features().flatten()
    assert llvm_capi.llvm_version() == llvm.llvm_version_info


def _llvmlite_machine(spec: TargetSpec):
    return llvm.Target.from_triple(spec.triple).create_target_machine(
        cpu=spec.cpu, features=spec.features, opt=3, reloc="pic", codemodel="default")


@pytest.mark.parametrize("target", ["host", "llvm -mtriple=aarch64-linux-gnu", "llvm -mcpu=x86-64-v3"])
def test_a_module_compiles_to_the_bytes_llvmlite_gives(target):
    spec = target_spec(Target.host() if target == "host" else Target.parse(target))
    theirs = _llvmlite_machine(spec)
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = tuning.slp_vectorization = tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(theirs, tuning)
    reference = llvm.parse_assembly(LOOP)
    reference.triple, reference.data_layout = spec.triple, str(theirs.target_data)
    unoptimized = reference.as_bitcode()
    builder.getModulePassManager().run(reference, builder)

    machine = target_machine(spec)
    assert machine.data_layout == str(theirs.target_data)
    with Context() as context:
        module = Module.parse(LOOP, context)
        module.set_triple(spec.triple)
        module.set_data_layout(machine.data_layout)
        assert module.bitcode() == unoptimized
        optimize(module, machine, 3)
        assert str(module) == str(reference)
        assert machine.emit(module) == theirs.emit_object(reference)
        assert machine.emit(module, assembly=True).decode() == theirs.emit_assembly(reference)


def test_bitcode_reads_back_as_the_module():
    with Context() as context:
        module = Module.parse(LOOP, context)
        again = Module.parse_bitcode(module.bitcode(), context)
        assert str(again) == str(module).split("\n", 1)[1]  # all but the ModuleID, which bitcode does not keep
        with pytest.raises(RuntimeError, match="bitcode"):
            Module.parse_bitcode(b"not bitcode", context)


def test_modules_link_and_list_their_functions():
    with Context() as context:
        module = Module.parse("declare void @g()\n" + LOOP, context)
        assert module.function_names() == ["g", "f"]
        assert module.declares("g") and not module.declares("f") and not module.declares("h")
        module.link_in(Module.parse("define void @g() {\n  ret void\n}\n", context))
        assert not module.declares("g")
        module.verify()
        with pytest.raises(RuntimeError, match="symbol multiply defined"):
            module.link_in(Module.parse("define void @g() {\n  ret void\n}\n", context))


def test_errors_are_llvms_messages():
    with Context() as context:
        with pytest.raises(RuntimeError, match="LLVM IR parsing error\n.*expected top-level entity"):
            Module.parse("nonsense", context)
        broken = Module.parse("define i32 @f() {\nentry:\n  br label %entry\n}\n", context)
        with pytest.raises(RuntimeError, match="[Ee]ntry block"):
            broken.verify()


def test_an_unknown_triple_is_a_lookup_error_and_a_user_error_for_a_build():
    assert not llvm_capi.known_target("nosucharch-unknown-linux-gnu")
    assert llvm_capi.known_target("x86_64-unknown-linux-gnu")
    with pytest.raises(LookupError):
        TargetMachine("nosucharch-unknown-linux-gnu")
    with pytest.raises(UserError, match="LLVM cannot generate code for 'nosucharch-unknown-linux-gnu'"):
        target_machine(TargetSpec("nosucharch-unknown-linux-gnu", "generic", ""))


def test_another_llvmlite_release_types_each_function_as_it_declares_it():
    """With an llvmlite other than the one PROTOTYPES was checked against, the functions are
    typed from that llvmlite's own declarations: the same code comes out."""
    import subprocess
    import sys

    code = f"""
import sys
from relax import llvm_capi, llvm_library
llvm_library.CHECKED_LLVMLITE = "0.0"
from relax.target import Target
from relax.target.llvm_target import target_machine, target_spec
machine = target_machine(target_spec(Target.host()))
with llvm_capi.Context() as context:
    module = llvm_capi.Module.parse({LOOP!r}, context)
    llvm_capi.optimize(module, machine, 3)
    sys.stdout.write(machine.emit(module).hex() + " " + str("llvmlite.binding" in sys.modules))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert llvm_library.llvmlite_release() == llvm_library.CHECKED_LLVMLITE
    machine = target_machine(target_spec(Target.host()))
    with Context() as context:
        module = Module.parse(LOOP, context)
        optimize(module, machine, 3)
        assert run.stdout.split() == [machine.emit(module).hex(), "True"]


def test_a_renamed_intrinsic_becomes_the_function_its_calls_reach():
    text = ("declare <8 x float> @llvm.exp.v8f32(<8 x float>)\n"
            "define <8 x float> @f(<8 x float> %x) {\n"
            "  %y = call <8 x float> @llvm.exp.v8f32(<8 x float> %x)\n  ret <8 x float> %y\n}\n")
    with Context() as context:
        module = Module.parse(text, context)
        module.rename_function("llvm.exp.v8f32", "_ZGVdN8v_expf")
        module.verify()
        printed = str(module)
        assert "call <8 x float> @_ZGVdN8v_expf(<8 x float> %x)" in printed and "llvm.exp" not in printed
        with pytest.raises(KeyError):
            module.rename_function("llvm.exp.v8f32", "again")


def test_the_part_compiler_leaves_the_process_locale_alone():
    """llvmlite's module printer sets the process's locale to C while it prints: a worker
    thread that printed a module (the libmvec renaming did, once per part) made a text
    file opened meanwhile on another thread read as ASCII. The parts are compiled here
    while this thread watches the locale's encoding."""
    import locale
    import threading

    from relax.codegen.build_kernels import build_kernel_object
    from relax.ir import tir
    from codegen_tir import elementwise

    exp = {f"e{n}": elementwise(4096 + 64 * n, ["float32"], "float32", lambda x: tir.Call("float32", "tir.exp", (x,)))
           for n in range(4)}
    encodings, done = set(), threading.Event()
    watcher = threading.Thread(target=lambda: [encodings.add(locale.getpreferredencoding(False))
                                               for _ in iter(done.is_set, True)])
    watcher.start()
    try:
        for _ in range(3):
            build_kernel_object(exp, [Target.host()])
    finally:
        done.set()
        watcher.join()
    assert encodings == {locale.getpreferredencoding(False)}
