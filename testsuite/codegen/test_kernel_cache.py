"""The on-disk kernel cache: a hit gives the very bytes of the build, keys change with
what the object depends on, corrupt entries are rebuilt, and it can be turned off."""

import subprocess
import sys

import pytest
from codegen_tir import elementwise

from relax.codegen import build_kernels, kernel_cache
from relax.codegen.build_kernels import build_kernel_object
from relax.codegen.kernel_cache import KernelCache
from relax.ir import tir
from relax.target import Target
from relax.ir.pass_infra import PassContext

KERNELS = {"add": elementwise(40, ["float32", "float32"], "float32", tir.Add)}


@pytest.fixture()
def cache(tmp_path):
    return KernelCache(tmp_path / "kernels")


def _entries(cache):
    return sorted(cache.directory.glob("*.ko")) if cache.directory.exists() else []


def _no_build(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("built although the cache holds the object")

    monkeypatch.setattr(build_kernels, "_compile", fail)


def test_hit_returns_the_stored_bytes_without_building(cache, monkeypatch):
    built = build_kernel_object(KERNELS, [Target.host()], cache=cache)
    assert built == build_kernel_object(KERNELS, [Target.host()]) and len(_entries(cache)) == 1
    _no_build(monkeypatch)
    assert build_kernel_object(KERNELS, [Target.host()], cache=cache) == built


def test_key_follows_kernels_targets_and_pass_context(cache):
    build_kernel_object(KERNELS, [Target.host()], cache=cache)
    other = {"add": elementwise(41, ["float32", "float32"], "float32", tir.Add)}
    build_kernel_object(other, [Target.host()], cache=cache)
    build_kernel_object(KERNELS, [Target.parse("llvm -mtriple=aarch64-linux-gnu")], cache=cache)
    with PassContext(opt_level=0):
        build_kernel_object(KERNELS, [Target.host()], cache=cache)
    assert len(_entries(cache)) == 4


def test_source_edits_change_the_key(monkeypatch):
    funcs, targets = dict(KERNELS), [Target.host()]
    specs = [build_kernels.target_spec(t) for t in targets]
    context = PassContext()
    before = kernel_cache.cache_key(funcs, targets, specs, context)
    assert kernel_cache.cache_key(funcs, targets, specs, context) == before
    assert kernel_cache.cache_key(funcs, targets, specs, PassContext(opt_level=0)) != before
    assert kernel_cache.cache_key(funcs, targets, specs, PassContext(config={"k": "v"})) != before
    monkeypatch.setattr(kernel_cache, "compiler_fingerprint", lambda: "another compiler")
    assert kernel_cache.cache_key(funcs, targets, specs, context) != before


@pytest.mark.parametrize("damage", ["flip", "truncate", "magic", "empty"])
def test_corrupt_entries_are_rebuilt(cache, damage):
    built = build_kernel_object(KERNELS, [Target.host()], cache=cache)
    (entry,) = _entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[-100] ^= 0x40
    elif damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "magic":
        data[:8] = b"NOTACACH"
    else:
        data = b""
    entry.write_bytes(bytes(data))
    key = entry.stem
    assert cache.get(key) is None
    assert build_kernel_object(KERNELS, [Target.host()], cache=cache) == built
    assert cache.get(key) == built


def test_old_entries_are_evicted(cache, monkeypatch):
    monkeypatch.setattr(kernel_cache, "MAX_ENTRIES", 3)
    for index in range(5):
        cache.put(f"key{index}", b"x" * index)
    assert [p.stem for p in _entries(cache)] == ["key2", "key3", "key4"]
    assert cache.get("key4") == b"xxxx"


def test_environment_turns_it_off_and_places_it(monkeypatch, tmp_path):
    monkeypatch.delenv("RELAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("RELAX_CACHE", "1")
    assert kernel_cache.default_cache().directory == tmp_path / "relax" / "kernels"
    monkeypatch.setenv("RELAX_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert kernel_cache.default_cache().directory == tmp_path / "elsewhere"
    for off in ("0", "off", "false", "NO"):
        monkeypatch.setenv("RELAX_CACHE", off)
        assert kernel_cache.default_cache() is None


ADD_MODULE = '''\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8,), "float32"), y: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        z = R.add(x, y)
        return z
'''


def _relaxc(tmp_path, *args, env_cache="1"):
    env = {"RELAX_CACHE_DIR": str(tmp_path / "cache"), "RELAX_CACHE": env_cache, "PATH": "/usr/bin:/bin"}
    source = tmp_path / "add.relax"
    source.write_text(ADD_MODULE)
    return subprocess.run([sys.executable, "-m", "relaxc", str(source), "-o", str(tmp_path / "add.vmx"), *args],
                          env=env, capture_output=True, text=True, check=True)


def test_relaxc_fills_and_reads_the_cache_and_no_cache_bypasses_it(tmp_path):
    _relaxc(tmp_path, "--no-cache")
    assert not (tmp_path / "cache").exists()
    cold = (tmp_path / "add.vmx").read_bytes()
    _relaxc(tmp_path, env_cache="0")
    assert not (tmp_path / "cache").exists()
    _relaxc(tmp_path)
    assert len(list((tmp_path / "cache").glob("*.ko"))) == 1
    assert (tmp_path / "add.vmx").read_bytes() == cold
    _relaxc(tmp_path)
    assert (tmp_path / "add.vmx").read_bytes() == cold
