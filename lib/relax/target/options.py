"""The vocabulary of target kinds and their options, as data.

Each kind lists the options TVM's classic strings and JSON dictionaries accept for
it, with the option's value type and default. Parsing, validation, printing and
`relaxc --list-targets` all read these tables; nothing else repeats them.

Option names are TVM's spellings (`mtriple`, `num-cores`, `max_threads_per_block`);
the parser also accepts `_` for `-` and the reverse, and stores the canonical name.
"""

from __future__ import annotations

from ..records import record



@record
class Option:
    """One option of a target kind: its TVM name, value type and default."""

    name: str
    type: str  # "str", "int", "bool" or "list" (comma-separated in strings)
    default: object
    help: str


_COMMON = (
    Option("keys", "list", (), "dispatch keys, e.g. cpu or cuda,gpu"),
    Option("tag", "str", "", "the tag this target was expanded from"),
    Option("device", "str", "", "the device name"),
    Option("model", "str", "", "the device model"),
    Option("libs", "list", (), "external libraries"),
)

KINDS: dict[str, tuple[Option, ...]] = {
    "llvm": _COMMON + (
        Option("mtriple", "str", "", "the target triple (default: this host's)"),
        Option("mcpu", "str", "", "the CPU; `native` means this host's CPU and features"),
        Option("mattr", "list", (), "features to enable (+f) or disable (-f)"),
        Option("mabi", "str", "", "the ABI, e.g. lp64d"),
        Option("mfloat-abi", "str", "", "soft or hard floating-point ABI"),
        Option("num-cores", "int", 0, "cores for parallel loops (0: all of the host's)"),
        Option("opt-level", "int", 3, "LLVM optimization level 0..3"),
        Option("fast-math", "bool", False, "allow float reassociation in LLVM"),
        Option("vector-width", "int", 0, "preferred vector width in bits (0: the CPU's)"),
        Option("system-lib", "bool", False, "build a system library"),
    ),
    "cuda": _COMMON + (
        Option("arch", "str", "", "the compute capability, e.g. sm_90"),
        Option("max_num_threads", "int", 1024, "threads per block at most"),
        Option("max_threads_per_block", "int", 1024, "threads per block at most"),
        Option("max_shared_memory_per_block", "int", 49152, "shared memory per block in bytes"),
        Option("thread_warp_size", "int", 32, "threads per warp"),
        Option("registers_per_block", "int", 65536, "32-bit registers per block"),
        Option("l2_cache_size_bytes", "int", 0, "L2 cache size in bytes (0: unknown)"),
        Option("mcpu", "str", "", "the PTX processor (defaults to arch)"),
        Option("mtriple", "str", "nvptx64-nvidia-cuda", "the PTX triple"),
    ),
}

DEFAULT_KEYS = {"llvm": ("cpu",), "cuda": ("cuda", "gpu")}

# An llvm target for an Arm triple dispatches to Arm schedules first, as TVM's does.
ARCH_KEYS = (("aarch64", ("arm_cpu", "cpu")), ("arm", ("arm_cpu", "cpu")), ("thumb", ("arm_cpu", "cpu")))


def default_keys(kind: str, triple: str = "") -> tuple[str, ...]:
    for prefix, keys in ARCH_KEYS if kind == "llvm" else ():
        if triple.startswith(prefix):
            return keys
    return DEFAULT_KEYS[kind]

# A compute capability without a GPU to ask and without -arch: TVM asks the local
# device; we do the same when one is present and fall back to this.
DEFAULT_CUDA_ARCH = "sm_80"


def option(kind: str, name: str) -> Option | None:
    """The option `name` of `kind` under either spelling (`num_cores`, `num-cores`)."""
    for candidate in (name, name.replace("_", "-"), name.replace("-", "_")):
        for opt in KINDS[kind]:
            if opt.name == candidate:
                return opt
    return None


def option_names(kind: str) -> list[str]:
    return [opt.name for opt in KINDS[kind]]
