"""Reading inputs and writing outputs the way the tools promise: `-` is stdin/stdout."""

from __future__ import annotations

import sys

from ..diagnostics import UserError


def read_text(path: str) -> tuple[str, str]:
    """Returns (display name, text) of a source file or of stdin for '-'."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return path, handle.read()
    except FileNotFoundError:
        raise UserError(f"'{path}': no such file or directory") from None
    except IsADirectoryError:
        raise UserError(f"'{path}': is a directory") from None
    except UnicodeDecodeError:
        raise UserError(f"'{path}': not a UTF-8 text file") from None


def read_bytes(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise UserError(f"'{path}': no such file or directory") from None
    except IsADirectoryError:
        raise UserError(f"'{path}': is a directory") from None


def _open_for_writing(path: str, mode: str):
    try:
        return open(path, mode, **({"encoding": "utf-8"} if "b" not in mode else {}))
    except FileNotFoundError:
        raise UserError(f"'{path}': cannot write: no such directory") from None
    except IsADirectoryError:
        raise UserError(f"'{path}': cannot write: is a directory") from None
    except OSError as exc:
        raise UserError(f"'{path}': cannot write: {(exc.strerror or str(exc)).lower()}") from None


def write_text(path: str | None, text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with _open_for_writing(path, "w") as handle:
        handle.write(text)


def write_bytes(path: str | None, data: bytes, what: str = "binary output") -> None:
    """Writes binary data; refuses to spill it on a terminal unless asked with `-o -`."""
    if path is None:
        if sys.stdout.isatty():
            raise UserError(f"refusing to write {what} to a terminal; use -o FILE or -o -")
        path = "-"
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    with _open_for_writing(path, "wb") as handle:
        handle.write(data)
