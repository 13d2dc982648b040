"""``atomic.dumps_json`` writes exactly what ``json.dumps(indent=2, sort_keys=True,
ensure_ascii=False)`` writes, on every shape it takes its C-encoder shortcuts for (flat
containers, lists of flat records) and on the ones it does not."""

from __future__ import annotations

import json
import random
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any

import msgspec
import pytest

from synth.util.atomic import dumps_json, dumps_plain_bytes

REPO = Path(__file__).resolve().parents[2]

_SCALARS: tuple[Any, ...] = (
    None, True, False, 0, -5, 10**20, 1.5, -0.0, 1e-9, float("nan"), float("inf"),
    float("-inf"), "", "x", "é☃", 'a"b\\c', "line\nbreak\ttab\x00\x1f", "\u2028\ud7ff",
    # What the record shortcut re-indents at: a record's end, its separator, its start.
    "}", "{", "},\n  {", '"},\n    {"', "]",
    # Where orjson (lists of flat records without floats) could differ from the standard:
    # every control character and DEL, integers at and past 64 bits, a lone surrogate.
    "".join(map(chr, range(0x20))) + "\x7f\x80\ufeff", 2**63 - 1, 2**63, 2**64 - 1, 2**64,
    -(2**63), -(2**63) - 1, "\ud800",
)


def _standard(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _doc(rnd: random.Random, depth: int = 0) -> Any:
    roll = rnd.random()
    if depth > 4 or roll < 0.35:
        return rnd.choice(_SCALARS)
    if roll < 0.55:  # a list of flat records, the export report's shape
        return [{rnd.choice("abcé\n"): rnd.choice(_SCALARS) for _ in range(rnd.randrange(1, 5))}
                for _ in range(rnd.randrange(1, 5))]
    if roll < 0.8:
        return {rnd.choice(["a", "b", "é", "z", "\n", "", "}"]) + str(rnd.randrange(5)):
                _doc(rnd, depth + 1) for _ in range(rnd.randrange(5))}
    items = [_doc(rnd, depth + 1) for _ in range(rnd.randrange(5))]
    return items if rnd.random() < 0.8 else tuple(items)


def test_random_documents_match_the_standard_encoder() -> None:
    rnd = random.Random(7)
    for _ in range(4000):
        doc = _doc(rnd)
        assert dumps_json(doc) == _standard(doc), doc


class _Colour(StrEnum):
    RED = "red"


class _Level(IntEnum):
    HIGH = 3


@pytest.mark.parametrize("doc", [
    {}, [], {"a": {}}, {"a": []}, [{}], [{"a": 1}, {}], [{"a": [1]}],  # empty / nested
    {"k": {1: "int key", 2: {"x": [1]}}},  # non-string keys take the standard path
    {"b": 1, "a": {"d": [1, 2], "c": None}},
    [[1, 2], [3, [4, 5]]],
    {"e": _Colour.RED, "n": _Level.HIGH}, [{"e": _Colour.RED}],  # subclasses of str / int
    "just a string", 3, None,
])
def test_edge_shapes_match_the_standard_encoder(doc: Any) -> None:
    assert dumps_json(doc) == _standard(doc)


def test_unserialisable_objects_are_refused_as_the_standard_encoder_refuses() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_json({"a": [{"b": object()}]})
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_json({"a": {"b": object()}})


def test_every_golden_and_schema_file_round_trips_byte_for_byte() -> None:
    files = sorted([*REPO.glob("tests/golden/**/*.json"),
                    *REPO.glob("synth/formats/schemas/*.json")])
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
        assert dumps_json(doc) == _standard(doc), path


def _plain(value: Any) -> bool:
    """Whether ``value`` is a plain document (what dumps_plain_bytes's caller vouches for)."""
    if isinstance(value, float):
        return False
    if isinstance(value, dict):
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return True


def test_plain_documents_match_the_standard_encoder() -> None:
    """dumps_plain_bytes (msgspec's encoder) writes the standard encoder's bytes for plain
    documents; a lone surrogate, which no UTF-8 file can hold, is refused as the standard
    path refuses it."""
    rnd = random.Random(20261203)
    checked = 0
    for _ in range(4000):
        doc = _doc(rnd)
        if not _plain(doc):
            continue
        want = _standard(doc)
        if any("\ud800" <= ch <= "\udfff" for ch in want):
            with pytest.raises(UnicodeEncodeError):
                dumps_plain_bytes(doc)
            continue
        assert dumps_plain_bytes(doc) == want.encode("utf-8"), doc
        checked += 1
    assert checked > 1000


class _Inner(msgspec.Struct, frozen=True):
    b: tuple[str, ...]
    a: int | None = None


class _Outer(msgspec.Struct, frozen=True):
    z_last: tuple[_Inner, ...]
    renamed: str = msgspec.field(name="a_first", default="x")
    pairs: tuple[tuple[str, str], ...] = ()
    empty: dict[str, int] = msgspec.field(default_factory=dict)


def test_structs_are_written_as_their_builtins_are() -> None:
    """Fields in the order of the names they are written as, nested Structs, tuples and
    pairs: the bytes of the same document made of builtins."""
    rnd = random.Random(3)
    for _ in range(300):
        text = "".join(rnd.choice(["a", "é", "\n", '"', "}", "\u2028", "\x7f"])
                       for _ in range(rnd.randrange(6)))
        doc = {"k": [_Outer((_Inner((text, "y"), rnd.choice([None, 2**70, -1])),),
                            renamed=text, pairs=((text, "1"),))], "a": _Inner(())}
        assert dumps_plain_bytes(doc) == _standard(msgspec.to_builtins(doc)).encode("utf-8")
