# poetry-project: a clean setup with the project's own tool. Each top-level statement runs
# as its own `bash -c` in /workspace. poetry is not in the base: pip puts it in a venv of its
# own, outside the project.
python3 -m venv /opt/poetry && /opt/poetry/bin/pip install poetry==2.5.1
# The project's .venv (poetry.toml: in-project), exactly as poetry.lock pins it, with the
# optional report group the entrypoint needs and without the dev group.
/opt/poetry/bin/poetry install --no-interaction --with report --without dev
.venv/bin/python -m seedstats runs/scores.csv
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
  "notes": "poetry install --with report from the project's poetry.lock; seedstats passes."
}
JSON
