import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fastops._ext",
            sources=["src/fastops/_ext.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
        )
    ],
)
