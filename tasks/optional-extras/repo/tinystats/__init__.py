"""Summary statistics with attrs records."""

from tinystats.core import Summary, summarize

__all__ = ["Summary", "summarize"]
