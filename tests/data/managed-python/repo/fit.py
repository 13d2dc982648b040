"""Needs six, in a venv made from a uv-managed or pyenv Python (not the base's python3)."""

import sys

import six

assert sys.prefix == "/opt/venv", sys.prefix
assert sys.base_prefix.startswith(("/root/.local/share/uv/python/", "/root/.pyenv/versions/")), \
    sys.base_prefix
print("fit ok:", six.__version__, "on", sys.base_prefix)
