"""The tools start with what their command needs: printing the parsed IR, assembling a
.vms and linking an artifact load neither LLVM nor the virtual machine (their imports
are most of a short command's time); building kernels and running an artifact do. A CPU
build leaves the GPU schedules out."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "samples" / "mlp.relax"

PROBE = """
import importlib, sys
tool, args = sys.argv[1], sys.argv[2:]
cli = importlib.import_module(f"{tool}.cli")
from relax.driver.runner import run_command
code = run_command(cli.command, tool, args)
from relax import llvm_library
loaded = (["llvm"] if llvm_library.loaded() else []) + [
    name for name in ("llvmlite.binding", "relax.vm.machine.virtual_machine", "relax.tir.pipeline",
                      "relax.tir.gpu_schedule", "relax.codegen.build_kernels", "relax.runtime.kernels.library")
    if name in sys.modules]
print("exit", code, "loaded", *loaded, file=sys.stderr)
"""


def _loaded(tool: str, *args) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lib"), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", PROBE, tool, *map(str, args)], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    last = run.stderr.strip().splitlines()[-1].split()
    assert last[:3] == ["exit", "0", "loaded"], run.stderr
    return last[3:]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """mlp.relax as a .vms, its .vmo and its .ko."""
    out = tmp_path_factory.mktemp("mlp")
    for args in (["-S", MLP, "-o", out / "mlp.vms"], ["--emit", "kernels", MLP, "-o", out / "mlp.ko"]):
        subprocess.run([sys.executable, "-m", "relaxc", *map(str, args)], check=True, cwd=ROOT)
    subprocess.run([sys.executable, "-m", "relaxas", str(out / "mlp.vms"), "-o", str(out / "mlp.vmo")], check=True,
                   cwd=ROOT)
    return out


def test_printing_the_ir_loads_no_lowering_and_no_llvm():
    assert _loaded("relaxc", "--emit", "ir", MLP) == []


def test_lowering_a_module_with_nothing_to_fold_loads_no_code_generator(tmp_path):
    """fold-constant imports the code generator (and the kernel loader) for a round that has
    kernels to build; the MLP sample, weights as parameters, has none. (The CPU model the
    weight packing asks for still loads LLVM.)"""
    loaded = _loaded("relaxc", "-S", MLP, "-o", tmp_path / "mlp.vms")
    assert "relax.codegen.build_kernels" not in loaded and "relax.tir.pipeline" not in loaded


def test_assembling_loads_no_llvm_and_no_machine(built, tmp_path):
    assert _loaded("relaxas", built / "mlp.vms", "-o", tmp_path / "mlp.vmo") == []


def test_linking_loads_no_llvm_and_no_machine(built, tmp_path):
    assert _loaded("relaxld", built / "mlp.vmo", built / "mlp.ko", "-o", tmp_path / "mlp.vmx") == []


def test_building_cpu_kernels_loads_no_gpu_schedule(tmp_path):
    loaded = _loaded("relaxc", "--emit", "kernels", MLP, "-o", tmp_path / "mlp.ko")
    assert "llvm" in loaded and "relax.tir.pipeline" in loaded
    assert "relax.tir.gpu_schedule" not in loaded


def test_a_build_calls_llvm_without_importing_llvmlite_binding(tmp_path):
    """A build calls LLVM through relax.llvm_capi: llvmlite.binding, which declares a
    prototype for each of its C functions as it is imported, is the loader's alone."""
    for args in (["--emit", "kernels", MLP, "-o", tmp_path / "mlp.ko"], [MLP, "-o", tmp_path / "mlp.vmx"],
                 ["--emit", "asm", MLP], ["--emit", "kernels", "--target", "llvm -mtriple=aarch64-linux-gnu",
                                           MLP, "-o", tmp_path / "arm.ko"]):
        loaded = _loaded("relaxc", *args)
        assert "llvm" in loaded and "llvmlite.binding" not in loaded, args


def test_building_kernels_loads_no_kernel_loader(tmp_path):
    """A build writes kernel objects and never loads them: the loader (and its native call
    path) is for running and folding constants."""
    assert "relax.runtime.kernels.library" not in _loaded("relaxc", MLP, "-o", tmp_path / "mlp.vmx")
    assert "relax.runtime.kernels.library" not in _loaded("relaxc", "--emit", "kernels", MLP, "-o", tmp_path / "mlp.ko")


def test_the_probe_sees_what_running_loads(built, tmp_path):
    """The control of the tests above: running an artifact needs the machine and the loader."""
    subprocess.run([sys.executable, "-m", "relaxld", str(built / "mlp.vmo"), str(built / "mlp.ko"),
                    "-o", str(tmp_path / "mlp.vmx")], check=True, cwd=ROOT)
    inputs = ["1x784xf32=0.5", "128x784xf32=0.1", "128xf32=0", "64x128xf32=0.1", "64xf32=0", "10x64xf32=0.1",
              "10xf32=0"]
    loaded = _loaded("relaxrun", tmp_path / "mlp.vmx", *(arg for value in inputs for arg in ("--input", value)))
    assert "llvm" in loaded and "llvmlite.binding" in loaded and "relax.vm.machine.virtual_machine" in loaded
    assert "relax.runtime.kernels.library" in loaded


def test_importing_the_vm_registers_its_builtins_and_loads_no_llvm():
    probe = ("import sys; import relax.vm; from relax.runtime import get_global_func; "
             "print(get_global_func('vm.builtin.alloc_storage', allow_missing=True) is not None, "
             "'llvmlite.binding' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lib"), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert run.stdout.split() == ["True", "False"]


def test_the_avx2_view_loads_llvm_only_where_the_tool_does(tmp_path):
    """testsuite/avx2_host shows the host to LLVM as an AVX2 one as LLVM is loaded: printing
    the IR still loads no LLVM under it, and a kernel object built under it is built for the
    host it shows (on an AVX-512 host: znver3, without AVX-512). It loaded LLVM at every
    process's start before."""
    view = {"RELAX_TEST_HOST": "avx2", "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "testsuite" / "avx2_host"), str(ROOT / "lib"), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", PROBE, "relaxc", "--emit", "ir", str(MLP)], capture_output=True,
                         text=True, env={**os.environ, **view}, cwd=ROOT)
    assert run.stderr.strip().splitlines()[-1].split() == ["exit", "0", "loaded"], run.stderr
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    if "avx512f" not in (cpuinfo.read_text().split() if cpuinfo.exists() else ()):
        return  # the view leaves a host without AVX-512 (or not shown as Linux shows it) as it is
    subprocess.run([sys.executable, "-m", "relaxc", "--emit", "kernels", str(MLP), "-o", str(tmp_path / "mlp.ko")],
                   check=True, env={**os.environ, **view, "RELAX_CACHE": "0"}, cwd=ROOT)
    from relax.runtime.kernels import container

    built = container.read((tmp_path / "mlp.ko").read_bytes())
    assert [(target.cpu, "+avx512f" in target.features.split(",")) for target in built.targets] == [("znver3", False)]


# The one-shot, recording which of these modules are loaded when the kernels start.
STAGE_PROBE = """
import sys
from relax.driver import artifact
from relax.driver.runner import run_command
from relaxc import cli

WATCHED = ("relax.vm", "relax.runtime.kernels.container", "relax.runtime.kernels.elf_check")
loaded = []
start_kernels = artifact._start_kernels

def recording(*args, **kwargs):
    loaded.extend(name for name in WATCHED if name in sys.modules)
    return start_kernels(*args, **kwargs)

artifact._start_kernels = recording
code = run_command(cli.command, "relaxc", sys.argv[1:])
print("exit", code, "loaded-at-kernels", *loaded, file=sys.stderr)
"""


@pytest.fixture(scope="module")
def loaded_at_kernels(tmp_path_factory) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lib"), str(ROOT)]), "RELAX_CACHE": "0"}
    output = tmp_path_factory.mktemp("one-shot") / "mlp.vmx"
    run = subprocess.run([sys.executable, "-c", STAGE_PROBE, str(MLP), "-o", str(output)],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    last = run.stderr.strip().splitlines()[-1].split()
    assert last[:3] == ["exit", "0", "loaded-at-kernels"], run.stderr
    return last[3:]


def test_the_one_shot_loads_the_vm_after_its_kernels_start(loaded_at_kernels):
    """Only the bytecode and the link need the virtual machine's modules: loaded before the
    parse (for a --sign key the build did not have), they delayed LLVM's start."""
    assert "relax.vm" not in loaded_at_kernels


def test_the_one_shot_loads_the_kernel_container_after_its_kernels_start(loaded_at_kernels):
    """The .ko container and its ELF checks are for packing the kernel object and linking:
    relaxc imports them with the linker, while LLVM compiles, not before the first kernel."""
    assert "relax.runtime.kernels.container" not in loaded_at_kernels
    assert "relax.runtime.kernels.elf_check" not in loaded_at_kernels
