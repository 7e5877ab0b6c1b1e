"""Importing cupy for the cuda device, or saying clearly why it cannot be used here."""

from __future__ import annotations

import importlib.util

from ...diagnostics import UserError

INSTALL_HINT = "pip install '.[cuda]'"


def cuda_problem() -> str | None:
    """Why the cuda device cannot be used on this machine, or None when cupy sees a GPU."""
    if importlib.util.find_spec("cupy") is None:
        return f"cupy is not installed ({INSTALL_HINT})"
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU is visible"
    except Exception as error:  # noqa: BLE001 - any driver failure means no usable GPU
        return f"no CUDA GPU is visible ({type(error).__name__}: {error})"
    return None


def import_cupy(what: str = "the cuda device"):
    """The cupy module when a GPU is usable; otherwise a UserError naming what is missing."""
    problem = cuda_problem()
    if problem is not None:
        raise UserError(f"{what} is not available: {problem}")
    import cupy

    return cupy
