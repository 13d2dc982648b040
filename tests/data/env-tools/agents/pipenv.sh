# pipenv, its virtualenv inside the project, the project itself installed editable.
cd /workspace && PIPENV_VENV_IN_PROJECT=1 pipenv install -e .
cd / && /workspace/.venv/bin/python -m envtools
