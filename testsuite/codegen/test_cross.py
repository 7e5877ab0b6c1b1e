"""Cross-compiled kernel objects are valid objects for their machine with the expected symbols."""

import io

import pytest
from codegen_tir import elementwise, i64, kernel, load, loop, param, store
from elftools.elf.elffile import ELFFile

from relax.codegen.build_kernels import build_kernel_object, emit_assembly
from relax.ir import tir
from relax.runtime.kernels import container
from relax.target import Target

CROSS = {
    "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1": "EM_AARCH64",
    "llvm -mtriple=riscv64-linux-gnu": "EM_RISCV",
    "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512": "EM_X86_64",
}


def kernels():
    a, b = param("A", "float32", (1 << 16,)), param("B", "float32", (1 << 16,))
    i = tir.Var("i", "int64")  # enough work for a parallel loop (parallel.SERIAL_WORK)
    par = kernel([a, b], loop(i, i64(1 << 16), store(b[1], i, tir.Mul(load(a[1], i), load(a[1], i))), "parallel"))
    return {
        "erf_kernel": elementwise(16, ["float64"], "float64", lambda x: tir.Call("float64", "tir.erf", (x,))),
        "add": elementwise(16, ["float32", "float32"], "float32", tir.Add),
        "square_parallel": par,
    }


def _symbols(elf):
    table = elf.get_section_by_name(".symtab")
    return {s.name: s for s in table.iter_symbols() if s.name}


@pytest.mark.parametrize("target", list(CROSS))
def test_cross_compiled_object_is_elf_for_the_machine(target):
    ko = container.read(build_kernel_object(kernels(), [Target.parse(target)]))
    elf = ELFFile(io.BytesIO(ko.objects[0]))
    assert elf.header["e_machine"] == CROSS[target]
    assert elf.elfclass == 64 and elf.little_endian
    symbols = _symbols(elf)
    for name in ("relaxk_add", "relaxk_erf_kernel", "relaxk_square_parallel"):
        assert symbols[name]["st_info"]["type"] == "STT_FUNC"
        assert symbols[name]["st_info"]["bind"] == "STB_GLOBAL"
        assert symbols[name]["st_shndx"] != "SHN_UNDEF"
    # libm (or on x86-64 Linux libmvec's vector erf) and the thread pool's launch stay
    # undefined: the loading process resolves them. (float32 erf is defined in the module
    # on x86-64 Linux: fast_math.define_fast_erf.)
    undefined = {name for name, s in symbols.items() if s["st_shndx"] == "SHN_UNDEF"}
    assert "__relax_pool_launch" in undefined
    assert any(name == "erf" or name.startswith("_ZGV") and name.endswith("_erf") for name in undefined)
    assert ko.bitcode[0][:4] == b"BC\xc0\xde"
    assert [k.name for k in ko.kernels] == ["add", "erf_kernel", "square_parallel"]


def test_riscv_linux_defaults_to_hard_float_rv64gc():
    ko = container.read(build_kernel_object(kernels(), [Target.parse("llvm -mtriple=riscv64-linux-gnu")]))
    elf = ELFFile(io.BytesIO(ko.objects[0]))
    float_abi = elf.header["e_flags"] & 0x6  # EF_RISCV_FLOAT_ABI
    assert float_abi == 0x4  # EF_RISCV_FLOAT_ABI_DOUBLE
    assert "+d" in ko.targets[0].features


def test_fat_object_holds_every_target():
    targets = [Target.parse(t) for t in CROSS]
    ko = container.read(build_kernel_object(kernels(), targets))
    assert [t.triple for t in ko.targets] == [Target.parse(t).mtriple for t in CROSS]
    assert sorted(ko.objects) == sorted(ko.bitcode) == [0, 1, 2]


def test_aarch64_assembly_uses_neon_or_sve_vectors():
    text = emit_assembly({"add": elementwise(1024, ["float32", "float32"], "float32", tir.Add)},
                         Target.parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1"))
    assert "relaxk_add:" in text
    assert "fadd\tv" in text or "fadd\tz" in text
