# uv makes the project's .venv from its pyproject and installs the project itself editable.
cd /workspace && uv lock
cd /workspace && uv sync
cd / && /workspace/.venv/bin/python -m envtools
