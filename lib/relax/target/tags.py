"""Target tags: short names for real machines, each expanding to a JSON dictionary.

`host` is special: it expands to this machine as LLVM detects it (see
`Target.host()`). Every other tag is a row of TAGS below; a tag's dictionary is
parsed exactly like a JSON target, so `--target aws/graviton3` and
`--target '{"kind": "llvm", "mtriple": "aarch64-linux-gnu", ...}'` give equal targets
(apart from the remembered `tag`).
"""

from __future__ import annotations

_AARCH64 = "aarch64-linux-gnu"
_X86_64 = "x86_64-linux-gnu"


def _arm(cpu: str, cores: int, *features: str) -> dict:
    return {"kind": "llvm", "mtriple": _AARCH64, "mcpu": cpu, "mattr": list(features), "num-cores": cores}


def _x86(cpu: str, cores: int) -> dict:
    return {"kind": "llvm", "mtriple": _X86_64, "mcpu": cpu, "num-cores": cores}


def _gpu(arch: str, shared: int, host: dict | None = None, **extra) -> dict:
    config = {"kind": "cuda", "arch": arch, "max_threads_per_block": 1024,
              "max_shared_memory_per_block": shared, "thread_warp_size": 32, **extra}
    if host is not None:
        config["host"] = host
    return config


HOST_TAG = "host"

TAGS: dict[str, dict] = {
    # Arm servers.
    "aws/graviton2": _arm("neoverse-n1", 64, "+neon"),
    "aws/graviton3": _arm("neoverse-v1", 64, "+neon", "+sve"),
    "aws/graviton4": _arm("neoverse-v2", 96, "+neon", "+sve", "+sve2"),
    "ampere/altra": _arm("neoverse-n1", 80, "+neon"),
    "nvidia/grace": _arm("neoverse-v2", 72, "+neon", "+sve", "+sve2"),
    # Arm boards.
    "raspberry-pi/4b-aarch64": _arm("cortex-a72", 4, "+neon"),
    "raspberry-pi/5": _arm("cortex-a76", 4, "+neon"),
    # x86 servers.
    "aws/c5": _x86("skylake-avx512", 48),
    "aws/c7i": _x86("sapphirerapids", 96),
    "aws/c7a": _x86("znver4", 96),
    # NVIDIA GPUs; Jetson boards carry their Arm host.
    "nvidia/jetson-orin": _gpu("sm_87", 49152, _arm("cortex-a78ae", 12, "+neon")),
    "nvidia/jetson-agx-xavier": _gpu("sm_72", 49152, _arm("carmel", 8, "+neon")),
    "nvidia/h100": _gpu("sm_90", 49152, l2_cache_size_bytes=52428800),
    "nvidia/h200": _gpu("sm_90", 49152, l2_cache_size_bytes=52428800),
    "nvidia/a100": _gpu("sm_80", 49152, l2_cache_size_bytes=41943040),
    "nvidia/l4": _gpu("sm_89", 49152),
    "nvidia/rtx-4090": _gpu("sm_89", 49152),
    "nvidia/t4": _gpu("sm_75", 49152),
    "nvidia/v100": _gpu("sm_70", 49152),
}


def tag_names() -> list[str]:
    return [HOST_TAG, *TAGS]
