"""The ``compiled`` fixture: a simulator test runs on the compiled loop and on the Python one.

A test module names its compiled module as ``COMPILED_LOOP`` (``None`` when not built).
"""
import pytest


@pytest.fixture(params=[pytest.param(True, id="compiled"), pytest.param(False, id="python")])
def compiled(request):
    if request.param and getattr(request.module, "COMPILED_LOOP", None) is None:
        pytest.skip("the compiled loop is not built here (no C compiler at install)")
    return request.param
