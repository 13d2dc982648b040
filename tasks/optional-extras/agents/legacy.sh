# optional-extras: the good setup plus docopt 0.6.2 (an sdist only: a setup.py, no
# pyproject.toml) WITHOUT `wheel` in the venv: pip 23.0 then takes its legacy
# `setup.py install` path and leaves docopt-0.6.2.egg-info (installed-files.txt, no
# INSTALLER), where the rebuild (uv, building a wheel from the lock) writes a .dist-info.
# The module files are the same; verify names the metadata layout as explained.
# Then a local setup.py-only helper, installed the same legacy way from its folder: no
# direct_url.json either; the localhelper.egg-info the build leaves in tools/ ties it to
# that install, which the rebuild replays (the same pip, so the same egg-info).
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r requirements.txt
/opt/venv/bin/pip install docopt==0.6.2
ls -d /opt/venv/lib/python3.11/site-packages/docopt-0.6.2*
mkdir -p tools/localhelper/localhelper
printf 'from setuptools import setup\nsetup(name="localhelper", version="0.1", packages=["localhelper"])\n' > tools/localhelper/setup.py
printf 'ANSWER = 42\n' > tools/localhelper/localhelper/__init__.py
cd tools/localhelper && /opt/venv/bin/pip install .
ls -d /opt/venv/lib/python3.11/site-packages/localhelper-0.1*.egg-info
/opt/venv/bin/python run.py --n 200
