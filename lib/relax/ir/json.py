"""IR <-> JSON text, for any node: a module, a function, an expression, TIR.

The document is a table of nodes, children before parents, and values that refer
to nodes by their index in the table, so a node used in many places (a variable
and all its uses, a buffer and its loads) is written once and loads back as one
object. The output is deterministic: the same IR gives the same bytes.

    {"format": "relax-ir", "version": 1, "sources": ["m.relax"], "root": {"ref": 3}, "nodes": [
    {"type": "tir.Var", "fields": {"name": "n", "dtype": "int64"}, "span": [0, 3, 9, 3, 10]},
    ...]}

A span names its source file by index into "sources", where each file is written once.

Values: null, booleans, integers, strings and lists are themselves; everything else
is a one-key object: {"ref": i} a node, {"tuple": [...]}, {"frozendict": [[k, v], ...]},
{"dict": [[k, v], ...]}, {"float": "nan" | "inf" | "-inf"} (finite floats are plain
numbers), {"ndarray": {"dtype", "shape", "data"}} with the bytes little-endian in
base64, and {"scalar": ...} the same for a numpy scalar. Node classes are looked up
with registry.class_of only: the IR's classes, or a project node class already loaded.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

from ..diagnostics import Span, UserError
from . import dtype as dt
from .field_types import field_type_error
from .node import FrozenDict, Node, field_names
from .registry import class_of, key_of

FORMAT = "relax-ir"
VERSION = 1


class _Writer:
    def __init__(self) -> None:
        self.entries: list[str] = []
        self.index: dict[int, int] = {}
        self.alive: list[Node] = []  # keeps written nodes alive so their ids stay unique
        self.sources: dict[str, int] = {}  # source file name -> index in "sources"

    def node(self, node: Node) -> dict:
        number = self.index.get(id(node))
        if number is None:
            try:
                key = key_of(type(node))
            except KeyError:
                raise TypeError(f"cannot serialize {type(node).__name__}: not an IR node class") from None
            fields = {name: self.value(getattr(node, name)) for name in field_names(type(node))}
            entry: dict[str, Any] = {"type": key, "fields": fields}
            if node.span is not None:
                span = node.span
                source = self.sources.setdefault(span.source, len(self.sources))
                entry["span"] = [source, span.line, span.column, span.end_line, span.end_column]
            number = len(self.entries)
            self.entries.append(json.dumps(entry, allow_nan=False, ensure_ascii=True, separators=(", ", ": ")))
            self.index[id(node)] = number
            self.alive.append(node)
        return {"ref": number}

    def value(self, value: Any) -> Any:
        if isinstance(value, Node):
            return self.node(value)
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, tuple):
            return {"tuple": [self.value(item) for item in value]}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, FrozenDict):
            return {"frozendict": [[self.value(k), self.value(v)] for k, v in value.items()]}
        if isinstance(value, dict):
            return {"dict": [[self.value(k), self.value(v)] for k, v in value.items()]}
        if isinstance(value, np.ndarray):
            return {"ndarray": _encode_array(value)}
        if isinstance(value, np.generic):
            return {"scalar": _encode_array(np.asarray(value))}
        raise TypeError(f"cannot serialize a value of type {type(value).__name__}")


def _encode_array(array: np.ndarray) -> dict:
    name = dt.from_numpy(array.dtype)
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return {"dtype": name, "shape": [int(d) for d in array.shape], "data": base64.b64encode(data).decode("ascii")}


def to_json(node: Any) -> str:
    """The JSON text of `node` (any IR node, or a tuple of them)."""
    writer = _Writer()
    root = writer.value(node)
    sources = json.dumps(list(writer.sources), ensure_ascii=True)
    header = (f'{{"format": "{FORMAT}", "version": {VERSION}, "sources": {sources}, '
              f'"root": {json.dumps(root, separators=(", ", ": "))}, "nodes": [')
    return header + "\n" + ",\n".join(writer.entries) + "\n]}\n"


class _Reader:
    def __init__(self, sources: list[str]) -> None:
        self.nodes: list[Node] = []
        self.sources = sources
        self.where = "document"

    def fail(self, message: str) -> UserError:
        return UserError(f"malformed IR JSON: {self.where}: {message}")

    def value(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if not isinstance(value, dict) or len(value) != 1:
            raise self.fail(f"unexpected value {_short(value)}")
        (tag, body), = value.items()
        decode = _TAGS.get(tag)
        if decode is None:
            raise self.fail(f"unknown value tag '{tag}'")
        return decode(self, body)

    def ref(self, body: Any) -> Node:
        if not isinstance(body, int) or isinstance(body, bool) or not 0 <= body < len(self.nodes):
            raise self.fail(f"reference {_short(body)} is not to an earlier node")
        return self.nodes[body]

    def tuple(self, body: Any) -> tuple:
        return tuple(self.value(item) for item in self._list(body, "tuple"))

    def pairs(self, body: Any, kind: str) -> dict:
        result = {}
        for pair in self._list(body, kind):
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.fail(f"{kind} entries must be [key, value] pairs")
            key = self.value(pair[0])
            try:
                result[key] = self.value(pair[1])
            except TypeError:
                raise self.fail(f"{kind} key {_short(pair[0])} is not hashable") from None
        return result

    def float(self, body: Any) -> float:
        if body not in ("nan", "inf", "-inf"):
            raise self.fail(f"unknown special float {_short(body)}")
        return float(body)

    def array(self, body: Any) -> np.ndarray:
        if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
            raise self.fail("an array needs exactly 'dtype', 'shape' and 'data'")
        name, shape, data = body["dtype"], body["shape"], body["data"]
        if name not in dt.SUPPORTED_NUMPY:
            raise self.fail(f"unsupported array dtype {_short(name)}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise self.fail("an array shape must be a list of non-negative integers")
        try:
            raw = base64.b64decode(data, validate=True)
        except (TypeError, ValueError):
            raise self.fail("array data is not base64") from None
        dtype = np.dtype(name).newbyteorder("<")
        if len(raw) != math.prod(shape) * dtype.itemsize:
            raise self.fail(f"array data has {len(raw)} bytes, shape {shape} of {name} needs "
                            f"{math.prod(shape) * dtype.itemsize}")
        return np.frombuffer(raw, dtype=dtype).astype(np.dtype(name)).reshape(shape)

    def scalar(self, body: Any) -> np.generic:
        array = self.array(body)
        if array.shape != ():
            raise self.fail("a scalar must have shape []")
        return array[()]

    def _list(self, body: Any, kind: str) -> list:
        if not isinstance(body, list):
            raise self.fail(f"a {kind} must hold a list")
        return body

    def entry(self, number: int, entry: Any) -> Node:
        self.where = f"node {number}"
        if not isinstance(entry, dict) or not {"type", "fields"} <= set(entry) <= {"type", "fields", "span"}:
            raise self.fail("a node must be an object with 'type', 'fields' and optionally 'span'")
        cls = class_of(entry["type"]) if isinstance(entry["type"], str) else None
        if cls is None:
            raise self.fail(f"unknown node type {_short(entry['type'])}")
        self.where = f"node {number} ({entry['type']})"
        fields = entry["fields"]
        expected = field_names(cls)
        if not isinstance(fields, dict) or set(fields) != set(expected):
            got = sorted(fields) if isinstance(fields, dict) else _short(fields)
            raise self.fail(f"fields {got} do not match {list(expected)}")
        values = {name: self.value(fields[name]) for name in expected}
        for name, value in values.items():
            problem = field_type_error(cls, name, value)
            if problem is not None:
                raise self.fail(problem)
        span = self.span(entry.get("span"))
        try:
            return cls(**values, span=span)
        except (TypeError, ValueError, AttributeError) as exc:
            raise self.fail(f"cannot build the node: {exc}") from None

    def span(self, body: Any) -> Span | None:
        if body is None:
            return None
        if (not isinstance(body, list) or len(body) != 5
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in body)
                or not 0 <= body[0] < len(self.sources)):
            raise self.fail("a span must be [source index, line, column, end_line, end_column]")
        return Span(self.sources[body[0]], *body[1:])


_TAGS = {
    "ref": _Reader.ref,
    "tuple": _Reader.tuple,
    "frozendict": lambda reader, body: FrozenDict(reader.pairs(body, "frozendict")),
    "dict": lambda reader, body: reader.pairs(body, "dict"),
    "float": _Reader.float,
    "ndarray": _Reader.array,
    "scalar": _Reader.scalar,
}


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def from_json(text: str | bytes) -> Any:
    """The IR that `to_json` wrote; UserError for anything else."""
    try:
        return _load(text)
    except RecursionError:
        raise UserError("malformed IR JSON: values are nested too deeply") from None


def _load(text: str | bytes) -> Any:
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise UserError(f"not a relax IR JSON document (expected \"format\": \"{FORMAT}\")")
    version = document.get("version")
    if version != VERSION:
        raise UserError(f"relax IR JSON version {_short(version)} is not supported (this build reads version {VERSION})")
    if set(document) != {"format", "version", "sources", "root", "nodes"}:
        raise UserError("malformed IR JSON: document: expected exactly 'format', 'version', 'sources', "
                        "'root' and 'nodes'")
    sources = document["sources"]
    if not isinstance(sources, list) or not all(isinstance(source, str) for source in sources):
        raise UserError("malformed IR JSON: document: 'sources' must be a list of file names")
    reader = _Reader(sources)
    if not isinstance(document["nodes"], list):
        raise reader.fail("'nodes' must be a list")
    for number, entry in enumerate(document["nodes"]):
        reader.nodes.append(reader.entry(number, entry))
    reader.where = "root"
    return reader.value(document["root"])
