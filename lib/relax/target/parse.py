"""Reading targets: TVM's classic strings, JSON dictionaries and tags.

    llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -mattr=+sve
    cuda -arch=sm_90
    {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mattr": ["+avx2"]}
    aws/graviton3            (a tag; options may follow: `aws/graviton3 -num-cores=8`)

Every spelling ends in `_finish`, which fills defaults and checks the result
against LLVM: an unknown kind, option, triple, CPU or feature is a UserError that
lists the valid values.
"""

from __future__ import annotations

import difflib
import json
from functools import lru_cache

from ..diagnostics import UserError
from . import llvm_info
from .options import DEFAULT_CUDA_ARCH, KINDS, default_keys, option, option_names
from .tags import HOST_TAG, TAGS, tag_names
from .target import Target

_PTX_TRIPLE = "nvptx64-nvidia-cuda"
_SAME_ARCH = {"arm64": "aarch64", "amd64": "x86_64"}


def parse_target(spec, host=None) -> Target:
    """A Target from a Target, a dict, a JSON text, a tag or a classic string."""
    host_target = parse_target(host) if host is not None else None
    if isinstance(spec, Target):
        target = spec
    elif isinstance(spec, dict):
        target = _from_config(spec)
    elif isinstance(spec, str):
        target = _from_text(spec.strip())
    else:
        raise UserError(f"a target is a string or a dictionary, not {type(spec).__name__}")
    if host_target is not None:
        if target.kind != "cuda":
            raise UserError(f"a '{target.kind}' target takes no separate host")
        target = Target(target.kind, target.attrs, _check_host(host_target))
    return target


@lru_cache(maxsize=None)
def host_target() -> Target:
    """This machine as LLVM sees it (the `host` tag)."""
    attrs = {"mtriple": llvm_info.host_triple(), "mcpu": llvm_info.host_cpu(),
             "mattr": llvm_info.host_features(), "tag": HOST_TAG}
    return _finish("llvm", attrs, None)


# -- spellings ---------------------------------------------------------------------
def _from_text(text: str) -> Target:
    if not text:
        raise UserError(f"empty target; valid kinds: {', '.join(KINDS)}")
    if text.startswith("{"):
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"target is not valid JSON: {exc.msg} at column {exc.colno}") from None
        if not isinstance(config, dict):
            raise UserError("a JSON target must be an object with a 'kind'")
        return _from_config(config)
    head, *words = text.split()
    if head == HOST_TAG or head in TAGS:
        return _from_tag(head, _options_of(words))
    if "/" in head:
        close = difflib.get_close_matches(head, tag_names(), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UserError(f"unknown target tag '{head}'{hint}; valid tags: {', '.join(tag_names())}")
    return _finish(_check_kind(head), _options_of(words), None)


def _options_of(words: list[str]) -> dict[str, object]:
    """`-name=value` and bare `-flag` words into a dict of raw values."""
    options: dict[str, object] = {}
    for word in words:
        if not word.startswith("-") or word in ("-", "--"):
            raise UserError(f"target option '{word}' must look like -name=value")
        name, eq, value = word.lstrip("-").partition("=")
        options[name] = value if eq else True
    return options


def _from_tag(tag: str, overrides: dict) -> Target:
    if tag == HOST_TAG:
        base = host_target()
        config = {**base.to_json(), **overrides}
        return _from_config(config)
    config = {**TAGS[tag], **overrides, "tag": tag}
    return _from_config(config)


def _from_config(config: dict) -> Target:
    config = dict(config)
    if "kind" not in config:
        if "tag" in config and len(config) == 1:
            return _from_tag(config["tag"], {}) if config["tag"] in TAGS else _from_text(config["tag"])
        raise UserError("a target dictionary needs a 'kind'")
    kind = _check_kind(config.pop("kind"))
    host = config.pop("host", None)
    host_target = _check_host(parse_target(host)) if host is not None else None
    if host_target is not None and kind != "cuda":
        raise UserError(f"a '{kind}' target takes no separate host")
    return _finish(kind, config, host_target)


def _check_kind(kind) -> str:
    if kind not in KINDS:
        raise UserError(f"unknown target kind '{kind}'; valid kinds: {', '.join(KINDS)}")
    return kind


def _check_host(host: Target) -> Target:
    if host.kind != "llvm":
        raise UserError(f"the host of a cuda target must be an llvm target, not '{host.kind}'")
    return host


# -- values ------------------------------------------------------------------------
def _coerce(kind: str, name: str, value):
    opt = option(kind, name)
    if opt is None:
        raise UserError(f"unknown option '{name}' for target kind '{kind}'; valid options: "
                        f"{', '.join(option_names(kind))}")
    try:
        if opt.type == "list":
            items = value.split(",") if isinstance(value, str) else list(value)
            return opt.name, tuple(str(item).strip() for item in items if str(item).strip())
        if opt.type == "int":
            if isinstance(value, bool):
                raise ValueError
            return opt.name, int(value)
        if opt.type == "bool":
            if isinstance(value, bool):
                return opt.name, value
            if str(value).lower() in ("true", "1"):
                return opt.name, True
            if str(value).lower() in ("false", "0"):
                return opt.name, False
            raise ValueError
        if not isinstance(value, str):
            raise ValueError
        return opt.name, value
    except (TypeError, ValueError):
        raise UserError(f"option '{opt.name}' of target kind '{kind}' takes a {opt.type} value, "
                        f"not {value!r}") from None


def _finish(kind: str, raw: dict, host: Target | None) -> Target:
    values = {opt.name: opt.default for opt in KINDS[kind]}
    given = set()
    for name, value in raw.items():
        key, coerced = _coerce(kind, name, value)
        values[key] = coerced
        given.add(key)
    if kind == "llvm":
        _finish_llvm(values)
    else:
        _finish_cuda(values, given)
        host = host if host is not None else host_target()
    if not values["keys"]:
        values["keys"] = default_keys(kind, values["mtriple"])
    return Target(kind, tuple(sorted(values.items())), host)


def _finish_llvm(values: dict) -> None:
    triple = values["mtriple"] or llvm_info.host_triple()
    values["mtriple"] = triple
    if not llvm_info.is_known_triple(triple):
        raise UserError(f"unknown target triple '{triple}'; this LLVM ({llvm_info.llvm_version()}) "
                        f"knows the architectures: {', '.join(llvm_info.known_arches())}")
    if values["mcpu"] == "native":
        host_arch = llvm_info.triple_arch(llvm_info.host_triple())
        arch = llvm_info.triple_arch(triple)
        if _SAME_ARCH.get(arch, arch) != _SAME_ARCH.get(host_arch, host_arch):
            raise UserError(f"-mcpu=native describes this {host_arch} host, not a {arch} triple")
        values["mcpu"] = llvm_info.host_cpu()
        values["mattr"] = llvm_info.host_features() + values["mattr"]
    for feature in values["mattr"]:
        if feature[:1] not in ("+", "-") or len(feature) < 2:
            raise UserError(f"feature '{feature}' in -mattr must start with '+' or '-' (as in +avx2)")
    if not 0 <= values["opt-level"] <= 3:
        raise UserError(f"opt-level must be 0, 1, 2 or 3, not {values['opt-level']}")
    _check_processor(triple, values["mcpu"], values["mattr"])


def _finish_cuda(values: dict, given: set) -> None:
    arch = values["arch"] or _detected_cuda_arch()
    values["arch"] = arch
    _check_processor(_PTX_TRIPLE, arch, (), what="CUDA architecture")
    if "max_threads_per_block" in given and "max_num_threads" not in given:
        values["max_num_threads"] = values["max_threads_per_block"]
    elif "max_num_threads" in given and "max_threads_per_block" not in given:
        values["max_threads_per_block"] = values["max_num_threads"]


def _check_processor(triple: str, cpu: str, features: tuple, what: str = "CPU") -> None:
    bad_cpus, bad_features = llvm_info.rejected(triple, cpu, tuple(features))
    tables = None
    if bad_cpus:
        tables = llvm_info.processor_tables(triple)
        raise UserError(f"unknown {what} '{cpu}' for {triple}{_hint(cpu, tables['cpus'])}; "
                        f"valid values: {', '.join(tables['cpus'])}")
    if bad_features:
        tables = llvm_info.processor_tables(triple)
        names = [f"+{name}" for name in tables["features"]]
        shown = ", ".join(repr(f) for f in bad_features)
        raise UserError(f"unknown feature {shown} for {triple}{_hint(bad_features[0], names)}; "
                        f"valid features (+ to enable, - to disable): {', '.join(tables['features'])}")


def _hint(name: str, valid) -> str:
    close = difflib.get_close_matches(name, list(valid), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _detected_cuda_arch() -> str:
    """The local GPU's compute capability when cupy sees one, else the default."""
    try:
        import cupy  # noqa: PLC0415 - optional; only for a cuda target without -arch

        major, minor = cupy.cuda.Device(0).compute_capability[:2]
        return f"sm_{major}{minor}"
    except Exception:  # noqa: BLE001 - no cupy, no driver or no GPU all mean "unknown"
        return DEFAULT_CUDA_ARCH
