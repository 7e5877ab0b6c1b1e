"""bench/vm_call.py's "kernels alone" figure runs the kernels a call of the sample runs."""

import pathlib

from relax.build import build
from relax.driver.compile import parse_source
from relax.vm.bytecode.isa import FuncKind

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_kernels_alone_are_those_the_sample_calls(bench_script):
    vm_call = bench_script("vm_call")

    exe = build(parse_source(str(ROOT / "samples" / "mlp.relax")), "llvm", 2)
    library = exe.imports[0]
    kernels = sorted(info.name for info in exe.func_table
                     if info.kind == FuncKind.PACKED_FUNC and library.get_function(info.name) is not None)
    assert len(kernels) >= 3  # the three layers' products, at least
    for mode in ("interp", "compiled"):
        calls = vm_call.kernel_calls(vm_call.make_vm(exe, mode))
        assert sorted(function.kernel.name for function, _ in calls) == kernels, mode
        for function, arrays in calls:
            assert [a.shape for a in arrays] == [tuple(p.shape) for p in function.kernel.info.params]
