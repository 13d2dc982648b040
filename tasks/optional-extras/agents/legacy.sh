# optional-extras: the good setup plus docopt 0.6.2 (an sdist only: a setup.py, no
# pyproject.toml) WITHOUT `wheel` in the venv: pip 23.0 then takes its legacy
# `setup.py install` path and leaves docopt-0.6.2.egg-info (installed-files.txt, no
# INSTALLER), where the rebuild (uv, building a wheel from the lock) writes a .dist-info.
# The module files are the same; verify names the metadata layout as explained.
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r requirements.txt
/opt/venv/bin/pip install docopt==0.6.2
ls -d /opt/venv/lib/python3.11/site-packages/docopt-0.6.2*
/opt/venv/bin/python run.py --n 200
