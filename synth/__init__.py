"""synth: audited agent sessions distilled into rebuildable, verified research environments."""

__version__ = "0.1.0"
