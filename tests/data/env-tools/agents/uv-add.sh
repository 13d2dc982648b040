# uv add a dependency (uv writes it into pyproject.toml, locks and syncs the project's .venv,
# the project itself editable), then uv run the package.
cd /workspace && uv add packaging==25.0
cd /workspace && uv run python -m envtools
