"""Parse and print a generated 1 MB TVMScript module; report seconds for each.

    python bench/parse.py [--megabytes 1.0]

The module mixes Relax functions (dataflow blocks, calls with attributes, symbolic
shapes, R.call_tir) with TIR kernels (blocks, reductions with T.init), so both
parsers and both printers are exercised. Goal (issue 2): under 2 s for both.
"""

from __future__ import annotations

import argparse
import time

HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
"""

KERNEL = '''    @T.prim_func(private=True)
    def matmul{i}(A: T.Buffer((T.int64(64), T.int64(64)), "float32"), B: T.Buffer((T.int64(64), T.int64(64)), "float32"), C: T.Buffer((T.int64(64), T.int64(64)), "float32")):
        T.func_attr({{"tir.noalias": True}})
        # with T.sblock("root"):
        for i, j, k in T.grid(T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

'''

FUNCTION_HEAD = '''    @R.function
    def f{i}(x: R.Tensor(("n", 64), dtype="float32"), w: R.Tensor((64, 64), dtype="float32")) -> R.Tensor(("n", 64), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
'''

BINDING = '''            lv{j}: R.Tensor((n, 64), dtype="float32") = R.add({prev}, R.const(1.5, "float32"))
            lv{j}_1: R.Tensor((n, 64), dtype="float32") = R.nn.relu(lv{j})
            lv{j}_2: R.Tensor((n, 64), dtype="float32") = R.matmul(lv{j}_1, w, out_dtype="void")
'''

FUNCTION_TAIL = '''            gv: R.Tensor((n, 64), dtype="float32") = R.multiply({prev}, {prev})
            R.output(gv)
        return gv

'''


def generate(megabytes: float) -> str:
    parts = [HEADER]
    size = len(HEADER)
    index = 0
    while size < megabytes * 1_000_000:
        pieces = [KERNEL.format(i=index), FUNCTION_HEAD.format(i=index)]
        prev = "x"
        for j in range(20):
            pieces.append(BINDING.format(j=j, prev=prev))
            prev = f"lv{j}_2"
        pieces.append(FUNCTION_TAIL.format(prev=prev))
        chunk = "".join(pieces)
        parts.append(chunk)
        size += len(chunk)
        index += 1
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from relax.script import parse, script

    text = generate(args.megabytes)
    # Wall time and this process's CPU time: on a shared, loaded machine the CPU time
    # is what the code costs; the wall time is what a user waits.
    times = {"parse": [], "print": []}
    for _ in range(args.repeat):
        start, cpu = time.perf_counter(), time.process_time()
        mod = parse(text, "bench.relax")
        times["parse"].append((time.perf_counter() - start, time.process_time() - cpu))
        start, cpu = time.perf_counter(), time.process_time()
        printed = script(mod)
        times["print"].append((time.perf_counter() - start, time.process_time() - cpu))
    functions = len(mod.functions)
    print(f"module: {len(text) / 1e6:.2f} MB, {functions} functions, printed {len(printed) / 1e6:.2f} MB")
    best = {stage: (min(w for w, _ in pairs), min(c for _, c in pairs)) for stage, pairs in times.items()}
    for stage, (wall, cpu) in best.items():
        print(f"{stage}: {wall:.3f} s wall, {cpu:.3f} s CPU (best of {args.repeat})")
    print(f"total: {best['parse'][0] + best['print'][0]:.3f} s wall, "
          f"{best['parse'][1] + best['print'][1]:.3f} s CPU   goal: < 2 s")


if __name__ == "__main__":
    main()
