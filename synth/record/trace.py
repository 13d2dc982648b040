"""``--trace-exec``: the complete exec tree of the agent, through the host's strace.

strace is not in base images and must not be installed into the environment (it would
leak into the artifact), so the host's binary is *mounted*: synth copies ``strace``, the
shared libraries ``ldd`` names and the dynamic loader into a scratch folder, mounts it
read-only at ``/synth/trace`` and starts strace through that loader, so the container's
own libraries are never involved. Each agent command runs as

    /synth/trace/ld.so --library-path /synth/trace/lib /synth/trace/strace -f --seccomp-bpf
        -e trace=execve,chdir -o /synth/audit/trace-N.txt -- CMD…

(``--seccomp-bpf`` keeps the overhead near 2 %). The trace files land in the shared audit
folder beside the hook's events and are copied to the run's ``logs/trace/`` when the session
ends; environments are never printed (strace shows only their size without ``-v``).
Successful ``execve`` calls become ``exec-trace`` records.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.errors import RunError

CONTAINER_TRACE_DIR = "/synth/trace"
_LOADER = "ld.so"

_LINE_RE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_RESULT_RE = re.compile(r"\)\s+=\s+(-?\d+)(?:\s.*)?$")


def bundle_strace(dest: Path) -> None:
    """Copy the host's strace, its libraries and the loader into ``dest``."""
    strace = shutil.which("strace")
    if strace is None:
        raise RunError(
            "--trace-exec needs strace on the host (it is mounted into the container, "
            "never installed there).",
            hint="apt-get install strace, or run without --trace-exec.",
        )
    proc = subprocess.run(["ldd", strace], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RunError(f"ldd {strace} failed: {proc.stderr.strip()}")
    libs = re.findall(r"(/\S+)", proc.stdout)
    loaders = [p for p in libs if "/ld-linux" in p or "/ld64" in p]
    if not loaders:
        raise RunError(f"Cannot find the dynamic loader of {strace} (ldd said: {proc.stdout})")
    (dest / "lib").mkdir(parents=True, exist_ok=True)
    shutil.copy2(strace, dest / "strace")
    shutil.copy2(Path(loaders[0]).resolve(), dest / _LOADER)
    for lib in libs:
        if lib not in loaders:
            shutil.copy2(Path(lib).resolve(), dest / "lib" / Path(lib).name)


@dataclass
class Tracer:
    """Wraps each agent command in strace, writing trace files into ``out_dir``."""

    out_dir: str
    count: int = 0
    files: list[str] = field(default_factory=list)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        self.count += 1
        name = f"trace-{self.count}.txt"
        self.files.append(name)
        d = CONTAINER_TRACE_DIR
        return [
            f"{d}/{_LOADER}", "--library-path", f"{d}/lib", f"{d}/strace",
            "-f", "--seccomp-bpf", "-qq", "-ttt", "-s", "65535",
            "-e", "trace=execve,chdir", "-e", "signal=none",
            "-o", f"{self.out_dir}/{name}", "--", *argv,
        ]


def _c_string(text: str, i: int) -> tuple[str, int]:
    """Decode the strace (C-escaped) string starting at the quote ``text[i]``."""
    assert text[i] == '"'
    out = bytearray()
    i += 1
    simple = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, '"': 34, "\\": 92}
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8", "replace"), i + 1
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
            elif nxt == "x":
                out.append(int(text[i + 2 : i + 4], 16))
                i += 4
            elif nxt.isdigit():
                j = i + 1
                while j < len(text) and j < i + 4 and text[j] in "01234567":
                    j += 1
                out.append(int(text[i + 1 : j], 8) & 0xFF)
                i = j
            else:
                out.append(ord(nxt))
                i += 2
            continue
        out += ch.encode("utf-8")
        i += 1
    raise ValueError("unterminated string")


def _parse_execve(args: str) -> tuple[str, list[str]] | None:
    """``"/bin/ls", ["ls", "-l"], 0x… /* 3 vars */`` -> path and argv."""
    try:
        path, i = _c_string(args, 0)
        i = args.index("[", i) + 1
        argv: list[str] = []
        while i < len(args):
            while args[i] in " ,":
                i += 1
            if args[i] == "]":
                return path, argv
            if args[i] != '"':
                return path, argv  # `...` (truncated array)
            value, i = _c_string(args, i)
            if i < len(args) and args[i : i + 3] == "...":
                i += 3  # a truncated string
            argv.append(value)
    except (ValueError, IndexError, AssertionError):
        return None
    return None


def parse_trace(text: str) -> list[dict[str, Any]]:
    """Successful ``execve`` calls of an strace ``-f -ttt`` log, in order."""
    pending: dict[str, tuple[float, str, list[str]]] = {}
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        m = _LINE_RE.match(line)
        if not m:
            continue
        pid, ts, rest = m.group(1), float(m.group(2)), m.group(3)
        if rest.startswith("execve("):
            parsed = _parse_execve(rest[len("execve("):])
            if parsed is None:
                continue
            if rest.endswith("<unfinished ...>"):
                pending[pid] = (ts, *parsed)
                continue
            result = _RESULT_RE.search(rest)
            if result and result.group(1) == "0":
                out.append({"pid": int(pid), "start": ts, "path": parsed[0], "argv": parsed[1]})
        elif rest.startswith("<... execve resumed>") and pid in pending:
            start, path, argv = pending.pop(pid)
            result = _RESULT_RE.search(rest)
            if result and result.group(1) == "0":
                out.append({"pid": int(pid), "start": start, "path": path, "argv": argv})
    return out
