# A venv in the project and an editable install with an extra, built in pip's isolated build.
cd /workspace && python3 -m venv .venv
cd /workspace && .venv/bin/pip install -e ".[toml]"
cd / && /workspace/.venv/bin/python -m envtools
