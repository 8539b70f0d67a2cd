"""The look-ahead appended before this (``priority``, in Python) run from compiled code: numba's
object mode runs Python inside a compiled function, and instances run compiled were not checked for
look-ahead (the check ran in Python; it now runs compiled too). Its answers are the Python function's, so it passes the
compiled path's probes. Object-mode code does not see the module's globals: the Python function
is reached through ``builtins``."""
import builtins as _builtins

import numba as _numba

_builtins._looking_priority = priority


def priority(customer_features, candidate_insertions):
    with _numba.objmode(out="float64[:]"):
        out = _looking_priority(customer_features, candidate_insertions)
    return out
