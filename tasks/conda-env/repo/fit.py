"""Needs the doubling package: tinylib (a conda package) and six (pip, inside the conda
environment)."""

import sys

import tinylib

from doubling import doubled

assert sys.prefix == "/opt/conda/envs/research", sys.prefix
assert doubled([21]) == ["42"]
print("fit ok:", tinylib.VERSION, doubled([1, 2, 3]))
