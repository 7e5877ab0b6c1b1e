"""The TIR passes as registered module passes (`relaxc --passes lower-tir`)."""

from relax import script
from relax.ir import tir
from relax.ir.structural import structural_equal
from relax.target import Target
from relax.tir import lower_for_codegen
from relax.tir.module_passes import MODULE_PASSES, TARGET_CONFIG
from relax.tir.pipeline import passes
from relax.tir.rewrite import collect
from relax.ir.pass_infra import PassContext, get_pass, run_passes

TEXT = '''
from tvm.script import tir as T

@T.prim_func
def copy(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("copy"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
'''


def _module():
    parsed = script.parse(TEXT)
    return parsed


def test_every_pipeline_pass_is_registered_under_its_name():
    for tir_pass in passes(Target.parse("cuda -arch=sm_80")) + passes(Target.parse("llvm")):
        assert tir_pass.name in MODULE_PASSES
        assert get_pass(tir_pass.name).name == tir_pass.name
    assert get_pass("lower-tir").description().startswith("TIR:")


def test_lower_tir_equals_lower_for_codegen():
    mod = _module()
    lowered = run_passes(mod, ["lower-tir"])
    assert structural_equal(lowered["copy"], lower_for_codegen(mod["copy"], Target.host()))


def test_passes_by_name_in_order_and_target_from_the_config():
    mod = _module()
    with PassContext(config={TARGET_CONFIG: "cuda -arch=sm_80 -max_threads_per_block=16"}):
        out = run_passes(mod, ["default-gpu-schedule", "convert-blocks-to-loops", "flatten-buffers", "simplify"])
    loops = [f for f in collect(out["copy"].body, tir.For) if f.kind == "thread_binding"]
    assert [(f.thread_tag, f.extent.value) for f in loops] == [("blockIdx.x", 2), ("threadIdx.x", 16)]
    assert not collect(out["copy"].body, tir.BlockRealize)
