"""Checks shared by the CUDA compile tests: a cubin is an ELF for EM_CUDA defining the
expected `__global__` symbols, and the PTX assembles with the toolkit's ptxas."""

from __future__ import annotations

import io
import shutil
import subprocess

from elftools.elf.elffile import ELFFile

from relax.runtime.kernels import container

EM_CUDA = 190


def cubin_symbols(cubin: bytes) -> set[str]:
    """The names of the functions a cubin defines; asserts it is an ELF for EM_CUDA."""
    assert cubin[:4] == b"\x7fELF"
    elf = ELFFile(io.BytesIO(cubin))
    assert elf["e_machine"] in ("EM_CUDA", EM_CUDA), elf["e_machine"]
    names = set()
    for section in elf.iter_sections():
        if section.header["sh_type"] == "SHT_SYMTAB":
            for symbol in section.iter_symbols():
                if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_shndx"] != "SHN_UNDEF":
                    names.add(symbol.name)
    return names


def ptxas_problem(ptx: bytes, arch: str, tmp_path) -> str | None:
    """None when ptxas assembles the PTX for `arch` (or is not installed), else its log."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    source = tmp_path / f"kernels_{arch}.ptx"
    source.write_bytes(ptx)
    result = subprocess.run([ptxas, f"-arch={arch}", str(source), "-o", str(tmp_path / f"{arch}.cubin")],
                            capture_output=True, text=True, timeout=600)
    return None if result.returncode == 0 else result.stderr


def check_cuda_object(data: bytes, archs, tmp_path) -> container.KernelObject:
    """Reads a cuda .ko and checks every target's cubin and PTX against the kernels' launches."""
    kernel_object = container.read(data, "<test>")
    assert [t.cpu for t in kernel_object.targets] == list(archs)
    symbols = {launch.symbol for info in kernel_object.kernels for launch in info.launches}
    for index, target in enumerate(kernel_object.targets):
        assert target.triple == "nvptx64-nvidia-cuda" and target.object_format == "cubin"
        defined = cubin_symbols(kernel_object.objects[index])
        assert symbols <= defined, sorted(symbols - defined)[:5]
        ptx = kernel_object.ptx[index]
        assert f".target {target.cpu}".encode() in ptx
        for symbol in symbols:
            assert f".entry {symbol}(".encode() in ptx
        if shutil.which("ptxas"):
            assert ptxas_problem(ptx, target.cpu, tmp_path) is None
    return kernel_object
