"""The CUDA C the code generator writes: dtypes, arithmetic semantics, intrinsics, GPU
statements, launches and their metadata, and its errors."""

import pytest

from relax.codegen import intrinsics as cpu_intrinsics
from relax.codegen.cuda import build_cuda_kernel_object, cuda_problem, emit_cuda_source, generate_source
from relax.codegen.cuda import intrinsics as cuda_intrinsics
from relax.codegen.cuda import nvrtc
from relax.codegen.cuda.kernel import KernelPrinter
from relax.diagnostics import UserError
from relax.ir import tir
from relax.runtime.kernels import container
from relax.script import parse

HEADER = "from tvm.script import tirx as T\n\n"
ROWSUM = HEADER + '''
@T.prim_func
def rowsum(A: T.Buffer((T.int64(8), T.int64(64)), "float32"), B: T.Buffer((T.int64(8),), "float32")):
    T.func_attr({"tir.noalias": True})
    for bx in T.thread_binding(T.int64(8), thread="blockIdx.x"):
        partial = T.alloc_buffer((T.int64(64),), "float32", scope="shared")
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            partial[tx] = A[bx, tx]
            T.tvm_storage_sync("shared")
            if tx < T.int64(32):
                partial[tx] = partial[tx] + partial[tx + T.int64(32)]
                lane = T.tvm_warp_shuffle(T.uint32(4294967295), partial[tx], T.int32(0), T.int32(32), T.int32(32))
                partial[tx] = partial[tx] + lane
            T.tvm_storage_sync("shared")
            if tx == T.int64(0):
                B[bx] = partial[0]
'''
SCALE_ADD = HEADER + '''
n = T.int64()

@T.prim_func
def scale_add(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), s: T.float32, flag: T.bool):
    T.func_attr({"tir.noalias": True})
    for i in range(n):
        with T.block("scale"):
            vi = T.axis.spatial(n, i)
            B[vi] = T.if_then_else(flag, A[vi] * s, A[vi])
'''


def module(text):
    return parse(text)


def kernel_source(text, name, target="cuda -arch=sm_90"):
    source = emit_cuda_source(module(text), target)
    return source.split(f"// kernel {name}\n", 1)[1]


def test_shared_memory_barriers_and_shuffles():
    source = kernel_source(ROWSUM, "rowsum")
    assert 'extern "C" __global__ void __launch_bounds__(64) relaxk_rowsum(float* __restrict__ A, ' \
           "float* __restrict__ B)" in source
    assert "__shared__ __align__(16) float partial[64];" in source
    assert source.count("__syncthreads();") == 2
    assert "relax_shfl((unsigned)(4294967295u), partial[tx], (int)(" in source
    assert "((int64_t)blockIdx.x)" in source and "((int64_t)threadIdx.x)" in source


def test_warp_shuffle_down_and_activemask():
    printer = KernelPrinter("k", None)
    value = tir.Var("v", "float32")
    printer.names[value] = "v"
    call = tir.Call("float32", "tir.tvm_warp_shuffle_down",
                    (tir.IntImm("uint32", 0xFFFFFFFF), value, tir.IntImm("int32", 16), tir.IntImm("int32", 32),
                     tir.IntImm("int32", 32)))
    assert printer.expr(call) == "relax_shfl_down((unsigned)(4294967295u), v, (int)(16), (int)(32))"
    assert printer.expr(tir.Call("uint32", "tir.tvm_warp_activemask", ())) == "__activemask()"


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
@pytest.mark.parametrize("node", [tir.Max, tir.Min, "select"])
def test_a_shuffle_in_min_max_or_select_runs_once_in_every_lane(node, dtype):
    # A warp reduction combines with max(acc, shfl_down(acc)): as `a > b ? a : b` the second
    # shuffle ran only in the lanes where acc lost, reading lanes that never reached it
    # (R.max, argmax and every max/min reduction were wrong on the GPU).
    printer = KernelPrinter("k", None)
    acc = tir.Var("acc", dtype)
    printer.names[acc] = "acc"
    mask = tir.Call("uint32", "tir.tvm_warp_activemask", ())
    shuffle = tir.Call(dtype, "tir.tvm_warp_shuffle_down",
                       (mask, acc, tir.IntImm("int32", 16), tir.IntImm("int32", 32), tir.IntImm("int32", 32)))
    if node == "select":
        expr = tir.Select(tir.LT(acc, shuffle), shuffle, acc)
    else:
        expr = node(acc, shuffle)
    text = printer.expr(expr)
    assert text.count("relax_shfl_down(") == (2 if node == "select" else 1)
    assert "?" not in text


def test_launch_metadata_and_parameter_order():
    source, infos = generate_source(module(SCALE_ADD), "cuda -arch=sm_90")
    (info,) = infos
    assert info.symbolic_vars == ("n",)
    (launch,) = info.launches
    assert launch.symbol == "relaxk_scale_add"
    assert isinstance(launch.block[0], int) and launch.block[0] > 1
    assert "n" in str(launch.grid[0])  # the grid follows the symbolic size
    assert launch.grid[1:] == (1, 1) and launch.shared_bytes == 0
    # buffers, then scalars in their own type (bool as int8_t), then the sizes as int64_t
    assert ("relaxk_scale_add(float* __restrict__ A, float* __restrict__ B, float s, int8_t flag_i8, "
            "int64_t n)") in source
    assert "const bool flag = flag_i8 != 0;" in source


def test_several_launches_get_numbered_symbols_and_device_arrays():
    text = HEADER + '''
@T.prim_func
def two(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
    tmp = T.alloc_buffer((T.int64(4),), "float32")
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        tmp[i] = A[i] * T.float32(2)
    for j in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        B[j] = tmp[3 - j]
'''
    source, (info,) = generate_source(module(text), "cuda -arch=sm_80")
    assert [launch.symbol for launch in info.launches] == ["relaxk_two_0", "relaxk_two_1"]
    assert "static __device__ float v_relaxk_two_tmp[4];" in source
    assert info.workspace_bytes == 0


def test_symbolic_intermediate_is_carved_from_the_workspace():
    text = HEADER + '''
n = T.int64()

@T.prim_func
def two(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
    tmp = T.alloc_buffer((n,), "float32")
    for i in T.thread_binding(n, thread="threadIdx.x"):
        tmp[i] = A[i] * T.float32(2)
    for j in T.thread_binding(n, thread="threadIdx.x"):
        B[j] = tmp[j]
'''
    source, (info,) = generate_source(module(text), "cuda -arch=sm_80")
    assert "uint8_t* __restrict__ relax_workspace" in source
    assert info.workspace_bytes != 0
    assert info.launches[0].block[0] == "n"


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                   "uint64", "float16", "float32", "float64"])
def test_every_dtype_has_a_c_type(dtype):
    text = HEADER + f'''
@T.prim_func
def copy(A: T.Buffer((T.int64(4),), "{dtype}"), B: T.Buffer((T.int64(4),), "float32"), s: T.{dtype}):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        B[i] = T.Cast("float32", A[i]) + T.Cast("float32", s)
'''
    source = kernel_source(text, "copy")
    c_type = {"bool": "bool", "float16": "relax_half", "float32": "float", "float64": "double"}.get(dtype, dtype + "_t")
    assert f"{c_type}* A" in source or f"{c_type}* __restrict__ A" in source


def test_integer_division_follows_tir():
    text = HEADER + '''
@T.prim_func
def division(A: T.Buffer((T.int64(4),), "int32"), B: T.Buffer((T.int64(4),), "int32")):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        B[i] = T.floordiv(A[i], 3) + T.floormod(A[i], 3) + T.truncdiv(A[i], 3) + T.truncmod(A[i], 3)
'''
    source = kernel_source(text, "division")
    for helper in ("relax_floordiv<int32_t>", "relax_floormod<int32_t>", "relax_div<int32_t>", "relax_mod<int32_t>"):
        assert helper in source


def test_float16_math_runs_in_float_and_arithmetic_in_half():
    text = HEADER + '''
@T.prim_func
def half_exp(A: T.Buffer((T.int64(4),), "float16"), B: T.Buffer((T.int64(4),), "float16")):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        B[i] = T.exp(A[i]) + T.float16(1)
'''
    source = kernel_source(text, "half_exp")
    assert "relax_hadd(relax_f2h(expf(relax_h2f(A[i]))), relax_half{0x3c00})" in source


def test_every_cpu_intrinsic_is_known():
    known = set(cuda_intrinsics.MATH) | set(cuda_intrinsics.SPECIAL) | set(cuda_intrinsics.REFUSED)
    assert set(cpu_intrinsics.MATH_INTRINSICS) - known == set()
    for name in cuda_intrinsics.SPECIAL:
        assert hasattr(KernelPrinter, "call_" + name), name


def _threaded(name, dtype, stores):
    """A lowered one-launch kernel `name`(A, B) of `dtype` whose thread i runs stores(A[i], i)."""
    i = tir.Var("i", "int64")
    a = tir.Buffer("A", (tir.IntImm("int64", 4),), dtype, tir.Var("A", "handle"))
    b = tir.Buffer("B", (tir.IntImm("int64", 400),), dtype, tir.Var("B", "handle"))
    load = tir.BufferLoad(a, (i,))
    body = tir.SeqStmt(tuple(tir.BufferStore(b, value, (tir.Add(tir.Mul(i, tir.IntImm("int64", 100)),
                                                                  tir.IntImm("int64", k)),))
                             for k, value in enumerate(stores(load))))
    loop = tir.For(i, tir.IntImm("int64", 0), tir.IntImm("int64", 4), "thread_binding", body,
                   thread_tag="threadIdx.x")
    return {name: tir.PrimFunc((a.data, b.data), loop, None, ((a.data, a), (b.data, b)))}


@pytest.mark.nvrtc
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_math_intrinsic_compiles(dtype):
    def stores(x):
        values = [tir.Call(dtype, "tir." + name, (x,) * arity)
                  for name, (_, _, arity) in sorted(cuda_intrinsics.MATH.items())]
        values += [tir.Call(dtype, "tir." + name, (x,)) for name in ("sigmoid", "abs")]
        values.append(tir.Call(dtype, "tir.ldexp", (x, tir.IntImm("int32", 3))))
        for name in ("isnan", "isinf", "isfinite"):
            values.append(tir.Call(dtype, "tir.if_then_else", (tir.Call("bool", "tir." + name, (x,)), x, x)))
        values.append(tir.FloorDiv(x, x))
        values.append(tir.FloorMod(x, x))
        values.append(tir.Mod(x, x))
        values.append(tir.Min(x, tir.Max(x, x)))
        return values

    funcs = _threaded("maths", dtype, stores)
    source = emit_cuda_source(funcs, "cuda -arch=sm_90")
    for single, double, _ in cuda_intrinsics.MATH.values():
        assert f"{double if dtype == 'float64' else single}(" in source
    data = build_cuda_kernel_object(funcs, "cuda -arch=sm_90")
    assert container.read(data).kernel("maths").launches


@pytest.mark.nvrtc
def test_integer_intrinsics_compile():
    text = HEADER + '''
@T.prim_func
def bits(A: T.Buffer((T.int64(4),), "int8"), B: T.Buffer((T.int64(4),), "int32"), C: T.Buffer((T.int64(4),), "int64")):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        B[i] = T.popcount(T.Cast("int32", A[i])) + T.clz(B[i]) + T.shift_left(B[i], 2) + T.shift_right(B[i], 1)
        C[i] = T.bitwise_and(C[i], T.int64(7)) + T.bitwise_or(C[i], T.int64(1)) + T.bitwise_xor(C[i], C[i])
        A[i] = T.bitwise_not(A[i]) + T.abs(A[i])
        B[i] = T.reinterpret("int32", T.Cast("float32", B[i]))
'''
    data = build_cuda_kernel_object(module(text), ["cuda -arch=sm_80"])
    assert container.read(data).kernel("bits") is not None


def test_vectors_are_refused_clearly():
    text = HEADER + '''
@T.prim_func
def vec(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((T.int64(8),), "float32")):
    for i in T.thread_binding(T.int64(2), thread="threadIdx.x"):
        B[T.Ramp(i * 4, 1, 4)] = A[T.Ramp(i * 4, 1, 4)]
'''
    with pytest.raises(UserError, match="vector"):
        emit_cuda_source(module(text), "cuda -arch=sm_90")


@pytest.mark.nvrtc
def test_nvrtc_errors_name_the_kernel_and_show_the_log():
    text = HEADER + '''
@T.prim_func
def broken(A: T.Buffer((T.int64(4),), "float32")):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        A[i] = T.call_extern("float32", "no_such_function", A[i])
'''
    with pytest.raises(UserError, match=r"(?s)kernels broken.*no_such_function"):
        build_cuda_kernel_object(module(text), "cuda -arch=sm_90")


@pytest.mark.nvrtc
def test_the_cubin_and_the_ptx_of_one_arch_share_one_compile(monkeypatch):
    source = emit_cuda_source(module(ROWSUM), "cuda -arch=sm_90")
    compiles, compiled = [], nvrtc._compiled
    monkeypatch.setattr(nvrtc, "_compiled", lambda *args: compiles.append(args[1]) or compiled(*args))
    nvrtc._cubin_and_ptx.cache_clear()
    assert nvrtc.compile_cubin(source, "sm_90")[:4] == b"\x7fELF"
    ptx = nvrtc.compile_ptx(source, "sm_90")
    assert compiles == ["-arch=sm_90"]
    assert ptx == nvrtc.compile_ptx(source, "compute_90")  # what compiling for the virtual arch gives
    assert compiles == ["-arch=sm_90", "-arch=compute_90"]


def test_a_cpu_target_is_refused():
    with pytest.raises(UserError, match="need a 'cuda' target"):
        emit_cuda_source(module(SCALE_ADD), "llvm")


def test_missing_cupy_names_the_extra(monkeypatch):
    def missing():
        raise ImportError("No module named 'cupy'")

    monkeypatch.setattr(nvrtc, "_nvrtc", missing)
    problem = cuda_problem()
    assert "pip install '.[cuda]'" in problem
    with pytest.raises(UserError, match=r"\.\[cuda\]"):
        build_cuda_kernel_object(module(SCALE_ADD), "cuda -arch=sm_90")


@pytest.mark.nvrtc
def test_names_that_c_or_cuda_use_are_renamed():
    text = HEADER + '''
@T.prim_func
def names(expf: T.Buffer((T.int64(4),), "float32"), threadIdx: T.Buffer((T.int64(4),), "float32")):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        threadIdx[i] = T.exp(expf[i])
'''
    source = kernel_source(text, "names")
    assert "relaxk_names(float* expf_1, float* threadIdx_1)" in source
    assert build_cuda_kernel_object(module(text), "cuda -arch=sm_90")


@pytest.mark.nvrtc
def test_let_expressions_casts_and_asserts_compile():
    def stores(x):
        t = tir.Var("t", "float32")
        return [tir.Let(t, tir.Mul(x, x), tir.Add(t, t)),
                tir.Cast("float32", tir.Cast("int8", tir.Cast("float16", x)))]

    funcs = _threaded("lets", "float32", stores)
    source = emit_cuda_source(funcs, "cuda -arch=sm_90")
    assert "([&]() { const float t = (A[i] * A[i]); return (t + t); }())" in source
    assert build_cuda_kernel_object(funcs, "cuda -arch=sm_90")
    i = tir.Var("i", "int64")
    a = tir.Buffer("A", (tir.IntImm("int64", 4),), "float32", tir.Var("A", "handle"))
    body = tir.AssertStmt(tir.GT(tir.BufferLoad(a, (i,)), tir.FloatImm("float32", 0.0)),
                          tir.StringImm('A is "positive" 100%'),
                          tir.BufferStore(a, tir.FloatImm("float32", 1.0), (i,)))
    loop = tir.For(i, tir.IntImm("int64", 0), tir.IntImm("int64", 4), "thread_binding", body,
                   thread_tag="threadIdx.x")
    funcs = {"checked": tir.PrimFunc((a.data,), loop, None, ((a.data, a),))}
    source = emit_cuda_source(funcs, "cuda -arch=sm_90")
    assert 'printf("checked: A is \\"positive\\" 100%%\\n");' in source and "__trap();" in source
    assert build_cuda_kernel_object(funcs, "cuda -arch=sm_80")


@pytest.mark.nvrtc
def test_every_dtype_compiles():
    dtypes = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64"]
    funcs = {}
    for dtype in dtypes:
        value = "T.max(A[i], s)" if dtype == "bool" else "T.min(A[i] * s + A[i], s)"
        text = HEADER + f'''
@T.prim_func
def k_{dtype}(A: T.Buffer((T.int64(4),), "{dtype}"), B: T.Buffer((T.int64(4),), "{dtype}"), s: T.{dtype}):
    for i in T.thread_binding(T.int64(4), thread="threadIdx.x"):
        B[i] = {value}
'''
        funcs.update(module(text).prim_funcs())
    kernel_object = container.read(build_cuda_kernel_object(funcs, "cuda -arch=sm_80"))
    assert len(kernel_object.kernels) == len(dtypes)
