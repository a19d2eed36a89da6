"""The bubblewrap sandbox, run for real: isolation, limits, and nothing left running afterwards.

Each case is bounded by its own SandboxLimits (at most a few seconds of wall clock).
"""

from __future__ import annotations

import secrets
import shutil
import signal
import socket
import textwrap
import time
from pathlib import Path

import pytest

from rlvr.sandbox import SandboxLimits, SandboxUnavailable, bwrap, run_untrusted, sandbox_python

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

QUICK = SandboxLimits(wall_s=3.0, cpu_s=2, memory_mb=256, processes=16, output_bytes=64 * 1024)


def run_python(source: str, limits: SandboxLimits = QUICK, **kwargs):
    return run_untrusted([sandbox_python(), "-I", "-c", textwrap.dedent(source)], limits=limits, **kwargs)


def host_processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker`` (read from the host's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_runs_as_unprivileged_uid_without_capabilities() -> None:
    run = run_python("""
        import os
        status = open('/proc/self/status').read()
        caps = [line.split()[1] for line in status.splitlines() if line.startswith(('CapEff', 'CapPrm', 'CapBnd'))]
        nnp = [line.split()[1] for line in status.splitlines() if line.startswith('NoNewPrivs')]
        print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups(), caps, nnp)
    """)
    assert run.exit_code == 0, run.stderr
    uid, euid, gid, rest = run.stdout.decode().split(" ", 3)
    assert uid == euid == gid and int(uid) in bwrap.SANDBOX_UIDS  # a fresh high uid, not root
    zero = "0000000000000000"
    assert rest.strip() == f"[] {[zero] * 3} ['1']"  # no groups, no capabilities, no_new_privs
    explicit = run_python("import os; print(os.getuid())", uid=65534)
    assert explicit.stdout.strip() == b"65534"


def test_sees_only_its_own_processes() -> None:
    run = run_python("""
        import os
        pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
        print(pids, [open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0')[0] for p in pids])
    """)
    assert run.exit_code == 0, run.stderr
    # pid 1 is bwrap's reaper (root's: hidden), the next is this interpreter: no pytest, no host processes.
    assert run.stdout.startswith(b"[2] "), run.stdout
    assert b"pytest" not in run.stdout


def test_environment_is_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_TEST_SECRET", "hunter2")
    run = run_python("import os; print(sorted(os.environ))")
    assert b"RLVR_TEST_SECRET" not in run.stdout and b"hunter2" not in run.stdout
    assert run.stdout.strip() == b"['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONDONTWRITEBYTECODE']"


def test_writes_outside_the_private_tmpfs_fail(tmp_path: Path) -> None:
    target = tmp_path / "written-from-sandbox"
    repo_file = Path.cwd() / f"sandbox-escape-{secrets.token_hex(4)}"
    run = run_python(f"""
        for path in ['/etc/pwned', '/usr/pwned', '/pwned', {str(target)!r}, {str(repo_file)!r}, '/proc/sys/kernel/hostname']:
            try:
                open(path, 'w').write('x')
                print('WROTE', path)
            except OSError as error:
                print('denied', path, type(error).__name__)
        open('/tmp/ok', 'w').write('x'); open('/sandbox/ok', 'w').write('x')
        print('tmpfs ok')
    """)
    assert run.exit_code == 0, run.stderr
    assert b"WROTE" not in run.stdout and b"tmpfs ok" in run.stdout
    assert not target.exists() and not repo_file.exists()


def test_host_files_are_not_visible(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    run = run_python(f"""
        import os
        for path in ['/root/.bashrc', '/etc/passwd', '/etc/shadow', {str(secret)!r}, '/work', '/home']:
            try:
                data = open(path, 'rb').read() if not os.path.isdir(path) else os.listdir(path)
                print('READ', path)
            except OSError as error:
                print('denied', path, type(error).__name__)
        print(sorted(os.listdir('/')), os.listdir('/root'))
    """)
    assert run.exit_code == 0, run.stderr
    assert b"READ" not in run.stdout and b"top secret" not in run.stdout
    # Only the Python install (under /root/.pyenv here) is bound inside /root, if at all.
    assert b"'work'" not in run.stdout and b"'etc'" not in run.stdout and b"'home'" not in run.stdout


def test_network_is_unreachable() -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # a host service the sandbox must not reach
    port = listener.getsockname()[1]
    try:
        run = run_python(f"""
            import socket
            for address in [('127.0.0.1', {port}), ('1.1.1.1', 53), ('8.8.8.8', 443)]:
                try:
                    socket.create_connection(address, timeout=1).close()
                    print('CONNECTED', address)
                except OSError as error:
                    print('refused', address, type(error).__name__)
            print(open('/proc/self/net/dev').read())
        """)
    finally:
        listener.close()
    assert run.exit_code == 0, run.stderr
    assert b"CONNECTED" not in run.stdout
    devices = [line.split(b":")[0].strip() for line in run.stdout.splitlines() if b":" in line and b"|" not in line]
    assert devices == [b"lo"]


def test_wall_clock_timeout_kills_a_busy_loop() -> None:
    run = run_python("while True: pass", SandboxLimits(wall_s=1.0, cpu_s=30))
    assert run.timed_out and run.signal == signal.SIGKILL
    assert run.elapsed_s < 2.5


def test_cpu_limit_stops_a_busy_loop() -> None:
    run = run_python("while True: pass", SandboxLimits(wall_s=5.0, cpu_s=1))
    assert not run.timed_out
    assert run.signal == signal.SIGXCPU  # soft limit hit after 1 CPU second


def test_memory_limit_raises_memory_error() -> None:
    run = run_python("x = bytearray(2 * 1024**3)", SandboxLimits(memory_mb=256))
    assert run.exit_code == 1 and b"MemoryError" in run.stderr


def test_file_size_limit() -> None:
    run = run_python("open('/tmp/big', 'wb').write(b'x' * 4 * 1024**2)", SandboxLimits(file_size_mb=1))
    assert run.exit_code == 1 and b"File too large" in run.stderr  # Python ignores SIGXFSZ: EFBIG


def test_output_cap_kills_and_truncates() -> None:
    run = run_python("import sys\nwhile True: sys.stdout.write('x' * 65536)")
    assert run.output_truncated and not run.timed_out
    assert len(run.stdout) == QUICK.output_bytes
    assert run.elapsed_s < 2.0


def test_fork_bomb_is_bounded_by_the_process_limit() -> None:
    run = run_python(
        """
        import os
        children, refused = 0, 0
        for _ in range(200):
            try:
                if os.fork() == 0:
                    import time; time.sleep(30)
                children += 1
            except BlockingIOError:
                refused += 1
        print(children, refused, flush=True)
        os._exit(0)
    """,
        SandboxLimits(wall_s=3.0, processes=16),
    )
    children, refused = map(int, run.stdout.split())
    assert children < 16 and refused > 0
    assert not run.timed_out  # the sleeping children died with the namespace, not at the deadline


def test_fork_bomb_that_never_stops_is_killed_whole() -> None:
    marker = f"rlvr-bomb-{secrets.token_hex(6)}"
    run = run_python(
        f"""
        import os
        # {marker}
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """,
        SandboxLimits(wall_s=1.5, processes=16),
    )
    assert run.timed_out
    assert host_processes_with(marker) == []


@pytest.mark.parametrize("main_waits", [False, True], ids=["main-exits", "main-times-out"])
def test_setsid_double_fork_daemon_dies_with_the_run(main_waits: bool) -> None:
    marker = f"rlvr-daemon-{secrets.token_hex(6)}"
    run = run_python(
        f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                code = 'import time; print("daemon alive", flush=True); time.sleep(60)'
                os.execv(sys.executable, [sys.executable, '-c', code, {marker!r}])
            os._exit(0)
        time.sleep(0.5)
        if {main_waits}:
            time.sleep(60)
    """,
        SandboxLimits(wall_s=1.5),
    )
    assert b"daemon alive" in run.stdout  # it really ran, detached, before the run ended
    assert run.timed_out == main_waits
    assert host_processes_with(marker) == []


def test_files_arrive_and_channel_returns_data() -> None:
    run = run_python(
        """
        import os
        data = open('/sandbox/in.txt').read()
        os.write(int(os.environ['RLVR_CHANNEL_FD']), data.upper().encode())
        print(sorted(os.listdir('/proc/self/fd')))
    """,
        files={"/sandbox/in.txt": b"hello"},
        channel=True,
    )
    assert run.exit_code == 0, run.stderr
    assert run.channel == b"HELLO"
    # stdin/out/err, the listdir handle and the channel: the host's file-passing fds are closed.
    assert len(eval(run.stdout)) == 5


def test_missing_bubblewrap_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bwrap, "TOOL_PATH", str(tmp_path))
    monkeypatch.setattr(bwrap, "_HOST", None)
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        run_untrusted(["true"])


def test_marker_scan_finds_a_live_host_process() -> None:
    """The helper the daemon tests rely on does see a process that is alive."""
    import subprocess
    import sys

    marker = f"rlvr-alive-{secrets.token_hex(6)}"
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])
    try:
        for _ in range(100):  # exec may not have replaced the command line yet
            if host_processes_with(marker):
                break
            time.sleep(0.02)
        assert host_processes_with(marker) == [process.pid]
    finally:
        process.kill()
        process.wait()
