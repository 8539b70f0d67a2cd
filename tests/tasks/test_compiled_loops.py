"""Where a C compiler is present the install builds the three compiled simulator loops."""
import shutil

import pytest

from tasks.obp import simulator as obp
from tasks.ojsp import simulator as ojsp
from tasks.ovrp import simulator as ovrp


@pytest.mark.parametrize("module, name", [(obp, "_fastpack"), (ojsp, "_fastdispatch"), (ovrp, "_fastroute")])
def test_the_compiled_loop_is_built_where_a_compiler_is(module, name):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine")
    assert getattr(module, name) is not None
