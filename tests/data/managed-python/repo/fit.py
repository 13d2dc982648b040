"""Needs six and tinyext (a C extension built in the run), in a venv made from a
uv-managed or pyenv Python (not the base's python3)."""

import sys

import six
import tinyext

assert sys.prefix == "/opt/venv", sys.prefix
assert sys.base_prefix.startswith(("/root/.local/share/uv/python/", "/root/.pyenv/versions/")), \
    sys.base_prefix
assert tinyext.__file__.endswith(".so") and tinyext.add(2, 3) == 5, tinyext.__file__
print("fit ok:", six.__version__, "on", sys.base_prefix)
