"""Parallel loops: outlined, run on native threads, and equal to the serial result."""

import re

import numpy as np
import pytest
from codegen_tir import flat, i64, kernel, load, loop, param, store

from relax.codegen import build_host_library, emit_llvm_ir
from relax.ir import tir
from relax.runtime.kernels import KernelCallError
from relax.runtime.kernels.thread_pool import MAX_BACKOFF, set_max_backoff


def row_sums(kind, inner_kind="serial"):
    """B[i] = offset + sum_j A[i, j] * scale, rows in a `kind` loop; n and scale are runtime values."""
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    a, b = param("A", "float32", (m, n)), param("B", "float32", (m,))
    fa = flat(a[1], tir.Mul(m, n))
    scale, offset = tir.Var("scale", "float32"), tir.Var("offset", "float32")
    i, j, base = tir.Var("i", "int64"), tir.Var("j", "int64"), tir.Var("base", "int64")
    acc_var = tir.Var("acc", "handle")
    acc = tir.Buffer("acc", (i64(1),), "float32", data=acc_var)
    body = tir.LetStmt(base, tir.Mul(i, n), tir.SeqStmt((
        store(acc, i64(0), offset),
        loop(j, n, store(acc, i64(0), tir.Add(load(acc, i64(0)), tir.Mul(load(fa, tir.Add(base, j)), scale))),
             inner_kind),
        store(b[1], i, load(acc, i64(0))),
    )))
    alloc = tir.Allocate(acc_var, "float32", (i64(1),), tir.const(True), tir.DeclBuffer(acc, body),
                         annotations=tir.FrozenDict(storage="stack"))
    return kernel([a, scale, offset, b], loop(i, m, alloc, kind))


@pytest.fixture(scope="module")
def library():
    lib = build_host_library({"serial": row_sums("serial"), "parallel": row_sums("parallel"),
                              "nested": row_sums("parallel", "parallel")})
    lib.parallel_threshold_bytes = 0  # use threads even for the small test inputs
    return lib


@pytest.mark.parametrize("threads", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("rows", [0, 1, 5, 64, 257])
def test_parallel_equals_serial(library, threads, rows):
    x = np.random.default_rng(rows).standard_normal((rows, 33)).astype(np.float32)
    expected = np.zeros(rows, np.float32)
    library.get_function("serial")(x, 0.5, 1.0, expected)
    library.num_threads = threads
    for name in ("parallel", "nested"):
        out = np.full(rows, np.nan, np.float32)
        library.get_function(name)(x, 0.5, 1.0, out)
        np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(expected, x.sum(axis=1) * 0.5 + 1.0, rtol=1e-5, atol=1e-5)


def test_parallel_loop_is_outlined_onto_the_thread_pool():
    text = emit_llvm_ir({"parallel": row_sums("parallel")})
    assert "declare void @__relax_pool_launch(ptr" in text  # provided by the loader, not linked in
    assert "pthread_create" not in text
    assert "@parallel.impl.parallel1.thread(" in text  # the outlined worker's thread entry
    assert "__relax_pool_launch" not in emit_llvm_ir({"serial": row_sums("serial")})


def test_the_loop_body_is_compiled_once():
    """The serial path and the thread routine both call the outlined body; neither inlines it,
    so LLVM optimizes and compiles it once (inlined, it was two copies of every kernel's hot loop)."""
    text = emit_llvm_ir({"parallel": row_sums("parallel")})
    assert re.search(r"define internal .*@parallel\.impl\.parallel1\(", text)
    assert len(re.findall(r"call .*@parallel\.impl\.parallel1\(", text)) == 2


def _function_attributes(text: str, name: str) -> str:
    """The attributes of function `name` in LLVM's printed IR (kept in numbered groups)."""
    group = re.search(rf"^define .*@{re.escape(name)}\(.*\) #(\d+) {{$", text, re.M)
    assert group, name
    return re.search(rf"^attributes #{group.group(1)} = {{ (.*) }}$", text, re.M).group(1)


def test_only_the_loop_body_is_optimized():
    """The thread routine's chunk-claiming loops are built unoptimized (optnone): the full
    pipeline on them cost more build time than they run; the body keeps it."""
    text = emit_llvm_ir({"parallel": row_sums("parallel")}, optimized=False)
    assert "optnone" in _function_attributes(text, "parallel.impl.parallel1.thread").split()
    assert "optnone" not in _function_attributes(text, "parallel.impl.parallel1").split()


def _loop_headers(text: str, name: str) -> set[str]:
    """The blocks of function `name` (printed IR) that a cycle of its control flow re-enters."""
    body = re.search(rf"^define [^\n]*@{re.escape(name)}\(.*?^}}$", text, re.M | re.S).group(0)
    blocks = re.split(r"^([\w.]+):", "entry:" + body.split("{\n", 1)[1].removeprefix("entry:"), flags=re.M)[1:]
    successors = {label: re.findall(r"label %([\w.]+)", code) for label, code in zip(blocks[::2], blocks[1::2])}
    headers, done, on_path = set(), set(), []

    def visit(label):
        on_path.append(label)
        for target in successors[label]:
            if target in on_path:
                headers.add(target)
            elif target not in done:
                visit(target)
        on_path.pop()
        done.add(label)

    visit("entry")
    return headers


def test_the_launch_has_no_loop():
    """The launching code zeroes the claim counters with one memset: as a loop, LLVM
    vectorized it (with run-time checks and epilogues) in every parallel kernel's entry."""
    text = emit_llvm_ir({"parallel": row_sums("parallel")})
    assert _loop_headers(text, "relaxk_parallel") == set()
    assert _loop_headers(text, "parallel.impl.parallel1")  # the check sees loops


def test_assert_inside_a_parallel_loop_fails_the_call():
    a = param("A", "int32", (100000,))
    i = tir.Var("i", "int64")
    check = tir.AssertStmt(tir.NE(load(a[1], i), tir.IntImm("int32", 13)), tir.StringImm("no thirteen"),
                           tir.Evaluate(tir.IntImm("int32", 0)))
    lib = build_host_library({"check": kernel([a], loop(i, i64(100000), check, "parallel"))})
    assert lib.get_function("check").info.parallel
    lib.parallel_threshold_bytes = 0
    lib.num_threads = 4
    data = np.arange(100000, dtype=np.int32) + 20
    lib.get_function("check")(data)
    data[77] = 13
    with pytest.raises(KernelCallError, match="no thirteen"):
        lib.get_function("check")(data)


def test_parallel_elementwise_int32_loop_variable():
    a, b = param("A", "float64", (100001,)), param("B", "float64", (100001,))
    i = tir.Var("i", "int32")
    body = store(b[1], i, tir.Call("float64", "tir.sqrt", (load(a[1], i),)))
    lib = build_host_library({"k": kernel([a, b], loop(i, 100001, body, "parallel"))})
    assert lib.get_function("k").info.parallel
    lib.parallel_threshold_bytes = 0
    lib.num_threads = 3
    x = np.arange(100001, dtype=np.float64)
    out = np.zeros(100001)
    lib.get_function("k")(x, out)
    np.testing.assert_allclose(out, np.sqrt(x), rtol=1e-15)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_chunks_run_on_distinct_native_threads(threads):
    """Each iteration sleeps 1 ms and records pthread_self(): several native threads shared the loop,
    each taking whole chunks (64 iterations in 4 chunks per thread)."""
    out = param("T", "uint64", (64,))
    i = tir.Var("i", "int64")
    nap = tir.Evaluate(tir.Call("int32", "tir.call_extern", (tir.StringImm("usleep"), tir.IntImm("uint32", 1000))))
    record = store(out[1], i, tir.Call("uint64", "tir.call_extern", (tir.StringImm("pthread_self"),)))
    lib = build_host_library({"who": kernel([out], loop(i, i64(64), tir.SeqStmt((nap, record)), "parallel"))})
    lib.parallel_threshold_bytes = 0
    set_max_backoff(0)  # a loaded machine must not make the pool run this launch alone
    lib.num_threads = threads
    ids = np.zeros(64, np.uint64)
    lib.get_function("who")(ids)
    set_max_backoff(MAX_BACKOFF)
    used = len(set(ids.tolist()))
    assert used == 1 if threads == 1 else 2 <= used <= threads
    chunk = -(-64 // (threads * 4))
    assert all(len(set(ids[k:k + chunk].tolist())) == 1 for k in range(0, 64, chunk))


def test_workspace_allocation_inside_a_parallel_loop_is_per_thread():
    """B[i, :] = reversed(A[i, :]) * 2 through a symbolic-size scratch row allocated in the parallel body."""
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    a, b = param("A", "float32", (m, n)), param("B", "float32", (m, n))
    fa, fb = flat(a[1], tir.Mul(m, n)), flat(b[1], tir.Mul(m, n))
    row_var = tir.Var("row", "handle")
    row = tir.Buffer("row", (n,), "float32", data=row_var)
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    body = tir.SeqStmt((
        loop(j, n, store(row, j, load(fa, tir.Add(tir.Mul(i, n), tir.Sub(tir.Sub(n, j), i64(1)))))),
        loop(j, n, store(fb, tir.Add(tir.Mul(i, n), j), tir.Mul(load(row, j), tir.FloatImm("float32", 2.0)))),
    ))
    scratch = tir.Allocate(row_var, "float32", (n,), tir.const(True), tir.DeclBuffer(row, body),
                           annotations=tir.FrozenDict(storage="workspace"))
    lib = build_host_library({"rev": kernel([a, b], loop(i, m, scratch, "parallel"))})
    assert lib.get_function("rev").info.workspace_bytes == 0  # nothing comes from the caller's workspace
    lib.parallel_threshold_bytes = 0
    lib.num_threads = 3
    x = np.random.default_rng(5).standard_normal((37, 50)).astype(np.float32)
    out = np.zeros_like(x)
    lib.get_function("rev")(x, out)
    np.testing.assert_array_equal(out, x[:, ::-1] * 2)


def test_concurrent_calls_from_python_threads(library):
    """Calls run without the GIL and keep their own context: four Python threads at once."""
    import threading

    library.num_threads = 2
    x = np.random.default_rng(9).standard_normal((300, 33)).astype(np.float32)
    expected = np.zeros(300, np.float32)
    library.get_function("serial")(x, 0.5, 1.0, expected)
    outputs = [np.zeros(300, np.float32) for _ in range(4)]

    def work(out):
        for _ in range(20):
            library.get_function("parallel")(x, 0.5, 1.0, out)

    threads = [threading.Thread(target=work, args=(out,)) for out in outputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for out in outputs:
        np.testing.assert_array_equal(out, expected)
