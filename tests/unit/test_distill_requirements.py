"""The requirement helpers' own reading of plain pins gives what packaging gives."""

from __future__ import annotations

import random

from synth.distill import common

_NAMES = ("numpy", "a", "Foo_Bar", "x.y", "a-", "-a", "torch", "_x", "a..b", "ABC9", "é")
_OPS = ("==", "!=", ">=", "<=", "<", ">", "~=", "===", "=", "", " ==", "== ")
_VERSIONS = ("1", "1.0", "01.2", "2.13.0", "1.0.0.0", "0", "1.2.3+cpu", "1.0a1", "1.*", "",
             "1..2", "10.0.0", "3.0", "2.0.post1", "1.0,<2", "v1")


def test_plain_pins_read_as_packaging_reads_them() -> None:
    rng = random.Random(20261203)
    fast = 0
    for _ in range(5000):
        spec = rng.choice(_NAMES) + rng.choice(_OPS) + rng.choice(_VERSIONS)
        assert common.req_pin(spec) == common._req_pin(spec), spec
        fast += common._SIMPLE_PIN.fullmatch(spec) is not None
    assert fast > 500  # the plain reading is exercised


def test_release_versions_compare_as_packaging_compares_them() -> None:
    rng = random.Random(20261204)
    fast = 0
    for _ in range(5000):
        version = rng.choice(_VERSIONS)
        specifier = rng.choice(_OPS) + rng.choice(_VERSIONS)
        assert common.satisfies(version, specifier) == common._satisfies(version, specifier), (
            version, specifier)
        fast += bool(common._RELEASE.fullmatch(version)
                     and common._SIMPLE_SPECIFIER.fullmatch(specifier))
    assert fast > 500
