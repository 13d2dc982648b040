# poetry-project: poetry tried on the system interpreter first (PEP 668 refuses it), a plain
# `poetry install` that leaves the report group out, tabulate added by hand at an old
# version, then the group installed (poetry moves tabulate to the locked version).
ls -la && cat pyproject.toml poetry.toml
pip install poetry
python3 -m venv /opt/poetry && /opt/poetry/bin/pip install poetry==2.5.1
/opt/poetry/bin/poetry --version && /opt/poetry/bin/poetry env info --path || true
cd /workspace && /opt/poetry/bin/poetry install --no-interaction
.venv/bin/python -m seedstats runs/scores.csv
.venv/bin/pip install tabulate==0.8.10 || /opt/poetry/bin/poetry run python -m pip install tabulate==0.8.10
/opt/poetry/bin/poetry install --no-interaction --with report && .venv/bin/python -m seedstats runs/scores.csv
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/workspace/.venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": null,
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "poetry",
  "env_name": "/workspace/.venv",
  "notes": "poetry install, tabulate by hand, then poetry install --with report; seedstats passes."
}
JSON
