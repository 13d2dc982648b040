import importlib.metadata
import sys

from envtools import describe

# Installed, not merely importable from a working folder.
dist = importlib.metadata.distribution("envtools")
print(describe(), "installed as", dist.metadata["Name"], dist.version, "from", sys.prefix)
