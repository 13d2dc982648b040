"""`synth doctor` tests HTTPS to the package index from inside a container, with and
without the CA bundle, on the real engine (one throwaway container per doctor run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def doctor(env: dict[str, str]) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if k != "SYNTH_CA_BUNDLE"}
    proc = subprocess.run([sys.executable, "-m", "synth", "doctor", "--json"],
                          capture_output=True, text=True, check=False, timeout=300,
                          env={**base, "PYTHONPATH": str(REPO), **env})
    checks = json.loads(proc.stdout)["result"]["checks"]
    return next(c for c in checks if c["name"] == "tls_in_container")


def test_doctor_says_which_bundle_https_needs(engine: object, base_image: str,
                                              ca_bundle: Path | None) -> None:
    if ca_bundle is None:
        pytest.skip("no host CA bundle to test with")
    configured = doctor({"SYNTH_CA_BUNDLE": str(ca_bundle)})
    assert configured["status"] == "ok", configured
    bare = doctor({})
    if "needs the CA bundle" in str(configured["detail"]):
        # Behind an intercepting proxy: without the bundle it fails and names what to pass.
        assert bare["status"] == "fail", bare
        assert "CERTIFICATE_VERIFY_FAILED" in str(bare["detail"])
        assert "--ca-bundle /" in str(bare["fix"])  # names a bundle that worked
    else:
        assert "works without a CA bundle" in str(configured["detail"])
        assert bare["status"] == "ok", bare
