# poetry, its virtualenv inside the project, the project itself installed editable.
cd /workspace && POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction
cd / && /workspace/.venv/bin/python -m envtools
