"""Fidelity covers every interpreter of the final state, not only the primary one: a conda
prefix the rebuilt image lacks, or a second environment whose distributions differ, is a
fidelity failure (it passed with 0 failures when only the primary env was compared)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distill_runs import dist, make_run_dir, system_python, venv

from synth.errors import VerifyError
from synth.verify.command import _other_pythons, other_interpreters


@dataclass
class _Dist:
    version: str


class _Probe:
    """Images as {image: {python: {name: version}}}; a python absent from one fails."""

    def __init__(self, images: dict[str, dict[str, dict[str, str]]]) -> None:
        self.images = images

    def fingerprint(self, image: str, python: str, workdir: str = "/workspace",
                    env: Any = None) -> Any:
        dists = self.images[image].get(python)
        if dists is None:
            raise VerifyError(f"{python}: No such file or directory")
        return type("Fp", (), {"effective": {n: _Dist(v) for n, v in dists.items()}})()


def test_an_interpreter_the_rebuild_lacks_is_a_difference() -> None:
    probe = _Probe({"live": {"/opt/conda/bin/python": {"numpy": "2.3.5"}}, "rebuilt": {}})
    [line] = other_interpreters(probe, "live", "rebuilt", ["/opt/conda/bin/python"])  # type: ignore[arg-type]
    assert line.startswith("interpreter /opt/conda/bin/python: in the live image (1 ")
    assert "not usable in the rebuilt one" in line


def test_distributions_of_another_interpreter_are_compared_by_version() -> None:
    probe = _Probe({"live": {"/usr/bin/python3": {"wandb": "0.18.0", "six": "1.17.0"}},
                    "rebuilt": {"/usr/bin/python3": {"six": "1.16.0"}}})
    lines = other_interpreters(probe, "live", "rebuilt", ["/usr/bin/python3"])  # type: ignore[arg-type]
    assert lines == ("interpreter /usr/bin/python3: six 1.17.0 live, 1.16.0 rebuilt",
                     "interpreter /usr/bin/python3: wandb 0.18.0 live, absent rebuilt")
    same = _Probe({"live": {"/usr/bin/python3": {"six": "1.17.0"}},
                   "rebuilt": {"/usr/bin/python3": {"six": "1.17.0"}}})
    assert other_interpreters(same, "live", "rebuilt", ["/usr/bin/python3"]) == ()  # type: ignore[arg-type]


def test_every_interpreter_but_the_primary_is_compared(tmp_path: Path) -> None:
    conda = {"path": "/opt/conda/bin/python", "kind": "conda", "version": "3.11.9",
             "prefix": "/opt/conda", "base_prefix": "/opt/conda", "created_by_agent": True,
             "distributions": [dist("numpy", "2.3.5", installer="conda",
                                    location="/opt/conda/lib/python3.11/site-packages")]}
    run_dir = make_run_dir(tmp_path, python=[system_python(), venv(), conda])
    assert _other_pythons(run_dir) == ("/opt/conda/bin/python", "/usr/bin/python3")
