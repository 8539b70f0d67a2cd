"""Builds the optional compiled OBP loop (tasks/obp/_fastpack.c); everything else is in pyproject.toml.

Where no C compiler is available the build skips it and the pure-Python loop is used.
"""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("tasks.obp._fastpack", ["tasks/obp/_fastpack.c"],
                             include_dirs=[numpy.get_include()], optional=True)])
