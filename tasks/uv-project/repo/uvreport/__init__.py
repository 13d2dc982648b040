"""Prints a training run's metrics as a table."""
