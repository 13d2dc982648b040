"""Terminal output: progress and messages on stderr, data (``--json``) on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def say(message: str) -> None:
    err.print(message, markup=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()
