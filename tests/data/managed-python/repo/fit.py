"""Needs six, in a venv made from a uv-managed Python (not the base image's python3)."""

import sys

import six

assert sys.prefix == "/opt/venv", sys.prefix
assert "/uv/python/" in sys.base_prefix, sys.base_prefix
print("fit ok:", six.__version__, "on", sys.base_prefix)
