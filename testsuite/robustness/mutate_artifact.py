"""Mutators for the binary artifacts (.vmx, .ko, .vmo), layer by layer.

ARTIFACT_LAYERS is the table: for each kind of file, the layers a mutation may hit,
from the raw file down to a field inside an embedded object. Most layers reseal
what they changed (mutate_bytes.py: the SHA-256 of a .vmx or .ko, the CRC-32 of a
.vmo, and in a .vmx the manifest's hashes of its embedded files), so that the
mutation is seen by the structural checks under the checksum; some leave the seal
stale, which the checksum must catch. A change to what a kernel object's code does that
keeps every structure in bounds (a symbol moved within its section, a relocation
retargeted, another model's object with the same entry symbols) is tampering, which no
structural check can see: those keep the manifest's code hashes stale, and the hash
check must refuse them (mutate_elf.py says which ELF mutations these are). The label of
a mutation names every layer it went through, e.g. `vmx/embedded-ko/elf-symbol:st_shndx`.
"""

from __future__ import annotations

import hashlib
import json
import struct

from mutate_bytes import (BYTE_MUTATORS, SECTION, Container, build_vmo, interesting_value, reseal, vmo_sections)
from mutate_elf import defined_functions, is_elf64, mutate_elf

MANIFEST, VMX_BYTECODE, VMX_KERNELS = 1, 2, 3
KO_OBJECT = 2
SECTION_NAMES = ("globals", "memory-scopes", "constants", "bytecode")  # of a .vmo, in order


def _bytes(data: bytes, rng) -> tuple[bytes, str]:
    name = rng.choice(sorted(BYTE_MUTATORS))
    return BYTE_MUTATORS[name](data, rng), name


def _maybe_reseal(data: bytes, kind: str, rng, chance: float) -> tuple[bytes, str]:
    return (reseal(data, kind), "+reseal") if rng.random() < chance else (data, "")


# ---- layers every kind has ------------------------------------------------------------------

def whole_file(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    mutated, name = _bytes(data, rng)
    mutated, sealed = _maybe_reseal(mutated, kind, rng, 0.5)
    return mutated, name + sealed


# ---- .vmx and .ko: the container -------------------------------------------------------------

def section_table(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    """One field of the header (count, version) or of a section-table entry, resealed mostly."""
    count = struct.unpack_from("<I", data, 12)[0]
    where = rng.choice(["count", "version"] + ["entry"] * 4)
    if where == "count":
        mutated = data[:12] + struct.pack("<I", interesting_value(rng, count, 32)) + data[16:]
    elif where == "version":
        mutated = data[:8] + struct.pack("<HH", rng.randrange(3), rng.randrange(6)) + data[12:]
    else:
        number = rng.randrange(count)
        offset, width = rng.choice(((0, 4), (4, 4), (8, 8), (16, 8)))
        at = 56 + SECTION.size * number + offset
        value = rng.choice((interesting_value(rng, len(data), 8 * width), 4, 3, 2, 1))
        mutated = data[:at] + value.to_bytes(width, "little") + data[at + width:]
        where = f"entry{number}.{ {0: 'kind', 4: 'index', 8: 'offset', 16: 'size'}[offset]}"
    mutated, sealed = _maybe_reseal(mutated, kind, rng, 0.8)
    return mutated, f"{where}{sealed}"


def _json_leaves(value, path=()):
    yield path, value
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _json_leaves(child, path + (key,))


def _json_replacement(value, rng):
    if isinstance(value, bool) or not isinstance(value, (int, str, list, dict)):
        return rng.choice((0, "", None, [], 2))
    if isinstance(value, int):
        return rng.choice((-1, 0, value + 1, value - 1, 1 << 31, 1 << 63, 1 << 64, 10 ** 30, -(1 << 63) - 1, 1.5,
                           str(value), None, True))
    if isinstance(value, str):
        return rng.choice(("", "x" * 10000, value + "x", value[:-1], 0, None, [value], "\0", "../../" + value))
    if isinstance(value, list):
        return rng.choice(([], value + value[-1:], value[:-1], value[::-1], {}, "list", value * 50))
    return rng.choice(({}, [], None, {key: value[key] for key in list(value)[1:]}, {**value, "extra": 1}))


def mutate_json(document, rng):
    """The document with one node replaced (a leaf changed, a key dropped, an element doubled)."""
    path, value = rng.choice(list(_json_leaves(document)))
    replacement = _json_replacement(value, rng)
    if not path:
        return replacement, "root"
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = replacement
    return document, ".".join(str(key) for key in path)


def manifest(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    container = Container.parse(data)
    entry = next(s for s in container.sections if s[0] == MANIFEST)
    if rng.random() < 0.15:
        entry[2], where = rng.choice(((b"", "empty"), (b"{", "cut"), (b"\xff\xfe", "not-utf8"), (b"[]", "array"),
                                      (entry[2] * 2, "twice")))
    else:
        document, where = mutate_json(json.loads(entry[2]), rng)
        entry[2] = json.dumps(document, sort_keys=True, indent=1).encode()
    return container.build(), where


def payload(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    """The bytes of one non-manifest section mutated; the container rebuilt and resealed."""
    container = Container.parse(data)
    entry = rng.choice([s for s in container.sections if s[0] != MANIFEST])
    entry[2], name = _bytes(entry[2], rng)
    return container.build(), f"kind{entry[0]}:{name}"


def _rehash(container: Container, old: bytes, new: bytes) -> None:
    """Every record of `old` in the manifest (its SHA-256 and size) made to describe `new`."""
    entry = next(s for s in container.sections if s[0] == MANIFEST)
    old_hash, new_hash = hashlib.sha256(old).hexdigest(), hashlib.sha256(new).hexdigest()
    document = json.loads(entry[2])
    for _, node in _json_leaves(document):
        if isinstance(node, dict) and old_hash in node.values():
            for key in [k for k, v in node.items() if v == old_hash]:
                node[key] = new_hash
            if node.get("size") == len(old):
                node["size"] = len(new)
    entry[2] = json.dumps(document, sort_keys=True, indent=1).encode()


# ---- .ko: the native objects -----------------------------------------------------------------

def elf(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    """One ELF-aware mutation of a native object (bytes at random where it is no ELF64),
    the code hashes recomputed unless the mutation is tampering (the module docstring)."""
    container = Container.parse(data)
    objects = [s for s in container.sections if s[0] == KO_OBJECT]
    entry = rng.choice(objects)
    old = entry[2]
    result = mutate_elf(old, rng)
    entry[2], name, tampering = result if result is not None else (*_bytes(old, rng), True)
    if tampering:
        return container.build(), name + "+stale-code-hashes"
    _rehash(container, old, entry[2])
    return container.build(), name


def _entry_symbols(container: Container) -> set[str]:
    document = json.loads(next(s for s in container.sections if s[0] == MANIFEST)[2])
    return {kernel["symbol"] for kernel in document.get("kernels", ())}


def transplant(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    """A native object of another model under this one's metadata, resealed. The code
    hashes are recomputed only where the object lacks one of the kernels' entry symbols
    (the structural checks must refuse it); one that defines them all is tampering."""
    container = Container.parse(data)
    theirs = [s[2] for donor in donors.get("ko", ()) for s in Container.parse(donor).sections if s[0] == KO_OBJECT]
    mine = [s for s in container.sections if s[0] == KO_OBJECT]
    if not theirs:
        return whole_file(kind, data, rng, donors)
    entry = rng.choice(mine)
    old, entry[2] = entry[2], rng.choice(theirs)
    if rng.random() < 0.5 and is_elf64(entry[2]) and not _entry_symbols(container) <= defined_functions(entry[2]):
        _rehash(container, old, entry[2])
        return container.build(), "object+code-hashes"
    return container.build(), "object"


# ---- .vmx: the embedded files ----------------------------------------------------------------

def embedded(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    """The embedded .vmo or one embedded .ko mutated by its own layers; the manifest's record
    of it updated (mostly) and the .vmx resealed."""
    container = Container.parse(data)
    entry = rng.choice([s for s in container.sections if s[0] in (VMX_BYTECODE, VMX_KERNELS)])  # not a signature
    inner = "vmo" if entry[0] == VMX_BYTECODE else "ko"
    old = entry[2]
    entry[2], label = mutate_artifact(inner, old, rng, donors)
    if rng.random() < 0.85:
        _rehash(container, old, entry[2])
    else:
        label += "+stale-manifest"
    return container.build(), f"embedded-{inner}/{label}"


# ---- .vmo: sections, function table, instruction words ---------------------------------------

def vmo_section(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    header, payloads = vmo_sections(data)
    number = rng.randrange(4)
    payloads[number], name = _bytes(payloads[number], rng)
    return build_vmo(header, payloads), f"{SECTION_NAMES[number]}:{name}"


def _function_fields(globals_payload: bytes) -> list[tuple[str, int]]:
    """(field, offset) of every i64 field of every function in the globals section."""
    fields, position = [], 8
    for _ in range(int.from_bytes(globals_payload[:8], "little")):
        position += 4
        position += 8 + int.from_bytes(globals_payload[position:position + 8], "little")
        for name in ("start_instr", "end_instr", "num_args", "register_file_size"):
            fields.append((name, position))
            position += 8
        for _ in range(int.from_bytes(globals_payload[position:position + 8], "little")):
            position += 8
            position += 8 + int.from_bytes(globals_payload[position:position + 8], "little")
        position += 8
    return fields


def function_table(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    header, payloads = vmo_sections(data)
    fields = _function_fields(payloads[0])
    if not fields:
        return vmo_section(kind, data, rng, donors)
    name, at = rng.choice(fields)
    value = rng.choice((interesting_value(rng, 64), 1 << 20, -1 % (1 << 64), 10 ** 6))
    payloads[0] = payloads[0][:at] + struct.pack("<Q", value % (1 << 64)) + payloads[0][at + 8:]
    return build_vmo(header, payloads), name


def instruction_word(kind: str, data: bytes, rng, donors) -> tuple[bytes, str]:
    """One 64-bit word of the bytecode: its kind byte or its value set to an edge."""
    header, payloads = vmo_sections(data)
    offsets = int.from_bytes(payloads[3][:8], "little")
    start = 8 + 8 * offsets + 8
    words = int.from_bytes(payloads[3][start - 8:start], "little")
    if not words:
        return vmo_section(kind, data, rng, donors)
    at = start + 8 * rng.randrange(words)
    if rng.random() < 0.4:
        at, value, width, what = at + 7, rng.choice((0, 1, 2, 3, 4, 0x7F, 0xFF)), 1, "kind"
    else:
        value, width, what = interesting_value(rng, words, 56), 7, "value"
    body = payloads[3]
    payloads[3] = body[:at] + value.to_bytes(width, "little") + body[at + width:]
    return build_vmo(header, payloads), what


ARTIFACT_LAYERS = {
    "vmx": {"file": whole_file, "table": section_table, "manifest": manifest, "payload": payload,
            "embedded": embedded},
    "ko": {"file": whole_file, "table": section_table, "manifest": manifest, "payload": payload, "elf": elf,
           "transplant": transplant},
    "vmo": {"file": whole_file, "section": vmo_section, "function": function_table,
            "instruction": instruction_word},
}
# How often each layer is drawn: the deep layers, where the structural checks are, most.
LAYER_WEIGHTS = {"file": 2, "table": 2, "manifest": 2, "payload": 1, "embedded": 4, "elf": 5, "transplant": 1,
                 "section": 2, "function": 2, "instruction": 2}


def mutate_artifact(kind: str, data: bytes, rng, donors: dict) -> tuple[bytes, str]:
    """One mutation of a well-formed file of `kind`: (bytes, label). `donors` maps a kind to
    other well-formed files of that kind (for transplants)."""
    layers = sorted(ARTIFACT_LAYERS[kind])
    layer = rng.choices(layers, weights=[LAYER_WEIGHTS[name] for name in layers])[0]
    mutated, label = ARTIFACT_LAYERS[kind][layer](kind, data, rng, donors)
    return mutated, label if layer == "embedded" else f"{layer}:{label}"
