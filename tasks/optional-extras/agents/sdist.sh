# optional-extras: the good setup plus a distribution that PyPI publishes as an sdist only
# (docopt 0.6.2, a setup.py with no pyproject.toml). With `wheel` installed first, pip
# builds it as a wheel against the venv's setuptools; the rebuild builds it with uv from
# the lock, taking setuptools and wheel from build-constraints.lock: the installed files
# must be the same, file for file.
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r requirements.txt wheel
/opt/venv/bin/pip install docopt==0.6.2
/opt/venv/bin/python run.py --n 200
