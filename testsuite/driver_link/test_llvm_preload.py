"""relaxc maps LLVM's library on a thread as a command that needs LLVM starts
(driver/llvm_preload.py), and the build's own load (relax.llvm_capi) then reuses that
mapping, as llvmlite's does. Each case runs in a fresh interpreter: in the test process
LLVM is loaded already."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "samples" / "mlp.relax"

pytestmark = pytest.mark.skipif(not pathlib.Path("/proc/self/maps").exists(),
                                reason="the mapping is only tried, and only seen, on Linux")

MAPPED = """
def mapped():
    return sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
                   if line.rstrip().endswith("libllvmlite.so")})
"""


def _run(code: str, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lib"), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", MAPPED + code, *map(str, args)], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return run


def _python(code: str) -> list[str]:
    return _run(code).stdout.split()


def _relaxc(*args) -> list[str]:
    """The exit code, whether the mapping had started when the build opened libllvmlite with
    ctypes ([] if it never did), and how many libllvmlite files are mapped at the end."""
    return _run(ONE_SHOT, *args).stderr.strip().splitlines()[-1].split()


def test_the_library_found_is_the_one_llvmlite_loads():
    out = _python("""
import os
from relax.llvm_library import library_path
path = library_path()
import llvmlite.binding as llvm
print(os.path.samefile(path, llvm.ffi.lib._name))
""")
    assert out == ["True"]


def test_the_thread_maps_llvm_without_importing_llvmlite_and_both_loads_reuse_it():
    out = _python("""
import sys
from relax import llvm_capi, llvm_library
from relax.driver.llvm_preload import start_loading_llvm
thread = start_loading_llvm()
thread.join()
print(len(mapped()), "llvmlite.binding" in sys.modules, llvm_library.loaded(), start_loading_llvm() is None)
print(llvm_capi.llvm_version() >= (14,), len(mapped()))
import llvmlite.binding as llvm
print(llvm.llvm_version_info == llvm_capi.llvm_version(), len(mapped()))
""")
    assert out == ["1", "False", "False", "True", "True", "1", "True", "1"]


@pytest.mark.parametrize("load", ["import llvmlite.binding", "from relax import llvm_library; llvm_library.library()"])
def test_nothing_starts_once_llvm_is_loaded(load):
    out = _python(load + """
from relax.driver.llvm_preload import start_loading_llvm
print(start_loading_llvm() is None)
""")
    assert out == ["True"]


ONE_SHOT = """
import sys
seen = []
def hook(event, args):
    if event == "ctypes.dlopen" and str(args[0]).endswith("libllvmlite.so") and not seen:
        from relax.driver import llvm_preload
        seen.append(llvm_preload._loading is not None)
sys.addaudithook(hook)
from relaxc.cli import command
from relax.driver.runner import run_command
code = run_command(command, "relaxc", sys.argv[1:])
print(code, seen, len(mapped()), file=sys.stderr)
"""


def test_the_one_shot_starts_mapping_llvm_before_llvmlite_is_imported(tmp_path):
    assert _relaxc(MLP, "-o", tmp_path / "mlp.vmx") == ["0", "[True]", "1"]


def test_printing_the_ir_maps_no_llvm():
    assert _relaxc("--emit", "ir", MLP) == ["0", "[]", "0"]
