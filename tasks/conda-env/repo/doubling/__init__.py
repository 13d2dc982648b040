"""The model: tinylib (a conda package) does the arithmetic, six (from PyPI) the text."""

import six
import tinylib


def doubled(values):
    """Each value doubled by tinylib, as text."""
    return [six.text_type(tinylib.double(v)) for v in values]
