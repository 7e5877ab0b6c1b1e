"""R.call_py_func: the operator (TVM 0.27's spellings and inference), its VM lowering in
both exec modes, the Python functions a .vmo embeds (format 0.2), and how a VM binds
them: registered by name (plugins), embedded source only when allowed, refused otherwise."""

import hashlib

import numpy as np
import pytest

import relax
from relax import script
from relax.build import build
from relax.diagnostics import DiagnosticError, UserError
from relax.ir import expr as rx
from relax.runtime import register_func, remove_global_func
from relax.vm.artifact import signing
from relax.vm.bytecode import vmo
from relax.vm.codegen.assembler import assemble
from relax.vm.machine.py_functions import UnboundPythonFunction
from relaxrun.cli import main as relaxrun

TEXT = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        y = R.add(x, x)
        gv = R.call_py_func("py_relu", y, out_ty=R.Tensor((2, 3), dtype="float32"))
        return R.multiply(gv, x)
'''
SOURCE = "@I.py_func\ndef py_relu(self, x):\n    return np.maximum(x, 0) + self.py_one()\n"
HELPER = "@I.py_func\ndef py_one(self):\n    return np.float32(1)\n"
X = np.array([[1, -2, 3], [-4, 5, -6]], "float32")


def expected(one=1.0):
    return ((np.maximum(2 * X, 0) + one) * X).astype("float32")


@pytest.fixture(scope="module")
def exe():
    mod = script.parse(TEXT, "py.relax")
    mod = mod.with_function("py_relu", rx.PyFunction("py_relu", SOURCE))
    return build(mod.with_function("py_one", rx.PyFunction("py_one", HELPER)), "llvm")


def _normalized(text):
    from relax.transform.normalize import Normalize

    return Normalize()(script.parse(text))


def test_the_three_spellings_parse_to_one_call_and_print_as_tvm():
    calls = ['R.call_py_func("f", x, out_ty=R.Tensor((2, 3), dtype="float32"))',
             'R.call_py_func(cls.f, (x,), out_sinfo=R.Tensor((2, 3), dtype="float32"))',
             'R.call_py_func(R.str("f"), (x,), ty_args=(R.Tensor((2, 3), dtype="float32"),))']
    printed = set()
    for call in calls:
        mod = _normalized(TEXT.replace('R.call_py_func("py_relu", y, out_ty=R.Tensor((2, 3), dtype="float32"))', call))
        printed.add(script.script(mod))
    (text,) = printed
    assert ('gv: R.Tensor((2, 3), dtype="float32") = R.call_py_func(R.str("f"), (x,), '
            'ty_args=(R.Tensor((2, 3), dtype="float32"),))') in text
    assert script.script(script.parse(text)) == text


def test_a_list_of_outputs_is_a_tuple_and_outputs_need_a_shape():
    two = TEXT.replace('out_ty=R.Tensor((2, 3), dtype="float32"))\n        return R.multiply(gv, x)',
                       'out_ty=[R.Tensor((2, 3), dtype="float32"), R.Tensor((3,), dtype="int32")])\n        return gv')
    two = two.replace(') -> R.Tensor((2, 3), dtype="float32"):', '):')
    assert "R.Tuple(R.Tensor((2, 3), dtype=\"float32\"), R.Tensor((3,), dtype=\"int32\"))" in script.script(_normalized(two))
    with pytest.raises(DiagnosticError, match="known shape"):
        _normalized(TEXT.replace('out_ty=R.Tensor((2, 3), dtype="float32")', 'out_ty=R.Tensor(dtype="float32", ndim=2)'))


def test_lowered_as_tvm_and_embedded(exe):
    text = exe.as_text()
    assert "call  vm.builtin.call_py_func in: %" in text
    assert ".py_functions\n  @py_one source=" in text and "  @py_relu called source=" in text
    data = exe.save_to_bytes()
    assert vmo.PY_VERSION.encode() in data[:24]
    assert assemble(text).save_to_bytes() == data  # the listing assembles back byte for byte
    loaded = relax.vm.Executable.load_from_bytes(data)
    assert {e.name: (e.called, e.source) for e in loaded.py_functions} == {
        "py_one": (False, HELPER), "py_relu": (True, SOURCE)}


def test_refused_before_running_without_a_binding(exe):
    with pytest.raises(UnboundPythonFunction, match=r"Python function 'py_relu' .*--plugin.*--allow-python"):
        relax.VirtualMachine(exe, "cpu")


@pytest.mark.parametrize("mode", ["interp", "compiled"])
def test_embedded_source_runs_when_allowed(exe, mode):
    vm = relax.VirtualMachine(exe, "cpu", exec_mode=mode, allow_python=True)
    np.testing.assert_allclose(vm["main"](X), expected(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["interp", "compiled"])
def test_registered_function_binds_first(exe, mode):
    register_func("py_relu", lambda x: np.maximum(x, 0) + np.float32(2), override=True)
    try:
        vm = relax.VirtualMachine(exe, "cpu", exec_mode=mode, allow_python=True)
        np.testing.assert_allclose(vm["main"](X), expected(2.0), rtol=1e-6)
    finally:
        remove_global_func("py_relu")
    vm = relax.VirtualMachine(exe, "cpu", py_functions={"py_relu": lambda x: x})  # BasePyModule's seam
    np.testing.assert_allclose(vm["main"](X), 2 * X * X, rtol=1e-6)


@pytest.fixture(scope="module")
def files(exe, tmp_path_factory):
    root = tmp_path_factory.mktemp("py_func")
    exe.export(str(root / "m.vmx"))
    (root / "plugin.py").write_text("import numpy as np\nfrom relax.runtime import register_func\n\n\n"
                                    "@register_func(\"py_relu\", override=True)\ndef py_relu(x):\n    return np.maximum(x, 0) * 0\n")
    return root


def test_relax_load_takes_allow_python_and_plugins(files):
    vm = relax.VirtualMachine(relax.load(str(files / "m.vmx"), allow_python=True))
    np.testing.assert_allclose(vm["main"](X), expected(), rtol=1e-6)
    try:
        vm = relax.VirtualMachine(relax.load(str(files / "m.vmx"), plugins=[str(files / "plugin.py")]))
        np.testing.assert_allclose(vm["main"](X), np.zeros_like(X))
    finally:
        remove_global_func("py_relu")
    with pytest.raises(UserError, match="py_relu"):
        relax.VirtualMachine(relax.load(str(files / "m.vmx")))


def test_relaxrun_plugin_allow_python_and_refusal(files, capsys):
    artifact = [str(files / "m.vmx"), "--input", "2x3xf32=1,-2,3,-4,5,-6"]
    assert relaxrun(artifact) == 1
    err = capsys.readouterr().err
    assert "m.vmx': the executable calls the Python function 'py_relu'" in err and "--allow-python" in err
    assert relaxrun(artifact + ["--allow-python"]) == 0
    assert "[[3 -2 21] [-4 55 -6]]" in capsys.readouterr().out.replace("  ", " ")
    try:
        assert relaxrun(artifact + ["--plugin", str(files / "plugin.py")]) == 0
    finally:
        remove_global_func("py_relu")


def test_the_signature_covers_the_embedded_source(files, tmp_path):
    from relax.vm.artifact import vmx

    key = signing.generate_key(str(tmp_path / "key.pem"))
    blob = bytearray(vmx.sign((files / "m.vmx").read_bytes(), key))
    at = bytes(blob).index(b"np.maximum(x, 0)")
    blob[at + 3] ^= 1  # np.maximum -> np.laximum, behind a recomputed checksum
    blob[24:56] = hashlib.sha256(bytes(blob[56:])).digest()
    (tmp_path / "t.vmx").write_bytes(bytes(blob))
    with pytest.raises(UserError, match="bad signature"):
        relax.load(str(tmp_path / "t.vmx"), trust=[str(tmp_path / "key.pem.pub")], allow_python=True)
