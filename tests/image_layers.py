"""Search a saved image for bytes: every file of the ``docker save`` archive and every file
inside each layer tar. The leak checks (CA bundle, secrets) all use this one search."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any


def layers_containing(engine: Any, ref: str, needle: bytes, tmp_path: Path) -> list[str]:
    """The members of the saved image ``ref`` (``layer.tar:path``) whose bytes hold
    ``needle``; empty when nothing does."""
    saved = tmp_path / "image-search.tar"
    engine.save_image(ref, saved)
    hits: list[str] = []
    try:
        with tarfile.open(saved) as outer:
            for member in outer.getmembers():
                fh = outer.extractfile(member) if member.isfile() else None
                if fh is None:
                    continue
                data = fh.read()
                if needle in data:
                    hits.append(member.name)
                if member.name.endswith(".tar"):
                    with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                        for inner in layer.getmembers():
                            ifh = layer.extractfile(inner) if inner.isfile() else None
                            if ifh is not None and needle in ifh.read():
                                hits.append(f"{member.name}:{inner.name}")
    finally:
        saved.unlink(missing_ok=True)
    return hits
