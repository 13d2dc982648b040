"""Programs that run the command after them: ``sudo pip install x`` is a pip install.

Shared by the distiller (which program a simple command runs) and the session's check of
project-tool edits (which tool wrote a file), so that both look through the same words.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

#: Wrappers whose own options and ``X=1`` words come before the command they run.
WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "nice", "command", "exec", "stdbuf"})


def unwrapped(words: Sequence[str]) -> Sequence[str]:
    """``words`` without the leading wrappers, their options and their ``X=1`` words."""
    while words and posixpath.basename(words[0]) in WRAPPERS:
        words = words[1:]
        while words and (words[0].startswith("-") or ("=" in words[0] and not
                                                       words[0].startswith("/"))):
            words = words[1:]
    return words
