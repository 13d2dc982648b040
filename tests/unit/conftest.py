"""Unit-test fixtures: what a test sees never depends on the machine's git identity."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # CITATION.cff falls back to `git config --global user.name`: a developer's own name
    # must not enter golden files (tests/unit/test_metadata.py tests that fallback).
    monkeypatch.setattr("synth.export.metadata.git_author", lambda: None)
