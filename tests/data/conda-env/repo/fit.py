"""Needs tinylib (a conda package) and six (pip, inside the conda environment)."""

import sys

import six
import tinylib

assert sys.prefix == "/opt/conda/envs/research", sys.prefix
assert tinylib.double(21) == 42
print("fit ok:", tinylib.VERSION, six.__version__)
