"""Multi-turn rollouts with a python tool (rollout.tools=python): the model writes a call, sampling
stops at the call's end, the sandbox runs it (sandbox/tool.py), its output is appended as an
observation, and sampling continues from there, up to rollout.max_turns model turns and
rollout.max_new_tokens tokens in all (observations included, as TRL's max_completion_length).

A trajectory is token ids from end to end. Each turn continues from the exact ids sampled so far
plus the observation's ids, tokenized once, on their own: nothing is decoded and encoded again, so
the trainer scores exactly the tokens the sampler drew (re-tokenizing the text can give other ids:
tests/rollout/test_tools.py shows one case). The batch marks the policy's tokens in `tool_mask`
(TRL's name: 1 sampled, 0 observation); the loss, the KL term and the entropy see only those
(RolloutBatch.policy_mask), while the model attends to every token.

Call formats (rollout.tool_format): tags, `<tool_call>CODE</tool_call>` answered by
`<tool_response>OUTPUT</tool_response>` (the tag names of Qwen2.5's and Hermes' tool calls), or
fenced, a ```python block answered by an ```output block (ToRL, SimpleTIR). A call ends where its
closing marker appears in the decoded text of the turn, so it is found however the tokenizer split
the marker. What verifiers read (`texts`) is the policy's own text: a tool's output can never be
the model's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from rlvr.sandbox.tool import FORMATS, PythonTool, ToolFormat, ToolResult, tool_limits

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from rlvr.config import RolloutConfig
    from rlvr.types import RolloutBatch

OUTPUT_BYTES = 64 << 10
"""A call printing more than this is killed (its observation says so); rollout.tool_output_chars
then cuts what the policy reads."""


class ToolUse:
    """The tool a rollout may call, its call format and its turn limit; holds a sandbox pool."""

    def __init__(
        self,
        fmt: ToolFormat,
        *,
        max_turns: int,
        timeout_s: float = 2.0,
        output_chars: int = 200,
        slots: int | None = None,
    ) -> None:
        self.format = fmt
        self.max_turns = max_turns
        self.output_chars = output_chars
        self.tool = PythonTool(tool_limits(timeout_s, OUTPUT_BYTES), slots=slots)

    @classmethod
    def of(cls, rollout: RolloutConfig) -> ToolUse | None:
        """The configured tool use, or None for rollout.tools=none."""
        if rollout.tools == "none":
            return None
        return cls(
            FORMATS[rollout.tool_format],
            max_turns=rollout.max_turns,
            timeout_s=rollout.tool_timeout_s,
            output_chars=rollout.tool_output_chars,
        )

    def run(self, calls: list[str]) -> list[ToolResult]:
        return self.tool.run(calls)

    def clip(self, output: str) -> str:
        if len(output) <= self.output_chars:
            return output
        return output[: self.output_chars] + f"...[{len(output) - self.output_chars} more characters cut]\n"

    def close(self) -> None:
        self.tool.close()


class CallWatcher:
    """Follows the text of each row's current turn, token by token, and says when a call is
    complete. Pieces are decoded one token at a time (cached per id): the markers are ASCII, which a
    single token decodes to exactly."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, fmt: ToolFormat, rows: int):
        self.tokenizer = tokenizer
        self.format = fmt
        self.text = [""] * rows
        self.ended = [-1] * rows  # the step (column of the turn) whose token completed a call
        self.step = [0] * rows
        self._pieces: dict[int, str] = {}

    def piece(self, token: int) -> str:
        if token not in self._pieces:
            self._pieces[token] = self.tokenizer.decode([token])
        return self._pieces[token]

    def __call__(self, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[m] bool: which of `rows` have just completed a call with `tokens` [m]."""
        done = []
        for row, token in zip(rows.tolist(), tokens.tolist()):
            if self.ended[row] >= 0:
                done.append(True)
                continue
            self.text[row] += self.piece(token)
            if self.format.call_close in self.text[row] and self.format.call_in(self.text[row]) is not None:
                self.ended[row] = self.step[row]
            self.step[row] += 1
            done.append(self.ended[row] >= 0)
        return torch.tensor(done, dtype=torch.bool, device=tokens.device)


def sanitize(output: str, tokenizer: PreTrainedTokenizerBase) -> str:
    """A tool's output with the text of every special and added token removed (EOS, chat markers,
    the tool tags, <answer>), until none is left: an observation can never end the turn, open or
    close a call, or write a tag the model did not."""
    markers = sorted(
        {t for t in tokenizer.all_special_tokens if t}
        | {t.content for t in tokenizer.added_tokens_decoder.values() if t.content},
        key=len,
        reverse=True,
    )
    previous = None
    while previous != output:
        previous = output
        for marker in markers:
            output = output.replace(marker, "")
    return output


def observation_ids(tokenizer: PreTrainedTokenizerBase, tools: ToolUse, result: ToolResult) -> list[int]:
    """The observation's token ids, tokenized once, on their own."""
    text = tools.format.observation(tools.clip(sanitize(result.output, tokenizer)))
    return tokenizer(text, add_special_tokens=False).input_ids


@dataclass
class _Row:
    """One trajectory as it grows."""

    ids: list[int]
    logp: list[float]
    policy: list[int]
    turns: list[dict]
    finish: str | None = None


def sample_turns(
    generate,
    tokenizer: PreTrainedTokenizerBase,
    prompts: list[list[int]],
    group_size: int,
    *,
    max_new_tokens: int,
    stop_ids: list[int],
    tools: ToolUse,
) -> list[_Row]:
    """Every completion's trajectory, turn by turn. `generate(prefixes, group_size, max_new_tokens,
    watcher) -> (ids [n, t], logp [n, t])` samples one turn for each prefix (its G rows sharing it
    when group_size > 1), ending a row at a stop id or when the watcher says its call is complete."""
    n = len(prompts) * group_size
    rows = [_Row([], [], [], []) for _ in range(n)]
    active = list(range(n))
    stop = set(stop_ids)
    for turn in range(tools.max_turns):
        if not active:
            break
        watcher = CallWatcher(tokenizer, tools.format, len(active))
        budget = max(max_new_tokens - len(rows[i].ids) for i in active)
        if turn == 0:
            ids, logp = generate(prompts, group_size, budget, watcher)  # [n, t] the G rows share a prompt
        else:
            ids, logp = generate([prompts[i // group_size] + rows[i].ids for i in active], 1, budget, watcher)
        calls: list[tuple[int, str]] = []
        for k, i in enumerate(active):
            row, left = rows[i], max_new_tokens - len(rows[i].ids)
            sampled = ids[k].tolist()
            end = _turn_end(sampled, stop, watcher.ended[k])
            cut = min(end, left)
            start = len(row.ids)
            row.ids += sampled[:cut]
            row.logp += logp[k, :cut].tolist()
            row.policy += [1] * cut
            row.turns.append({"start": start, "end": start + cut})
            if cut < end or (end == len(sampled) and sampled[end - 1] not in stop and watcher.ended[k] < 0):
                row.finish = "length"  # the budget ran out inside the turn
            elif sampled[end - 1] in stop:
                row.finish = "stop"
            elif turn == tools.max_turns - 1:
                row.finish = "length"  # a call with no turn left to read its output: not run
                row.turns[-1]["call_not_run"] = True
            else:
                calls.append((i, tools.format.call_in(watcher.text[k]) or ""))
        results = tools.run([code for _, code in calls])
        for (i, code), result in zip(calls, results):
            row = rows[i]
            obs = observation_ids(tokenizer, tools, result)
            record = {"code": code, "output": result.output, "error": result.error}
            if len(row.ids) + len(obs) >= max_new_tokens:  # no room left for it and a reply (TRL drops it too)
                row.finish = "length"
                row.turns[-1] |= record | {"dropped": True}
                continue
            start = len(row.ids)
            row.ids += obs
            row.logp += [0.0] * len(obs)
            row.policy += [0] * len(obs)
            row.turns[-1] |= record | {"obs_start": start, "obs_end": len(row.ids)}
        active = [i for i in active if rows[i].finish is None]
    for i in active:
        rows[i].finish = "length"
    return rows


def _turn_end(sampled: list[int], stop: set[int], call_end: int) -> int:
    """How many of a turn's sampled tokens belong to it: through the first stop id or the token
    that completed a call, whichever came first; all of them if neither."""
    for t, token in enumerate(sampled):
        if token in stop or t == call_end:
            return t + 1
    return len(sampled)


def package_turns(
    tokenizer: PreTrainedTokenizerBase,
    queries,
    group_size: int,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    rows: list[_Row],
    stop_ids: list[int],
) -> RolloutBatch:
    """The trajectories as a RolloutBatch: completion_mask 1 on every token of a trajectory,
    tool_mask 1 on the policy's; `texts` decode the policy's tokens only, without a final stop."""
    from rlvr.types import RolloutBatch

    n, width = len(rows), max([len(r.ids) for r in rows] + [1])
    pad = tokenizer.pad_token_id
    ids = torch.full((n, width), pad, dtype=torch.long)  # [N, T]
    mask = torch.zeros((n, width), dtype=torch.long)  # [N, T]
    policy = torch.zeros((n, width), dtype=torch.long)  # [N, T]
    logp = torch.zeros((n, width), dtype=torch.float32)  # [N, T]
    texts = []
    for i, row in enumerate(rows):
        length = len(row.ids)
        ids[i, :length] = torch.tensor(row.ids, dtype=torch.long)
        mask[i, :length] = 1
        policy[i, :length] = torch.tensor(row.policy, dtype=torch.long)
        logp[i, :length] = torch.tensor(row.logp, dtype=torch.float32)
        own = [t for t, p in zip(row.ids, row.policy) if p]
        if row.finish == "stop" and own:
            own = own[:-1]
        texts.append(own)
    return RolloutBatch(
        queries=list(queries),
        group_size=group_size,
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=ids,
        completion_mask=mask,
        old_logp=logp,
        texts=tokenizer.batch_decode(texts, skip_special_tokens=True),
        finish_reasons=[r.finish or "length" for r in rows],
        tool_mask=policy,
        turns=[r.turns for r in rows],
    )


def tool_metrics(batch: RolloutBatch) -> dict[str, float]:
    """tools/* for a batch of tool rollouts ({} without tools): calls per completion and failed
    calls per call (TRL's tools/call_frequency and tools/failure_frequency), the share of
    completions that called the tool, model turns per completion, and the share of completion
    tokens that are observations."""
    if batch.turns is None:
        return {}
    n = len(batch.turns)
    calls = [t for turns in batch.turns for t in turns if "error" in t]
    failed = sum(bool(t["error"]) for t in calls)
    tokens = float(batch.completion_mask.sum())
    observed = float((batch.completion_mask * (1 - batch.tool_mask)).sum())
    return {
        "tools/call_frequency": len(calls) / n,
        "tools/failure_frequency": failed / len(calls) if calls else 0.0,
        "tools/errors": failed,
        "tools/use_rate": sum(any("error" in t for t in turns) for turns in batch.turns) / n,
        "tools/turns": sum(len(turns) for turns in batch.turns) / n,
        "tools/observation_share": observed / tokens if tokens else 0.0,
    }
