"""The seccomp filter, run by a small classic-BPF interpreter here (the kernel runs it in the
sandbox tests: tests/sandbox/test_isolation.py, the kernel-object cases of test_hostile.py)."""

from __future__ import annotations

import struct

import pytest

from rlvr.sandbox import seccomp

KILL, ALLOW, EPERM, ENOSYS, EAFNOSUPPORT = 0x80000000, 0x7FFF0000, 0x00050001, 0x00050026, 0x00050061


def run_filter(program: bytes, arch: int, nr: int, *args: int) -> int:
    """Evaluate the filter on struct seccomp_data {nr, arch, ip, args}: only the opcodes the filter uses."""
    code = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr & 0xFFFFFFFF, 4: arch}
    for index, value in enumerate((*args, 0, 0, 0)[:6]):  # little-endian 64-bit args from offset 16
        data[16 + 8 * index], data[20 + 8 * index] = value & 0xFFFFFFFF, value >> 32
    pc, accumulator = 0, 0
    while True:
        op, jump_true, jump_false, k = code[pc]
        if op == 0x20:  # ld [k]
            accumulator = data[k]
        elif op == 0x06:  # ret k
            return k
        elif op in (0x15, 0x35, 0x45):  # jeq / jge / jset k
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[op]
            pc += jump_true if taken else jump_false
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_denied_calls_fail_with_eperm_and_the_rest_run(machine: str) -> None:
    arch, numbers = seccomp._ARCHES[machine]
    program = seccomp.sandbox_filter(machine)
    # every name has a number on every arch
    rules = {"clone", "socket", "socketpair", "getsockopt", *seccomp.ENOSYS_CALLS}
    assert set(numbers) == set(seccomp.DENIED) | set(seccomp.JOB_DENIED) | rules
    for name in seccomp.DENIED:
        assert run_filter(program, arch, numbers[name]) == EPERM, name
    ruled = {numbers[name] for name in (*seccomp.DENIED, *seccomp.ENOSYS_CALLS)}
    allowed = set(range(0, 460)) - ruled
    assert all(run_filter(program, arch, nr) == ALLOW for nr in allowed)


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_no_new_user_namespace_and_so_no_namespace_at_all(machine: str) -> None:
    arch, numbers = seccomp._ARCHES[machine]
    program = seccomp.sandbox_filter(machine)
    fork_flags, thread_flags = 0x01200011, 0x003D0F00  # glibc's fork (CHILD_SETTID|CLEARTID, SIGCHLD); a thread
    new_user, new_net = seccomp.CLONE_NEWUSER, 0x40000000
    assert run_filter(program, arch, numbers["clone"], fork_flags) == ALLOW
    assert run_filter(program, arch, numbers["clone"], thread_flags) == ALLOW
    assert run_filter(program, arch, numbers["clone"], new_net) == ALLOW  # needs CAP_SYS_ADMIN: the zygote's
    assert run_filter(program, arch, numbers["clone"], new_user | 17) == EPERM
    assert run_filter(program, arch, numbers["clone"], new_user | new_net | (1 << 40)) == EPERM
    assert run_filter(program, arch, numbers["clone3"]) == ENOSYS  # libc then falls back to clone
    assert run_filter(program, arch, numbers["unshare"], new_user) == EPERM
    assert run_filter(program, arch, numbers["setns"]) == EPERM


def test_another_abi_is_killed_and_x32_calls_fail() -> None:
    program = seccomp.sandbox_filter("x86_64")
    assert run_filter(program, 0x40000003, 29) == KILL  # i386 (int 0x80): its numbers mean other calls
    assert run_filter(program, 0xC000003E, seccomp.X32_SYSCALL_BIT | 29) == ENOSYS  # x32 shmget
    assert run_filter(program, 0xC000003E, seccomp.X32_SYSCALL_BIT | 0) == ENOSYS  # x32 read: all of x32


def test_an_unknown_architecture_is_refused_by_name() -> None:
    with pytest.raises(seccomp.SeccompUnsupported, match="riscv64"):
        seccomp.sandbox_filter("riscv64")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_job_filter_denies_passing_descriptors_and_the_sandbox_filter_does_not(machine: str) -> None:
    # The supervisor hands the zygote each job's pipes with sendmsg; only jobs lose it.
    arch, numbers = seccomp._ARCHES[machine]
    job, sandbox = seccomp.job_filter(machine), seccomp.sandbox_filter(machine)
    for name in seccomp.JOB_DENIED:
        assert run_filter(job, arch, numbers[name]) == EPERM, name
        assert run_filter(sandbox, arch, numbers[name]) == ALLOW, name
    jobs_denied = {numbers[name] for name in seccomp.JOB_DENIED}  # the sandbox's filter refuses the rest
    sockets = {numbers["socket"], numbers["socketpair"]}  # by family: test_a_job_makes_unix_sockets_only
    assert all(run_filter(job, arch, nr) == ALLOW for nr in set(range(0, 460)) - jobs_denied - sockets)
    assert run_filter(job, 0x40000003, 29) == KILL  # another ABI is killed here too


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_a_job_makes_unix_sockets_only(machine: str) -> None:
    arch, numbers = seccomp._ARCHES[machine]
    job, sandbox = seccomp.job_filter(machine), seccomp.sandbox_filter(machine)
    unix, inet, inet6, netlink, packet = 1, 2, 10, 16, 17
    for call in ("socket", "socketpair"):
        assert run_filter(job, arch, numbers[call], unix) == ALLOW, call
        for family in (inet, inet6, netlink, packet, 0, 45):
            assert run_filter(job, arch, numbers[call], family) == EAFNOSUPPORT, (call, family)
            assert run_filter(sandbox, arch, numbers[call], family) == ALLOW  # a fresh sandbox has a network of its own
    assert run_filter(job, arch, numbers["socket"], unix | (2 << 32)) == ALLOW  # int domain: high bits are not read
    # the number is reloaded after each argument test: calls after socket's rules are still matched
    assert run_filter(job, arch, numbers["sendmsg"], inet) == EPERM


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_no_socket_cookie_and_no_page_cache_probe(machine: str) -> None:
    arch, numbers = seccomp._ARCHES[machine]
    program = seccomp.sandbox_filter(machine)
    sol_socket, sol_tcp, so_cookie, so_netns_cookie, so_type = 1, 6, 57, 71, 3
    getsockopt = numbers["getsockopt"]
    assert run_filter(program, arch, getsockopt, 5, sol_socket, so_cookie) == EPERM
    assert run_filter(program, arch, getsockopt, 5, sol_socket, so_netns_cookie) == EPERM
    assert run_filter(program, arch, getsockopt, 5, sol_socket, so_type) == ALLOW
    assert (
        run_filter(program, arch, getsockopt, 5, sol_tcp, so_cookie) == ALLOW
    )  # 57 at another level is another option
    assert run_filter(program, arch, numbers["cachestat"]) == EPERM
    for call in ("preadv2", "pwritev2"):
        assert run_filter(program, arch, numbers[call]) == ENOSYS  # libc then uses preadv/pwritev
    assert run_filter(program, arch, numbers["clone"], 0x01200011) == ALLOW  # a plain fork after the cookie rules
