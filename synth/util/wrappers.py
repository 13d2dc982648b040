"""Programs that run the command after them: ``sudo pip install x`` is a pip install.

Shared by the distiller (which program a simple command runs) and the session's check of
project-tool edits (which tool wrote a file), so that both look through the same words.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

#: Wrappers whose own options and ``X=1`` words come before the command they run.
WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "nice", "command", "exec", "stdbuf"})


#: The wrappers' options that take the next word as their value (``nice -n 5``).
_VALUED = {
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-C", "--close-from", "-D",
                       "--chdir", "-p", "--prompt", "-r", "--role", "-t", "--type", "-U",
                       "--other-user", "-h", "--host"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
}


def unwrapped(words: Sequence[str]) -> Sequence[str]:
    """``words`` without the leading wrappers, their options (with their values) and their
    ``X=1`` words."""
    while words and (name := posixpath.basename(words[0])) in WRAPPERS:
        valued = _VALUED.get(name, frozenset())
        words = words[1:]
        while words and (words[0].startswith("-") or ("=" in words[0] and not
                                                       words[0].startswith("/"))):
            words = words[2:] if words[0] in valued else words[1:]
    return words
