"""The Target value: a kind ("llvm" or "cuda"), its options, and for cuda a host.

A Target is frozen and compares by value. It holds every option of its kind (the
defaults filled in, see options.py) as a tuple of (name, value) pairs; typed
properties read the common ones. `str(target)` is the normalized classic string
(kind, `-keys`, then every non-default option in name order), the same for every
spelling of the same target, used by `-v` and in metadata; `to_json()` is TVM's
dictionary form, host included.

Construct targets with `Target.parse(spec)` (a string, a JSON text, a tag or a
dict) or `Target.host()`; parse.py does the work.
"""

from __future__ import annotations

from ..records import record
from .options import KINDS


def _format_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@record
class Target:
    """A compilation target: `kind`, its options as sorted pairs, and the host."""

    kind: str
    attrs: tuple[tuple[str, object], ...]
    host_target: "Target | None" = None

    # -- construction -------------------------------------------------------------
    @staticmethod
    def parse(spec, host=None) -> "Target":
        """A target from a classic string, a JSON text, a tag or a dict."""
        from .parse import parse_target

        return parse_target(spec, host=host)

    @staticmethod
    def host() -> "Target":
        """This machine: the process triple, the host CPU and its features."""
        from .parse import host_target

        return host_target()

    # -- options ------------------------------------------------------------------
    def get(self, name: str, default=None):
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def mtriple(self) -> str:
        return self.get("mtriple", "")

    @property
    def mcpu(self) -> str:
        return self.get("mcpu", "")

    @property
    def mattr(self) -> tuple[str, ...]:
        return self.get("mattr", ())

    @property
    def mabi(self) -> str:
        return self.get("mabi", "")

    @property
    def num_cores(self) -> int:
        return self.get("num-cores", 0)

    @property
    def opt_level(self) -> int:
        return self.get("opt-level", 3)

    @property
    def fast_math(self) -> bool:
        return self.get("fast-math", False)

    @property
    def arch(self) -> str:
        return self.get("arch", "")

    @property
    def max_threads_per_block(self) -> int:
        return self.get("max_threads_per_block", 0)

    @property
    def max_shared_memory_per_block(self) -> int:
        return self.get("max_shared_memory_per_block", 0)

    @property
    def thread_warp_size(self) -> int:
        return self.get("thread_warp_size", 0)

    @property
    def keys(self) -> tuple[str, ...]:
        return self.get("keys", ())

    @property
    def tag(self) -> str:
        return self.get("tag", "")

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    @property
    def features(self) -> str:
        """The LLVM feature string (`+a,-b`) for a target machine."""
        return ",".join(self.mattr)

    def _non_default(self) -> list[tuple[str, object]]:
        defaults = {opt.name: opt.default for opt in KINDS[self.kind]}
        return [(k, v) for k, v in self.attrs if k not in ("keys", "tag") and v != defaults.get(k)]

    # -- printing -----------------------------------------------------------------
    def __str__(self) -> str:
        parts = [self.kind, f"-keys={_format_value(self.keys)}"]
        parts += [f"-{name}={_format_value(value)}" for name, value in self._non_default()]
        return " ".join(parts)

    def __repr__(self) -> str:
        host = f", host={str(self.host_target)!r}" if self.host_target else ""
        return f"Target({str(self)!r}{host})"

    def to_json(self) -> dict:
        """TVM's dictionary form, JSON-ready (lists, not tuples), host included."""
        config: dict = {"kind": self.kind, "keys": list(self.keys)}
        if self.tag:
            config["tag"] = self.tag
        for name, value in self._non_default():
            config[name] = list(value) if isinstance(value, tuple) else value
        if self.host_target is not None:
            config["host"] = self.host_target.to_json()
        return config
