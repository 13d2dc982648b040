"""The host runtime: commands run on this machine by a chosen interpreter, no container.

For GPU hosts and HPC clusters without Docker: verification probes run under the target
environment's own Python exactly as they would inside a container.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from synth.engine.base import TIMEOUT_EXIT, ExecResult, OutputCallback, OutputSink
from synth.errors import UsageError


class HostRuntime:
    def __init__(self, python: Path) -> None:
        resolved = shutil.which(str(python))
        if resolved is None:
            raise UsageError(
                f"Python interpreter {python} not found.",
                hint="Pass the environment's interpreter, e.g. --python /opt/venv/bin/python.",
                option="--python",
            )
        # Keep a venv's own path: resolving symlinks would escape the venv.
        self.python = Path(resolved).absolute()
        self.description = f"host {self.python}"

    def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        full_env = {**os.environ, **(env or {})}
        # Commands that say "python" mean the target interpreter, first on PATH.
        full_env["PATH"] = f"{self.python.parent}{os.pathsep}{full_env.get('PATH', '')}"
        proc = subprocess.Popen(
            list(argv), cwd=workdir, env=full_env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        out, err = OutputSink(), OutputSink()

        def pump(stream: object, sink: OutputSink, name: str) -> None:
            for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
                sink.add(chunk)
                if on_output:
                    on_output(name, chunk)

        threads = [
            threading.Thread(target=pump, args=(proc.stdout, out, "stdout"), daemon=True),
            threading.Thread(target=pump, args=(proc.stderr, err, "stderr"), daemon=True),
        ]
        for t in threads:
            t.start()
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, 9)
            proc.wait()
            code = TIMEOUT_EXIT
        for t in threads:
            t.join()
        return ExecResult(
            argv=tuple(argv), exit_code=code, timed_out=timed_out,
            stdout=out.text(), stderr=err.text(),
            truncated=out.truncated or err.truncated,
        )

    def copy_in(self, src: Path, dest: str) -> None:
        target = Path(dest) / src.name
        Path(dest).mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            shutil.copy2(src, target)

    def copy_out(self, src: str, dest: Path) -> None:
        self.copy_in(Path(src), str(dest))
