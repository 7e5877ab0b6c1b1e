"""The .ko container: round trip, determinism, refusal of corrupt/foreign/newer files,
host selection (native object, bitcode compiled on load, or a clear error)."""

import hashlib
import struct
import subprocess
import sys

import numpy as np
import pytest
from codegen_tir import elementwise

from relax.codegen.build_kernels import build_kernel_object
from relax.diagnostics import UserError
from relax.ir import tir
from relax.runtime.kernels import container, load_kernel_library
from relax.runtime.kernels.host import host, triple_arch
from relax.target import Target

KERNELS = {"add": elementwise(40, ["float32", "float32"], "float32", tir.Add),
           "tanh": elementwise(40, ["float64"], "float64", lambda x: tir.Call("float64", "tir.tanh", (x,)))}


@pytest.fixture(scope="module")
def host_ko():
    return build_kernel_object(KERNELS, [Target.host()])


def _check_library(library):
    x, y = np.arange(40, dtype=np.float32), np.ones(40, np.float32)
    out = np.zeros(40, np.float32)
    library.get_function("add")(x, y, out)
    np.testing.assert_array_equal(out, x + 1)
    v = np.linspace(-3, 3, 40)
    w = np.zeros(40)
    library.get_function("tanh")(v, w)
    np.testing.assert_allclose(w, np.tanh(v), rtol=1e-15)


def test_round_trip_and_determinism(host_ko):
    assert build_kernel_object(KERNELS, [Target.host()]) == host_ko
    ko = container.read(host_ko)
    assert container.write(ko) == host_ko
    assert host_ko[:8] == container.MAGIC
    info = ko.kernel("add")
    assert info.symbol == "relaxk_add" and info.abi_version == 1
    assert [(p.name, p.kind, p.dtype, p.shape) for p in info.params] == [
        ("A0", "buffer", "float32", (40,)), ("A1", "buffer", "float32", (40,)), ("C", "buffer", "float32", (40,))]


def test_native_entry_is_loaded(host_ko):
    library = load_kernel_library(host_ko)
    assert not library.compiled_on_load
    _check_library(library)
    assert library.get_function("missing") is None
    assert sorted(library.list_functions()) == ["add", "tanh"]


def test_forced_bitcode_path(host_ko):
    library = load_kernel_library(host_ko, prefer="bitcode")
    assert library.compiled_on_load
    _check_library(library)


def test_same_arch_other_cpu_compiles_bitcode_on_load():
    if triple_arch(host().triple) != "x86_64":
        pytest.skip("needs an x86_64 host to name another x86_64 CPU")
    cpu = "znver4" if host().cpu != "znver4" else "sapphirerapids"
    data = build_kernel_object(KERNELS, [Target.parse(f"llvm -mtriple=x86_64-linux-gnu -mcpu={cpu}")])
    library = load_kernel_library(data)
    assert library.compiled_on_load
    _check_library(library)


def test_fat_object_picks_the_host_entry():
    foreign = "riscv64-linux-gnu" if triple_arch(host().triple) != "riscv64" else "aarch64-linux-gnu"
    data = build_kernel_object(KERNELS, [Target.parse(f"llvm -mtriple={foreign}"), Target.host()])
    library = load_kernel_library(data)
    assert library.target.triple == host().triple and not library.compiled_on_load
    _check_library(library)


def test_no_entry_for_this_host_names_targets_and_host():
    foreign = "riscv64-linux-gnu" if triple_arch(host().triple) != "riscv64" else "aarch64-linux-gnu"
    data = build_kernel_object(KERNELS, [Target.parse(f"llvm -mtriple={foreign}")])
    with pytest.raises(UserError, match=f"no kernels that run on this host .*{foreign}"):
        load_kernel_library(data, "k.ko")


def _reheader(data: bytes, major=None, minor=None) -> bytes:
    """The same file with another version in its header and a valid checksum."""
    magic, old_major, old_minor, count, size, _ = container.HEADER.unpack_from(data)
    body = data[container.HEADER.size:]
    header = container.HEADER.pack(magic, major if major is not None else old_major,
                                   minor if minor is not None else old_minor, count, size,
                                   hashlib.sha256(body).digest())
    return header + body


def test_newer_format_version_is_refused(host_ko):
    with pytest.raises(UserError, match=r"format version 9\.0, newer than the supported 0\.1"):
        load_kernel_library(_reheader(host_ko, major=9, minor=0), "new.ko")


def test_newer_abi_version_is_refused(host_ko):
    ko = container.read(host_ko)
    newer = container.KernelObject(
        tuple(container.TargetEntry(t.triple, t.cpu, t.features, 2, t.object_format) for t in ko.targets),
        ko.kernels, ko.objects, ko.bitcode)
    with pytest.raises(UserError, match="kernel ABI version 2, newer than the supported version 1"):
        load_kernel_library(container.write(newer), "abi2.ko")


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:-10], "truncated"),
    (lambda d: d[:200] + bytes([d[200] ^ 0xFF]) + d[201:], "checksum mismatch"),
    (lambda d: b"\x7fELF" + d[4:], "bad magic"),
    (lambda d: d + b"\0" * 16, "padded"),
    (lambda d: b"", "bad magic"),
])
def test_corrupt_file_is_refused(host_ko, damage, message):
    with pytest.raises(UserError, match=message):
        load_kernel_library(damage(host_ko), "bad.ko")


def test_malformed_section_table_is_refused(host_ko):
    data = bytearray(host_ko)
    struct.pack_into("<Q", data, container.HEADER.size + 8, len(data) + 100)  # first section's offset
    with pytest.raises(UserError, match="section 0 is malformed"):
        container.read(_reheader(bytes(data)))


def test_runtime_loads_kernels_without_the_compiler(host_ko, tmp_path):
    path = tmp_path / "k.ko"
    path.write_bytes(host_ko)
    program = (
        "import sys, numpy as np\n"
        "from relax.runtime.kernels import load_kernel_file\n"
        f"lib = load_kernel_file({str(path)!r})\n"
        "x = np.ones(40, np.float32); out = np.zeros(40, np.float32)\n"
        "lib.get_function('add')(x, x, out)\n"
        "assert (out == 2).all()\n"
        "bad = [m for m in sys.modules if m.split('.')[:2] in (['relax', 'codegen'], ['relax', 'script'],\n"
        "       ['relax', 'tir'], ['relax', 'transform'], ['relax', 'op'], ['relax', 'ir'])]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True)


def test_unresolvable_symbol_is_refused_not_called():
    """MCJIT would bind a missing symbol to address 0; the loader refuses the object instead."""
    from relax.runtime.kernels.object_symbols import undefined_symbols

    func = elementwise(4, ["float32"], "float32",
                       lambda x: tir.Call("float32", "tir.call_extern", (tir.StringImm("relax_no_such_function"), x)))
    data = build_kernel_object({"bad": func}, [Target.host()])
    assert "relax_no_such_function" in undefined_symbols(container.read(data).objects[0])
    with pytest.raises(UserError, match="need relax_no_such_function, which this process does not provide"):
        load_kernel_library(data, "bad.ko")


def test_generic_x86_float16_uses_libgcc_helpers():
    """Code for a CPU without F16C converts halves through __extendhfsf2/__truncsfhf2."""
    if triple_arch(host().triple) != "x86_64":
        pytest.skip("needs an x86_64 host")
    from relax.runtime.kernels.object_symbols import undefined_symbols

    kernels = {"h": elementwise(64, ["float16", "float16"], "float16", tir.Add)}
    data = build_kernel_object(kernels, [Target.parse("llvm -mtriple=x86_64-linux-gnu")])
    assert "__extendhfsf2" in undefined_symbols(container.read(data).objects[0])
    library = load_kernel_library(data)
    a = np.linspace(-2, 2, 64).astype(np.float16)
    out = np.zeros(64, np.float16)
    library.get_function("h")(a, a, out)
    np.testing.assert_array_equal(out, a + a)


def test_every_single_byte_corruption_is_refused(host_ko):
    """Flipping any one byte (a sample of 300 positions) gives a clear UserError, never a crash."""
    rng = np.random.default_rng(0)
    for position in sorted(set(rng.integers(0, len(host_ko), 300).tolist()) | set(range(56))):
        damaged = bytearray(host_ko)
        damaged[position] ^= 0x5A
        with pytest.raises(UserError):
            load_kernel_library(bytes(damaged), "flipped.ko")
