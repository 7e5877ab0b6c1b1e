"""relax.vm.artifact.kernel_calls: what the bytecode knows of a kernel call's arguments, and
which calls a kernel's metadata refuses (no kernel is compiled: metadata and bytecode only)."""

import numpy as np

from relax.runtime.dtype import DataType
from relax.runtime.kernels import container
from relax.runtime.kernels.metadata import KernelInfo
from relax.vm import ExecBuilder
from relax.vm.artifact.kernel_calls import check_kernel_calls


def _kernel(name: str, *params, ret_dtype: str = "") -> KernelInfo:
    """params: ("A", "float32", ["n"]) for a buffer, ("alpha", "float32") for a scalar."""
    return KernelInfo.from_json({
        "name": name, "symbol": "relaxk_" + name, "abi_version": 1, "ret_dtype": ret_dtype,
        "params": [{"name": p[0], "kind": "buffer", "dtype": p[1], "shape": p[2]} if len(p) == 3
                   else {"name": p[0], "kind": "scalar", "dtype": p[1]} for p in params]})


def _problems(exe, *kernels) -> list[str]:
    kernel_object = container.KernelObject((), tuple(kernels), {}, {})
    return check_kernel_calls(exe, "m.vmo", [("k.ko", kernel_object)])


SCALE = _kernel("scale", ("A", "float32", ["n"]), ("alpha", "float32"), ("k", "int64"), ("B", "float32", ["n"]))


def _alloc(ib, dst: int, shape, dtype="float32"):
    ib.emit_call("vm.builtin.alloc_storage", args=[ib.r("vm"), (64,), ib.imm(0), DataType.parse("uint8"), "global"],
                 dst=ib.r(dst))
    ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(dst), ib.imm(0), tuple(shape), DataType.parse(dtype)],
                 dst=ib.r(dst + 1))


def test_what_the_bytecode_knows_is_compared_and_a_fitting_call_passes():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        _alloc(ib, 1, (8,))
        ib.emit_call("scale", args=[ib.r(0), 0.5, ib.imm(3), ib.r(2)], dst=ib.r(3))  # x unknown: fits
        ib.emit_call("scale", args=[ib.r(2), ib.imm(2), ib.imm(3), ib.r(2)], dst=ib.r(3))  # an int for a float: fits
        ib.emit_call("scale", args=[np.zeros(8, np.float32), 0.5, 2.5, ib.r(2)], dst=ib.r(3))
        ib.emit_call("scale", args=[ib.imm(1), 0.5, ib.imm(3), ib.r(2)], dst=ib.r(3))
        _alloc(ib, 4, (4,))
        ib.emit_call("scale", args=[ib.r(5), 0.5, ib.imm(3), ib.r(2)], dst=ib.r(3))
        _alloc(ib, 6, (8,), "float64")
        ib.emit_call("scale", args=[ib.r(7), 0.5, ib.imm(3), ib.r(2)], dst=ib.r(3))
        ib.emit_ret(ib.r(2))
    problems = _problems(ib.get(), SCALE)
    defines = "'k.ko' defines scale(A: float32[n], alpha: float32, k: int64, B: float32[n])"
    assert problems == [
        f"'m.vmo' calls kernel 'scale' in function 'main' (main+0004) as scale(float32[8], float 0.5, float 2.5, "
        f"float32[8]); {defines}: argument 3 is a float scalar, parameter 'k' is int64 scalar",
        f"'m.vmo' calls kernel 'scale' in function 'main' (main+0005) as scale(int 1, float 0.5, int 3, "
        f"float32[8]); {defines}: argument 1 is an int scalar, parameter 'A' is float32[n]",
        f"'m.vmo' calls kernel 'scale' in function 'main' (main+0008) as scale(float32[4], float 0.5, int 3, "
        f"float32[8]); {defines}: argument 4 has dimension 0 of 8, parameter 'B' needs n = 4",
        f"'m.vmo' calls kernel 'scale' in function 'main' (main+0011) as scale(float64[8], float 0.5, int 3, "
        f"float32[8]); {defines}: argument 1 is a float64 tensor of rank 1, parameter 'A' is float32[n]",
    ]


def test_a_register_redefined_on_two_paths_is_unknown_after_they_join():
    """After a jump target a register set on both branches is not assumed to hold either value."""
    ib = ExecBuilder()
    with ib.function("main", num_inputs=2, param_names=["cond", "x"]):
        ib.emit_if(ib.r(0), 3)
        _alloc(ib, 2, (4,))           # pc 1, 2
        ib.emit_goto(3)               # pc 3: to the join at 6
        _alloc(ib, 2, (8,))           # pc 4, 5
        ib.emit_call("add", args=[ib.r(3), ib.r(3), ib.r(3)], dst=ib.r(4))  # pc 6: %3 is 4 or 8 long
        ib.emit_ret(ib.r(3))
    add = _kernel("add", ("A", "float32", [8]), ("B", "float32", [8]), ("C", "float32", [8]))
    assert _problems(ib.get(), add) == []


def test_a_parameter_is_known_by_its_signature_record_and_the_count_is_always_checked():
    from relax.vm.bytecode.signature import encode

    tensor = {"kind": "tensor", "dtype": "int32", "shape": [2, "n"]}
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.convert_constant(encode("main", [("x", tensor)], tensor))
        ib.emit_call("neg", args=[ib.r(0), ib.r(0)], dst=ib.r(1))
        ib.emit_call("neg", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(0))
    neg = _kernel("neg", ("A", "float32", [2, "m"]), ("B", "float32", [2, "m"]))
    assert _problems(ib.get(), neg) == [
        "'m.vmo' calls kernel 'neg' in function 'main' (main+0000) as neg(int32[2, ?], int32[2, ?]); "
        "'k.ko' defines neg(A: float32[2, m], B: float32[2, m]): argument 1 is an int32 tensor of rank 2, "
        "parameter 'A' is float32[2, m]",
        "'m.vmo' calls kernel 'neg' with 1 argument in function 'main' (main+0001) as neg(int32[2, ?]); "
        "'k.ko' defines neg(A: float32[2, m], B: float32[2, m]) with 2 parameters",
    ]
