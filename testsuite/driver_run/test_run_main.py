"""relaxrun end to end on executables built in process (relax.build), through relaxrun's main()."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import relax.driver.run as run
from relax.build import build
from relax.script import parse
from relaxrun.cli import main

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"

PLUGIN = '''
from relax.runtime import register_func
register_func("samples.scale_by_two", lambda x: 2 * x, override=True)
def add_one(x, out):
    out[...] = x + 1
register_func("samples.add_one_dps", add_one, override=True)
'''


@pytest.fixture(scope="module")
def built():
    cache = {}

    def get(name):
        if name not in cache:
            path = SAMPLES / f"{name}.relax"
            cache[name] = build(parse(path.read_text(), f"samples/{name}.relax"))
        return cache[name]

    return get


@pytest.fixture
def relaxrun(built, monkeypatch, capsys):
    def invoke(name, *args):
        monkeypatch.setattr(run, "load_artifact", lambda path, trust=(): built(name))
        code = main([f"{name}.vmx", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def data(name, kind):
    return f"@{SAMPLES / 'data' / f'{name}.{kind}.npz'}"


@pytest.mark.parametrize("name", ["tuples", "control_flow", "dynamic_batch", "scalars"])
def test_samples_match_expected(relaxrun, name):
    code, out, err = relaxrun(name, "--input", data(name, "inputs"), "--expected-output", data(name, "expected"))
    assert (code, out, err) == (0, "[SUCCESS]\n", "")


def test_mismatch_exits_3(relaxrun, tmp_path):
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.full((3, 4), 1.5, np.float32))
    code, out, _ = relaxrun("tuples", "--input", "3x4xf32=1", "--input", "3x4xf32=2",
                            "--expected-output", "3xf32=0", "--expected-output", "3x2xf32=4",
                            "--expected-output", str(wrong))
    assert code == 3
    assert out.startswith("[FAILED] result[2]: 12 of 12 elements differ; first at [0, 0]: got 1.0, expected 1.5; "
                          "max abs error 0.5, max rel error 0.333333")


def test_text_results_and_output_files(relaxrun, tmp_path):
    code, out, _ = relaxrun("tuples", "--input", "3x4xf32=1", "--input", "y=3x4xf32=2")
    assert code == 0
    assert out == ("result[0]: 3xf32=[0 0 0]\nresult[1]: 3x2xf32=[[4 4] [4 4] [4 4]]\n"
                   "result[2]: 3x4xf32=[[1 1 1 1] [1 1 1 1] [1 1 1 1]]\n")
    code, out, _ = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32", "--output-dir", str(tmp_path))
    assert (code, out) == (0, "") and sorted(p.name for p in tmp_path.iterdir()) == ["00.npy", "01.npy", "02.npy"]
    files = [str(tmp_path / f"r{i}.npy") for i in range(3)]
    code, _, _ = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32",
                          *[arg for f in files for arg in ("--output", f)])
    assert code == 0 and np.load(files[1]).shape == (3, 2)
    code, _, err = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32", "--output", files[0])
    assert code == 1 and "1 --output option(s) for 3 result(s)" in err


def test_json_time_and_profile(relaxrun):
    code, out, err = relaxrun("tuples", "--input", "3x4xf32=1", "--input", "3x4xf32=2", "--json",
                              "--repeat", "3", "--warmup", "1", "--print-time", "--profile")
    document = json.loads(out)
    assert code == 0 and err == ""
    assert document["results"][1] == {"index": 1, "type": "3x2xf32", "dtype": "float32", "shape": [3, 2],
                                      "values": [[4.0, 4.0]] * 3}
    assert document["time_ms"]["runs"] == 3 and document["time_ms"]["min"] <= document["time_ms"]["max"]
    names = {row["name"] for row in document["profile"]}
    assert {"stats", "vm.builtin.make_tuple"} <= names


def test_print_time_and_profile_go_to_stderr(relaxrun):
    code, out, err = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32", "--repeat", "5",
                              "--print-time", "--profile", "--output", "-")
    assert code == 0 and out.startswith("result[0]: 3xf32=[0 0 0]\n")
    assert "relaxrun: time: main: min " in err and "(5 runs)" in err
    assert "Name" in err and "Calls" in err and "stats" in err and "Percent" in err


def test_input_checked_before_running(relaxrun):
    code, out, err = relaxrun("dynamic_batch", "--input", "2x784xf32", "--input", "32x784xf32",
                              "--input", "32xf32", "--input", "10x32xf32", "--input", "p_fc2_bias=9xf32")
    assert code == 1 and out == ""
    assert err == ("relaxrun: error: function 'main', parameter 'p_fc2_bias': expected "
                   "R.Tensor((10,), dtype=\"float32\"), got 9xf32 from --input p_fc2_bias=9xf32: "
                   "shape[0] is 9, expected 10\n")


def test_list_functions_and_unknown_function(relaxrun):
    code, out, _ = relaxrun("control_flow", "--list-functions")
    assert code == 0 and 'power(x: R.Tensor((4,), dtype="float32"), k: R.Tensor((), dtype="int32")) -> ' in out
    code, out, _ = relaxrun("control_flow", "--func", "factorial", "--input", "i32=5")
    assert (code, out) == (0, "result[0]: i32=120\n")
    code, _, err = relaxrun("control_flow", "--func", "nope")
    assert code == 1 and "has no function 'nope' (functions: factorial, power, main" in err


def test_plugin_trace_and_runtime_backtrace(relaxrun, tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN)
    code, out, err = relaxrun("packed_call", "--plugin", str(plugin), "--input", "2x3xf32=1,2,3,4,5,6", "--trace")
    assert code == 0 and out == "result[0]: 2x3xf32=[[4 7 10] [13 16 19]]\n"
    assert "[trace] main+0003  call  samples.scale_by_two in: %0" in err and "samples/packed_call.relax:9:13" in err
    last = err.splitlines()[-1]
    assert last.startswith("[trace] main+00") and "  ret   %" in last
    broken = tmp_path / "broken.py"
    broken.write_text(PLUGIN + "\ndef boom(x):\n    raise ValueError('exploded')\n"
                      "register_func('samples.scale_by_two', boom, override=True)\n")
    for extra in ((), ("--trace",)):
        code, out, err = relaxrun("packed_call", "--plugin", str(broken), "--input", "2x3xf32=1", *extra)
        assert code == 1 and "Traceback" not in err
        assert err.endswith("relaxrun: error: ValueError: exploded\nVM backtrace (outermost first):\n"
                            "  [0] main+0003  samples/packed_call.relax:9:13\n")


def test_missing_functions_are_refused_before_running(relaxrun):
    from relax.runtime import remove_global_func

    remove_global_func("samples.scale_by_two")
    remove_global_func("samples.add_one_dps")
    code, _, err = relaxrun("packed_call", "--input", "2x3xf32=1")
    assert code == 1 and "'samples.scale_by_two', 'samples.add_one_dps'" in err and "--plugin" in err


def test_usage_errors_and_devices(relaxrun):
    assert relaxrun("tuples", "--repeat", "0")[0] == 2
    assert relaxrun("tuples", "--memory", "fancy")[0] == 2
    code, _, err = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32", "--device", "tpu")
    assert code == 1 and "unknown device 'tpu'" in err
    code, _, err = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32", "--device", "cuda:1")
    assert code == 1 and "cuda:1" in err
    code, out, _ = relaxrun("tuples", "--input", "3x4xf32", "--input", "3x4xf32", "--memory", "naive")
    assert code == 0 and out.count("result[") == 3


def test_runner_imports_only_the_runtime(tmp_path):
    """After loading, checking, running, tracing and profiling a .vmx, no compiler module is loaded."""
    vmx = tmp_path / "tuples.vmx"
    subprocess.run([sys.executable, "-m", "relaxc", str(SAMPLES / "tuples.relax"), "-o", str(vmx)], check=True)
    code = ("import sys\nfrom relaxrun.cli import main\n"
            f"args = [{str(vmx)!r}, '--input', '3x4xf32', '--input', '3x4xf32', '--profile', '--output-dir', "
            f"{str(tmp_path / 'out')!r}]\n"
            "assert main(args) == 0 and main(args + ['--trace']) == 0\n"
            "compiler = ('ir', 'script', 'transform', 'op', 'tir', 'codegen', 'target', 'build',\n"
            "            'vm.codegen', 'vm.artifact.linker', 'driver.compile', 'driver.artifact',\n"
            "            'driver.assemble', 'driver.bytecode', 'driver.link')\n"
            "bad = [m for m in sys.modules if m.startswith('relax.') and any(\n"
            "       m[len('relax.'):] == p or m[len('relax.'):].startswith(p + '.') for p in compiler)]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
