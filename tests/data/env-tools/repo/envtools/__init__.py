"""A tiny package: what its environment holds."""

import attrs
import six


@attrs.define
class Point:
    x: int
    y: int


def describe() -> str:
    return f"envtools: attrs {attrs.__version__}, six {six.__version__}, {Point(1, 2)}"
