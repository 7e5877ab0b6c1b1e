"""exec_mode="compiled", native tier: a static function as one native call (vm/machine/native_mode.py,
runtime/kernels/host_function.py) against the interpreter and the Python compiled code."""

import ctypes
import pathlib
import threading

import numpy as np
import pytest

from relax import script
from relax.build import build
from relax.runtime.kernels.host_function import CallLayout, HostFunction, host_function_ir
from relax.driver.compile import parse_source
from relax.runtime import VMError
from relax.runtime.kernels import abi
from relax.vm import VirtualMachine
from relax.vm.machine.native_mode import NativeFunction, why_not_native
from sample_names import WORKER_SAMPLES

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
CHAIN = pathlib.Path(__file__).resolve().parents[3] / "shared" / "bench" / "chain200.relax"

ADDS = """
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 5), dtype="float32"), y: R.Tensor((5,), dtype="float32")):
        with R.dataflow():
{body}
            R.output({last})
        return {result}
"""


def chain_module(length: int, result=None):
    lines, previous = [], "x"
    for index in range(length):
        lines.append(f"            v{index}: R.Tensor((3, 5), dtype=\"float32\") = R.add({previous}, y)")
        previous = f"v{index}"
    return script.parse(ADDS.format(body="\n".join(lines), last=previous, result=result or previous))


def chain_reference(x, y, length):
    out = x
    for _ in range(length):
        out = out + y
    return out


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_a_chain_of_kernels_runs_as_one_native_call(opt_level):
    exe = build(chain_module(40), "llvm", opt_level)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    assert vm.native_functions == ["main"]
    native = vm._compiled[vm._function("main").index]
    assert isinstance(native, NativeFunction)
    assert native.kernel_calls == (40 if opt_level == 0 else 1)
    x, y = inputs()
    got = vm["main"](x, y)
    np.testing.assert_allclose(got, chain_reference(x, y, 40), rtol=1e-5)
    np.testing.assert_array_equal(got, VirtualMachine(exe, "cpu")["main"](x, y))


def test_the_shared_chain_benchmark_is_native_at_o0():
    if not CHAIN.exists():
        pytest.skip("shared/bench is not beside the checkout")
    exe = build(parse_source(str(CHAIN)), "llvm", 0)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    assert vm.native_functions == ["main"]
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x), x * 201)


def test_a_held_result_is_never_overwritten_and_a_dropped_one_is_reused():
    exe = build(chain_module(3), "llvm", 0)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    x, y = inputs()
    first = vm["main"](x, y)
    kept = first.copy()
    second = vm["main"](x + 1, y)
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_allclose(second, chain_reference(x + 1, y, 3), rtol=1e-6)
    assert not np.shares_memory(first, second)
    address = second.ctypes.data
    del second
    third = vm["main"](x, y)
    assert third.ctypes.data == address  # the storage came back to the site
    np.testing.assert_array_equal(third, kept)


def test_a_result_passed_back_as_input_is_not_clobbered():
    exe = build(chain_module(2), "llvm", 0)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    x, y = inputs()
    once = vm["main"](x, y)
    twice = vm["main"](once, y)
    np.testing.assert_allclose(twice, chain_reference(x, y, 4), rtol=1e-6)


@pytest.mark.parametrize("make_bad", [
    lambda x: x[:, :4].copy(),                   # wrong shape
    lambda x: x.astype(np.float64),              # wrong dtype
    lambda x: x.reshape(5, 3),                   # same size, other shape
    lambda x: np.asfortranarray(x),              # not C-contiguous: the kernel's own check
    lambda x: [[1.0] * 5] * 3,                   # not a tensor
])
def test_bad_inputs_fail_exactly_as_in_the_interpreter(make_bad):
    exe = build(chain_module(3), "llvm", 0)
    x, y = inputs()
    bad = make_bad(x)
    outcomes = []
    for mode in ("interp", "compiled"):
        vm = VirtualMachine(exe, "cpu", exec_mode=mode)
        try:
            outcomes.append(("ok", np.asarray(vm["main"](bad, y)).tolist()))
        except VMError as error:
            outcomes.append(("error", str(error), [(f.function, f.pc) for f in error.backtrace]))
    assert outcomes[0] == outcomes[1]


def test_arrays_the_plan_takes_go_straight_to_the_native_call():
    """vm["main"] hands such arrays to the native call as they are; other arguments, keywords
    and an instrument set after the lookup take the whole path (binding, _execute)."""
    exe = build(chain_module(3), "llvm", 0)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    main = vm["main"]
    executed = []
    whole = vm._execute
    vm._execute = lambda function, args: executed.append(function.name) or whole(function, args)
    x, y = inputs()
    want = chain_reference(x, y, 3)
    np.testing.assert_allclose(main(x, y), want, rtol=1e-6)
    assert executed == []
    strided = np.zeros((3, 10), np.float32)[:, ::2]
    strided[...] = x
    np.testing.assert_allclose(main(strided, y), want, rtol=1e-6)  # made contiguous by the binding
    np.testing.assert_allclose(main(np.asfortranarray(x), y), want, rtol=1e-6)
    np.testing.assert_allclose(main(x=x, y=y), want, rtol=1e-6)
    assert executed == ["main"] * 3
    calls = []
    vm.set_instrument(lambda func, name, before, ret, *args: calls.append(name))
    np.testing.assert_allclose(main(x, y), want, rtol=1e-6)
    assert calls and executed == ["main"] * 4


def test_python_threads_sharing_one_vm_get_their_own_results():
    exe = build(chain_module(5), "llvm", 0)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    main = vm["main"]
    failures = []

    def work(seed):
        x, y = inputs(seed)
        want = chain_reference(x, y, 5)
        for _ in range(300):
            got = main(x, y)
            if not np.allclose(got, want, rtol=1e-5):
                failures.append(seed)
                return

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_tuple_results_and_every_eligible_sample_match_the_python_path():
    seen = set()
    for path in sorted(SAMPLES.glob("*.relax")):
        if not (SAMPLES / "data" / f"{path.stem}.inputs.npz").exists():
            continue  # py_func.relax: main is a Python function, run just in time
        if path.stem in WORKER_SAMPLES:
            continue  # written for several workers: testsuite/disco runs it
        mod = parse_source(str(path))
        data = np.load(SAMPLES / "data" / f"{path.stem}.inputs.npz")
        args = [data[p.name_hint] for p in mod["main"].params]
        exe = build(mod, "llvm", 2)
        native = VirtualMachine(exe, "cpu", exec_mode="compiled")
        python = VirtualMachine(exe, "cpu", exec_mode="compiled", native=False)
        assert python.native_functions == []
        if "main" not in native.native_functions:
            assert why_not_native(native, native._function("main"))
            continue
        seen.add(path.stem)
        want = python["main"](*args)
        for _ in range(2):
            got = native["main"](*args)
            assert type(got) is type(want)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)
    assert {"mlp", "cnn", "transformer", "elementwise"} <= seen  # mlp, cnn, transformer return tuples


@pytest.mark.parametrize("name, reason", [
    ("control_flow", "not a CPU kernel"),
    ("dynamic_batch", "not a CPU kernel"),
])
def test_ineligible_functions_keep_their_python_code(name, reason):
    exe = build(parse_source(str(SAMPLES / f"{name}.relax")), "llvm", 2)
    vm = VirtualMachine(exe, "cpu", exec_mode="compiled")
    assert "main" not in vm.native_functions
    assert reason in why_not_native(vm, vm._function("main"))


def test_the_interpreter_and_other_memory_kinds_never_go_native():
    exe = build(chain_module(2), "llvm", 0)
    assert VirtualMachine(exe, "cpu", exec_mode="interp").native_functions == []
    assert VirtualMachine(exe, "cpu", memory="naive", exec_mode="compiled").native_functions == []


# ---- the host function itself, with ctypes callbacks standing in for kernels ----------------

def run_host(codes, copies_per_call=1):
    """Builds relax_host for len(codes) calls whose kernels record (call, argument) and return codes."""
    seen = []
    callbacks = []
    for number, code in enumerate(codes):
        def kernel(args, scalars, ctx, number=number, code=code):
            seen.append((number, args[0], ctx[0].num_threads))
            return code
        callbacks.append(abi.KERNEL_CFUNCTYPE(kernel))
    layouts, words = [], 1
    for number in range(len(codes)):
        layouts.append(CallLayout(words, words + 3, tuple((p, p) for p in range(copies_per_call))))
        words += 3 + copies_per_call
    host = HostFunction(host_function_ir(tuple(layouts)))
    context = abi.KernelContext(abi_version=abi.KERNEL_ABI_VERSION, num_threads=3)
    frame = (ctypes.c_int64 * words)()
    for layout, callback in zip(layouts, callbacks):
        frame[layout.header] = ctypes.cast(callback, ctypes.c_void_p).value
        frame[layout.header + 1] = ctypes.addressof(context)
        frame[layout.header + 2] = ctypes.addressof(frame)
    slots = (ctypes.c_void_p * max(1, copies_per_call))(*[1000 + p for p in range(copies_per_call)])
    returned = host.call(ctypes.addressof(slots), ctypes.addressof(frame))
    return returned, seen


def test_the_host_function_calls_every_kernel_in_order_with_its_slots():
    returned, seen = run_host([0, 0, 0, 0], copies_per_call=2)
    assert returned == 0
    assert seen == [(n, 1000, 3) for n in range(4)]


def test_the_host_function_stops_at_the_first_failing_kernel():
    returned, seen = run_host([0, 0, abi.ASSERTION_FAILED, 0])
    assert returned == 3
    assert [n for n, _, _ in seen] == [0, 1, 2]


def test_a_function_without_kernels_still_compiles():
    assert "ret i32 0" in host_function_ir(())
    assert HostFunction(host_function_ir(())).call(0, 0) == 0


# ---- the exec mode an artifact asks for ----------------------------------------------------

def linked_artifact(tmp_path, exec_mode):
    from relax.vm.artifact.linker import LinkInput, link

    exe = build(chain_module(2), "llvm", 0)
    result = link(LinkInput("m.vmo", exe.save_to_bytes()), [LinkInput("m.ko", exe.kernel_objects[0])],
                  exec_mode=exec_mode)
    path = tmp_path / f"m_{exec_mode}.vmx"
    path.write_bytes(result.data)
    return str(path), result.data


@pytest.mark.parametrize("asked, default", [("compiled", "compiled"), ("interp", "interp"), (None, "compiled")])
def test_a_vm_runs_in_the_mode_the_artifact_asks_for_unless_told(tmp_path, asked, default):
    from relax.vm.bytecode.loader import load

    path, _ = linked_artifact(tmp_path, asked)
    exe = load(path)
    assert VirtualMachine(exe, "cpu").exec_mode == default
    assert VirtualMachine(exe, "cpu", exec_mode="interp").exec_mode == "interp"
    assert VirtualMachine(exe, "cpu", exec_mode="compiled").native_functions == ["main"]


def test_an_unknown_recorded_exec_mode_is_refused(tmp_path):
    from relax.vm.artifact import vmx

    _, data = linked_artifact(tmp_path, "compiled")
    artifact = vmx.read(data)
    flags = dict(artifact.info.flags, exec_mode="turbo")
    forged = vmx.write(vmx.Artifact(vmx.LinkInfo(artifact.info.producer, flags, artifact.info.inputs,
                                                 artifact.info.targets, artifact.info.symbols),
                                    artifact.bytecode, artifact.kernel_objects))
    with pytest.raises(Exception, match="exec_mode"):
        vmx.read(forged)
