# optional-extras: the good setup, then an edit inside site-packages that breaks `import attrs`
# (as a CUDA-only torchvision breaks next to a CPU torch: present on disk, raising at import).
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r requirements.txt
sed -i '1i raise RuntimeError("attrs was patched by the agent")' /opt/venv/lib/python3.11/site-packages/attrs/__init__.py
/opt/venv/bin/python run.py --n 200 || echo "run.py fails now"
