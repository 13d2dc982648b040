from setuptools import Extension, setup

setup(name="tinyext", version="0.1.0", ext_modules=[Extension("tinyext", ["tinyext.c"])])
