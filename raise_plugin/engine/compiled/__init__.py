"""The compiled path: a program compiled with numba runs compiled once its answers on the task's
probe instances equal the Python function's (``compiler``); and the tally of how many programs an
executor's jobs ran compiled (``tally``)."""
from .compiler import Compiler, load_compiler, numba_available, warm_compiler
from .tally import CompiledTally, tally_line

__all__ = ["Compiler", "load_compiler", "numba_available", "warm_compiler", "CompiledTally", "tally_line"]
