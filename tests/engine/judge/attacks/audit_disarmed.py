"""The audit hook switched off: every set or dictionary of audit event names the hook consults (the
module's, the heap's, the hook's closure) emptied, so that nothing is refused before the kernel.
A fragment: the attacks that use it are appended to it and call ``disarm()`` first."""
import gc
import sys
import types

EVENTS = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.addressof", "os.system", "os.fork",
          "os.exec", "os.posix_spawn", "subprocess.Popen", "os.remove", "os.rename", "os.mkdir", "os.chmod",
          "os.utime", "os.setxattr", "os.kill"}


def disarm():
    """Clear every set or dictionary of audit event names: the module's, the heap's, the hook's."""
    holders = []
    module = sys.modules.get("raise_plugin.engine.sandbox.audit")
    if module is not None:
        holders.extend(vars(module).values())
    for obj in gc.get_objects():
        holders.append(obj)
        if isinstance(obj, types.FunctionType) and obj.__closure__:
            for cell in obj.__closure__:
                try:
                    holders.append(cell.cell_contents)
                except ValueError:
                    pass
    for holder in holders:
        if isinstance(holder, (set, dict)) and holder and len(holder) < 200:
            try:
                names = [k for k in holder if isinstance(k, str)]
            except Exception:
                continue
            dotted = names and len(names) == len(holder) and all("." in name for name in names)
            if dotted and EVENTS.intersection(names):
                holder.clear()
