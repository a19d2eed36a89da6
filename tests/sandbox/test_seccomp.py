"""The seccomp filter, run by a small classic-BPF interpreter here (the kernel runs it in the
sandbox tests: tests/sandbox/test_isolation.py, the kernel-object cases of test_hostile.py)."""

from __future__ import annotations

import struct

import pytest

from rlvr.sandbox import seccomp

KILL, ALLOW, EPERM, ENOSYS = 0x80000000, 0x7FFF0000, 0x00050001, 0x00050026


def run_filter(program: bytes, arch: int, nr: int) -> int:
    """Evaluate the filter on struct seccomp_data {nr, arch}: only the opcodes the filter uses."""
    code = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr & 0xFFFFFFFF, 4: arch}
    pc, accumulator = 0, 0
    while True:
        op, jump_true, jump_false, k = code[pc]
        if op == 0x20:  # ld [k]
            accumulator = data[k]
        elif op == 0x06:  # ret k
            return k
        elif op in (0x15, 0x35):  # jeq / jge k
            taken = accumulator == k if op == 0x15 else accumulator >= k
            pc += jump_true if taken else jump_false
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_denied_calls_fail_with_eperm_and_the_rest_run(machine: str) -> None:
    arch, numbers = seccomp._ARCHES[machine]
    program = seccomp.deny_filter(machine)
    assert set(numbers) == set(seccomp.DENIED) | set(seccomp.JOB_DENIED)  # every name has a number on every arch
    for name in seccomp.DENIED:
        assert run_filter(program, arch, numbers[name]) == EPERM, name
    allowed = set(range(0, 460)) - set(numbers.values())
    assert all(run_filter(program, arch, nr) == ALLOW for nr in allowed)


def test_another_abi_is_killed_and_x32_calls_fail() -> None:
    program = seccomp.deny_filter("x86_64")
    assert run_filter(program, 0x40000003, 29) == KILL  # i386 (int 0x80): its numbers mean other calls
    assert run_filter(program, 0xC000003E, seccomp.X32_SYSCALL_BIT | 29) == ENOSYS  # x32 shmget
    assert run_filter(program, 0xC000003E, seccomp.X32_SYSCALL_BIT | 0) == ENOSYS  # x32 read: all of x32


def test_an_unknown_architecture_is_refused_by_name() -> None:
    with pytest.raises(seccomp.SeccompUnsupported, match="riscv64"):
        seccomp.deny_filter("riscv64")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_job_filter_denies_passing_descriptors_and_the_sandbox_filter_does_not(machine: str) -> None:
    # The supervisor hands the zygote each job's pipes with sendmsg; only jobs lose it.
    arch, numbers = seccomp._ARCHES[machine]
    job, sandbox = seccomp.deny_filter(machine, denied=seccomp.JOB_DENIED), seccomp.deny_filter(machine)
    for name in seccomp.JOB_DENIED:
        assert run_filter(job, arch, numbers[name]) == EPERM, name
        assert run_filter(sandbox, arch, numbers[name]) == ALLOW, name
    jobs_denied = {numbers[name] for name in seccomp.JOB_DENIED}
    assert all(run_filter(job, arch, nr) == ALLOW for nr in set(range(0, 460)) - jobs_denied)
    assert run_filter(job, 0x40000003, 29) == KILL  # another ABI is killed here too
