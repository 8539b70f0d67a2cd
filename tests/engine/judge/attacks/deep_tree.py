"""A folder too deep to remove by recursion: the module code makes 1200 nested directories in
the program's own folder (where it may write), past Python's default recursion limit (1000; the
attack as found made 3000), and a directory it cannot write into at the top.
Its decisions are best fit's. Appended to
``audit_disarmed.py``, whose hook it switches off first."""
import os

import numpy as np

disarm()  # noqa: F821 - the fragment this is appended to
top = os.getcwd()
for _ in range(1200):
    os.mkdir("d")
    os.chdir("d")
os.chdir(top)
os.mkdir("locked", 0o500)


def priority(item, bins):
    return -(np.asarray(bins) - item)
