"""Stdlib-only probe scripts run under the *target* environment's Python (>= 3.8).

Each script prints exactly one JSON object on its last line of stdout. They are copied into
the runtime only when verification starts, so an agent never sees them.
"""
