"""R.ccl.*: struct-info inference (TVM 0.27's shapes), legalization to the runtime.disco.*
builtins, a one-worker run through relax.build and the VM against numpy, and the
builtins' plumbing to a communicator under a fake two-worker context."""

import numpy as np
import pytest

from relax import ir
from relax.build import build
from relax.diagnostics import DiagnosticError
from relax.disco.worker_context import WorkerContext, bind
from relax.ir import tir
from relax.op.infer import struct_info_of
from relax.runtime import disco_builtins
from relax.runtime.errors import VMError
from relax.runtime.objects import ShapeTuple
from relax.script import parse, script
from relax.transform.legalize_ops import LegalizeOps
from relax.transform.normalize import Normalize
from relax.vm import VirtualMachine

N = tir.Var("n", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, x, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.ccl.{op}"), (x,), ir.FrozenDict(attrs)))


def dims(info):
    return script(info.shape).strip() if info.shape is not None else None


def test_inference_follows_tvm():
    x = tensor((4, 6))
    assert dims(infer("allreduce", x, op_type="prod")) == "R.shape([4, 6])"
    assert dims(infer("allgather", x, num_workers=2)) == "R.shape([8, 6])"
    assert dims(infer("broadcast_from_worker0", x)) == "R.shape([4, 6])"
    assert dims(infer("scatter_from_worker0", x, num_workers=2, axis=1)) == "R.shape([4, 3])"
    assert dims(infer("scatter_from_worker0", x, num_workers=2, axis=-2)) == "R.shape([2, 6])"
    # Symbolic sizes as TVM writes them; a rank without a shape stays as it is.
    assert dims(infer("allgather", tensor((N, 6)), num_workers=2)) == "R.shape([n * 2, 6])"
    assert dims(infer("scatter_from_worker0", tensor((N, 6)), num_workers=2)) == "R.shape([T.Div(n, 2), 6])"
    ranked = ir.Var("y", ir.TensorStructInfo(None, "float16", 2))
    assert infer("allgather", ranked, num_workers=3).ndim == 2


@pytest.mark.parametrize("op, attrs, message", [
    ("scatter_from_worker0", {"num_workers": 2}, r"axis 0 of a tensor of shape \(5, 6\) has size 5, which is "
                                                 r"not divisible by num_workers=2 in R.ccl.scatter_from_worker0"),
    ("scatter_from_worker0", {"num_workers": 2, "axis": 2}, "axis 2 is out of range for a tensor of rank 2"),
    ("scatter_from_worker0", {"num_workers": 2, "axis": None}, "bad value None for 'axis': expected one axis"),
    ("allreduce", {"op_type": "mean"}, "bad value 'mean' for 'op_type': expected one of sum, prod, min, max, avg"),
    ("allgather", {"num_workers": 0}, "expected a positive number of workers"),
])
def test_inference_refuses_bad_attributes(op, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer(op, tensor((5, 6)), **attrs)


PROGRAM = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), dtype="float32")):
        a = R.ccl.allreduce(x, op_type="{op_type}")
        b = R.ccl.allgather(a, num_workers={workers})
        c = R.ccl.broadcast_from_worker0(b)
        d = R.ccl.scatter_from_worker0(c, num_workers={workers}, axis=1)
        return (a, b, c, d)
'''


def test_legalization_calls_the_disco_builtins():
    text = script(LegalizeOps().run(Normalize().run(parse(PROGRAM.format(op_type="max", workers=2)))))
    assert 'R.call_dps_packed("runtime.disco.allreduce", (x, R.shape([3]), 1), ' \
           'out_ty=R.Tensor((4, 6), dtype="float32"))' in text
    assert 'R.call_dps_packed("runtime.disco.allgather", (a, 1), out_ty=R.Tensor((8, 6), dtype="float32"))' in text
    assert 'R.call_dps_packed("runtime.disco.broadcast_from_worker0", (b, 0)' in text
    assert 'gv1 = R.call_tir(cls.transpose, (gv,), out_ty=R.Tensor((2, 8, 3), dtype="float32"))' in text
    assert 'R.call_dps_packed("runtime.disco.scatter_from_worker0", (gv1, 0), ' \
           'out_ty=R.Tensor((8, 3), dtype="float32"))' in text


@pytest.fixture(scope="module")
def one_worker_vm():
    return VirtualMachine(build(parse(PROGRAM.format(op_type="sum", workers=1)), "llvm"), "cpu")


def test_one_worker_run_is_the_identity(one_worker_vm):
    x = np.arange(24, dtype="float32").reshape(4, 6)
    for result in one_worker_vm["main"](x):  # every collective of one worker copies: exact
        np.testing.assert_array_equal(result, x)


class FakeCommunicator:
    """Worker 1 of 2 whose peer holds the same tensors: enough to see what reaches the
    communicator, not a transport."""

    def __init__(self):
        self.calls = []

    def allreduce(self, send, recv, op):
        self.calls.append(("allreduce", op))
        recv[...] = send + send if op == "sum" else send

    def allgather(self, send, recv):
        self.calls.append(("allgather", send.shape))
        recv[...] = np.concatenate([send, send])

    def broadcast_from_worker0(self, send, recv):
        self.calls.append(("broadcast_from_worker0", send.shape))
        recv[...] = send

    def scatter_from_worker0(self, send, recv):
        self.calls.append(("scatter_from_worker0", send.shape))
        recv[...] = np.split(send, 2)[1]  # the contract: chunk worker_id of axis 0


@pytest.fixture
def two_workers():
    ccl = FakeCommunicator()
    bind(WorkerContext(worker_id=1, num_workers=2, ccl=ccl))
    yield ccl
    bind(None)


def test_builtins_reach_the_communicator(two_workers):
    x = np.arange(24, dtype="float32").reshape(4, 6)
    vm = VirtualMachine(build(parse(PROGRAM.format(op_type="sum", workers=2)), "llvm"), "cpu")
    a, b, c, d = vm["main"](x)
    np.testing.assert_array_equal(a, 2 * x)
    np.testing.assert_array_equal(b, np.concatenate([2 * x, 2 * x]))
    np.testing.assert_array_equal(c, b)
    np.testing.assert_array_equal(d, b[:, 3:])  # worker 1's half of axis 1
    assert two_workers.calls == [("allreduce", "sum"), ("allgather", (4, 6)), ("broadcast_from_worker0", (8, 6)),
                                 ("scatter_from_worker0", (16, 3))]
    assert disco_builtins.worker_id() == ShapeTuple([1]) and disco_builtins.num_workers() == 2
    assert disco_builtins.worker_rank() == 1


def test_builtins_refuse_shapes_that_do_not_fit_the_workers(two_workers):
    send = np.zeros((4, 6), "float32")
    with pytest.raises(VMError, match=r"runtime.disco.allgather: with 2 workers the result must have shape "
                                      r"\(8, 6\), got \(4, 6\)"):
        disco_builtins.allgather(send, 1, np.zeros((4, 6), "float32"))
    with pytest.raises(VMError, match=r"runtime.disco.scatter_from_worker0: with 2 workers the tensor to "
                                      r"scatter must have shape \(2, 3, 6\), got \(4, 6\)"):
        disco_builtins.scatter_from_worker0(send, 0, np.zeros((3, 6), "float32"))


def test_builtins_alone_and_without_a_communicator():
    send = np.arange(6, dtype="float32").reshape(2, 3)
    recv = np.zeros((2, 3), "float32")
    disco_builtins.allreduce(send, ShapeTuple([4]), 1, recv)  # alone: avg of one tensor is that tensor
    np.testing.assert_array_equal(recv, send)
    assert disco_builtins.worker_id() == ShapeTuple([0]) and disco_builtins.num_workers() == 1
    with pytest.raises(VMError, match=r"with 1 worker the tensor to scatter must have shape \(1, 2, 3\), "
                                      r"got \(2, 2, 3\)"):
        disco_builtins.scatter_from_worker0(np.zeros((2, 2, 3), "float32"), 0, recv)
    bind(WorkerContext(worker_id=0, num_workers=2, ccl=None))
    try:
        with pytest.raises(VMError, match="runtime.disco.broadcast_from_worker0: worker 0 has no communicator: "
                                          "call init_ccl first"):
            disco_builtins.broadcast_from_worker0(send, 0, recv)
    finally:
        bind(None)
