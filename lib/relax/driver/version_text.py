"""The text of `--version`: tool, formats, LLVM, GPU availability and the host."""

from __future__ import annotations

import platform

import click

from ..version import FORMAT_VERSIONS, __version__


def _llvm_line() -> str:
    try:
        import llvmlite
        import llvmlite.binding as llvm

        major, minor, patch = llvm.llvm_version_info
        return f"llvmlite {llvmlite.__version__} (LLVM {major}.{minor}.{patch})"
    except Exception as exc:  # noqa: BLE001 - a broken llvmlite is worth reporting, not crashing on
        return f"llvmlite unavailable ({exc})"


def _host_line() -> str:
    try:
        import llvmlite.binding as llvm

        return f"host: {llvm.get_process_triple()} cpu {llvm.get_host_cpu_name()}"
    except Exception:  # noqa: BLE001
        return f"host: {platform.machine()}-{platform.system().lower()}"


def _cuda_line() -> str:
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        return "cuda: cupy not installed (pip install '.[cuda]')"
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        return f"cuda: cupy {cupy.__version__}, {count} GPU(s)"
    except Exception as exc:  # noqa: BLE001
        return f"cuda: cupy {getattr(__import__('cupy'), '__version__', '?')}, no GPU ({type(exc).__name__})"


def version_text(tool: str) -> str:
    formats = ", ".join(f".{name} {version}" for name, version in FORMAT_VERSIONS.items())
    return "\n".join(
        [f"{tool} (relax toolchain) {__version__}", f"formats: {formats}", _llvm_line(), _cuda_line(), _host_line()]
    ) + "\n"


def version_callback(tool: str):
    def callback(ctx: click.Context, _param, value):
        if not value or ctx.resilient_parsing:
            return
        click.echo(version_text(tool), nl=False)
        ctx.exit(0)

    return callback
