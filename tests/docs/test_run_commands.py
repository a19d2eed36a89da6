"""Every command in README.md and docs/*.md runs as written and ends as its page says.

What runs: each command line of a fenced code block (a shell block, or a block whose lines start
with a program such as `.venv/bin/rlvr`, `rlvr`, `.venv/bin/python`, `./setup.sh`; in a `$ `
transcript only the `$ ` lines), and each command in the `run` or `command` column of a table.
Each page's commands run in order, in a fresh working directory of their own holding `configs/`,
and links to the repository's `benchmarks/`, `src/` and `.venv/`. The venv is active (its `bin/`
first on PATH), as the README asks once after `./setup.sh`.

How a command must end, and the markers that say so (a trailing shell comment on the command):
- exit 0, unless it is marked `# exit N`, or a transcript shows `rlvr: error: MESSAGE` right
  below it: then exit N (2 for that line); the line a transcript shows right below a command
  that fails must be the last line it prints on stderr;
- `# needs ...` (a GPU, a local model, the network, an input the page does not give) or
  `# long: ...` (runs longer than a few minutes): skipped with that reason; so is a table row
  whose `time` cell says more than two minutes;
- `# serves URL ...`: a server; it must answer at URL within a minute, then it is stopped.
Synopsis lines (`[--optional]` groups, UPPER-CASE placeholders) show a command's form: not run.

Inline example rows: a JSON object shown in `code` in the same table row as a command is written,
one per line, to each `.jsonl` file that the row's commands read (`--input F`, `data check F`,
`task.*_path=F`) before they run.

Shortened: every `rlvr` command meant to succeed (`-m rlvr.cli` under a launcher too) gets SHORT_FORM[subcommand] appended (fewer
steps, queries and samples, one thread; last setting wins), so the whole page runs in seconds.
The slow test runs every page (two side by side); the summary test prints what ran and why the
rest was skipped. A plain `rlvr ...` line runs in a fork of a process that has imported rlvr, torch
and transformers once (forkserver.py says what a fork keeps of a fresh process); anything else
(another program, an environment prefix, pipes, quotes with brackets, a server) runs through bash.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rlvr.config import eval_fields
from rlvr.tasks.registry import task_names

from .mdtext import (
    DOCS,
    REPO,
    code_spans,
    fenced_blocks,
    is_separator,
    logical_lines,
    relative,
    split_cells,
    table_blocks,
)

_PROGRAM = re.compile(
    r"^(?:[A-Z_]+=\S+\s+)*(?:\./setup\.sh|(?:\.venv|/tmp/[\w-]+)/bin/\S+|rlvr\s+[a-z][a-z-]*(?:\s|$)"
    r"|(?:python3?|pip|hf|tensorboard|wandb|torchrun|accelerate|head|cat)\s)"
)
_SHELL_FENCES = ("```bash", "```sh", "```shell", "```console")
_MARKER = re.compile(r"\s#\s*(exit\s+(\d+)|needs\s.+|long\b.*|serves\b.*)$")
_PLACEHOLDER = re.compile(r"^\[?(--[\w-]+)?[A-Z][A-Z0-9_]*(=[A-Z][A-Z0-9_]*)?\]?$")  # PATH, KEY=VALUE, [--n N]
_COMMENT = re.compile(r"\s+#(?=[^'\"]*$).*$")  # a trailing comment, not a '#' inside quotes
_ERROR_PREFIX = "rlvr: error: "
_INPUT_FILE = re.compile(r"(?:--input\s+|data check\s+|_path=)([\w./-]+\.jsonl)\b")
_DURATION = re.compile(r"(\d+)\s*min(?:utes)?(?:\s+(\d+)\s*s\b)?|(\d+(?:\.\d+)?)\s*s\b")  # 4 min 6 s, 495 s
LONG_S = 120
"""A table row whose time cell says more than this is skipped as long."""
TIMEOUT_S = 300
"""A command still running after this fails: mark it '# long: ...'."""

_RUN = (
    "--set train.steps=2 --set train.batch_queries=2 --set rollout.group_size=2 --set task.num_train=8 "
    "--set task.num_eval=4 --set train.threads=1"
)
SHORT_FORM = {
    "train": _RUN,
    "inspect": "--set train.batch_queries=2 --set rollout.group_size=2 --set train.threads=1",
    "sweep": _RUN,
    "eval": "--num-queries 4",
    "compare": f"--steps 8 --n 4 --num-queries 4 {_RUN.replace('--set train.steps=2 ', '')}",
    "grad-variance": "--batches 1 --set train.batch_queries=2",
}
"""What a subcommand meant to succeed gets appended: the short form of the same run."""


@dataclass(frozen=True)
class Command:
    path: str
    line: int
    text: str  # as the page shows it, marker included
    exit_code: int = 0
    error: str | None = None  # the line a transcript shows below a command that fails
    skip: str | None = None  # why it does not run here
    serves: str | None = None  # the `# serves URL ...` marker
    rows: tuple[str, ...] = ()  # inline example rows for its input files

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"

    @property
    def shell(self) -> str:
        """The command line that runs: the page's, marker removed, its short form appended."""
        text = _COMMENT.sub("", self.text).strip()
        words = text.split()
        at = next((i for i, word in enumerate(words) if word in ("rlvr", ".venv/bin/rlvr", "rlvr.cli")), None)
        if self.exit_code == 0 and not self.serves and at is not None and at + 1 < len(words):
            return f"{text} {SHORT_FORM.get(words[at + 1], '')}".strip()
        return text


AWAITING_MARKERS = {
    "docs/lab.md: pip install -e '.[lab]'": "needs the network",
    "docs/lab.md: rlvr lab --runs runs/ --port 7860": "serves http://127.0.0.1:7860/",
    "docs/lab.md: rlvr atlas --out runs/atlas": "long: about 22 min",
    "docs/lab.md: rlvr atlas --knobs beta,group_size --seeds 0 --steps 30 --out runs/atlas-small": "long: minutes",
}
"""Markers the pages owned by others lack yet ("page: command" -> marker); an entry goes once the
page carries its marker (test_awaited_markers_are_still_missing says when)."""


def _command(path: str, number: int, text: str, *, error: str | None = None, skip: str | None = None, rows=()):
    marker = _MARKER.search(text)
    awaited = AWAITING_MARKERS.get(f"{path}: {_COMMENT.sub('', text).strip()}")
    if marker is None and awaited is not None:
        marker = _MARKER.search(f"{text}  # {awaited}")
    note = marker.group(1) if marker else ""
    exit_code = int(marker.group(2)) if marker and marker.group(2) else (2 if error else 0)
    error = error or None
    if note.startswith(("needs", "long")):
        skip = note
    elif _is_synopsis(text):
        skip = "synopsis"
    serves = note if note.startswith("serves") else None
    return Command(path, number, text, exit_code, error, skip, serves, tuple(rows))


def _is_synopsis(text: str) -> bool:
    """A command's form rather than a command: `[--optional]` groups or UPPER-CASE placeholders."""
    words = shlex.split(text, comments=True)
    return any(word.startswith("[--") or _PLACEHOLDER.match(word) for word in words)


def fenced_commands(path: Path) -> list[Command]:
    lines = path.read_text(encoding="utf-8").splitlines()
    commands = []
    for block in fenced_blocks(path):
        logical = logical_lines(block)
        fence = lines[block[0].number - 2].strip() if block else ""
        prompted = any(text.startswith("$ ") for _, text in logical)
        shell = fence in _SHELL_FENCES or (logical and _PROGRAM.match(logical[0][1]))
        for index, (number, text) in enumerate(logical):
            if prompted:
                if not text.startswith("$ "):
                    continue
                text = text[2:].strip()
            elif not shell or not _PROGRAM.match(text):
                continue
            following = logical[index + 1][1] if prompted and index + 1 < len(logical) else ""
            error = following if following.startswith(_ERROR_PREFIX) else ""
            if re.search(r"#\s*exit\s+[1-9]", text) and not following.startswith("$ "):
                error = following  # `# exit N`: the page shows what it prints last
            commands.append(_command(relative(path), number, text, error=error))
    return commands


def _seconds(text: str) -> float:
    """The longest duration a table's time cell names ("4 min 50 s", "180-1168 s per seed")."""
    spans = [
        60 * float(minutes or 0) + float(seconds or 0) + float(alone or 0)
        for minutes, seconds, alone in _DURATION.findall(text)
    ]
    return max(spans, default=0.0)


def table_commands(path: Path) -> list[Command]:
    commands = []
    for table in table_blocks(path):
        header = [cell.lower() for cell in split_cells(table[0].text)]
        columns = [i for i, name in enumerate(header) if name in ("run", "command")]
        if not columns:
            continue
        for row in (line for line in table[1:] if not is_separator(line.text)):
            cells = split_cells(row.text)
            rows = [span for span in code_spans(row.text) if span.startswith("{") and _is_json(span)]
            took = _seconds(cells[header.index("time")]) if "time" in header else 0.0
            skip = f"long: {cells[header.index('time')]}" if took > LONG_S else None
            for column in columns:
                for span in code_spans(cells[column]):
                    if _PROGRAM.match(span):
                        commands.append(_command(relative(path), row.number, span, skip=skip, rows=rows))
    return commands


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def page_commands(path: Path) -> list[Command]:
    """A page's commands in page order (a table row's in its column order)."""
    return sorted(fenced_commands(path) + table_commands(path), key=lambda c: c.line)


PAGES = {relative(path): page_commands(path) for path in DOCS}
COMMANDS = [command for commands in PAGES.values() for command in commands]


@dataclass
class Outcome:
    code: int | None
    stderr: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def _workdir(root: Path) -> Path:
    """A fresh clone's layout, as far as the commands use it; runs/ and outputs start empty."""
    root.mkdir(parents=True)
    shutil.copytree(REPO / "configs", root / "configs")
    for name in (".venv", "benchmarks", "src", "setup.sh", "pyproject.toml"):
        (root / name).symlink_to(REPO / name)
    return root


def _environment() -> dict[str, str]:
    venv = REPO / ".venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTEST_CURRENT_TEST")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg")
    return env


def _write_rows(command: Command, cwd: Path) -> None:
    for name in _INPUT_FILE.findall(command.text):
        if command.rows and not (cwd / name).exists():
            (cwd / name).write_text("".join(row + "\n" for row in command.rows), encoding="utf-8")


_SERVING = threading.Lock()  # pages run side by side; two servers would want one port


def _serve(command: Command, cwd: Path, env: dict[str, str]) -> Outcome:
    """Start a server, wait until its marker's URL answers, stop it."""
    url = re.search(r"https?://\S+", command.serves).group(0)
    with _SERVING:
        return _answers(command, url, cwd, env)


def _answers(command: Command, url: str, cwd: Path, env: dict[str, str]) -> Outcome:
    start = time.monotonic()
    process = subprocess.Popen(command.shell, shell=True, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        while time.monotonic() - start < 60 and process.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    return Outcome(0 if response.status == 200 else response.status, "", time.monotonic() - start)
            except OSError:
                time.sleep(1)
        return Outcome(process.poll(), f"no answer at {url} within 60 s", time.monotonic() - start)
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=30)


def _finish(command: Command, cwd: Path, env: dict[str, str], server: ForkServer | None = None) -> Outcome:
    """Run it to its end, or stop it (its worker processes too) after TIMEOUT_S: an `rlvr` command
    line in a fork of `server` when there is one, any other through bash."""
    argv = _rlvr_argv(command.shell)
    if server is not None and argv is not None:
        return server.run(argv, cwd, env)
    start = time.monotonic()
    process = subprocess.Popen(["bash", "-c", command.shell], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        _, stderr = process.communicate(timeout=TIMEOUT_S)
        return Outcome(process.returncode, stderr, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.communicate()
        return Outcome(None, _TIMED_OUT, TIMEOUT_S)


_TIMED_OUT = f"still running after {TIMEOUT_S} s: mark it '# long: ...'"
_SHELL_SYNTAX = re.compile(r"[][|&;<>$`*?~(){}\\]")


def _rlvr_argv(shell: str) -> list[str] | None:
    """The arguments of a plain `rlvr ...` (or `.venv/bin/rlvr ...`) command line; None for
    anything bash must run (another program, an environment prefix, pipes, redirections, globs)."""
    if _SHELL_SYNTAX.search(shell):
        return None
    words = shlex.split(shell)
    return words[1:] if words and words[0] in ("rlvr", ".venv/bin/rlvr") else None


class ForkServer:
    """One process that has imported rlvr, torch and transformers, forking once per command
    (forkserver.py says what a fork keeps of a fresh process)."""

    def __init__(self, env: dict[str, str]):
        python = REPO / ".venv" / "bin" / "python"
        self.process = subprocess.Popen([str(python), str(Path(__file__).with_name("forkserver.py"))], cwd=REPO,
                                        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        self.scratch = Path(tempfile.mkdtemp(prefix="forkserver-"))
        assert self._answer() == {"ready": True}, "the fork server did not start"

    def _answer(self) -> dict:
        return json.loads(self.process.stdout.readline() or "{}")

    def run(self, argv: list[str], cwd: Path, env: dict[str, str]) -> Outcome:
        start = time.monotonic()
        out, err = self.scratch / "stdout", self.scratch / "stderr"
        request = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        pid = self._answer()["pid"]
        timer = threading.Timer(TIMEOUT_S, os.killpg, (pid, 9))
        timer.start()
        code = self._answer()["code"]
        timer.cancel()
        if time.monotonic() - start >= TIMEOUT_S:
            return Outcome(None, _TIMED_OUT, TIMEOUT_S)
        return Outcome(code, err.read_text(encoding="utf-8", errors="replace"), time.monotonic() - start)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        shutil.rmtree(self.scratch, ignore_errors=True)


def run(command: Command, cwd: Path, env: dict[str, str], server: ForkServer | None = None) -> Outcome:
    """Run one command in `cwd` and say how it ended against what its page shows."""
    _write_rows(command, cwd)
    if command.serves:
        outcome = _serve(command, cwd, env)
    else:
        outcome = _finish(command, cwd, env, server)
    if outcome.code != command.exit_code:
        tail = "\n    ".join(outcome.stderr.strip().splitlines()[-6:])
        outcome.problems.append(f"exit {outcome.code}, the page expects {command.exit_code}:\n    {tail}")
    last = outcome.stderr.strip().splitlines()[-1] if outcome.stderr.strip() else ""
    if command.error is not None and last != command.error:
        outcome.problems.append(f"the page shows '{command.error}', it printed '{last}'")
    return outcome


def run_page(page: str, root: Path, servers: dict[int, ForkServer]) -> dict[Command, Outcome]:
    """A page's commands in order, in a fresh working directory, through this thread's fork server."""
    cwd, env = _workdir(root / page.replace("/", "_")), _environment()
    server = servers.get(threading.get_ident())
    if server is None:
        server = servers[threading.get_ident()] = ForkServer(env)
    return {command: run(command, cwd, env, server) for command in PAGES[page] if command.skip is None}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[Command, Outcome]:
    root = tmp_path_factory.mktemp("doc-commands")
    servers: dict[int, ForkServer] = {}
    try:
        with ThreadPoolExecutor(2) as pool:  # the CI machine's two cores
            pages = list(pool.map(lambda page: run_page(page, root, servers), PAGES))
    finally:
        for server in servers.values():
            server.close()
    return {command: outcome for page in pages for command, outcome in page.items()}


def _case(command: Command):
    marks = [pytest.mark.slow] if command.skip is None else []
    return pytest.param(command, id=f"{command.path}:{command.line}", marks=marks)


@pytest.mark.parametrize("command", [_case(c) for c in COMMANDS])
def test_documented_command_ends_as_documented(command: Command, request: pytest.FixtureRequest):
    if command.skip is not None:
        pytest.skip(f"{command.path}:{command.line}: {command.skip}")
    outcome = request.getfixturevalue("outcomes")[command]
    assert not outcome.problems, f"{command}\n  ran: {command.shell}\n  " + "\n  ".join(outcome.problems)


@pytest.mark.slow
def test_the_slowest_commands_are_named(outcomes: dict[Command, Outcome], capsys: pytest.CaptureFixture):
    """Where the run's time went, for whoever shortens it next."""
    slowest = sorted(outcomes.items(), key=lambda item: -item[1].seconds)[:6]
    with capsys.disabled():
        print(f"\ndoc commands: {len(outcomes)} ran in {sum(o.seconds for o in outcomes.values()):.0f} s; slowest: "
              + "; ".join(f"{c.path}:{c.line} {o.seconds:.0f} s" for c, o in slowest))  # fmt: skip
    assert all(outcome.seconds <= TIMEOUT_S for outcome in outcomes.values())


def _kind(skip: str) -> str:
    """A skip's reason in a word or three, for the count."""
    if skip == "synopsis" or skip.startswith("long"):
        return skip.split(":")[0]
    kinds = {"GPU": "needs a GPU", "network": "needs the network", "model": "needs a local model"}
    return next((kind for word, kind in kinds.items() if word in skip), "needs an input the page does not give")


def skip_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for command in COMMANDS:
        if command.skip is not None:
            reason = _kind(command.skip)
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def test_the_pages_show_commands_and_say_which_cannot_run_here(capsys: pytest.CaptureFixture):
    counts = skip_counts()
    ran = sum(command.skip is None for command in COMMANDS)
    with capsys.disabled():
        print(f"\ndoc commands: {len(COMMANDS)}, {ran} run, {sum(counts.values())} skipped: "
              + "; ".join(f"{n} {reason}" for reason, n in sorted(counts.items())))  # fmt: skip
    assert ran + sum(counts.values()) == len(COMMANDS) and ran > 30
    assert {c.path for c in COMMANDS if c.skip is None} >= {"README.md", "docs/algorithms.md", "docs/memory.md"}


def test_markers_and_inline_rows_are_read(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "```\n$ rlvr train --set rollout.group_size=1\nrlvr: error: group too small\n"
        "$ .venv/bin/python benchmarks/gpu_check.py   # exit 2\n```\n\n"
        "```bash\nrlvr build-base --out /tmp/b   # long: ~15 min\nrlvr lab --port 7861   # serves the page\n"
        "rlvr eval --model PATH [--n N]\n```\n\n"
        "| to | run | time |\n|---|---|---|\n"
        '| check | `rlvr verify --input r.jsonl` with rows `{"query": {}, "completion": "x"}` | 2 s |\n'
        "| study | `rlvr reproduce controls` | 2 min 48 s |\n"
    )
    shown, script, build, lab, synopsis, verify, study = page_commands(page)
    assert (shown.exit_code, shown.error, shown.skip) == (2, "rlvr: error: group too small", None)
    assert script.exit_code == 2 and script.shell == ".venv/bin/python benchmarks/gpu_check.py"
    assert build.skip == "long: ~15 min" and lab.serves and lab.shell == "rlvr lab --port 7861"
    assert synopsis.skip == "synopsis" and study.skip == "long: 2 min 48 s"
    assert verify.rows == ('{"query": {}, "completion": "x"}',) and verify.shell.endswith("r.jsonl")
    assert shown.shell == "rlvr train --set rollout.group_size=1"  # meant to fail: not shortened


def test_a_wrong_ending_is_named(tmp_path: Path):
    env = _environment()
    quiet = run(Command("page.md", 1, "rlvr memory --model tiny-arith --precision fp33"), tmp_path, env)
    assert quiet.code == 2 and "exit 2, the page expects 0" in quiet.problems[0]
    shown = run(Command("page.md", 1, "rlvr memory --precision fp33", 2, "rlvr: error: other"), tmp_path, env)
    assert len(shown.problems) == 1 and "it printed 'rlvr: error: unknown precision" in shown.problems[0]


def test_awaited_markers_are_still_missing():
    """Each entry names a command its page shows without a marker; once the page has one, drop it."""
    for key in AWAITING_MARKERS:
        page, text = key.split(": ", 1)
        shown = [c.text for c in PAGES[page] if _COMMENT.sub("", c.text).strip() == text]
        assert shown and not any(_MARKER.search(t) for t in shown), f"{key}: the page has its marker now"


def test_the_evaluation_page_names_the_keys_rlvr_eval_takes():
    """docs/evaluation.md's `--set` item names exactly the keys eval_set_problem accepts, over every
    task (`task.hf_*` stands for all of hf's)."""
    bullet = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8").split("- `--set KEY=VALUE`", 1)[1]
    bullet = bullet.split("\n- ", 1)[0]
    named = {span for span in code_spans(bullet) if re.fullmatch(r"(task|rollout)\.\w+\*?", span)}
    taken = {key for task in task_names() for key in eval_fields(task)}
    stands_for = {key for key in taken for span in named if span.endswith("*") and key.startswith(span[:-1])}
    assert {span for span in named if not span.endswith("*")} | stands_for == taken
