"""cfgreport: summarise a training run's configuration file."""

__version__ = "0.1.0"
