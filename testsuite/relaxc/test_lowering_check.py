"""relaxc's one-shot reads its lowered module back from memory (driver/artifact.py) after
--passes, or when a kernel printed under other names must be read back: what goes wrong there
is not at a line of the user's file (driver/lowering_check.py). After the default pipeline it
is the toolchain's fault, an internal error (exit 70) that says how to see the module; after
--passes the diagnostics stay, with a note saying where they point. When every kernel comes
from memory after the default pipeline, the text is not read back at all."""

from __future__ import annotations

import dataclasses
import pathlib

import relax.script
from relaxc.cli import main

IDENTITY = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x
"""


# Printed, the kernel's inner loop variable is i_1: the one-shot reads that kernel back.
SHADOWED = """\
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def shadowed(A: T.Buffer((2, 2), "float32"), B: T.Buffer((2, 2), "float32")):
        for i in range(2):
            for i in range(2):
                B[i, i] = A[i, i]

    @R.function
    def main(x: R.Tensor((2, 2), "float32")) -> R.Tensor((2, 2), "float32"):
        cls = Module
        y = R.call_tir(cls.shadowed, (x,), out_sinfo=R.Tensor((2, 2), "float32"))
        return y
"""


def _broken_printer(monkeypatch, returned: str = "x"):
    """A printer that writes a use of an undefined name, as a printer bug would."""
    original = relax.script.script
    monkeypatch.setattr(relax.script, "script",
                        lambda mod, *printed: original(mod, *printed).replace(f"return {returned}", "return q"))


def test_unreadable_lowered_module_is_an_internal_error(tmp_path, monkeypatch, capsys):
    source = tmp_path / "identity.relax"
    source.write_text(SHADOWED)
    _broken_printer(monkeypatch, "alloc")
    assert main([str(source), "-o", str(tmp_path / "identity.vmx")]) == 70
    err = capsys.readouterr().err
    assert err.startswith("relaxc: internal error: RuntimeError: the lowered module does not assemble"
                          " (identity.vms:")
    assert "undefined variable 'q'" in err and "`relaxc -S` writes it as identity.vms" in err
    assert not pathlib.Path(tmp_path / "identity.vmx").exists()


def test_with_every_kernel_from_memory_the_text_is_not_read_back(tmp_path, monkeypatch):
    source = tmp_path / "identity.relax"
    source.write_text(IDENTITY)
    assert main([str(source), "-o", str(tmp_path / "identity.vmx")]) == 0
    _broken_printer(monkeypatch)
    assert main([str(source), "-o", str(tmp_path / "unread.vmx")]) == 0
    assert (tmp_path / "unread.vmx").read_bytes() == (tmp_path / "identity.vmx").read_bytes()


def test_after_passes_the_lowered_module_errors_are_the_users(tmp_path, monkeypatch, capsys):
    source = tmp_path / "identity.relax"
    source.write_text(IDENTITY)
    _broken_printer(monkeypatch)
    passes = "normalize,to-non-dataflow,call-tir-rewrite,vm-builtin-lower,vm-shape-lower"
    assert main([str(source), "--passes", passes, "-o", str(tmp_path / "identity.vmx")]) == 1
    err = capsys.readouterr().err
    assert "identity.vms:" in err and "error: undefined variable 'q'" in err
    assert "relaxc: note: identity.vms is the module after the passes run" in err


SCALE = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), w: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        @R.function
        def scale(y: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            z = R.multiply(y, w)
            return z

        a = scale(x)
        return a
"""


def test_an_operator_left_unlegalized_in_a_legal_program_is_an_internal_error(tmp_path, monkeypatch, capsys):
    """legalize-ops had the shape and dtype of every operand and still left R.multiply:
    relaxc's bug (exit 70), not a located error in the user's file or in the .vms."""
    from relax.op import registry

    original = registry.get

    def without_multiply_kernel(name):
        op = original(name)
        return dataclasses.replace(op, legalize=lambda call, context: None) if name == "relax.multiply" else op

    monkeypatch.setattr(registry, "get", without_multiply_kernel)
    source = tmp_path / "scale.relax"
    source.write_text(SCALE)
    assert main([str(source), "-o", str(tmp_path / "scale.vmx")]) == 70
    err = capsys.readouterr().err
    assert err.startswith("relaxc: internal error: RuntimeError: the pipeline left a call it cannot lower"
                          f" in a legal program ({source}:10:17: legalize-ops left R.multiply for these operands"
                          ' (R.Tensor((2,), dtype="float32"), R.Tensor((2,), dtype="float32")))')
    assert "please report" in err and ".vms" not in err


def test_a_call_a_pass_made_and_left_is_an_internal_error(tmp_path, monkeypatch, capsys):
    """LambdaLift makes R.invoke_pure_closure at the user's `scale(x)`: if nothing lowered
    it, the user did not write it, so it is no error of theirs."""
    from relax.transform import vm_builtin_lower

    original = vm_builtin_lower._Lowerer.call

    def without_closures(self, binding, call):
        return None if call.op.name == "relax.invoke_pure_closure" else original(self, binding, call)

    monkeypatch.setattr(vm_builtin_lower._Lowerer, "call", without_closures)
    source = tmp_path / "scale.relax"
    source.write_text(SCALE)
    assert main([str(source), "-o", str(tmp_path / "scale.vmx")]) == 70
    err = capsys.readouterr().err
    assert f"({source}:13:13: R.invoke_pure_closure is not supported by relaxc" in err
