"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from itertools import chain
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
)
from pathlib import Path
from typing import Any

import msgspec
import orjson

from synth.util.disk import disk_full_as_error


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically; a full file system raises
    :class:`~synth.errors.DiskFullError` naming it and leaves the old file as it was."""
    with disk_full_as_error(path, needed=len(data)):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def dumps_json(data: Any) -> str:
    """Canonical JSON: sorted keys, two-space indent, trailing newline.

    The bytes are exactly ``json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)``
    (tests/unit/test_atomic_json.py checks that). With ``indent`` Python uses its pure-Python
    encoder, about 2 s for an export report of 150,000 commands; here every container whose
    items are all scalars goes through the C encoder in one call, with the indentation as
    its item separator, and a list of flat records without floats (the command outcomes such
    a report is made of) through orjson, whose output is the standard one there (it writes
    some floats differently: ``1e-05`` as ``0.00001``).
    """
    out: list[str] = []
    _encode(data, 0, out)
    out.append("\n")
    return "".join(out)


def dumps_plain_bytes(data: Any) -> bytes:
    """:func:`dumps_json` of a document its caller knows to be *plain* (made of msgspec
    Structs, dicts with string keys, lists, tuples, strings, integers, booleans and None,
    and no float: a file format's types such as the export report, 150,000 command records
    on a long log), as the UTF-8 bytes of its file. The same bytes, by msgspec: its
    encoder, fields and keys sorted, then its indenter, write that layout exactly as the
    standard encoder does for those types (floats it writes otherwise: ``1e-05`` as
    ``0.00001``; tests/unit/test_atomic_json.py compares them on generated documents), and
    no builtins are made on the way. A lone surrogate, which UTF-8 cannot hold, goes to
    :func:`dumps_json`, which refuses it too."""
    try:
        return msgspec.json.format(msgspec.json.encode(data, order="sorted"), indent=2) + b"\n"
    except UnicodeEncodeError:
        return dumps_json(msgspec.to_builtins(data)).encode("utf-8")


_SCALARS = (str, int, float, type(None))
_SCALAR_TYPES = {str, int, float, bool, type(None)}
_LEAF_ENCODERS: dict[int, Any] = {}


def _leaf_encoder(level: int) -> Any:
    """A C encoder for a container at ``level`` whose items are all scalars, or None."""
    enc = _LEAF_ENCODERS.get(level)
    if enc is None and c_make_encoder is not None:
        enc = c_make_encoder(None, _unserialisable, encode_basestring, None, ": ",
                             ",\n" + "  " * (level + 1), True, False, True)
        _LEAF_ENCODERS[level] = enc
    return enc


def _unserialisable(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _encode(o: Any, level: int, out: list[str]) -> None:
    if isinstance(o, str):
        out.append(encode_basestring(o))
    elif isinstance(o, dict):
        if not o:
            out.append("{}")
        elif all(isinstance(v, _SCALARS) for v in o.values()) and all(
                isinstance(k, str) for k in o) and (enc := _leaf_encoder(level)):
            out.append("{\n" + "  " * (level + 1) + "".join(enc(o, 0))[1:-1]
                       + "\n" + "  " * level + "}")
        elif not all(isinstance(k, str) for k in o):
            out.append(_indented(o, level))
        else:
            inner = "\n" + "  " * (level + 1)
            first = True
            for key, value in sorted(o.items()):
                out.append(("{" if first else ",") + inner + encode_basestring(key) + ": ")
                first = False
                _encode(value, level + 1, out)
            out.append("\n" + "  " * level + "}")
    elif isinstance(o, (list, tuple)):
        if not o:
            out.append("[]")
        elif all(isinstance(v, _SCALARS) for v in o) and (enc := _leaf_encoder(level)):
            out.append("[\n" + "  " * (level + 1) + "".join(enc(o, 0))[1:-1]
                       + "\n" + "  " * level + "]")
        elif (types := _flat_records(o)) is not None and (enc := _leaf_encoder(level + 1)):
            out.append(_encode_records(enc, o, level, float in types))
        else:
            inner = "\n" + "  " * (level + 1)
            for i, value in enumerate(o):
                out.append(("[" if i == 0 else ",") + inner)
                _encode(value, level + 1, out)
            out.append("\n" + "  " * level + "]")
    else:
        out.append(_indented(o, level))


def _flat_records(items: list[Any] | tuple[Any, ...]) -> set[type] | None:
    """The types of the values when every item is a non-empty dict of string keys and
    scalar values, else None (checked by type, in C-level passes: a subclass just takes
    the general path)."""
    if not (set(map(type, items)) == {dict} and min(map(len, items)) > 0
            and set(map(type, chain.from_iterable(items))) == {str}):
        return None
    types = set(map(type, chain.from_iterable(map(dict.values, items))))
    return types if types <= _SCALAR_TYPES else None


#: orjson's options for the standard layout: two-space indent, sorted keys (by code point,
#: as ``sort_keys``).
_ORJSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def _encode_records(enc: Any, items: list[Any] | tuple[Any, ...], level: int,
                    floats: bool) -> str:
    """A list of flat records (of exact types: :func:`_flat_records`): by orjson when none
    holds a float, else, or where orjson refuses what the standard encoder writes
    (integers beyond 64 bits, lone surrogates), by :func:`_encode_records_c`."""
    if not floats:
        try:
            text = orjson.dumps(items, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is one
            pass
        else:
            return _at_level(text.decode("utf-8"), level)
    return _encode_records_c(enc, items, level)


def _encode_records_c(enc: Any, items: list[Any] | tuple[Any, ...], level: int) -> str:
    """A list of flat records in one C-encoder call: its item separator (a newline and the
    records' inner indent) also lands between the records, as ``}<sep>{``, which nothing
    inside a record can contain (a newline in a string is written ``\\n``); those are
    re-indented to close one record and open the next."""
    outer, inner = "  " * (level + 1), "  " * (level + 2)
    text = "".join(enc(items, 0))
    text = text.replace("}" + ",\n" + inner + "{", "\n" + outer + "},\n" + outer + "{\n" + inner)
    return ("[\n" + outer + "{\n" + inner + text[2:-2] + "\n" + outer + "}\n"
            + "  " * level + "]")


def _indented(o: Any, level: int) -> str:
    """Anything else (numbers, booleans, null, mappings with non-string keys, other
    objects) exactly as the standard encoder writes it at this depth."""
    return _at_level(json.dumps(o, indent=2, sort_keys=True, ensure_ascii=False), level)


def _at_level(text: str, level: int) -> str:
    """Text the standard encoder wrote at depth 0, indented for depth ``level``."""
    return text.replace("\n", "\n" + "  " * level) if level and "\n" in text else text


def write_json(path: Path, data: Any) -> None:
    write_text(path, dumps_json(data))
