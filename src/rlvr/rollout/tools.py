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

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from rlvr.errors import UserError
from rlvr.rollout.prompts import end_of_turn_id
from rlvr.sandbox import SandboxUnavailable
from rlvr.sandbox.bwrap import find_host
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
        fmt: ToolFormat | str,
        *,
        max_turns: int,
        timeout_s: float = 2.0,
        output_chars: int = 200,
        slots: int | None = None,
    ) -> None:
        """`fmt`: a text format (FORMATS["tags"], FORMATS["fenced"]) or "chat" (TRL's convention: a
        JSON call in the tags ends the turn, the answer is a `tool` message of the chat template)."""
        self.chat = fmt == "chat"
        self.format = FORMATS["tags"] if self.chat else fmt
        self.max_turns = max_turns
        self.output_chars = output_chars
        self._checked: set[tuple[int, str]] = set()
        try:
            find_host()  # before any model work: a run whose tool cannot run here is refused, by name
        except SandboxUnavailable as error:
            raise UserError(
                f"rollout.tools=python runs each call in the sandbox, which cannot run here: {error}"
            ) from None
        self.tool = PythonTool(tool_limits(timeout_s, OUTPUT_BYTES), slots=slots)

    @classmethod
    def of(cls, rollout: RolloutConfig) -> ToolUse | None:
        """The configured tool use, or None for rollout.tools=none."""
        if rollout.tools == "none":
            return None
        return cls(
            "chat" if rollout.tool_format == "chat" else FORMATS[rollout.tool_format],
            max_turns=rollout.max_turns,
            timeout_s=rollout.tool_timeout_s,
            output_chars=rollout.tool_output_chars,
        )

    def check(self, tokenizer: PreTrainedTokenizerBase, style: str) -> None:
        """UserError if this format cannot run with `tokenizer` prompted in `style` (the chat format's
        template check, `check_chat_tools`); each tokenizer is checked once, not every sampling call."""
        if self.chat and (id(tokenizer), style) not in self._checked:
            check_chat_tools(tokenizer, style)
            self._checked.add((id(tokenizer), style))

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

    def __init__(self, tokenizer: PreTrainedTokenizerBase, fmt: ToolFormat, rows: int, *, stops: bool = True):
        """`stops=False` (the chat format, whose calls end with the turn) only follows the text."""
        self.tokenizer = tokenizer
        self.format = fmt
        self.stops = stops
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
            if not self.stops:
                done.append(False)
                continue
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
    """The observation's token ids, tokenized once, on their own; in the chat format, the chat
    template's tool message (`chat_observation_ids`)."""
    output = tools.clip(sanitize(result.output, tokenizer))
    if tools.chat:
        return chat_observation_ids(tokenizer, output)
    return tokenizer(tools.format.observation(output), add_special_tokens=False).input_ids


TOOL_NAME = "python"
"""The chat format's one tool: TRL's `tools=[python]` for `def python(code: str) -> str`."""


def _chat_call(code: str = "") -> list[dict]:
    return [{"type": "function", "function": {"name": TOOL_NAME, "arguments": {"code": code}}}]


def chat_observation_ids(tokenizer: PreTrainedTokenizerBase, output: str) -> list[int]:
    """What follows an assistant turn that called the tool: the template's `tool` message with
    `output`, and the next assistant turn's opening. TRL's rule (`GRPOTrainer._get_tool_suffix_ids`):
    render a conversation up to the call, and the same one with the tool message and a generation
    prompt; the ids after the prefix, cut at its last end-of-turn token (the template's, else EOS),
    are the observation, whichever stop token the model ended its turn with."""
    end_id = end_of_turn_id(tokenizer) or tokenizer.eos_token_id
    messages = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": _chat_call()}]
    tool = {"role": "tool", "name": TOOL_NAME, "content": output}
    prefix = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False)
    full = tokenizer.apply_chat_template(
        [*messages, tool], tokenize=True, add_generation_prompt=True, return_dict=False
    )
    ends = [i for i, token in enumerate(prefix) if token == end_id]
    after = tokenizer.decode(prefix[ends[-1] + 1 :]) if ends else ""  # only what follows the turn's end (a newline)
    if not ends or after.strip() or full[: ends[-1] + 1] != prefix[: ends[-1] + 1]:
        raise UserError(
            "rollout.tool_format=chat: the chat template does not end the assistant's tool call with its end of "
            f"turn (id {end_id}), or renders the call differently once a tool message follows; use "
            "rollout.tool_format=tags"
        )
    return full[ends[-1] + 1 :]


def check_chat_tools(tokenizer: PreTrainedTokenizerBase, style: str) -> None:
    """UserError unless the chat format can run with this tokenizer: chat prompts, and a template
    that renders the call's arguments and the tool message (TRL's `supports_tool_calling`)."""
    name = getattr(tokenizer, "name_or_path", "") or "this model"
    if style != "chat":
        raise UserError(
            f"rollout.tool_format=chat needs chat prompts, but model {name} is prompted plain (no chat template, "
            "or task.prompt_format=plain); use rollout.tool_format=tags"
        )
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": _chat_call("rlvr_code_probe")},
        {"role": "tool", "name": TOOL_NAME, "content": "rlvr_output_probe"},
    ]
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False)
    except Exception as error:  # a template without tool branches may raise on the tool role
        text = f"{type(error).__name__}"
    if "rlvr_code_probe" not in text or "rlvr_output_probe" not in text:
        raise UserError(
            f"rollout.tool_format=chat: the chat template of model {name} does not render tool calls and tool "
            "messages (TRL requires the same); use rollout.tool_format=tags"
        )
    chat_observation_ids(tokenizer, "rlvr_output_probe")  # the template's end of turn cuts it cleanly


def chat_call_in(turn: str) -> tuple[str, str] | None:
    """(code, problem) of the first tool call in a chat-format turn, or None when it has none: the
    call is `<tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call>` (Qwen2.5's and
    Hermes' layout); `problem` names what is wrong with a call that cannot run ("" when none is)."""
    body = FORMATS["tags"].call_in(turn)
    if body is None:
        return None
    try:
        call = json.loads(body)
    except ValueError:
        return "", "the call is not JSON"
    arguments = call.get("arguments") if isinstance(call, dict) else None
    if not isinstance(call, dict) or call.get("name") != TOOL_NAME:
        return "", f"the only tool is {TOOL_NAME!r}"
    if not isinstance(arguments, dict) or not isinstance(arguments.get("code"), str):
        return "", 'expected arguments {"code": "..."}'
    return arguments["code"], ""


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
    watcher, at) -> (ids [n, t], logp [n, t])` samples one turn for each prefix (its G rows sharing it
    when group_size > 1), ending a row at a stop id or when the watcher says its call is complete;
    `at` is (the rows sampled, each row's tokens so far), which common random numbers need."""
    n = len(prompts) * group_size
    rows = [_Row([], [], [], []) for _ in range(n)]
    active = list(range(n))
    stop = set(stop_ids)
    for turn in range(tools.max_turns):
        if not active:
            break
        watcher = CallWatcher(tokenizer, tools.format, len(active), stops=not tools.chat)
        budget = max(max_new_tokens - len(rows[i].ids) for i in active)
        at = (active, [len(rows[i].ids) for i in active])  # which rows, how far into their completions
        if turn == 0:
            ids, logp = generate(prompts, group_size, budget, watcher, at)  # [n, t] the G rows share a prompt
        else:
            ids, logp = generate([prompts[i // group_size] + rows[i].ids for i in active], 1, budget, watcher, at)
        last = turn == tools.max_turns - 1
        calls: list[tuple[int, str]] = []
        bad: dict[int, str] = {}  # chat-format calls that cannot run: what is wrong with them
        for k, i in enumerate(active):
            sampled, left = ids[k].tolist(), max_new_tokens - len(rows[i].ids)
            call = _add_turn(rows[i], sampled, logp[k], left, stop, watcher, k, tools, last=last)
            if call is not None:
                calls.append((i, call[0]))
                if call[1]:
                    bad[i] = call[1]
        ran = iter(tools.run([code for i, code in calls if i not in bad]))
        results = [ToolResult(f"ToolError: {bad[i]}\n", "bad_call") if i in bad else next(ran) for i, _ in calls]
        for (i, code), result in zip(calls, results):
            _add_observation(rows[i], code, result, observation_ids(tokenizer, tools, result), max_new_tokens)
        active = [i for i in active if rows[i].finish is None]
    for i in active:
        rows[i].finish = "length"
    return rows


def _add_turn(
    row: _Row,
    sampled: list[int],
    logp: torch.Tensor,
    left: int,
    stop: set[int],
    watcher: CallWatcher,
    k: int,
    tools: ToolUse,
    *,
    last: bool,
) -> tuple[str, str] | None:
    """Append one sampled turn (row k of the watcher) to `row`, within the `left` tokens of budget;
    returns the call to run, (code, what is wrong with it or ""), or None when the row ends here."""
    end = _turn_end(sampled, stop, watcher.ended[k])
    cut = min(end, left)
    start = len(row.ids)
    row.ids += sampled[:cut]
    row.logp += logp[:cut].tolist()
    row.policy += [1] * cut
    row.turns.append({"start": start, "end": start + cut})
    if cut < end or (end == len(sampled) and sampled[end - 1] not in stop and watcher.ended[k] < 0):
        row.finish = "length"  # the budget ran out inside the turn
        return None
    if sampled[end - 1] in stop:
        call = chat_call_in(watcher.text[k]) if tools.chat else None
        if call is None:
            row.finish = "stop"
        elif last:  # TRL's last iteration: the turn ended on its own
            row.finish = "stop"
            row.turns[-1]["call_not_run"] = True
            return None
        return call
    if last:
        row.finish = "length"  # a call with no turn left to read its output: not run
        row.turns[-1]["call_not_run"] = True
        return None
    return tools.format.call_in(watcher.text[k]) or "", ""


def _add_observation(row: _Row, code: str, result: ToolResult, obs: list[int], max_new_tokens: int) -> None:
    """Append a call's output (masked out of the loss) to `row`, or drop it when there is no room
    left for it and a reply (TRL drops it too)."""
    record = {"code": code, "output": result.output, "error": result.error}
    if len(row.ids) + len(obs) >= max_new_tokens:
        row.finish = "length"
        row.turns[-1] |= record | {"dropped": True}
        return
    start = len(row.ids)
    row.ids += obs
    row.logp += [0.0] * len(obs)
    row.policy += [0] * len(obs)
    row.turns[-1] |= record | {"obs_start": start, "obs_end": len(row.ids)}


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


def calls_run(turns: list[dict]) -> list[dict]:
    """The turns of one completion (RolloutBatch.turns[i], or a capture's) whose call ran: its output
    was read, or dropped for want of room; not a call left unrun on the last turn."""
    return [turn for turn in turns if "error" in turn]


def tool_metrics(batch: RolloutBatch) -> dict[str, float]:
    """tools/* for a batch of tool rollouts ({} without tools): calls per completion and failed
    calls per call (TRL's tools/call_frequency and tools/failure_frequency), the share of
    completions that called the tool, model turns per completion, and the share of completion
    tokens that are observations."""
    if batch.turns is None:
        return {}
    n = len(batch.turns)
    calls = [call for turns in batch.turns for call in calls_run(turns)]
    failed = sum(bool(t["error"]) for t in calls)
    tokens = float(batch.completion_mask.sum())
    observed = float((batch.completion_mask * (1 - batch.tool_mask)).sum())
    return {
        "tools/call_frequency": len(calls) / n,
        "tools/failure_frequency": failed / len(calls) if calls else 0.0,
        "tools/errors": failed,
        "tools/use_rate": sum(bool(calls_run(turns)) for turns in batch.turns) / n,
        "tools/turns": sum(len(turns) for turns in batch.turns) / n,
        "tools/observation_share": observed / tokens if tokens else 0.0,
    }
