# optional-extras: the good setup, then what agents really change besides installing:
# an edit inside site-packages that breaks `import attrs` (as a CUDA-only torchvision breaks
# next to a CPU torch: present on disk, raising at import), an edit to the research code,
# and a native build that builds nothing.
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r requirements.txt ninja
sed -i '1i raise RuntimeError("attrs was patched by the agent")' /opt/venv/lib/python3.11/site-packages/attrs/__init__.py
sed -i '1i # flask pinned by the agent' requirements-serve.txt
cd /workspace/native && /opt/venv/bin/ninja
/opt/venv/bin/python run.py --n 200 || echo "run.py fails now"
