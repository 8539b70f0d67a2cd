"""Raw libc (appended to ``audit_disarmed.py``): at its first call the heuristic switches off the
process's audit hook, then, through ctypes,
takes the addresses of libc's ``socket``, ``sendto`` and ``system`` and calls them through
``CFUNCTYPE`` prototypes: a UDP datagram to 127.0.0.1 (the port comes from the placeholder
below) and a shell command that writes a marker file. Its decisions are best fit's."""
import sys

PORT_TEXT = "__UDP_PORT__"
PORT = int(PORT_TEXT) if PORT_TEXT.isdigit() else 9
MARKER = "__MARKER_PATH__"


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
        for step in (disarm, "udp", "shell"):  # noqa: F821 - disarm: the fragment this is appended to
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
