"""Builds the optional compiled simulator loops (``tasks/*/_fast*.c``); everything else is in
pyproject.toml. Where no C compiler is available the build skips them and the pure-Python
loops, with the same answers, are used.
"""
import numpy
from setuptools import Extension, setup


def compiled(name: str, source: str) -> Extension:
    # no fused multiply-add: the loops must round exactly as numpy does
    return Extension(name, [source], include_dirs=[numpy.get_include(), "tasks/common"],
                     depends=["tasks/common/fastcheck.h"], extra_compile_args=["-ffp-contract=off"],
                     optional=True)


setup(ext_modules=[
    compiled("tasks.obp._fastpack", "tasks/obp/_fastpack.c"),
    compiled("tasks.ojsp._fastdispatch", "tasks/ojsp/_fastdispatch.c"),
    compiled("tasks.ovrp._fastroute", "tasks/ovrp/_fastroute.c"),
])
