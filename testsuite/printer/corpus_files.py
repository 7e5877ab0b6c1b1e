"""The TVM-printed inputs that the printer tests run over: corpus files and samples."""

from __future__ import annotations

import pathlib

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT / "testsuite" / "corpus"
SAMPLES = REPO_ROOT / "samples"


def tvm_printed_files() -> list[pathlib.Path]:
    """Every file that is exactly TVM 0.27's print (legacy user spellings excluded)."""
    corpus = [p for p in sorted(CORPUS.glob("*.tvmscript")) if not p.name.startswith("legacy_")]
    reprints = sorted(CORPUS.glob("legacy_*.reprint.tvmscript"))
    return corpus + reprints + sorted(SAMPLES.glob("*.relax"))


def all_inputs() -> list[pathlib.Path]:
    return sorted(CORPUS.glob("*.tvmscript")) + sorted(SAMPLES.glob("*.relax"))


def file_id(path: pathlib.Path) -> str:
    return f"{path.parent.name}/{path.name}"


def is_bare_function(text: str) -> bool:
    """TVM prints a lone PrimFunc or Function without the module around it."""
    return "@I.ir_module" not in text


def print_like_source(module, text: str) -> str:
    """Prints `module` the way the source was printed: a module, or its one function."""
    from relax.script import script

    if is_bare_function(text) and len(module.functions) == 1:
        return script(next(iter(module.functions.values())))
    return script(module)
