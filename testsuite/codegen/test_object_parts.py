"""Kernels compiled in parts on worker threads (codegen/object_parts.py): the cut depends on
the IR only, any number of workers gives the same bytes, a .ko in several parts (format
0.3) loads from its native objects or its bitcode and computes what numpy does."""

import numpy as np
import pytest
from codegen_tir import elementwise

from relax.codegen import object_parts
from relax.codegen.build_kernels import build_kernel_object, start_kernel_object
from relax.diagnostics import UserError
from relax.ir import tir
from relax.runtime.kernels import container, load_kernel_library
from relax.target import Target

KERNELS = {f"add{i}": elementwise(40 + i, ["float32", "float32"], "float32", tir.Add) for i in range(4)}
KERNELS["tanh"] = elementwise(40, ["float64"], "float64", lambda x: tir.Call("float64", "tir.tanh", (x,)))


def _build(monkeypatch, part_bytes: int, workers: int) -> bytes:
    monkeypatch.setattr(object_parts, "PART_BYTES", part_bytes)
    monkeypatch.setattr(object_parts, "MAX_WORKERS", workers)
    return build_kernel_object(KERNELS, [Target.host()])


@pytest.fixture(scope="module")
def parts_ko():
    with pytest.MonkeyPatch.context() as patch:
        return _build(patch, 1, 2)  # a part per kernel


def test_cut_parts_depends_on_sizes_only():
    texts = ["a" * 10, "b" * 30, "c" * 5, "d" * 50, "e"]
    assert list(object_parts.cut_parts(texts, 40)) == [texts[:2], texts[2:4], texts[4:]]
    assert list(object_parts.cut_parts(texts, 1000)) == [texts]
    assert list(object_parts.cut_parts([], 40)) == []


def test_one_part_is_format_0_5(monkeypatch):
    data = _build(monkeypatch, 1 << 30, 2)
    assert data[8:12] == b"\0\0\x05\0"  # 0.1's layout, with code hashes and kernel signatures
    ko = container.read(data)
    assert ko.parts == {} and len(ko.native_objects(0)) == 1


def test_parts_are_format_0_5(parts_ko):
    assert parts_ko[8:12] == b"\0\0\x05\0"  # 0.3's parts, with code hashes and kernel signatures
    ko = container.read(parts_ko)
    assert len(ko.native_objects(0)) == len(ko.bitcode_parts(0)) == len(KERNELS)
    assert container.write(ko) == parts_ko


def test_workers_do_not_change_the_bytes(monkeypatch, parts_ko):
    assert _build(monkeypatch, 1, 1) == parts_ko
    assert _build(monkeypatch, 1, 4) == parts_ko


def test_start_returns_before_llvm_is_done(monkeypatch, parts_ko):
    monkeypatch.setattr(object_parts, "PART_BYTES", 1)
    pending = start_kernel_object(KERNELS, [Target.host()])
    assert pending.result() == parts_ko
    assert pending.result() == parts_ko  # a second result() returns the same bytes


@pytest.mark.parametrize("prefer", ["native", "bitcode"])
def test_parts_load_and_run(parts_ko, prefer):
    library = load_kernel_library(parts_ko, prefer=prefer)
    assert library.compiled_on_load == (prefer == "bitcode")
    for i in range(4):
        x, y = np.arange(40 + i, dtype=np.float32), np.full(40 + i, 2, np.float32)
        out = np.zeros(40 + i, np.float32)
        library.get_function(f"add{i}")(x, y, out)
        np.testing.assert_array_equal(out, x + y)
    v, w = np.linspace(-3, 3, 40), np.zeros(40)
    library.get_function("tanh")(v, w)
    np.testing.assert_allclose(w, np.tanh(v), rtol=1e-15)


def _rewritten(data: bytes, version: tuple[int, int], drop_last: bool = False) -> bytes:
    """`data` re-packed as another format version, or with its last section left out."""
    import hashlib

    header = container.HEADER.unpack_from(data)
    count = header[3]
    table = [container.SECTION.unpack_from(data, container.HEADER.size + container.SECTION.size * i)
             for i in range(count)]
    if drop_last:
        table = table[:-1]
    body = b"".join(container.SECTION.pack(*entry) for entry in table)
    body += b"\0" * (container.SECTION.size * (count - len(table)))  # keep the payload offsets valid
    body += data[container.HEADER.size + container.SECTION.size * count:]
    digest = hashlib.sha256(body).digest()
    return container.HEADER.pack(container.MAGIC, *version, len(table), container.HEADER.size + len(body),
                                 digest) + body


def test_several_objects_need_format_0_3(parts_ko):
    with pytest.raises(UserError, match="target 0 has 5 object sections"):
        container.read(_rewritten(parts_ko, (0, 1)))


def test_parts_need_an_object_and_a_bitcode_each(parts_ko):
    with pytest.raises(UserError, match="5 native objects and 4 bitcode sections"):
        container.read(_rewritten(parts_ko, (0, 3), drop_last=True))


def test_the_switch_interval_is_short_while_kernels_are_generated(monkeypatch):
    """The workers wait for the GIL after every LLVM call while Python generates the next
    kernels: the interval is short then, and the caller's own again afterwards, error or not."""
    import sys

    from relax.codegen import build_kernels

    seen = []
    generate = build_kernels.generate_kernel_groups

    def recording(*args, **kwargs):
        seen.append(sys.getswitchinterval())
        yield from generate(*args, **kwargs)

    monkeypatch.setattr(build_kernels, "generate_kernel_groups", recording)
    before = sys.getswitchinterval()
    start_kernel_object(KERNELS, [Target.host()]).result()
    assert seen and max(seen) <= object_parts.GENERATING_SWITCH_INTERVAL
    assert sys.getswitchinterval() == before

    def failing(*args, **kwargs):
        raise UserError("codegen: no")
        yield

    monkeypatch.setattr(build_kernels, "generate_kernel_groups", failing)
    with pytest.raises(UserError):
        start_kernel_object(KERNELS, [Target.host()])
    assert sys.getswitchinterval() == before
