"""The seccomp filter of the OS sandbox, compiled to BPF on stdout for `bwrap --seccomp FD`.

Run once by the attempt-worker at start-up (seccomp-filter.ts) with the system's Python and
Debian's python3-seccomp (libseccomp's own bindings). A denylist modelled on Flatpak's
(flatpak-run.c, setup_seccomp): what a Node program has no use for and what has been a
way into the kernel. Denied calls fail with an errno, so that a program probing for a
feature sees it missing instead of being killed mid-way.
"""

import errno
import platform
import sys
import termios

import seccomp

# Fails with EPERM. Names, not numbers: libseccomp maps each to this architecture's number.
DENIED = [
    # The kernel log, an obsolete loader, process accounting, 16-bit segments (a source of
    # information leaks), disk quotas.
    "syslog", "uselib", "acct", "modify_ldt", "quotactl",
    # The kernel keyring, shared by every process of a uid.
    "add_key", "keyctl", "request_key",
    # NUMA memory placement.
    "move_pages", "mbind", "get_mempolicy", "set_mempolicy", "migrate_pages",
    # New namespaces and mounts (bwrap made the ones the sandbox has).
    "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot",
    # Tracing other processes, and reading or writing their memory.
    "ptrace", "process_vm_readv", "process_vm_writev",
    # Kernel attack surface Node does without: profiling, eBPF, userfaultfd (a tool to win
    # kernel races), io_uring (libuv falls back to its thread pool).
    "perf_event_open", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    # Handles that open a file by inode, past the sandbox's mounts.
    "open_by_handle_at", "name_to_handle_at",
    # The machine's own: kernels and modules, clocks, swap, reboot, profiling cookies, the terminal.
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "clock_adjtime", "clock_settime", "settimeofday", "adjtimex",
    "swapon", "swapoff", "reboot", "lookup_dcookie", "vhangup",
]

# Fail with ENOSYS, as if the kernel were older: the caller falls back to a call this filter
# can inspect. clone3 takes its flags in memory, where seccomp cannot read them, so glibc's
# fallback to clone() (flags in a register) meets the namespace rule below. The new mount
# API changes the file system as mount() does.
ABSENT = ["clone3", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"]

# clone() flags that make a namespace. CLONE_NEWTIME is not one of them here: in clone() its
# bit is part of the exit signal (it exists for clone3 and unshare, both denied above).
CLONE_NEW_FLAGS = [
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
]
# s390 passes clone()'s flags second (CONFIG_CLONE_BACKWARDS2).
CLONE_FLAGS_ARG = 1 if platform.machine().startswith("s390") else 0

PER_LINUX = 0


def is_syscall_here(name):
    """Whether this architecture has the call: libseccomp answers a negative number for a
    name it does not know, or knows only on other architectures (umount on x86_64)."""
    return seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0


def build():
    # Only the native architecture: a call made through another ABI (i386's int 0x80, x32)
    # kills the process. Flatpak adds i386 to run 32-bit apps; Node is never one.
    syscall_filter = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    syscall_filter.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    eperm = seccomp.ERRNO(errno.EPERM)
    for name in DENIED:
        if is_syscall_here(name):
            syscall_filter.add_rule(eperm, name)
    for name in ABSENT:
        if is_syscall_here(name):
            syscall_filter.add_rule(seccomp.ERRNO(errno.ENOSYS), name)
    # One rule per flag: the rules of a call match when any of them does.
    for flag in CLONE_NEW_FLAGS:
        syscall_filter.add_rule(eperm, "clone", seccomp.Arg(CLONE_FLAGS_ARG, seccomp.MASKED_EQ, flag, flag))
    # Typing into the terminal's input (CVE-2017-5226), and a virtual console's copy and
    # paste, which does the same (CVE-2023-28100). The request is an int: its low 32 bits.
    for request in (termios.TIOCSTI, termios.TIOCLINUX):
        syscall_filter.add_rule(eperm, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    # No switching to another OS's emulation or to a legacy address-space layout.
    syscall_filter.add_rule(eperm, "personality", seccomp.Arg(0, seccomp.NE, PER_LINUX))
    return syscall_filter


if __name__ == "__main__":
    build().export_bpf(sys.stdout)
