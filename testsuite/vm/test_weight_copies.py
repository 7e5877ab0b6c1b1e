"""A weight is copied no more than it must be on its way into an artifact: the constant
pool keeps a frozen aligned array as it is, the .vmo and .vmx writers copy a payload once,
into the file, and the linker reads the bytecode's tensors as views. Before, a weight was
copied about five times in each of the bytecode and link stages, which for a model of a
few hundred megabytes took seconds and gigabytes."""

import tracemalloc

import numpy as np

from relax.ir import expr as rx
from relax.runtime.allocator import aligned_array, is_aligned
from relax.vm import Executable
from relax.vm.artifact import vmx
from relax.vm.bytecode.constant_pool import canonical_constant, constant_key
from relax.vm.bytecode.exec_builder import ExecBuilder

MB = 1 << 20
WEIGHT_BYTES = 16 * MB


def _weight() -> np.ndarray:
    weight = aligned_array((WEIGHT_BYTES // 4,), np.float32, zeroed=False)
    weight[:] = np.arange(weight.size, dtype=np.float32)
    return rx.frozen(weight)


def _peak_while(function) -> int:
    """The most memory (traced: numpy data and Python objects) `function` held at once."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = function()
        return tracemalloc.get_traced_memory()[1] - before, result
    finally:
        tracemalloc.stop()


def _executable_with(weight: np.ndarray) -> Executable:
    builder = ExecBuilder()
    with builder.function("main", num_inputs=0):
        builder.emit_call("vm.builtin.make_tuple", args=[builder.convert_constant(weight)], dst=builder.r(0))
        builder.emit_ret(builder.r(0))
    return builder.get()


def test_the_pool_keeps_a_frozen_aligned_array():
    weight = _weight()
    assert is_aligned(weight) and canonical_constant(weight) is weight
    writable = np.ones(1000, np.float32)
    assert canonical_constant(writable) is not writable
    view = writable[:]  # read-only, over a buffer someone can still write
    view.flags.writeable = False
    kept = canonical_constant(view)
    assert kept is not view and not np.shares_memory(kept, writable)


def test_equal_tensors_are_one_constant_without_copies():
    weight = _weight()
    twin = rx.frozen(weight.copy())
    other = weight.copy()
    other[len(other) // 3] += 1  # off every sample the key hashes
    assert constant_key(canonical_constant(weight)) == constant_key(canonical_constant(twin))
    assert constant_key(canonical_constant(weight)) != constant_key(canonical_constant(rx.frozen(other)))


def test_the_vmo_writer_copies_a_weight_once():
    exe = _executable_with(_weight())
    peak, data = _peak_while(exe.save_to_bytes)
    assert len(data) > WEIGHT_BYTES
    assert peak < 1.5 * WEIGHT_BYTES, f"{peak / MB:.1f} MB held for a {WEIGHT_BYTES / MB:.0f} MB weight"
    assert Executable.load_from_bytes(data).constants[0].tobytes() == exe.constants[0].tobytes()


def test_the_linker_reads_tensors_as_views_and_the_vmx_writer_copies_once():
    data = _executable_with(_weight()).save_to_bytes()
    peak, exe = _peak_while(lambda: Executable.load_from_bytes(data, views=True))
    assert peak < 0.5 * WEIGHT_BYTES and np.shares_memory(exe.constants[0], np.frombuffer(data, np.uint8))
    assert not exe.constants[0].flags.writeable
    artifact = vmx.Artifact(_link_info(data), data, ())
    peak, written = _peak_while(lambda: vmx.write(artifact))
    assert peak < 1.5 * WEIGHT_BYTES, f"{peak / MB:.1f} MB held for a {WEIGHT_BYTES / MB:.0f} MB weight"
    assert vmx.read(written, "w.vmx").bytecode == data


def _link_info(bytecode: bytes) -> vmx.LinkInfo:
    inputs = ({"kind": "vmo", "name": "w.vmo", "size": len(bytecode), "sha256": vmx.sha256_hex(bytecode)},)
    return vmx.LinkInfo(producer=vmx.PRODUCER, flags={"allow_undefined": [], "target_check": False}, inputs=inputs,
                        targets=(), symbols=())
