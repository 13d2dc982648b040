"""seedstats: evaluation scores over random seeds, summarised per method."""

from seedstats.summary import Summary, summarise

__all__ = ["Summary", "summarise"]
