"""The secret scan's forms: hex (lower and upper case) beside plain, base64 and URL-encoded,
and gzip members (a .gz file, a .tar.gz, a gzip stream inside another file, a member in a
member), searched host-side with every cost bounded."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

from synth.record import secrets
from synth.record.audit import Masker, encodings

SECRET = "hostile-secret-5e4d3c2b1a"


def test_hex_forms_are_known_and_masked() -> None:
    raw = SECRET.encode()
    assert {raw.hex(), raw.hex().upper()} <= encodings(SECRET)
    masker = Masker([SECRET])
    assert masker.mask(f"a {raw.hex()} b {raw.hex().upper()} c") == "a *** b *** c"
    assert masker.mask_bytes(b"x" + raw.hex().encode()) == b"x***"


def _tgz(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_gzip_members_are_inflated_and_searched() -> None:
    wanted = secrets.needles(sorted(Masker([SECRET]).values))
    hexed = SECRET.encode().hex().upper().encode()
    holding = {
        "a .gz of the secret": gzip.compress(SECRET.encode()),
        "a .tar.gz": _tgz("root/token", b"key=" + SECRET.encode()),
        "a gzip stream inside a log": b"log line\n" + gzip.compress(SECRET.encode()) + b"\nend",
        "a member in a member": gzip.compress(gzip.compress(SECRET.encode())),
        "the hex form, gzipped": gzip.compress(hexed),
        "after a false start": b"\x1f\x8b\x08junk" + gzip.compress(SECRET.encode()),
    }
    for what, data in holding.items():
        assert secrets.gzip_holds(data, wanted), what
    assert not secrets.gzip_holds(gzip.compress(b"nothing here"), wanted)
    assert not secrets.gzip_holds(SECRET.encode(), wanted)  # plain: grep's job, not this


def test_a_gzip_bomb_and_a_binary_full_of_magic_cost_a_bounded_time() -> None:
    wanted = secrets.needles([SECRET])
    z = gzip.compress(b"\0" * (300 << 20) + SECRET.encode(), compresslevel=1)
    start = time.monotonic()
    assert not secrets.gzip_holds(z, wanted)  # past the inflate budget, never reached
    assert time.monotonic() - start < 20
    start = time.monotonic()
    assert not secrets.gzip_holds(secrets.GZIP_MAGIC * 200_000, wanted)
    assert time.monotonic() - start < 10


class _LocalContainer:
    """The two calls gzip_hits makes, on this machine's files (bash and grep here)."""

    def exec(self, argv: list[str], env: Any = None) -> Any:
        return subprocess.run(argv, capture_output=True, text=True, check=False)

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
        data = Path(path).read_bytes()
        return data if max_bytes is None or len(data) <= max_bytes else data[:max_bytes + 1]


def test_gzip_hits_reads_the_candidates_host_side(tmp_path: Path) -> None:
    files = {
        "token.gz": gzip.compress(SECRET.encode()),
        "backup.tgz": _tgz("t", SECRET.encode()),
        "app.log": b"start\n" + gzip.compress(SECRET.encode()),
        "other.gz": gzip.compress(b"harmless"),
        "plain.txt": b"no gzip here",
        "fake.gz": b"not gzip at all",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    os.symlink(tmp_path / "token.gz", tmp_path / "link.gz")  # a link is not read
    paths = sorted(str(p) for p in tmp_path.iterdir())
    found = secrets.gzip_hits(_LocalContainer(), paths,  # type: ignore[arg-type]
                              sorted(Masker([SECRET]).values))
    assert sorted(Path(p).name for p in found) == ["app.log", "backup.tgz", "token.gz"]
