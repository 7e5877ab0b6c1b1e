"""Shows an x86-64 AVX-512 host to the toolchain as an AVX2-only AMD Zen 3, for `make test-avx2-host`.

The machines that run the tests change CPU kind from day to day, and a test that
assumes the host's vector width passes on one kind and fails on the other. Run with
RELAX_TEST_HOST=avx2 and this folder on PYTHONPATH (the Makefile target sets both),
every Python process of the run, the tools the tests start included, imports this
file at start-up: LLVM, once asked (through relax.llvm_capi, as a build asks, or
llvmlite.binding, as the loader does), reports the host CPU as `znver3` with its
AVX-512 features off, so the default target, `-mcpu=native` and the CPU model of the
schedules are an AVX2 host's, and the code still runs here. The cache sizes stay the
host's own (tir/schedule/cpu.py reads them from /sys). A host without AVX-512 (the
tests already ran as on an AVX2 host) or without AVX2 (it cannot run the code) is left
as it is, with the reason in RELAX_TEST_HOST_UNCHANGED, and testsuite/conftest.py ends
the run there.
"""

import functools
import importlib.abc
import os
import sys

# AVX-512 and what came with or after it; an AVX2 Zen 3 has none of these.
NOT_ON_AN_AVX2_HOST = ("avx512", "evex512", "avx10", "amx", "gfni")
NEEDED = ("avx2", "fma", "f16c", "bmi2")
CPU = "znver3"
# The host kind this process shows ("avx2" once applied), for testsuite/conftest.py.
SHOWN = None


def _as_avx2_host(cpu: str, features: dict) -> dict | None:
    """The features `features` ({name: on}) of a host CPU `cpu` shown as an AVX2 host's, or
    None where the host stays as it is (the reason in RELAX_TEST_HOST_UNCHANGED)."""
    lacking = [name for name in NEEDED if not features.get(name)]
    if lacking or not features.get("avx512f"):
        why = f"lacks {', '.join(lacking)}" if lacking else "has no AVX-512: the tests ran as on an AVX2 host already"
        os.environ["RELAX_TEST_HOST_UNCHANGED"] = f"this host ({cpu}) {why}"
        return None
    global SHOWN
    SHOWN = "avx2"
    return {name: on and not name.startswith(NOT_ON_AN_AVX2_HOST) for name, on in features.items()}


def _show_llvmlite(llvm) -> None:
    shown = _as_avx2_host(llvm.get_host_cpu_name(), llvm.get_host_cpu_features())
    if shown is not None:
        features = type(llvm.get_host_cpu_features())(shown)  # a FeatureMap, with its flatten()
        llvm.get_host_cpu_features = lambda: features
        llvm.get_host_cpu_name = lambda: CPU


def _show_capi(capi) -> None:
    """relax.llvm_capi's host functions, replaced by ones that ask LLVM at their first call,
    not here: a tool imports that module before it loads LLVM, on another thread."""
    cpu_name, cpu_features = capi.host_cpu_name, capi.host_cpu_features

    @functools.cache
    def host():
        text = cpu_features()
        shown = _as_avx2_host(cpu_name(), {entry[1:]: entry[0] == "+" for entry in text.split(",") if entry})
        if shown is None:
            return cpu_name(), text
        return CPU, ",".join(("+" if on else "-") + name for name, on in sorted(shown.items()))

    capi.host_cpu_name = lambda: host()[0]
    capi.host_cpu_features = lambda: host()[1]


_SHOWN_ON_LOAD = {"llvmlite.binding": _show_llvmlite, "relax.llvm_capi": _show_capi}


class _ShowWhenLoaded(importlib.abc.MetaPathFinder):
    """Shows the host as an AVX2 one right after llvmlite.binding or relax.llvm_capi is
    executed, whenever that happens: a tool loads LLVM when its command first needs it, or
    never (testsuite/driver_link/test_tool_imports.py), and is timed and tested under the
    view as on an AVX2 host only if the view does not load it at start."""

    def find_spec(self, name, path, target=None):
        show = _SHOWN_ON_LOAD.get(name)
        if show is None:
            return None
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if finder is not self else None
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            show(module)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("RELAX_TEST_HOST") == "avx2":  # at start-up: nothing has imported LLVM yet
    sys.meta_path.insert(0, _ShowWhenLoaded())
