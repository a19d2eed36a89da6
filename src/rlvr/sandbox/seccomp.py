"""DANGER: part of the fence around untrusted code. The seccomp filter every sandbox runs under.

Namespaces do not fence everything a job can make in the kernel. Kernel keys are not namespaced
at all: a key a job adds to its user keyring outlives the sandbox on the host, and a later job
under another uid can find it in ``/proc/keys`` and read it if the key grants "other" read. System
V IPC objects and POSIX message queues live as long as their IPC namespace, which in the pool is
the slot's, shared by every job the slot runs; a SysV shared-memory segment is also not charged to
the RLIMIT_AS of the process that made it, so it slipped past the per-job memory cap. Each of these
let a wrong answer pass by reading what a correct sibling left behind.

The filter makes those system calls fail with EPERM, for the job and everything it starts, in
both sandbox modes (``namespace_argv`` hands it to bubblewrap, which loads it just before running
the command; the pool's supervisor never needs them either):

- System V IPC: shared memory, semaphores, message queues;
- POSIX message queues;
- kernel keys (add_key, request_key, keyctl);
- memory that no tmpfs size bounds: memfd_create and memfd_secret (file-backed shared memory is
  bounded by the size of the sandbox's tmpfs mounts, /dev/shm included);
- kernel interfaces no check needs that widen the attack surface: io_uring (its operations bypass
  seccomp), userfaultfd, bpf, perf_event_open;
- new namespaces of any kind: ``unshare`` and ``setns`` fail with EPERM, ``clone`` with
  CLONE_NEWUSER fails with EPERM, and ``clone3`` (whose flags sit in memory a filter cannot read)
  fails with ENOSYS, so that libc falls back to ``clone``. Without a user namespace of its own an
  unprivileged process can make no other namespace and mount nothing, so a job cannot create
  mounts or namespaces to move host-wide counters (mount ids, namespace inode numbers) that a
  later job would read. The pool's zygote, which clones every job into namespaces of its own
  (pool_worker.py), passes no CLONE_NEWUSER and never calls ``clone3``;
- two readers of machine-wide state that an earlier job can move and a later one read (docs/
  verifiers.md, "What a job can learn about earlier jobs"): socket cookies (``getsockopt`` of
  SO_COOKIE or SO_NETNS_COOKIE fails with EPERM: a counter handed out in batches per CPU and moved
  only when asked), and the page cache's residency (``cachestat`` fails with EPERM, ``preadv2``
  and ``pwritev2`` with ENOSYS, so that libc's plain forms still work but RWF_NOWAIT cannot probe
  whether an earlier job read a page of a shared system file).

System calls of another ABI (32-bit ``int 0x80`` on x86-64) kill the process, and x32 calls fail:
without that, the same call under another number would get through (seccomp(2), "Caveats").

The program is classic BPF as ``seccomp_export_bpf`` writes it (struct sock_filter, native byte
order), which is what ``bwrap --seccomp FD`` reads.
"""

from __future__ import annotations

import platform
import struct

DENIED = (
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "add_key",
    "request_key",
    "keyctl",
    "memfd_create",
    "memfd_secret",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "bpf",
    "perf_event_open",
    "unshare",
    "setns",
    "cachestat",
)
"""System calls that fail with EPERM inside every sandbox."""

CLONE_NEWUSER = 0x10000000
"""``clone`` with this flag fails with EPERM inside every sandbox; ``clone3`` fails with ENOSYS."""

JOB_DENIED = ("sendmsg", "sendmmsg")
"""System calls that fail with EPERM for every job of a sandbox pool (pool_worker.py loads this
second filter in each job before its driver runs), not for the pool's supervisor, which hands the
zygote each job's pipes with them. They are how a descriptor is put in flight (SCM_RIGHTS); a unix
socket whose own descriptor is in flight is owned by no process, so it outlived the job that made
it in the slot's network namespace, which every later job of the slot shares: its abstract name in
/proc/net/unix (any bytes the job chose) carried a correct answer's results to a sibling that
then passed without knowing the answer (tests/sandbox/test_hostile.py).

A job also makes unix sockets only: ``socket`` and ``socketpair`` of any other family (inet, inet6,
netlink, packet, ...) fail with EAFNOSUPPORT. Jobs share their slot's network namespace, and what
the kernel keeps there after a socket is gone (TCP TIME_WAIT entries, the counters of
/proc/net/snmp and netstat, the loopback's byte counts) carried a correct answer's results to a
later job of the slot; a unix socket leaves nothing there once it is closed. A network namespace
per job would also do, at a price the throughput benchmark shows (its "net" layer)."""

# System call numbers per architecture (arch/x86/entry/syscalls/syscall_64.tbl;
# include/uapi/asm-generic/unistd.h for arm64), with the AUDIT_ARCH_* value seccomp reports.
_ARCHES = {
    "x86_64": (
        0xC000003E,
        {
            "shmget": 29,
            "shmat": 30,
            "shmctl": 31,
            "semget": 64,
            "semop": 65,
            "semctl": 66,
            "shmdt": 67,
            "msgget": 68,
            "msgsnd": 69,
            "msgrcv": 70,
            "msgctl": 71,
            "semtimedop": 220,
            "mq_open": 240,
            "mq_unlink": 241,
            "mq_timedsend": 242,
            "mq_timedreceive": 243,
            "mq_notify": 244,
            "mq_getsetattr": 245,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "perf_event_open": 298,
            "memfd_create": 319,
            "bpf": 321,
            "userfaultfd": 323,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "memfd_secret": 447,
            "sendmsg": 46,
            "sendmmsg": 307,
            "unshare": 272,
            "setns": 308,
            "clone": 56,
            "clone3": 435,
            "socket": 41,
            "socketpair": 53,
            "getsockopt": 55,
            "preadv2": 327,
            "pwritev2": 328,
            "cachestat": 451,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "mq_open": 180,
            "mq_unlink": 181,
            "mq_timedsend": 182,
            "mq_timedreceive": 183,
            "mq_notify": 184,
            "mq_getsetattr": 185,
            "msgget": 186,
            "msgctl": 187,
            "msgrcv": 188,
            "msgsnd": 189,
            "semget": 190,
            "semctl": 191,
            "semtimedop": 192,
            "semop": 193,
            "shmget": 194,
            "shmctl": 195,
            "shmat": 196,
            "shmdt": 197,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "perf_event_open": 241,
            "memfd_create": 279,
            "bpf": 280,
            "userfaultfd": 282,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "memfd_secret": 447,
            "sendmsg": 211,
            "sendmmsg": 269,
            "unshare": 97,
            "setns": 268,
            "clone": 220,
            "clone3": 435,
            "socket": 198,
            "socketpair": 199,
            "getsockopt": 209,
            "preadv2": 286,
            "pwritev2": 287,
            "cachestat": 451,
        },
    ),
}
X32_SYSCALL_BIT = 0x40000000

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: load a 32-bit word of struct seccomp_data
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K: jump if accumulator & k
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_EPERM, _ENOSYS, _EAFNOSUPPORT = 1, 38, 97
AF_UNIX = 1
# struct seccomp_data { int nr; __u32 arch; __u64 ip; __u64 args[6]; }: args[0] at 16, whose low 32
# bits come first on these little-endian machines (clone's flags all live there).
_NR_OFFSET, _ARCH_OFFSET, _ARG0_OFFSET, _ARG1_OFFSET, _ARG2_OFFSET = 0, 4, 16, 24, 32
SOL_SOCKET, SO_COOKIE, SO_NETNS_COOKIE = 1, 57, 71
ENOSYS_CALLS = ("clone3", "preadv2", "pwritev2")
"""System calls that fail with ENOSYS inside every sandbox (libc falls back to an older form)."""


class SeccompUnsupported(RuntimeError):
    """No filter is known for this machine's architecture."""


def _instruction(code: int, k: int, jump_true: int = 0, jump_false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def _sandbox_rules(numbers: dict[str, int]) -> list[bytes]:
    """ENOSYS_CALLS fail with ENOSYS; clone with CLONE_NEWUSER, and getsockopt of SO_COOKIE or
    SO_NETNS_COOKIE, with EPERM."""
    program = []
    for name in ENOSYS_CALLS:
        program += [_instruction(_JEQ_K, numbers[name], jump_false=1), _instruction(_RET_K, _RET_ERRNO | _ENOSYS)]
    return program + [
        _instruction(_JEQ_K, numbers["clone"], jump_false=4),
        _instruction(_LD_W_ABS, _ARG0_OFFSET),
        _instruction(_JSET_K, CLONE_NEWUSER, jump_false=1),
        _instruction(_RET_K, _RET_ERRNO | _EPERM),
        _instruction(_LD_W_ABS, _NR_OFFSET),  # another clone: the number again
        _instruction(_JEQ_K, numbers["getsockopt"], jump_false=7),
        _instruction(_LD_W_ABS, _ARG1_OFFSET),
        _instruction(_JEQ_K, SOL_SOCKET, jump_false=4),
        _instruction(_LD_W_ABS, _ARG2_OFFSET),
        _instruction(_JEQ_K, SO_COOKIE, jump_true=1),
        _instruction(_JEQ_K, SO_NETNS_COOKIE, jump_false=1),
        _instruction(_RET_K, _RET_ERRNO | _EPERM),
        _instruction(_LD_W_ABS, _NR_OFFSET),
    ]


def _unix_sockets_only(numbers: dict[str, int]) -> list[bytes]:
    """socket and socketpair of any family but AF_UNIX fail with EAFNOSUPPORT."""
    program = []
    for name in ("socket", "socketpair"):
        program += [
            _instruction(_JEQ_K, numbers[name], jump_false=3),
            _instruction(_LD_W_ABS, _ARG0_OFFSET),
            _instruction(_JEQ_K, AF_UNIX, jump_true=1),
            _instruction(_RET_K, _RET_ERRNO | _EAFNOSUPPORT),
            _instruction(_LD_W_ABS, _NR_OFFSET),  # not this call (or AF_UNIX): the number again
        ]
    return program


def sandbox_filter(machine: str | None = None) -> bytes:
    """The filter of every sandbox (bubblewrap loads it): DENIED fail with EPERM, no new user
    namespace can be made, no socket cookie read, no page cache probed (``_sandbox_rules``)."""
    return _compile(machine, DENIED, _sandbox_rules)


def job_filter(machine: str | None = None) -> bytes:
    """The second filter of every pool job, on top of the sandbox's: JOB_DENIED fail with EPERM,
    and sockets are unix sockets only (JOB_SOCKET_FAMILIES)."""
    return _compile(machine, JOB_DENIED, _unix_sockets_only)


def _compile(machine: str | None, denied: tuple[str, ...], rules) -> bytes:
    """Classic BPF for ``machine`` (default: this one): another ABI is killed, x32 calls fail,
    ``denied`` fail with EPERM, then ``rules(numbers)``; all else runs."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise SeccompUnsupported(f"no seccomp filter for architecture {machine!r} (known: {', '.join(_ARCHES)})")
    audit_arch, numbers = _ARCHES[machine]
    program = [
        _instruction(_LD_W_ABS, _ARCH_OFFSET),
        _instruction(_JEQ_K, audit_arch, jump_true=1),  # our ABI: skip the kill
        _instruction(_RET_K, _RET_KILL_PROCESS),
        _instruction(_LD_W_ABS, _NR_OFFSET),
    ]
    if machine == "x86_64":  # x32 calls carry this bit: refuse them all
        program += [_instruction(_JGE_K, X32_SYSCALL_BIT, jump_false=1), _instruction(_RET_K, _RET_ERRNO | _ENOSYS)]
    for name in denied:
        program += [_instruction(_JEQ_K, numbers[name], jump_false=1), _instruction(_RET_K, _RET_ERRNO | _EPERM)]
    program += rules(numbers)
    program.append(_instruction(_RET_K, _RET_ALLOW))
    return b"".join(program)
