# pdm, run by uvx (pdm is not in the base image): its virtualenv inside the project, the
# project itself installed editable. pdm 2.29.4 asks for hishel>=1.4 with no upper bound and
# breaks on hishel 2.0 (no SyncSqliteStorage): hishel 1.4.0 is asked for beside it.
cd /workspace && uvx --with hishel==1.4.0 pdm@2.29.4 install
cd / && /workspace/.venv/bin/python -m envtools
