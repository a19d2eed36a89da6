"""`rlvr inspect` on tool rollouts (configs/arith-tool.yaml, the shipped tiny-arith-tool base).

A real 1-step tool run keeps its checkpoint; `rlvr inspect --run RUN --step 2` captures step 2 from
it; the run then takes step 2 itself. The capture must hold the batch's `tool_mask` and `turns`,
its loss mask must be the policy's tokens only, the replay of the capture must give the loss the
run logged (observations out of the loss), and the page must show each call's turns with the
observation's tokens marked 0 in the mask.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from rlvr.cli import main
from rlvr.diagnostics.capture import rollout_batch
from rlvr.diagnostics.inspector import summary_lines
from rlvr.diagnostics.replay import replay

pytestmark = pytest.mark.slow

TOOL = str(Path(__file__).resolve().parents[2] / "configs" / "arith-tool.yaml")
SMALL = [
    "train.batch_queries=4",  # 16 completions a step: the base calls the tool on about a fifth of them
    "rollout.group_size=4",
    "task.num_eval=4",
    "train.eval_samples=1",
    "train.threads=1",
    "optim.micro_batch_size=8",  # two micro-batches, as the trainer splits them
    "train.save_every=1",
]
SETS = [arg for value in SMALL for arg in ("--set", value)]


def _observations(capture: dict) -> list[tuple[int, dict]]:
    return [(i, turn) for i, turns in enumerate(capture["turns"]) for turn in turns if "obs_start" in turn]


@pytest.fixture(scope="module")
def tool_step(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, dict]:
    """(capture of step 2 of a real tool run, its folder, the metrics.jsonl line the run logged for step 2)."""
    root = tmp_path_factory.mktemp("inspect-tools")
    run, out = root / "run", root / "inspect"
    assert main(["train", "--config", TOOL, *SETS, "--set", "train.steps=1", "--out", str(run), "--quiet"]) == 0
    assert main(["inspect", "--run", str(run), "--step", "2", "--out", str(out)]) == 0
    assert main(["train", "--resume", str(run), "--set", "train.steps=2", "--quiet"]) == 0
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    step2 = next(m for m in logged if m.get("step") == 2 and "loss" in m)
    capture = json.loads((out / "capture.json").read_text())
    assert _observations(capture), "the captured batch has no tool observation: nothing to check (seed changed?)"
    return capture, out, step2


def test_the_capture_records_the_tool_mask_and_the_turns(tool_step) -> None:
    capture, _, step2 = tool_step
    n, t = len(capture["completions"]), len(capture["completion_ids"][0])
    assert capture["source"]["policy"].startswith("checkpoint after step 1")
    assert len(capture["turns"]) == n and [len(row) for row in capture["tool_mask"]] == [t] * n
    for i, turns in enumerate(capture["turns"]):
        policy, completion = capture["tool_mask"][i], capture["completion_mask"][i]
        for turn in turns:
            assert all(policy[c] == 1 for c in range(turn["start"], turn["end"])), (i, turn)
            if "obs_start" in turn:
                assert turn["obs_end"] > turn["obs_start"] and "code" in turn and "error" in turn
                assert all(policy[c] == 0 and completion[c] == 1 for c in range(turn["obs_start"], turn["obs_end"]))
        # the loss mask the capture shows is the policy's tokens: completion_mask less the observations
        assert capture["mask"][i] == [m * p for m, p in zip(completion, policy)], i
    assert capture["counts"]["num_tokens"] == sum(map(sum, capture["mask"])) < sum(map(sum, capture["completion_mask"]))
    # the step's own tools/* metrics were computed from these turns
    used = sum(any("error" in turn for turn in turns) for turns in capture["turns"]) / n
    assert used == pytest.approx(step2["tools/use_rate"]) == pytest.approx(capture["metrics"]["tools/use_rate"])
    assert capture["metrics"]["tools/call_frequency"] == pytest.approx(
        sum("error" in turn for turns in capture["turns"] for turn in turns) / n
    )


def test_rollout_batch_restores_the_policy_mask(tool_step) -> None:
    capture, _, _ = tool_step
    batch = rollout_batch(capture)
    assert batch.turns == capture["turns"]
    assert torch.equal(batch.policy_mask, torch.tensor(capture["mask"], dtype=torch.long))
    assert not torch.equal(batch.policy_mask, batch.completion_mask)  # observations are in the batch, not the loss


def test_the_capture_is_the_update_the_run_took(tool_step) -> None:
    capture, _, step2 = tool_step
    for key in ("loss", "grad_norm", "update_norm"):
        assert capture[key] == pytest.approx(step2[key], rel=1e-6, abs=1e-9), key


def test_replay_of_a_tool_capture_gives_the_logged_loss(tool_step) -> None:
    capture, out, step2 = tool_step
    same = replay(capture, out, [])
    assert same["loss_before"] == pytest.approx(step2["loss"], rel=1e-5, abs=1e-8)
    assert same["grad_norm_before"] == pytest.approx(step2["grad_norm"], rel=1e-4)
    weights = same["token_weight"]  # [N][T] ∂loss/∂logp under the replay
    for i, turn in _observations(capture):
        assert all(weights[i][c] == 0 for c in range(turn["obs_start"], turn["obs_end"])), (i, turn)
    assert torch.allclose(torch.tensor(weights), torch.tensor(capture["token_weight"]), atol=1e-7)
    # the same batch with the observations left in the loss (no tool_mask) is another update: this
    # test fails if the replay loses the capture's tool mask
    untooled = {k: v for k, v in capture.items() if k not in ("tool_mask", "turns")}
    other = replay(untooled, out, [])
    assert (
        abs(other["loss_before"] - step2["loss"]) > 1e-6 or abs(other["grad_norm_before"] - step2["grad_norm"]) > 1e-4
    )


def test_the_cli_summary_counts_the_calls(tool_step) -> None:
    capture, _, _ = tool_step
    calls = sum("error" in turn for turns in capture["turns"] for turn in turns)
    failed = sum(bool(turn.get("error")) for turns in capture["turns"] for turn in turns)
    masked = sum(turn["obs_end"] - turn["obs_start"] for _, turn in _observations(capture))
    [line] = [line for line in summary_lines(capture) if line.startswith("tools:")]
    assert line.startswith(f"tools: {calls} call") and f"({failed} failed)" in line
    assert f"{masked} observation tokens are 0 in the loss mask" in line


# ---------------------------------------------------------------------------------------------
# The page, in a real browser


try:
    from playwright import sync_api as playwright
except ImportError:  # rlvr[dev] not installed
    playwright = None
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    playwright is None or CHROMIUM is None, reason="needs playwright (rlvr[dev]) and the system chromium (setup.sh)"
)

SHOWN = """() => {
  const turns = [...document.querySelectorAll('details.turns')].map(d => ({
    i: +d.dataset.i, open: d.open, summary: d.querySelector('summary').textContent,
    rows: [...d.querySelectorAll('tr')].slice(1).map(r => ({
      kind: r.className, cells: [...r.querySelectorAll('td')].map(td => td.textContent)}))}));
  const tokens = [...document.querySelectorAll('#stage2 .tok')].map(s => ({
    i: +s.dataset.i, t: +s.dataset.t, obs: s.classList.contains('obs'), text: s.textContent, title: s.title,
    background: getComputedStyle(s).backgroundImage, colour: s.style.background}));
  return {turns, tokens, legend: (document.getElementById('tool-legend') || {}).textContent || null,
          stage4: document.getElementById('stage4').textContent};
}"""


def _open(page_path: Path, quantity: str | None = None) -> dict:
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_path.as_uri())
        if quantity:
            page.select_option("#quantity", quantity)
        shown = page.evaluate(SHOWN)
        browser.close()
    assert errors == []
    return shown


@needs_chromium
@pytest.mark.parametrize("quantity", ["token_weight", "ratio"])
def test_the_page_shows_each_turn_and_the_observations_masked_out(tool_step, quantity: str) -> None:
    capture, out, _ = tool_step
    shown = _open(out / "capture.html", quantity)
    by_token = {(s["i"], s["t"]): s for s in shown["tokens"]}
    assert len(by_token) == sum(map(sum, capture["completion_mask"]))  # every real token, observations too
    for (i, t), span in by_token.items():
        observation = capture["tool_mask"][i][t] == 0
        assert span["obs"] == observation, (i, t)
        if observation:  # striped and struck out, never coloured by a loss quantity, and says why on hover
            assert span["colour"] == "" and "repeating-linear-gradient" in span["background"]
            assert "mask: 0 (tool observation" in span["title"]
        else:
            assert span["colour"] and "mask: 1" in span["title"] and "repeating" not in span["background"]
    tables = {table["i"]: table for table in shown["turns"]}
    called = {
        i for i, turns in enumerate(capture["turns"]) if any("error" in u or u.get("call_not_run") for u in turns)
    }
    assert set(tables) == called and all(table["open"] for table in tables.values())
    for i in called:
        tokens, rows = capture["completions"][i]["tokens"], tables[i]["rows"]
        expected = []
        for k, turn in enumerate(capture["turns"][i]):
            expected.append(("policy", str(k + 1), "1 (in the loss)", "".join(tokens[turn["start"] : turn["end"]])))
            if "error" in turn:
                expected.append(("call", "", "", f"code: {turn['code']}"))
            elif turn.get("call_not_run"):
                expected.append(("call", "", "", "not run"))
            if "obs_start" in turn:
                text = "".join(tokens[turn["obs_start"] : turn["obs_end"]])
                expected.append(("obs", "", "0 (masked out)", text))
        assert [row["kind"] for row in rows] == [e[0] for e in expected], i
        for row, (kind, turn_no, mask, text) in zip(rows, expected):
            assert row["cells"][0] == turn_no and row["cells"][3] == mask
            assert row["cells"][4].startswith(text), (i, kind, row["cells"][4], text)
    masked = sum(turn["obs_end"] - turn["obs_start"] for _, turn in _observations(capture))
    assert f"{masked} of {len(by_token)} completion tokens are observations" in shown["legend"]
    assert f"the {capture['counts']['num_tokens']} tokens counted are the policy's" in shown["stage4"]


@needs_chromium
def test_a_capture_without_tools_shows_no_tool_marks(base_model_dir, tmp_path: Path) -> None:
    out = tmp_path / "plain"
    sets = ["--set", f"model.name={base_model_dir}", "--set", "train.batch_queries=2", "--set", "rollout.group_size=4",
            "--set", "train.threads=1"]  # fmt: skip
    assert main(["inspect", "--config", TOOL.replace("arith-tool", "smoke"), *sets, "--out", str(out)]) == 0
    capture = json.loads((out / "capture.json").read_text())
    assert "tool_mask" not in capture and "turns" not in capture
    shown = _open(out / "capture.html")
    assert shown["turns"] == [] and shown["legend"] is None and "tool observations" not in shown["stage4"]
    assert shown["tokens"] and not any(s["obs"] or "mask:" in s["title"] for s in shown["tokens"])
