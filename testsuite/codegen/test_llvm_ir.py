"""What the emitted LLVM IR promises: vector code for an elementwise loop, noalias buffers
when the kernel says so, the ABI entry point, determinism."""

import re

import pytest

from codegen_tir import elementwise

from relax.codegen import emit_llvm_ir
from relax.codegen.build_kernels import emit_assembly
from relax.ir import tir

ADD = {"add": elementwise(4096, ["float32", "float32"], "float32", tir.Add)}


def test_elementwise_add_is_vectorized_for_the_host():
    text = emit_llvm_ir(ADD)
    assert re.search(r"fadd reassoc <(4|8|16) x float>", text), "no vector fadd in the optimized IR"
    assert re.search(r"load <(4|8|16) x float>", text)


def test_elementwise_add_is_vectorized_for_aarch64_and_riscv():
    aarch64 = emit_llvm_ir(ADD, "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")
    assert re.search(r"fadd reassoc <4 x float>", aarch64)
    riscv = emit_llvm_ir(ADD, "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c,+v")
    assert re.search(r"fadd reassoc <vscale x \d+ x float>", riscv)
    assert "vfadd.vv" in emit_assembly(ADD, "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c,+v")


def test_entry_point_and_noalias_body():
    unoptimized = emit_llvm_ir(ADD, optimized=False)
    assert "define i32 @relaxk_add(ptr %.1, ptr %.2, ptr %.3)" in unoptimized
    assert re.search(r"define internal i32 @add\.impl\((ptr noalias align 4 %\.\d, ){3}ptr %\.4\)", unoptimized)
    may_alias = emit_llvm_ir({"add": elementwise(64, ["float32"] * 2, "float32", tir.Add, noalias=False)},
                             optimized=False)
    assert "noalias" not in may_alias.split("@add.impl")[1].split("\n")[0]


def test_emitted_ir_is_deterministic():
    assert emit_llvm_ir(ADD) == emit_llvm_ir(ADD)


def test_unrolled_and_vectorized_loops_carry_loop_hints():
    from codegen_tir import i64, kernel, load, loop, param, store

    def scaled(kind):
        a, b = param("A", "float32", (8,)), param("B", "float32", (8,))
        i = tir.Var("i", "int64")
        return kernel([a, b], loop(i, i64(8), store(b[1], i, tir.Mul(load(a[1], i), load(a[1], i))), kind))

    unoptimized = emit_llvm_ir({"u": scaled("unrolled"), "v": scaled("vectorized")}, optimized=False)
    for hint in ('!{!"llvm.loop.unroll.full"}', '!{!"llvm.loop.vectorize.enable", i1 true}'):
        number = re.search(r"^(!\d+) = " + re.escape(hint), unoptimized, re.MULTILINE).group(1)
        assert re.search(rf"^(!\d+) = distinct !\{{\1, {number}\}}", unoptimized, re.MULTILINE), hint
    optimized = emit_llvm_ir({"u": scaled("unrolled")})
    body = optimized.split("@relaxk_u")[1].split("\n}\n")[0]
    assert "for_i" not in body and "!llvm.loop" not in body  # fully unrolled: no loop left


def _exp_kernels():
    return {"e": elementwise(4096, ["float32"], "float32", lambda x: tir.Call("float32", "tir.exp", (x,))),
            "t": elementwise(4096, ["float64"], "float64", lambda x: tir.Call("float64", "tir.tanh", (x,)))}


def test_vector_math_calls_libmvec_on_x86_64_linux():
    text = emit_llvm_ir(_exp_kernels(), "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=+avx2")
    assert "@_ZGVdN8v_expf(" in text and "@_ZGVdN4v_tanh(" in text
    assert "llvm.exp.v8f32" not in text


def test_vector_math_stays_libm_elsewhere():
    text = emit_llvm_ir(_exp_kernels(), "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")
    assert "_ZGV" not in text and re.search(r"llvm.exp.v\d+f32", text)


def test_libmvec_names_follow_the_vector_function_abi():
    from relax.runtime.kernels.libmvec import libmvec_names

    functions = ["llvm.exp.v16f32", "llvm.pow.v2f64", "llvm.fabs.v8f32", "llvm.exp.f32", "f"]
    assert libmvec_names(functions, frozenset({"avx", "avx2", "avx512f"})) == {
        "llvm.exp.v16f32": "_ZGVeN16v_expf", "llvm.pow.v2f64": "_ZGVbN2vv_pow"}  # fabs: no libmvec version


@pytest.mark.parametrize("extensions, expected", [
    ((), {}),                                         # SSE2 only: no ymm registers, LLVM splits the call
    (("avx",), {"llvm.exp.v8f32": "_ZGVcN8v_expf"}),
    (("avx", "avx2"), {"llvm.exp.v8f32": "_ZGVdN8v_expf"}),
])
def test_libmvec_variants_need_the_targets_registers(extensions, expected):
    """A 256-bit (or 512-bit) libmvec call on a target without those registers reads garbage lanes
    (x86-64 baseline float16 exp returned exp(0) in half the lanes): such calls stay intrinsics."""
    from relax.runtime.kernels.libmvec import libmvec_names

    assert libmvec_names(["llvm.exp.v8f32", "llvm.exp.v16f32"], frozenset(extensions)) == expected


def test_libm_calls_in_loops_use_libmvec_variants():
    erf = {"erf": elementwise(4096, ["float64"], "float64", lambda x: tir.Call("float64", "tir.erf", (x,)))}
    avx2 = emit_llvm_ir(erf, "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=+avx,+avx2")
    assert "call <4 x double> @_ZGVdN4v_erf(" in avx2
    plain = emit_llvm_ir(erf, "llvm -mtriple=riscv64-linux-gnu")
    assert "_ZGV" not in plain and "@erf(" in plain


def test_float32_erf_is_defined_in_the_module_where_libmvec_would_serve_it():
    """fast_math.define_fast_erf: a vectorized rational function instead of libmvec's erff."""
    erf = {"erf": elementwise(4096, ["float32"], "float32", lambda x: tir.Call("float32", "tir.erf", (x,)))}
    avx2 = emit_llvm_ir(erf, "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=+avx,+avx2")
    assert "erff" not in avx2 and re.search(r"fdiv( \w+)* <8 x float>", avx2)
    plain = emit_llvm_ir(erf, "llvm -mtriple=riscv64-linux-gnu")
    assert "@erff(" in plain


def test_kernels_reading_bools_skip_the_slp_vectorizer():
    """LLVM 22's X86 backend miscompiles the i1-vector inserts SLP builds from bool bytes with
    AVX-512 masks (testsuite/differential/found/where-bool-mask-avx512.relax): such modules
    are optimized without it, every other module with it."""
    import llvmlite.binding as llvm

    from relax.runtime.kernels.llvm_compile import slp_is_safe

    reads_bool = llvm.parse_assembly(
        "define i1 @f(ptr %p) {\n  %b = load i8, ptr %p\n  %c = icmp ne i8 %b, 0\n  ret i1 %c\n}\n")
    plain = llvm.parse_assembly("define float @g(float %x) {\n  %y = fadd float %x, %x\n  ret float %y\n}\n")
    assert not slp_is_safe(str(reads_bool)) and slp_is_safe(str(plain))


def test_repeated_index_arithmetic_is_emitted_once_per_block():
    """An unrolled tile spells one index computation per element: each distinct integer
    operation (and element pointer) is built once in its block, before LLVM sees it; a
    loop's body is another block and computes its own."""
    import numpy as np
    from codegen_tir import i64, kernel, load, loop, param, store

    from relax.codegen import build_host_library

    a, c = param("A", "float32", (64,)), param("C", "float32", (64,))
    i = tir.Var("i", "int64")
    base = lambda: tir.Mul(i, i64(4))  # noqa: E731 - a fresh node each time, as a schedule builds them
    body = tir.SeqStmt(tuple(store(c[1], tir.Add(base(), i64(lane)), tir.Mul(load(a[1], tir.Add(base(), i64(lane))),
                                                                        tir.FloatImm("float32", 2.0)))
                             for lane in range(4)))
    funcs = {"scale": kernel([a, c], loop(i, i64(16), body))}
    text = emit_llvm_ir(funcs, optimized=False)
    assert len(re.findall(r"= mul nsw i64 %\"?i\"?, 4", text)) == 1
    assert len(re.findall(r"getelementptr inbounds float, ptr %\"?\.2\"?, i64", text)) == 4  # C[4i + lane]
    x, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    build_host_library(funcs).get_function("scale")(x, out)
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.skipif(not __import__("relax.runtime.kernels.libmvec", fromlist=["_"]).uses_libmvec(
    __import__("relax.runtime.kernels.host", fromlist=["_"]).host().triple), reason="libmvec: x86-64 Linux only")
def test_bitcode_compiled_on_load_calls_libmvec_too():
    """An artifact whose native code cannot run here is compiled from its bitcode on load:
    its vector exp must still be libmvec's, not LLVM's split into scalar expf calls (the
    transformer's softmax took 164 instead of 39 us)."""
    import numpy as np

    from relax.codegen.build_kernels import build_kernel_object
    from relax.runtime.kernels import container, load_kernel_library
    from relax.runtime.kernels.host import host, host_machine
    from relax.runtime.kernels.libmvec import extensions_of
    from relax.runtime.kernels.llvm_compile import compile_bitcode
    from relax.runtime.kernels.object_symbols import undefined_symbols
    from relax.target import Target

    data = build_kernel_object({"e": _exp_kernels()["e"]}, [Target.host()])
    kernel_object = container.read(data, "e.ko")
    (bitcode,) = kernel_object.bitcode_parts(0)
    code = compile_bitcode(bitcode, host_machine(), extensions_of(host().enabled_features))
    calls = undefined_symbols(code)
    assert any(re.fullmatch(r"_ZGV[bcde]N\d+v_expf", name) for name in calls), calls
    assert "expf" not in calls
    library = load_kernel_library(data, "e.ko", prefer="bitcode")
    x = np.linspace(-5, 5, 4096, dtype=np.float32)
    out = np.zeros_like(x)
    library.get_function("e")(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=4e-7 * 4)


@pytest.mark.parametrize("pick", [(1, 5, 2, 6), (3, 2, 1, 0)])
def test_a_two_vector_shuffle_is_one_shufflevector(pick):
    """T.Shuffle of two vectors (a transpose block's swaps) is one LLVM shufflevector,
    and picks the lanes of the two vectors' concatenation."""
    import numpy as np
    from codegen_tir import i64, kernel, param

    from relax.codegen import build_host_library

    a, c = param("A", "float32", (8,)), param("C", "float32", (4,))
    low = tir.BufferLoad(a[1], (tir.Ramp(i64(0), i64(1), 4),))
    high = tir.BufferLoad(a[1], (tir.Ramp(i64(4), i64(1), 4),))
    shuffle = tir.Shuffle((low, high), tuple(tir.IntImm("int32", k) for k in pick))
    funcs = {"pick": kernel([a, c], tir.BufferStore(c[1], shuffle, (tir.Ramp(i64(0), i64(1), 4),)))}
    text = emit_llvm_ir(funcs, optimized=False)
    assert "shufflevector" in text and "insertelement" not in text
    x, out = np.arange(8, dtype=np.float32) * 10, np.zeros(4, np.float32)
    build_host_library(funcs).get_function("pick")(x, out)
    np.testing.assert_array_equal(out, x[list(pick)])


def test_splats_are_spelled_short():
    """A broadcast is an insertelement into `undef` and a `zeroinitializer` mask, not a lane
    list of each (llvmlite spells every lane: a fifth of a tiled kernel's IR text), and still
    fills every lane."""
    import numpy as np
    from codegen_tir import i64, kernel, param

    from relax.codegen import build_host_library
    from relax.codegen.build_kernels import generate_kernel_groups
    from relax.target.llvm_target import target_spec

    a, c = param("A", "float32", (1,)), param("C", "float32", (16,))
    splat = tir.Broadcast(tir.BufferLoad(a[1], (i64(0),)), 16)
    funcs = {"splat": kernel([a, c], tir.BufferStore(c[1], splat, (tir.Ramp(i64(0), i64(1), 16),)))}
    text = next(generate_kernel_groups(funcs, target_spec(None)))[0]  # as llvmlite printed it
    assert "insertelement <16 x float> undef," in text
    assert "<16 x i32> zeroinitializer" in text
    assert "float undef," not in text and "<16 x i32> <i32 0" not in text
    out = np.zeros(16, np.float32)
    build_host_library(funcs).get_function("splat")(np.array([2.5], np.float32), out)
    np.testing.assert_array_equal(out, np.full(16, 2.5, np.float32))


def test_shared_constants_keep_equal_keys_apart():
    """Codegen shares one llvmlite constant per value; -0.0 and 0.0, or True and 1, compare
    equal as dictionary keys but are different constants."""
    from relax.codegen.llvm_types import constant

    assert str(constant("float32", -0.0)) != str(constant("float32", 0.0))
    assert str(constant("float32", -0.0)).endswith("0x8000000000000000")
    assert constant("int32", 7) is constant("int32", 7)
    assert constant("int32", 1) is not constant("int32", True)
    assert str(constant("float32x4", 2.0)).startswith("<4 x float>")


def _function_text(text: str, name: str) -> str:
    return re.search(rf"define [^\n]*@\"?{re.escape(name)}\"?\(.*?\n}}", text, re.S).group(0)


def test_constant_divisors_and_constant_operands_are_emitted_bare():
    """Integer division guards its divisor (0 and, when signed, -1 would trap), but a
    constant divisor that is neither cannot: it is divided by as it is. Arithmetic on two
    constants (a loop from 0, a tile's offsets) is folded before LLVM sees it. The
    guarded cases still give numpy's answers."""
    import numpy as np
    from codegen_tir import i64, kernel, load, loop, param, store

    from relax.codegen import build_host_library

    a, c = param("A", "int64", (8,)), param("C", "int64", (8,))
    i = tir.Var("i", "int64")

    def divide(op, divisor):
        return kernel([a, c], loop(i, tir.Add(i64(3), i64(5)), store(c[1], i, op(load(a[1], i), i64(divisor)))))

    funcs = {"div3": divide(tir.Div, 3), "mod_neg4": divide(tir.Mod, -4), "div0": divide(tir.Div, 0),
             "div_neg1": divide(tir.Div, -1)}
    text = emit_llvm_ir(funcs, optimized=False)
    for name, op in (("div3", "sdiv i64 %.9, 3"), ("mod_neg4", "srem i64 %.9, -4")):
        body = _function_text(text, f"{name}.impl")
        assert op in body and "select" not in body and "icmp eq i64 %.9" not in body, body
        assert "icmp slt i64 %i, 8" in body and "add i64 3, 5" not in body and "add i64 0," not in body, body
    for name in ("div0", "div_neg1"):
        assert "select" in _function_text(text, f"{name}.impl")
    lib = build_host_library(funcs)
    low, high = -(1 << 63), (1 << 63) - 1
    values = [-7, 7, -8, 8, 0, -1, low, high]

    def truncated(a, b):  # C's division, in Python integers
        quotient = abs(a) // abs(b)
        return -quotient if (a < 0) != (b < 0) else quotient

    expected = {"div3": [truncated(v, 3) for v in values], "mod_neg4": [v - truncated(v, -4) * -4 for v in values],
                "div0": [0] * 8, "div_neg1": [low if v == low else -v for v in values]}  # MIN / -1 gives MIN
    for name, want in expected.items():
        out = np.zeros(8, np.int64)
        lib.get_function(name)(np.array(values, np.int64), out)
        assert out.tolist() == want, name


def test_an_unrolled_loop_reads_and_writes_from_bases_computed_before_it():
    """A register tile's slots access buffer[tile base + slot offset]: the tile base is the
    same for every slot, so its address is computed once, before the unrolled loop
    (hoisted_bases.py), and each slot adds its own offset. A base whose slot offsets do not
    start at 0 would not be an element the loop accesses: that index stays whole."""
    import numpy as np
    from codegen_tir import i64, kernel, load, loop, param, store

    from relax.codegen import build_host_library

    a, c = param("A", "float32", (64,)), param("C", "float32", (64,))
    t, s = tir.Var("t", "int64"), tir.Var("s", "int64")
    index = tir.Add(tir.Mul(t, i64(16)), tir.Mul(s, i64(2)))
    shifted = tir.Add(tir.Mul(t, i64(16)), tir.Mul(tir.Add(s, i64(1)), i64(2)))  # 2 at s = 0
    body = tir.SeqStmt((store(c[1], index, tir.Mul(load(a[1], index), tir.FloatImm("float32", 3.0))),
                        store(c[1], shifted, load(a[1], shifted))))
    funcs = {"tile": kernel([a, c], loop(t, i64(4), loop(s, i64(7), body, kind="unrolled")))}
    text = emit_llvm_ir(funcs, optimized=False)
    tile = re.search(r"\nfor_t_body:.*?\n\n", text, re.S).group(0)
    slot = re.search(r"\nfor_s_body:.*?\n\n", text, re.S).group(0)
    assert tile.count("getelementptr inbounds float") == 2, tile  # &A[16t] and &C[16t]
    assert slot.count("mul nsw i64 %t, 16") == 1, slot  # only the shifted index's
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    build_host_library(funcs).get_function("tile")(x, out)
    expected = np.zeros(64, np.float32)
    for tile_index in range(4):
        for slot_index in range(7):
            position = 16 * tile_index + 2 * slot_index
            expected[position] = 3 * x[position]
            expected[position + 2] = x[position + 2]
    np.testing.assert_array_equal(out, expected)


def test_the_hoisted_base_of_a_scalar_access_is_frozen_and_of_a_vector_access_is_not():
    """A register tile broadcasts one element of each A row per slot: every such base is a
    `freeze`, which LLVM's scalar evolution reads as a value of its own, so that loop
    strength reduction sees each row as one base and not as a sum over every loop around
    (its search over batched matmuls' rows ran out of budget: hoisted_bases.py). The
    vector accesses (B's panel) keep plain bases, which it reduces to one pointer."""
    import numpy as np
    from codegen_tir import i64, kernel, load, loop, param, store

    from relax.codegen import build_host_library

    a, b, c = param("A", "float32", (64,)), param("B", "float32", (64,)), param("C", "float32", (64,))
    t, s = tir.Var("t", "int64"), tir.Var("s", "int64")
    scalar = tir.Add(tir.Mul(t, i64(16)), s)
    vector = tir.Ramp(tir.Add(tir.Mul(t, i64(16)), tir.Mul(s, i64(8))), i64(1), 8)
    value = tir.Mul(tir.Broadcast(load(a[1], scalar), 8), load(b[1], vector))
    funcs = {"tile": kernel([a, b, c], loop(t, i64(4), loop(s, i64(2), store(c[1], vector, value), kind="unrolled")))}
    text = emit_llvm_ir(funcs, optimized=False)
    tile = re.search(r"\nfor_t_body:.*?\n\n", text, re.S).group(0)
    frozen = re.findall(r"(%\S+) = freeze ptr %\S+\n", tile)
    assert len(frozen) == 1, tile  # &A[16t]; B's and C's bases stay plain
    assert re.search(rf"getelementptr inbounds float, ptr {re.escape(frozen[0])}, ", text), text  # A's slots
    x, y = np.arange(64, dtype=np.float32), np.linspace(1, 2, 64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    build_host_library(funcs).get_function("tile")(x, y, out)
    expected = np.zeros(64, np.float32)
    for tile_index in range(4):
        for slot in range(2):
            lanes = slice(16 * tile_index + 8 * slot, 16 * tile_index + 8 * slot + 8)
            expected[lanes] = x[16 * tile_index + slot] * y[lanes]
    np.testing.assert_array_equal(out, expected)
