"""A seccomp filter for a program's process (Linux, x86_64 and aarch64): no new processes,
programs, sockets, namespaces or kernel tinkering; no object that outlives it or that another
process can reach (System V and POSIX IPC, shared anonymous memory); no change to a file's mode,
owner, times or extended attributes by any route (a path, a descriptor, ``dir_fd``), since
Landlock does not cover those; signals, resource limits and scheduling only for itself; and, unless
asked otherwise, no thread."""
from __future__ import annotations

import ctypes
import os
import struct
import sys

__all__ = ["install", "supported"]

_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_SECCOMP, _PR_SET_SECCOMP = 21, 22
_SECCOMP_MODE_FILTER = 2  # for prctl
_SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1  # for seccomp(2)

# classic BPF, as seccomp reads it
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | BPF_JEQ / BPF_JGE / BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_MAX_INSNS = 4096
_INSN = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k

# struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64 each)
_NR, _ARCH = 0, 4
_ARG0_LOW, _ARG0_HIGH = 16, 20  # little-endian
_ARG3_LOW = 16 + 3 * 8

_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_ALLOW = 0x7FFF0000
_EPERM, _ENOSYS = 1, 38

_CLONE_THREAD = 0x00010000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: never on a thread either
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_X32_BIT = 0x40000000

# numbers refused with EPERM; "clone", "clone3" and the signal calls are handled apart
_REFUSED = (
    "fork", "vfork", "execve", "execveat",
    "socket", "socketpair",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    "setsid", "setpgid",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "open_by_handle_at",
    "keyctl", "add_key", "request_key",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "personality", "mknod", "mknodat",
    # channels that outlive a process or join two: System V and POSIX IPC, memory files
    "shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "memfd_create",
    # a file's metadata, which Landlock does not cover, whatever names the file
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "utime", "utimes", "utimensat", "futimesat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "setxattrat",
    "removexattrat",
    # other processes: their priority, memory and handles
    "setpriority", "ioprio_set", "kcmp", "process_madvise", "process_mrelease", "migrate_pages", "move_pages",
    "name_to_handle_at", "fanotify_init",
)
# each takes the target (pid, thread group or thread) as its first argument: only this process
_SIGNALS = ("kill", "tgkill", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# each takes a pid as its first argument, 0 meaning the caller: only this process
_OWN = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")
_MAP_SHARED, _MAP_ANONYMOUS = 0x01, 0x20  # mmap's flags, the same on both

_X86_64 = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435,
    "socket": 41, "socketpair": 53,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424,
    "setsid": 112, "setpgid": 109,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "open_by_handle_at": 304,
    "keyctl": 250, "add_key": 248, "request_key": 249,
    "init_module": 175, "finit_module": 313, "delete_module": 176,
    "kexec_load": 246, "kexec_file_load": 320, "reboot": 169,
    "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179, "quotactl_fd": 443,
    "personality": 135, "mknod": 133, "mknodat": 259,
    "kill": 62, "tgkill": 234, "tkill": 200, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
    "seccomp": 317,
    "shmget": 29, "shmat": 30, "shmctl": 31, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
    "semget": 64, "semop": 65, "semtimedop": 220, "semctl": 66,
    "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
    "mq_getsetattr": 245, "memfd_create": 319,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93, "lchown": 94,
    "fchownat": 260, "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466,
    "setpriority": 141, "ioprio_set": 251, "kcmp": 312, "process_madvise": 440, "process_mrelease": 448,
    "migrate_pages": 256, "move_pages": 279, "name_to_handle_at": 303, "fanotify_init": 300,
    "prlimit64": 302, "sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142,
    "sched_setattr": 314, "mmap": 9,
}
_AARCH64 = {  # the generic table: no fork, vfork or mknod
    "execve": 221, "execveat": 281, "clone": 220, "clone3": 435,
    "socket": 198, "socketpair": 199,
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424,
    "setsid": 157, "setpgid": 154,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "open_by_handle_at": 265,
    "keyctl": 219, "add_key": 217, "request_key": 218,
    "init_module": 105, "finit_module": 273, "delete_module": 106,
    "kexec_load": 104, "kexec_file_load": 294, "reboot": 142,
    "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60, "quotactl_fd": 443,
    "personality": 92, "mknodat": 33,
    "kill": 129, "tgkill": 131, "tkill": 130, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
    "seccomp": 277,
    "shmget": 194, "shmat": 196, "shmctl": 195, "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187,
    "semget": 190, "semop": 193, "semtimedop": 192, "semctl": 191,
    "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
    "mq_getsetattr": 185, "memfd_create": 279,
    "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55, "fchownat": 54, "utimensat": 88,
    "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
    "setxattrat": 463, "removexattrat": 466,
    "setpriority": 140, "ioprio_set": 30, "kcmp": 272, "process_madvise": 440, "process_mrelease": 448,
    "migrate_pages": 238, "move_pages": 239, "name_to_handle_at": 264, "fanotify_init": 262,
    "prlimit64": 261, "sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118,
    "sched_setattr": 274, "mmap": 222,
}
# machine -> (AUDIT_ARCH_*, syscall numbers)
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}


def _libc():
    return ctypes, ctypes.CDLL(None, use_errno=True)


def _machine() -> str | None:
    """The architecture this process makes system calls for, when the filter knows it."""
    if not sys.platform.startswith("linux") or sys.byteorder != "little" or sys.maxsize < 2**32:
        return None  # a 32-bit interpreter on a 64-bit kernel makes 32-bit calls
    machine = os.uname().machine
    return machine if machine in _ARCHES else None


def supported() -> bool:
    """Whether ``install`` can apply the filter here (Linux with seccomp, x86_64 or aarch64)."""
    if _machine() is None:
        return False
    try:
        _, libc = _libc()
        return libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) >= 0
    except (OSError, AttributeError):
        return False


def _program(machine: str, pid: int, threads: bool) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions; jumps are resolved from labels."""
    audit_arch, numbers = _ARCHES[machine]
    insns: list[tuple[int, str | None, str | None, int]] = []
    labels: dict[str, int] = {}

    def op(code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        insns.append((code, jt, jf, k))

    op(_LD_W_ABS, _ARCH)
    op(_JEQ, audit_arch, None, "kill")  # a foreign ABI (i386 on x86_64, arm on aarch64)
    op(_LD_W_ABS, _NR)
    if machine == "x86_64":
        op(_JGE, _X32_BIT, "kill")
    for name in _REFUSED:
        if name in numbers:
            op(_JEQ, numbers[name], "eperm")
    op(_JEQ, numbers["clone3"], "enosys")  # its flags sit in memory: glibc falls back to clone
    op(_JEQ, numbers["clone"], "clone" if threads else "eperm")
    for name in _SIGNALS:
        op(_JEQ, numbers[name], "signal")
    for name in _OWN:
        op(_JEQ, numbers[name], "own")
    op(_JEQ, numbers["mmap"], "mmap")
    op(_RET, _ALLOW)
    labels["mmap"] = len(insns)  # memory shared with no file: another way to hold memory past the caps
    op(_LD_W_ABS, _ARG3_LOW)
    op(_JSET, _MAP_ANONYMOUS, None, "allow")
    op(_JSET, _MAP_SHARED, "eperm", "allow")
    labels["own"] = len(insns)  # the target must be this process or 0 (the caller)
    op(_LD_W_ABS, _ARG0_HIGH)
    op(_JEQ, 0, None, "eperm")
    op(_LD_W_ABS, _ARG0_LOW)
    op(_JEQ, 0, "allow", "signal_low")
    if threads:  # clone: only a thread of this process, in its namespaces
        labels["clone"] = len(insns)
        op(_LD_W_ABS, _ARG0_LOW)
        op(_JSET, _CLONE_THREAD, None, "eperm")
        op(_JSET, _CLONE_NAMESPACES, "eperm", "allow")
    labels["signal"] = len(insns)  # the target must be this process: not 0, not negative, no other pid
    op(_LD_W_ABS, _ARG0_HIGH)
    op(_JEQ, 0, None, "eperm")
    op(_LD_W_ABS, _ARG0_LOW)
    labels["signal_low"] = len(insns)
    op(_JEQ, pid & 0xFFFFFFFF, "allow", "eperm")
    labels["allow"] = len(insns)
    op(_RET, _ALLOW)
    labels["eperm"] = len(insns)
    op(_RET, _ERRNO | _EPERM)
    labels["enosys"] = len(insns)
    op(_RET, _ERRNO | _ENOSYS)
    labels["kill"] = len(insns)
    op(_RET, _KILL_PROCESS)

    def offset(at: int, label: str | None) -> int:
        if label is None:
            return 0
        distance = labels[label] - at - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"jump to {label} out of range")
        return distance

    program = [(code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(insns)]
    if len(program) > _MAX_INSNS:
        raise ValueError("filter too long")
    return program


def install(*, threads: bool = True) -> list[str]:
    """Filter this process's system calls (every thread, and any it starts, inherits the filter);
    ``threads=False`` refuses new threads too. The names of what was applied: ``["seccomp"]`` or []."""
    machine = _machine()
    if machine is None:
        return []
    try:
        ctypes, libc = _libc()
    except OSError:
        return []

    program = _program(machine, os.getpid(), threads)
    table = ctypes.create_string_buffer(b"".join(_INSN.pack(*insn) for insn in program))

    class SockFprog(ctypes.Structure):  # struct sock_fprog: the length, then the instructions
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.addressof(table))
    long = ctypes.c_long
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, long(1), long(0), long(0), long(0)) != 0:
        return []
    # seccomp(2) with TSYNC also covers threads already running (a BLAS pool, say)
    result = libc.syscall(long(_ARCHES[machine][1]["seccomp"]), long(_SECCOMP_SET_MODE_FILTER),
                          long(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if result == 0:
        return ["seccomp"]
    if result < 0 and ctypes.get_errno() == _ENOSYS and _single_threaded():
        if libc.prctl(_PR_SET_SECCOMP, long(_SECCOMP_MODE_FILTER), ctypes.byref(fprog), long(0), long(0)) == 0:
            return ["seccomp"]
    return []  # refused, or another thread could not be brought under the filter


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False
