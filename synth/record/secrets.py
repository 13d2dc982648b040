"""Finding a secret the agent wrote into a file, in the forms it travels in.

:class:`synth.record.audit.Masker` knows each secret plain, base64 (standard, URL-safe,
padded or not), URL-encoded and hex (lower and upper case); the session searches the
files the agent added or changed for those forms in the container (``grep -F``, cheap over
thousands of files). A compressed copy hides every one of them, so the files that are, or
hold, a gzip member (a ``.gz`` name, or the gzip magic anywhere in their bytes: a
``.tar.gz``, a gzip stream appended to a log) are also read host-side, and each member is
inflated here and searched, members inside members too (:func:`gzip_holds`).

Everything here is bounded, since the files are the agent's: a file over
:data:`MAX_FILE_BYTES` is not read, at most :data:`MAX_INFLATED` bytes are inflated per
file (a gzip bomb stops there), at most :data:`MAX_MEMBERS` starts are tried, and members
nest at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synth.engine.base import EngineContainer

GZIP_MAGIC = b"\x1f\x8b\x08"
#: Names read as gzip whatever their bytes.
GZIP_SUFFIXES = (".gz", ".tgz", ".gzip")
#: A candidate file larger than this is not read host-side.
MAX_FILE_BYTES = 64 << 20
#: Bytes inflated per file, over all its members and their members.
MAX_INFLATED = 256 << 20
#: Gzip starts tried per file (a binary holds the magic by chance).
MAX_MEMBERS = 256
MAX_DEPTH = 3
_CHUNK = 1 << 20


@dataclass
class _Budget:
    inflated: int = 0
    members: int = 0


def _inflate(data: bytes, budget: _Budget) -> bytes:
    """The gzip member at the start of ``data`` inflated (as far as it is valid, at most
    what the budget leaves); b"" when it is not one."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out: list[bytes] = []
    pos = 0
    try:
        while pos < len(data) and not d.eof:
            room = MAX_INFLATED - budget.inflated
            if room <= 0:
                break
            chunk = d.decompress(data[pos:pos + _CHUNK], room)
            budget.inflated += len(chunk)
            out.append(chunk)
            while d.unconsumed_tail and budget.inflated < MAX_INFLATED:
                chunk = d.decompress(d.unconsumed_tail, MAX_INFLATED - budget.inflated)
                budget.inflated += len(chunk)
                out.append(chunk)
            pos += _CHUNK
    except zlib.error:
        pass  # not (or no longer) gzip: what inflated so far still counts
    return b"".join(out)


def gzip_holds(data: bytes, needles: Sequence[bytes], depth: int = 0,
               budget: _Budget | None = None) -> bool:
    """Whether a gzip member starting anywhere in ``data`` inflates to bytes holding one
    of ``needles`` (or a member of its own that does, to :data:`MAX_DEPTH`)."""
    budget = budget or _Budget()
    pos = data.find(GZIP_MAGIC)
    while pos >= 0 and budget.members < MAX_MEMBERS and budget.inflated < MAX_INFLATED:
        budget.members += 1
        inflated = _inflate(data[pos:], budget)
        if any(n in inflated for n in needles):
            return True
        if depth + 1 < MAX_DEPTH and gzip_holds(inflated, needles, depth + 1, budget):
            return True
        pos = data.find(GZIP_MAGIC, pos + 1)
    return False


def needles(values: Sequence[str]) -> list[bytes]:
    """The masker's forms of the secrets as bytes."""
    return [v.encode("utf-8", "surrogateescape") for v in values if v]


def is_gzip_candidate(path: str) -> bool:
    return path.endswith(GZIP_SUFFIXES)


#: A bash script for the session container (it writes nothing there): of the paths given,
#: the regular files (not links) that are gzip by name or hold the gzip magic in their
#: bytes, one a line.
CANDIDATES_SCRIPT = (
    "export LC_ALL=C; m=$(printf '\\037\\213\\010'); "
    'for p in "$@"; do [ -f "$p" ] && [ ! -L "$p" ] && case "$p" in '
    '*.gz|*.tgz|*.gzip) echo "$p";; esac; done; '
    'for p in "$@"; do [ -f "$p" ] && [ ! -L "$p" ] && case "$p" in '
    '*.gz|*.tgz|*.gzip) ;; *) echo "$p";; esac; done '
    '| xargs -r -d "\\n" grep -lsF -e "$m" --'
)


def gzip_hits(c: EngineContainer, paths: Sequence[str], values: Sequence[str],
              env: dict[str, str] | None = None) -> list[str]:
    """Of ``paths`` in the container, those holding a gzip member that inflates to one of
    ``values`` (the masker's forms); each candidate read host-side, at most
    :data:`MAX_FILE_BYTES`."""
    found: list[str] = []
    wanted = needles(values)
    for start in range(0, len(paths), 500):
        res = c.exec(["bash", "-c", CANDIDATES_SCRIPT, "scan", *paths[start:start + 500]],
                     env=env)
        for path in (line for line in res.stdout.splitlines() if line):
            data = c.read_file(path, max_bytes=MAX_FILE_BYTES)
            if data is not None and len(data) <= MAX_FILE_BYTES and gzip_holds(data, wanted):
                found.append(path)
    return found
