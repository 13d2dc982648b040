"""``python -m synth.formats.schemas --write``: write the published JSON Schemas from the
types (synth/formats/schemas/*.schema.json); ``--check``: list those that differ (exit 1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from synth.formats.schemas import SCHEMA_NAMES
from synth.formats.schemas.generate import render
from synth.util.atomic import write_text

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m synth.formats.schemas", description=__doc__)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write every schema file")
    mode.add_argument("--check", action="store_true", help="list the files that differ")
    args = ap.parse_args()
    stale = []
    for name in SCHEMA_NAMES:
        path = HERE / f"{name}.schema.json"
        text = render(name)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path.name)
        if args.write:
            write_text(path, text)
    for name in stale:
        print(("wrote " if args.write else "differs: ") + name)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
