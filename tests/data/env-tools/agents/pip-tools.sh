# pip-tools: compile the project's dependencies to a pinned requirements file, sync a venv to
# it, then the project itself editable.
cd /workspace && python3 -m venv .venv && .venv/bin/pip install --quiet -U pip pip-tools
cd /workspace && .venv/bin/pip-compile --quiet -o requirements.txt pyproject.toml
cd /workspace && .venv/bin/pip-sync requirements.txt && .venv/bin/pip install --no-deps -e .
cd / && /workspace/.venv/bin/python -m envtools
