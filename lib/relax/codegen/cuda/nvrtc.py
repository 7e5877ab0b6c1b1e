"""CUDA C to a cubin and to PTX with NVRTC, through cupy.cuda.nvrtc (no GPU needed).

    cuda_problem() -> str | None           why NVRTC cannot be used here (None: it can)
    compile_cubin(source, arch, names)     ELF bytes for -arch=sm_XY
    compile_ptx(source, arch, names)       PTX text for -arch=compute_XY

NVRTC compiles for sm_XY through the PTX of compute_XY and gives that PTX too (the
text a compile for compute_XY gives), so compile_cubin and compile_ptx of one source
and arch (a .ko holds both) share one compile: the last two are kept. A compile
error is a UserError naming the kernels and showing NVRTC's log.
"""

from __future__ import annotations

import functools

from ...diagnostics import UserError

INSTALL_HINT = "install the cuda extra: pip install '.[cuda]'"

# -std=c++17 for the lambdas of Let expressions; IEEE float semantics (no fast math).
OPTIONS = ("-std=c++17", "--fmad=true")


def _nvrtc():
    from cupy.cuda import nvrtc  # noqa: PLC0415 (optional dependency)

    return nvrtc


def cuda_problem() -> str | None:
    """None when NVRTC can compile CUDA C here, else why not (naming the extra)."""
    try:
        nvrtc = _nvrtc()
    except ImportError as exc:
        return f"cupy is not installed ({exc}); {INSTALL_HINT}"
    except Exception as exc:  # cupy present but broken (a CUDA library missing)
        return f"cupy cannot be imported ({exc}); {INSTALL_HINT}"
    try:
        nvrtc.getVersion()
    except Exception as exc:
        return f"NVRTC cannot be loaded ({exc}); {INSTALL_HINT}"
    return None


def _require():
    problem = cuda_problem()
    if problem is not None:
        raise UserError(f"codegen: cuda: cannot compile CUDA kernels: {problem}")
    return _nvrtc()


def _compiled(source: str, arch_option: str, what: str, results: tuple[str, ...]) -> list:
    """NVRTC's `results` ("CUBIN", "PTX") of `source` compiled with `arch_option`."""
    nvrtc = _nvrtc()
    program = nvrtc.createProgram(source, "relax_kernels.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, [arch_option, *OPTIONS])
        except Exception as exc:  # noqa: BLE001 - cupy's NVRTCError
            message = str(exc)
            try:
                log = nvrtc.getProgramLog(program)
            except Exception:  # noqa: BLE001 - no log to show
                log = ""
            if log and log.strip() not in message:
                message = f"{message}\n{log}"
            raise UserError(f"codegen: cuda: NVRTC could not compile {what} ({arch_option}): "
                            f"{message.rstrip()}") from None
        return [getattr(nvrtc, "get" + result)(program) for result in results]
    finally:
        nvrtc.destroyProgram(program)


@functools.lru_cache(maxsize=2)
def _cubin_and_ptx(source: str, arch: str, what: str) -> tuple[bytes, str]:
    cubin, ptx = _compiled(source, f"-arch={arch}", what, ("CUBIN", "PTX"))
    return bytes(cubin), _text(ptx)


def _text(ptx) -> str:
    return ptx.decode("utf-8") if isinstance(ptx, bytes) else str(ptx)


def compile_cubin(source: str, arch: str, what: str = "the kernels") -> bytes:
    """The cubin (an ELF for EM_CUDA) of `source` for `arch` ("sm_90")."""
    _require()
    return _cubin_and_ptx(source, arch, what)[0]


def compile_ptx(source: str, arch: str, what: str = "the kernels") -> str:
    """The PTX text of `source` for the virtual architecture of `arch` (sm_90 -> compute_90)."""
    _require()
    if arch.startswith("sm_"):
        return _cubin_and_ptx(source, arch, what)[1]
    return _text(_compiled(source, f"-arch={arch}", what, ("PTX",))[0])
