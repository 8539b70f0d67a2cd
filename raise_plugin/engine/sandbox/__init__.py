"""The sandbox: what confines a worker and a program's process (the kernel's Landlock, seccomp
and resource limits, ``prctl``, the audit hook, one thread per pool, capped output, the builtins
held) and removing the folder a program wrote in. It knows nothing of jobs, judges or executors."""
from .audit import audit_hook
from .cleanup import remove_tree
from .confine import layer, weakened
from .held_modules import HeldModules
from .oslimits import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, cap_memory, close_other_descriptors, prctl, set_limit
from .pools import ONE_THREAD, one_thread_per_pool
from .seccomp import install as install_seccomp

__all__ = ["audit_hook", "remove_tree", "layer", "weakened", "HeldModules", "PR_SET_CHILD_SUBREAPER",
           "PR_SET_PDEATHSIG", "cap_memory", "close_other_descriptors", "prctl", "set_limit", "ONE_THREAD",
           "one_thread_per_pool", "install_seccomp"]
