"""Typed configuration: one dataclass per concern, YAML presets, `--set key=value` overrides.

Every field carries a one-line docstring (the string right below it); `rlvr train --help` shows
them, so the help and the code cannot drift. Validation errors name the field and say what to do.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib.util
import inspect
import re
import sys
import textwrap
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from rlvr.errors import UserError


class ConfigError(UserError):
    """A configuration a user wrote is invalid; the message says which field and how to fix it."""


@dataclass
class ModelConfig:
    name: str = "tiny-arith"
    """Policy to train: 'tiny-arith' (the embedded ~0.9M-parameter Llama warmed up on arith), 'tiny-funcsynth' (the same warmed up on funcsynth) or a path to a Hugging Face model directory."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where to train and sample; 'auto' picks CUDA when present."""
    forward: Literal["auto", "lean", "hf"] = "auto"
    """lean: plain Llama policies sample and score through rlvr.models.lean (HF's math, each distinct prompt run once; faster on CPU); hf: transformers' forward and generate; auto: lean on CPU, hf on GPU."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Precision of the policy's weights: bfloat16 halves the base weights' memory and runs the forward in bf16, for LoRA only (model.lora_rank > 0): the adapters, all that trains, stay float32, with float32 gradients and AdamW states (`rlvr memory --precision bf16-mixed`); sample with it at rollout.dtype=bfloat16."""
    gradient_checkpointing: bool = False
    """Recompute each decoder layer's activations in the backward instead of keeping them (Chen et al. 2016, arXiv:1604.06174): activation memory falls from every layer's to one layer's plus each layer's input, for about one more forward pass; transformers' forward only (model.forward=auto picks it)."""
    lora_rank: int = 0
    """LoRA rank r (Hu et al. 2021, arXiv:2106.09685): train rank-r adapters on lora_target_modules and freeze the base; 0 trains every weight."""
    lora_alpha: float = 16.0
    """LoRA scale α: an adapter adds (α/r)·B A x to its projection."""
    lora_dropout: float = 0.0
    """Dropout on the adapters' input; must be 0: rlvr runs the policy in eval mode (sampling and scoring must see the same function), where dropout is off, so another value would do nothing."""
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Module names that get adapters (default: Llama's attention and MLP projections)."""


HfFormat = Literal["columns", "gsm8k", "math"]
"""Dataset layouts task.name=hf reads (rlvr.tasks.formats.FORMATS has one entry for each)."""


@dataclass
class TaskConfig:
    name: Literal["arith", "jsonl", "hf", "funcsynth", "reasoning_gym", "verifiers", "proofs"] = "arith"
    """'arith' generates multi-step arithmetic queries; 'jsonl' reads dataset rows from train_path / eval_path; 'hf' maps local Hugging Face dataset files (task.hf_*); 'funcsynth' asks for a Python function from three examples (python rows with hidden tests); 'reasoning_gym' generates one reasoning-gym dataset (task.rg_*; the `reasoning_gym` extra); 'verifiers' loads a single-turn environment with the verifiers contract and scores with its rubric (task.vf_*; the `verifiers` extra); 'proofs' generates Coq lemmas in five families (coq rows, checked by real Coq; rlvr.tasks.proofs)."""
    train_path: str = ""
    """JSONL file of dataset rows ({"id", "prompt", "verifier"}) for task 'jsonl'."""
    eval_path: str = ""
    """JSONL file of held-out dataset rows for task 'jsonl'."""
    operands: int = 3
    """arith: numbers per expression (operands - 1 reasoning steps)."""
    train_mix: str = ""
    """arith: training chain lengths as 'K:N,...' (e.g. '4:300,5:300': 300 train queries with 4 operands and 300 with 5), a curriculum over depths; empty = num_train queries with `operands` numbers. Held-out queries always have `operands` numbers."""
    digits: int = 1
    """arith: digits per operand."""
    max_value: int = 99
    """arith: largest value an intermediate result may take (smallest is 0)."""
    min_operand: int = 0
    """arith: smallest operand (the largest has `digits` digits); 2 leaves out 0 and 1, so that few wrong chains land on the right answer."""
    num_train: int = 2000
    """arith, funcsynth, reasoning_gym, proofs: number of distinct training queries; verifiers: at most this many rows of the environment's dataset."""
    num_eval: int = 200
    """arith, funcsynth, reasoning_gym, proofs: number of distinct held-out queries (disjoint from training by construction); verifiers: at most this many rows of its eval_dataset (without one: the last num_eval rows of its dataset, never trained on)."""
    data_seed: int = 0
    """Seed of the generated data; fixed so that runs with different --seed share one held-out split."""
    prompt_format: Literal["auto", "chat", "plain"] = "auto"
    """How a prompt reaches the model: chat (the prompt as the user turn of the tokenizer's chat template, the completion as the assistant turn), plain (BOS + the prompt text) or auto (chat when the tokenizer has a chat template, else plain); docs/models.md."""
    system_prompt: str = ""
    """Text of a system turn before each prompt's user turn (chat prompts only); empty = none (a template may write its own default, as Qwen2.5's does)."""
    hf_path: str = ""
    """hf: a local .jsonl/.json/.parquet/.csv file, or a directory of them in Hugging Face layout (train-*.parquet, ...)."""
    hf_split: str = "train"
    """hf: training split of a directory (a single file is one split)."""
    hf_eval_path: str = ""
    """hf: file or directory of held-out rows; empty = split hf_eval_split of hf_path."""
    hf_eval_split: str = "test"
    """hf: held-out split of a directory."""
    hf_format: HfFormat = "columns"
    """hf: the dataset's layout: columns (the answer column is the answer), gsm8k (GSM8K: question/answer, the answer after the solution's last '####') or math (Hendrycks MATH: problem/solution, the answer in the solution's last \\boxed{...}); `rlvr data check FILE --format F` checks a file."""
    hf_prompt_column: str = "prompt"
    """hf: column with the prompt text; left at 'prompt', hf_format gsm8k reads 'question' and math 'problem'."""
    hf_answer_column: str = "answer"
    """hf: column with the reference answer (or the solution it is cut from, by hf_format), mapped to {"type": "math", "answer": ...}; left at 'answer', hf_format math reads 'solution'."""
    hf_verifier_column: str = ""
    """hf: column with full criteria (an object or JSON text, e.g. python tests); overrides hf_answer_column (hf_format columns only)."""
    hf_id_column: str = ""
    """hf: column with row ids; empty = '<split>-<row index>'."""
    rg_dataset: str = ""
    """reasoning_gym: the registered dataset to generate, e.g. chain_sum, leg_counting, spell_backward (`python -c "import reasoning_gym; print(sorted(reasoning_gym.factory.DATASETS))"` lists them); num_train / num_eval rows, seeded by data_seed."""
    rg_config: dict[str, Any] = field(default_factory=dict)
    """reasoning_gym: the dataset's difficulty arguments (its config class's fields), e.g. {min_terms: 2, max_terms: 3}; the verifier scores with the same config."""
    rg_partial_credit: bool = False
    """reasoning_gym: pay a scorer's score below 1 as partial reward (default: below 1 is fail). It pays what each dataset's scorer grants, e.g. the shared decimal scorer's len(right)/len(answer) for a wrong answer that contains the right one (a wrong sign up to 0.9), 0.01-0.05 for a well-formed wrong answer (docs/verifiers.md)."""
    vf_env: str = ""
    """verifiers: the environment's id, the module whose load_environment builds it, e.g. gsm8k; '-' reads as '_', as in vf.load_environment."""
    vf_args: dict[str, Any] = field(default_factory=dict)
    """verifiers: keyword arguments of the environment's load_environment, e.g. {num_train_examples: 500}; the verifier loads it with the same ones."""
    vf_path: str = ""
    """verifiers: a directory to import the environment module from (added to the import path of the processes that load it); empty = installed in the venv."""


@dataclass
class RolloutConfig:
    group_size: int = 8
    """G: completions sampled per query (DeepSeekMath uses 64; 8 balances variance and cost)."""
    max_new_tokens: int = 40
    """Largest completion length in tokens; longer samples are cut and finish with reason 'length'."""
    temperature: float = 1.0
    """Sampling temperature; the trainer scales logits by the same value, so ratios start at 1."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off). Log-probs are of the untruncated tempered policy."""
    backend: Literal["hf", "vllm"] = "hf"
    """Sampler: hf (transformers generate, CPU or GPU) or vllm (a colocated vLLM engine on the trainer's GPU, weights synced after every update; needs vllm and CUDA); docs/integrations.md."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Precision of the sampler: float32 samples with the policy itself; bfloat16 with a bf16 copy re-synced after every update (a real sampler/trainer mismatch, see algo.tis_cap), or with the policy itself when model.dtype=bfloat16."""
    vllm_gpu_memory_utilization: float = 0.3
    """backend=vllm: share of GPU memory vLLM may take for weights and KV cache; the trainer needs the rest (TRL's colocate default)."""
    tools: Literal["none", "python"] = "none"
    """Tool use while the model reasons: none, or python (a call's code runs in the sandbox and what it prints is appended as an observation, masked out of the loss, the KL term and the entropy); max_new_tokens is then the budget of the whole trajectory, observations included; docs/tools.md."""
    tool_format: Literal["tags", "fenced", "chat"] = "tags"
    """How a tool call is written: tags (<tool_call>CODE</tool_call>, answered by <tool_response>OUTPUT</tool_response>), fenced (a ```python block, answered by an ```output block), or chat (TRL's convention for instruct models: <tool_call>{"name": "python", "arguments": {"code": ...}}</tool_call> ends the turn and the chat template's tool message answers it; needs a template with tool calls)."""
    max_turns: int = 2
    """tools: model turns per completion; a call is run only if a turn is left to read its output (TRL's max_tool_calling_iterations + 1)."""
    tool_timeout_s: float = 2.0
    """tools: wall-clock (and CPU) seconds one call may run before it is killed; its observation then says so."""
    tool_output_chars: int = 200
    """tools: characters of a call's output the observation keeps (its head; the rest is cut and marked)."""


@dataclass
class RewardConfig:
    correctness_weight: float = 1.0
    """Weight of the query's own verifier (pass = 1, fail = 0)."""
    format_weight: float = 0.0
    """Weight of the format check (<think>...</think><answer>...</answer>); 0 keeps rewards binary."""
    reasoning_weight: float = 0.0
    """Weight of the reasoning check (task arith): 1 when every step is a true claim that chains through the query to the answer (the CoT-pass@k checker); with correctness_weight 0 the reward is CoT-correctness."""
    fidelity: Literal["gold", "visible_only", "lenient", "noisy"] = "gold"
    """Training verifier: gold, visible_only (python: hidden tests dropped), lenient (math: answer anywhere in the text) or noisy (gold with injected errors); see docs/hacking.md."""
    false_positive_rate: float = 0.0
    """fidelity=noisy: probability that a gold fail is reported as a pass."""
    false_negative_rate: float = 0.0
    """fidelity=noisy: probability that a gold pass is reported as a fail."""
    noise_seed: int = 0
    """fidelity=noisy: seed of the flips (each is fixed by seed, query id and completion)."""
    hacking_sample: int = 32
    """Completions per step also scored by the gold verifier for hacking/rate (0 = all); unused when fidelity=gold."""
    hacking_warn: float = 0.2
    """The progress bar warns when hacking/rate rises above this share."""
    backend: Literal["local", "ray"] = "local"
    """Where verification runs: local (this machine's sandbox pool and worker pools) or ray (Ray tasks on a cluster, each node using the same sandbox; needs the ray extra); docs/integrations.md."""
    ray_address: str = ""
    """backend=ray: the Ray cluster to join (ray.init(address=...)); empty joins a running local one or starts one."""


@dataclass
class AlgoConfig:
    algorithm: Literal["grpo", "gspo", "rloo", "reinforce_pp", "ppo", "dpo"] = "grpo"
    """grpo (DeepSeekMath eq. 3), gspo (sequence-level ratio), rloo (leave-one-out baseline), reinforce_pp (batch-normalised advantages), ppo (learned critic + GAE, see ppo.*), dpo (online pass-vs-fail preference pairs); see docs/algorithms.md."""
    epsilon: float = 0.2
    """Clipping range: the ratio is clipped to [1 - epsilon, 1 + epsilon_high]."""
    epsilon_high: float | None = None
    """Upper clipping range (DAPO's clip-higher); empty means equal to epsilon."""
    beta: float = 0.04
    """KL weight toward the frozen reference. 0 drops the term and holds no reference model."""
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    """Per-token KL estimator (Schulman 2020); DeepSeekMath eq. 4 uses k3."""
    aggregation: Literal["sequence_mean", "token_mean", "constant", "sequence_sum"] = "sequence_mean"
    """Loss aggregation: DeepSeekMath's per-sequence token mean, a global token mean (DAPO), Dr. GRPO's constant, or RLOO's per-sequence token sum."""
    scale_rewards: bool = True
    """Divide advantages by the group std (GRPO); false gives Dr. GRPO's r - mean."""
    advantage_eps: float = 1e-4
    """epsilon in A = (r - mean) / (std + epsilon)."""
    num_iterations: int = 1
    """Optimisation passes over each batch of rollouts (mu in DeepSeekMath Alg. 1); >1 makes ratios differ from 1."""
    kl_placement: Literal["loss", "reward"] = "loss"
    """Where beta*KL goes: 'loss' adds it to the per-token loss (GRPO eq. 3); 'reward' subtracts it from each token's reward (PPO/RLHF r_t - beta*KL_t)."""
    entropy_coef: float = 0.0
    """Entropy bonus: subtract entropy_coef * mean token entropy from the loss (PPO eq. 9's c2); 0 = off."""
    dynamic_sampling: bool = False
    """DAPO dynamic sampling: drop groups whose rewards are all equal and sample more queries until the batch is full."""
    max_sampling_rounds: int = 3
    """Dynamic sampling: most generation rounds per step (the first included); trains on what was kept if the cap is hit."""
    overlong_penalty: bool = False
    """DAPO soft overlong punishment (eq. 13): add a length penalty ramping from 0 to -1 over the last overlong_cache tokens."""
    overlong_cache: int = 8
    """L_cache in tokens for the overlong penalty; L_max is rollout.max_new_tokens."""
    overlong_filter: bool = False
    """DAPO overlong filtering: mask truncated completions (no EOS) out of the loss; they keep their reward."""

    dpo_beta: float = 0.1
    """dpo: beta of DPO eq. 7, the inverse temperature of the implicit reward beta*log(pi/pi_ref) (the paper's and TRL's 0.1); dpo ignores the KL weight algo.beta."""
    dpo_pairs_per_group: int = 0
    """dpo: most (pass, fail) pairs per query group; 0 = min(#pass, #fail), each completion in at most one pair."""
    tis_cap: float = 0.0
    """Truncated importance sampling for the sampler/trainer mismatch (Yao et al. 2025; TRL's vllm_importance_sampling_correction): weight each token by min(pi_old/pi_sampler, tis_cap); 0 = off; TRL's default cap is 3 (docs/algorithms.md)."""


@dataclass
class PPOConfig:
    gamma: float = 1.0
    """PPO: discount over completion tokens (1.0: the verifier reward counts fully at every token)."""
    lam: float = 1.0
    """PPO: GAE lambda (Schulman et al. 2016); 1 (Monte-Carlo return minus value, as Open-Reasoner-Zero) suits one terminal reward."""
    value_clip: float = 0.2
    """PPO: clip the new value to within this of the sampling-time value (PPO2/baselines form); 0 = no clipping."""
    critic_lr: float = 1e-3
    """PPO: AdamW learning rate of the critic (its own optimizer)."""
    critic_weight_decay: float = 0.0
    """PPO: AdamW weight decay of the critic."""
    whiten_advantages: bool = True
    """PPO: normalise GAE advantages to mean 0, std 1 over the batch's real tokens (as baselines and cleanrl)."""


@dataclass
class OptimConfig:
    lr: float = 5e-4
    """AdamW learning rate (peak, after warm-up)."""
    weight_decay: float = 0.0
    """AdamW decoupled weight decay."""
    warmup_steps: int = 0
    """Linear learning-rate warm-up, in optimizer steps; constant afterwards."""
    max_grad_norm: float = 1.0
    """Clip the global gradient norm to this value (0 = no clipping)."""
    micro_batch_size: int = 32
    """Completions per forward/backward micro-batch, grouped by length (0 = the whole batch at once); the gradient is the same."""


@dataclass
class TrainConfig:
    steps: int = 100
    """Number of GRPO steps (each: sample, verify, advantages, update)."""
    batch_queries: int = 16
    """B: queries per step; each gets G completions."""
    seed: int = 0
    """Seed of sampling, query order and anything random in training."""
    eval_every: int = 0
    """Evaluate on the held-out split every this many steps (0 = only before and after training)."""
    eval_samples: int = 4
    """n: completions per held-out query used to estimate pass@1 (at the training temperature)."""
    save_every: int = 1
    """Write a resumable checkpoint every this many steps (0 = only at the end)."""
    threads: int = 0
    """torch CPU threads (0 = torch's default)."""
    tensorboard: bool = False
    """Also log metrics to TensorBoard under <out>/tensorboard (needs the 'tensorboard' extra)."""
    memory_metrics: bool = True
    """Log memory/* metrics each step (weights, gradients, optimizer states, activations, KV cache; docs/memory.md)."""
    trackers: list[str] = field(default_factory=lambda: ["jsonl"])
    """Metric sinks: jsonl (always written), tensorboard (<out>/tensorboard), wandb (<out>/wandb); each beyond jsonl needs its extra."""
    wandb_project: str = "rlvr"
    """W&B project name of the run (tracker 'wandb')."""
    wandb_mode: Literal["offline", "online"] = "offline"
    """W&B mode: 'offline' writes the run under <out>/wandb and never uses the network (upload later with `wandb sync`)."""


@dataclass
class RunConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> RunConfig:
        for check in _CHECKS:
            problem = check(self)
            if problem:
                raise ConfigError(problem)
        return self


def _positive(section: str, name: str) -> Any:
    def check(cfg: RunConfig) -> str | None:
        value = getattr(getattr(cfg, section), name)
        return None if value > 0 else f"{section}.{name} must be > 0 (got {value})"

    return check


def _non_negative(section: str, name: str) -> Any:
    def check(cfg: RunConfig) -> str | None:
        value = getattr(getattr(cfg, section), name)
        return None if value >= 0 else f"{section}.{name} must be >= 0 (got {value})"

    return check


def _group_size(cfg: RunConfig) -> str | None:
    if cfg.rollout.group_size < 2:
        return (
            f"rollout.group_size must be >= 2 (got {cfg.rollout.group_size}): group-relative "
            "advantages compare samples of one query, so a group of one has no baseline"
        )
    return None


def _micro_batch(cfg: RunConfig) -> str | None:
    n = cfg.train.batch_queries * cfg.rollout.group_size
    mb = cfg.optim.micro_batch_size
    if mb and mb < n and n % mb:
        return (
            f"optim.micro_batch_size={mb} does not divide the batch of {n} completions "
            f"(train.batch_queries * rollout.group_size); pick a divisor of {n}, or 0 for one pass"
        )
    return None


def _jsonl_paths(cfg: RunConfig) -> str | None:
    if cfg.task.name == "jsonl" and not (cfg.task.train_path and cfg.task.eval_path):
        return "task.name=jsonl needs task.train_path and task.eval_path (JSONL files of dataset rows)"
    return None


def _hf_path(cfg: RunConfig) -> str | None:
    if cfg.task.name == "hf" and not cfg.task.hf_path:
        return "task.name=hf needs task.hf_path (a local .jsonl/.parquet/.csv file or a Hugging Face dataset directory)"
    return None


def _reasoning_gym(cfg: RunConfig) -> str | None:
    t = cfg.task
    if t.name != "reasoning_gym":
        if t.rg_dataset or t.rg_config or t.rg_partial_credit:
            return f"task.rg_dataset / task.rg_config / task.rg_partial_credit apply only with task.name=reasoning_gym (got task.name={t.name})"
        return None
    if not t.rg_dataset:
        return "task.name=reasoning_gym needs task.rg_dataset, e.g. chain_sum (docs/integrations.md lists how to see them all)"
    if not _installed("reasoning_gym"):
        return "task.name=reasoning_gym needs the reasoning-gym package: .venv/bin/pip install -e '.[reasoning_gym]'"
    return None


def _verifiers(cfg: RunConfig) -> str | None:
    t = cfg.task
    if t.name != "verifiers":
        if t.vf_env or t.vf_args or t.vf_path:
            return f"task.vf_env / task.vf_args / task.vf_path apply only with task.name=verifiers (got task.name={t.name})"
        return None
    if not t.vf_env:
        return "task.name=verifiers needs task.vf_env, the environment's id or module name (e.g. gsm8k)"
    if t.vf_path and not Path(t.vf_path).is_dir():
        return f"task.vf_path={t.vf_path} is not a directory; give the directory that holds the {t.vf_env} module"
    if not _installed("verifiers"):
        return "task.name=verifiers needs the verifiers package: .venv/bin/pip install -e '.[verifiers]'"
    return None


def _hf_format(cfg: RunConfig) -> str | None:
    t = cfg.task
    if t.name == "hf" and t.hf_format != "columns" and t.hf_verifier_column:
        return (
            f"task.hf_format={t.hf_format} cuts the answer out of a solution column, but task.hf_verifier_column="
            f"{t.hf_verifier_column} gives whole criteria; drop one of them (hf_format=columns reads a verifier column)"
        )
    return None


def _ray_backend(cfg: RunConfig) -> str | None:
    import importlib.util

    if cfg.reward.backend == "ray" and importlib.util.find_spec("ray") is None:
        return "reward.backend=ray needs the ray package: .venv/bin/pip install -e '.[ray]'"
    return None


TRACKER_PACKAGES: dict[str, tuple[str, str] | None] = {
    "jsonl": None,
    "tensorboard": ("tensorboard", "tensorboard"),
    "wandb": ("wandb", "wandb"),
}
"""The names train.trackers takes, with the (import name, pip extra) of the package each needs;
integrations/trackers.py builds them."""


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ValueError:  # already imported without a spec, or blocked (sys.modules[package] is None)
        return sys.modules.get(package) is not None


def tracker_problem(names: Iterable[str], *, setting: str | None = None) -> str | None:
    """Why these trackers cannot run (unknown name, missing package), or None. Cheap: find_spec only.
    ``setting`` names what asked for them when it is not train.trackers (e.g. train.tensorboard=true)."""
    for name in names:
        if name not in TRACKER_PACKAGES:
            return f"train.trackers: unknown tracker {name!r}; known: {', '.join(TRACKER_PACKAGES)}"
        needs = TRACKER_PACKAGES[name]
        if needs and not _installed(needs[0]):
            asker = setting or f"train.trackers includes {name!r}, which"
            return f"{asker} needs the {needs[0]} package: .venv/bin/pip install -e '.[{needs[1]}]'"
    return None


def _trackers(cfg: RunConfig) -> str | None:
    flag = tracker_problem(["tensorboard"], setting="train.tensorboard=true") if cfg.train.tensorboard else None
    return flag or tracker_problem(cfg.train.trackers)


def _system_prompt(cfg: RunConfig) -> str | None:
    t = cfg.task
    if t.system_prompt and t.prompt_format == "plain":
        return "task.system_prompt needs chat prompts, but task.prompt_format=plain; use prompt_format=chat or auto, or drop system_prompt"
    return None


def _top_p(cfg: RunConfig) -> str | None:
    p = cfg.rollout.top_p
    return None if 0 < p <= 1 else f"rollout.top_p must be in (0, 1] (got {p})"


def _tools(cfg: RunConfig) -> str | None:
    """Tool rollouts run on the hf sampler, and train with the updates whose masks take observations out."""
    from rlvr.algos import ALGORITHMS  # the algorithm's traits; deferred: torch loads with it

    r = cfg.rollout
    for name in ("max_turns", "tool_timeout_s", "tool_output_chars"):
        if getattr(r, name) <= 0:
            return f"rollout.{name} must be > 0 (got {getattr(r, name)})"
    if r.tools == "none":
        return None
    if r.backend != "hf":
        return (
            f"rollout.tools={r.tools} runs on rollout.backend=hf only (multi-turn sampling on vLLM is not built: "
            "it cannot be tested without a GPU here); use rollout.backend=hf"
        )
    algorithm = ALGORITHMS[cfg.algo.algorithm]
    if algorithm.update == "actor_critic":
        usable = ", ".join(name for name, a in ALGORITHMS.items() if a.update != "actor_critic")
        return (
            f"rollout.tools={r.tools} is not available with algo.algorithm={cfg.algo.algorithm}: its critic would "
            f"value tool observations the policy never chose; use one of {usable}, or rollout.tools=none"
        )
    return None


def _epsilon_high(cfg: RunConfig) -> str | None:
    hi = cfg.algo.epsilon_high
    return None if hi is None or hi >= 0 else f"algo.epsilon_high must be >= 0 or empty (got {hi})"


def _reasoning(cfg: RunConfig) -> str | None:
    if cfg.reward.reasoning_weight and cfg.task.name != "arith":
        return (f"reward.reasoning_weight={cfg.reward.reasoning_weight} needs task.name=arith, the task with a "
                f"reasoning checker (got task.name={cfg.task.name})")  # fmt: skip
    return None


def _arith(cfg: RunConfig) -> str | None:
    if cfg.task.operands < 2:
        return f"task.operands must be >= 2 (got {cfg.task.operands}): one operand has no step to reason"
    if not 0 <= cfg.task.min_operand < 10**cfg.task.digits:
        return (f"task.min_operand must be in [0, {10**cfg.task.digits - 1}] for task.digits={cfg.task.digits} "
                f"(got {cfg.task.min_operand})")  # fmt: skip
    return None


def _lora(cfg: RunConfig) -> str | None:
    m = cfg.model
    if m.lora_dropout != 0:
        return (f"model.lora_dropout must be 0 (got {m.lora_dropout}): rlvr runs the policy in eval mode, where "
                "dropout is off, so it would have no effect")  # fmt: skip
    if not m.lora_rank:
        return None
    if cfg.algo.algorithm == "ppo":
        return (
            f"model.lora_rank={m.lora_rank} is not supported with algo.algorithm=ppo (its critic is a full copy of the "
            "policy's backbone, not wired for adapters); use grpo, gspo, rloo, reinforce_pp or dpo, or model.lora_rank=0"
        )
    if m.forward == "lean":
        return "model.forward=lean reads the base weights and cannot see LoRA adapters; use model.forward=auto or hf with model.lora_rank > 0"
    if not m.lora_target_modules:
        return "model.lora_target_modules is empty; name the modules that get adapters, e.g. q_proj,v_proj"
    if not _installed("peft"):
        return "model.lora_rank > 0 needs the peft package: .venv/bin/pip install -e '.[lora]'"
    return None


def _precision(cfg: RunConfig) -> str | None:
    m = cfg.model
    if m.dtype == "bfloat16" and not m.lora_rank:
        return (
            "model.dtype=bfloat16 needs model.lora_rank > 0: without LoRA the trained weights would be bf16, "
            "which rounds away any update below about 1/500 of a weight (most AdamW steps at RL learning rates); "
            "train adapters (e.g. model.lora_rank=16), or use model.dtype=float32"
        )
    if m.dtype == "bfloat16" and cfg.rollout.dtype == "float32":
        return (
            "model.dtype=bfloat16 keeps the policy in bf16, so it cannot sample in float32 (rollout.dtype=float32); "
            "set rollout.dtype=bfloat16 (the hf sampler then samples with the policy itself, no copy)"
        )
    if m.gradient_checkpointing and m.forward == "lean":
        return (
            "model.gradient_checkpointing=true needs transformers' forward, which recomputes layers in the "
            "backward; model.forward=lean runs its own layers and cannot; use model.forward=auto or hf"
        )
    return None


def _unit_interval(section: str, name: str) -> Any:
    def check(cfg: RunConfig) -> str | None:
        value = getattr(getattr(cfg, section), name)
        return None if 0 <= value <= 1 else f"{section}.{name} must be in [0, 1] (got {value})"

    return check


def _overlong(cfg: RunConfig) -> str | None:
    a = cfg.algo
    if a.overlong_penalty and not 0 < a.overlong_cache <= cfg.rollout.max_new_tokens:
        return (
            f"algo.overlong_cache must be in [1, rollout.max_new_tokens={cfg.rollout.max_new_tokens}] "
            f"(got {a.overlong_cache}): it is the width of the penalty ramp before the length limit"
        )
    return None


def _kl_in_reward(cfg: RunConfig) -> str | None:
    from rlvr.algos import ALGORITHMS  # the algorithm's traits; deferred: torch loads with it

    if cfg.algo.kl_placement == "reward" and ALGORITHMS[cfg.algo.algorithm].sequence_ratio:
        return (
            f"algo.kl_placement=reward needs per-token advantages, which {cfg.algo.algorithm}'s sequence ratio "
            "cannot use; use kl_placement=loss"
        )
    return None


_FIDELITY_ROW_TYPE = {"visible_only": ("python", "funcsynth"), "lenient": ("math", "arith")}
"""Fidelities that weaken one row type: (that type, a built-in task whose rows have it)."""
_TASK_ROW_TYPE = {"arith": "math", "funcsynth": "python", "proofs": "coq"}


def _fidelity(cfg: RunConfig) -> str | None:
    r = cfg.reward
    for name in ("false_positive_rate", "false_negative_rate", "hacking_warn"):
        if not 0 <= getattr(r, name) <= 1:
            return f"reward.{name} must be in [0, 1] (got {getattr(r, name)})"
    if r.hacking_sample < 0:
        return f"reward.hacking_sample must be >= 0 (got {r.hacking_sample}); 0 scores every completion"
    noise = r.false_positive_rate or r.false_negative_rate
    if r.fidelity == "noisy" and not noise:
        return "reward.fidelity=noisy needs reward.false_positive_rate or reward.false_negative_rate > 0"
    if r.fidelity != "noisy" and noise:
        return "reward.false_positive_rate / false_negative_rate apply only with reward.fidelity=noisy"
    row_type = _TASK_ROW_TYPE.get(cfg.task.name)
    if r.fidelity in _FIDELITY_ROW_TYPE and row_type is not None:
        needed, example = _FIDELITY_ROW_TYPE[r.fidelity]
        if row_type != needed:
            return (
                f"reward.fidelity={r.fidelity} weakens {needed} rows, but task {cfg.task.name!r} has "
                f"{row_type} rows; use it with a {needed} task (e.g. task.name={example}) or pick another fidelity"
            )
    return None


def sampling_problem(cfg: RunConfig) -> str | None:
    """What is wrong with the sampling settings (backend, precision, TIS), or None; no heavy import
    unless rollout.backend=vllm, which checks for vLLM and a CUDA device before any model loads."""
    from rlvr.algos import ALGORITHMS  # the algorithm's traits; deferred: torch loads with it

    r, cap = cfg.rollout, cfg.algo.tis_cap
    if not 0 < r.vllm_gpu_memory_utilization <= 1:
        return f"rollout.vllm_gpu_memory_utilization must be in (0, 1] (got {r.vllm_gpu_memory_utilization})"
    if cap > 0 and not ALGORITHMS[cfg.algo.algorithm].tis:
        usable = ", ".join(name for name, algorithm in ALGORITHMS.items() if algorithm.tis)
        return (
            f"algo.tis_cap is not available with algo.algorithm={cfg.algo.algorithm} (truncated importance "
            f"sampling weights per-token advantages, which only {usable} take); use one of those, or algo.tis_cap=0"
        )
    if r.backend != "vllm":
        return None
    if cfg.model.device == "cpu":
        return "rollout.backend=vllm samples on a CUDA GPU, but model.device=cpu; use model.device=auto, or rollout.backend=hf"
    if importlib.util.find_spec("vllm") is None:
        return (
            "rollout.backend=vllm needs the vllm package, which is not installed; on a CUDA machine install it "
            "into its own venv (see docs/integrations.md, 'Rollouts on GPUs'), or use rollout.backend=hf"
        )
    import torch

    if not torch.cuda.is_available():
        return "rollout.backend=vllm needs a CUDA GPU and torch sees none; run it on a GPU machine, or use rollout.backend=hf"
    return None


EVAL_FIELDS = ("task.operands", "task.digits", "task.max_value", "task.min_operand", "task.data_seed",
               "task.prompt_format", "task.system_prompt", "rollout.max_new_tokens", "rollout.tools",
               "rollout.tool_format", "rollout.max_turns", "rollout.tool_timeout_s",
               "rollout.tool_output_chars")  # fmt: skip
"""The fields that decide a held-out evaluation (the queries, their prompt layout and sampling length):
what `rlvr eval --set` takes, and what `rlvr reproduce` passes it from a trained run's config."""

_CHECKS = [
    _group_size,
    _positive("rollout", "max_new_tokens"),
    _positive("rollout", "temperature"),
    _top_p,
    _tools,
    _system_prompt,
    _non_negative("algo", "beta"),
    _non_negative("algo", "epsilon"),
    _epsilon_high,
    _positive("algo", "advantage_eps"),
    _positive("algo", "num_iterations"),
    _positive("algo", "dpo_beta"),
    _non_negative("algo", "dpo_pairs_per_group"),
    _positive("optim", "lr"),
    _non_negative("optim", "weight_decay"),
    _non_negative("optim", "warmup_steps"),
    _non_negative("optim", "max_grad_norm"),
    _non_negative("optim", "micro_batch_size"),
    _micro_batch,
    _positive("train", "steps"),
    _positive("train", "batch_queries"),
    _non_negative("train", "eval_every"),
    _positive("train", "eval_samples"),
    _non_negative("train", "save_every"),
    _non_negative("train", "threads"),
    _positive("task", "num_train"),
    _positive("task", "num_eval"),
    _positive("task", "digits"),
    _arith,
    _reasoning,
    _jsonl_paths,
    _hf_path,
    _hf_format,
    _reasoning_gym,
    _verifiers,
    _trackers,
    _ray_backend,
    _non_negative("algo", "entropy_coef"),
    _positive("algo", "max_sampling_rounds"),
    _overlong,
    _kl_in_reward,
    _unit_interval("ppo", "gamma"),
    _unit_interval("ppo", "lam"),
    _non_negative("ppo", "value_clip"),
    _positive("ppo", "critic_lr"),
    _non_negative("ppo", "critic_weight_decay"),
    _fidelity,
    _non_negative("algo", "tis_cap"),
    sampling_problem,
    _non_negative("model", "lora_rank"),
    _positive("model", "lora_alpha"),
    _lora,
    _precision,
]


# --------------------------------------------------------------------------- loading and overrides


def sections() -> dict[str, type]:
    """Section name -> its dataclass, e.g. 'algo' -> AlgoConfig."""
    hints = typing.get_type_hints(RunConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(RunConfig)}


@cache
def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of a dataclass: the string literal right below each field."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr):
            if isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                docs[node.target.id] = " ".join(nxt.value.value.split())  # type: ignore[attr-defined]
    return docs


def _coerce(key: str, value: Any, annotation: Any) -> Any:
    """Convert a YAML/CLI value to the field's declared type, or raise ConfigError naming the key."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value not in choices:
            raise ConfigError(f"{key} must be one of {', '.join(map(str, choices))} (got {value!r})")
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None or value == "":
            return None
        return _coerce(key, value, args[0])
    if origin is dict:  # a YAML mapping; from --set, flow style: key={a: 1, b: 2}
        if value is None or value == "":
            return {}
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{key} must be a mapping of names to values, e.g. {{a: 1, b: 2}} (got {value!r})")
        return copy.deepcopy(value)
    if origin is list:  # YAML list, or comma-separated text from --set
        items = [x.strip() for x in value.split(",") if x.strip()] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ConfigError(f"{key} must be a list, e.g. [a, b] (got {value!r})")
        return [_coerce(key, item, typing.get_args(annotation)[0]) for item in items]
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key} must be true or false (got {value!r})")
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} must be an integer (got {value!r})")
        return value
    if annotation is float:
        if isinstance(value, str):  # YAML 1.1 reads "1e-3" (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} must be a number (got {value!r})")
        return float(value)
    if annotation is str:
        return "" if value is None else str(value)
    raise ConfigError(f"{key}: unsupported type {annotation}")


def _apply(cfg: RunConfig, section: str, name: str, value: Any) -> None:
    key = f"{section}.{name}"
    secs = sections()
    if section not in secs:
        raise ConfigError(f"unknown config section '{section}' in '{key}'; sections: {', '.join(secs)}")
    cls = secs[section]
    hints = typing.get_type_hints(cls)
    if name not in hints:
        raise ConfigError(
            f"unknown config key '{key}'; keys of '{section}': {', '.join(hints)} (see rlvr train --help)"
        )
    setattr(getattr(cfg, section), name, _coerce(key, value, hints[name]))


def apply_mapping(cfg: RunConfig, data: Any, source: str) -> RunConfig:
    if data is None:
        return cfg
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of sections (model:, task:, ...), got {type(data).__name__}")
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: section '{section}' must be a mapping of key: value")
        for name, value in values.items():
            _apply(cfg, str(section), str(name), value)
    return cfg


class _ConfigLoader(yaml.SafeLoader):
    """YAML as the safe loader reads it, minus YAML 1.1's base-60 numbers: `4:30` stays the text
    "4:30" (a task.train_mix entry) instead of becoming the integer 270."""


_SEXAGESIMAL = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _SEXAGESIMAL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def read_yaml(text: str) -> Any:
    """A config file's or a --set value's YAML, read without base-60 numbers."""
    return yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 (a SafeLoader subclass)


def parse_override(text: str) -> tuple[str, str, Any]:
    """'algo.beta=0.1' -> ('algo', 'beta', 0.1); the value is read as YAML (numbers, true/false, strings)."""
    if "=" not in text:
        raise ConfigError(f"--set expects section.key=value, got '{text}'")
    key, raw = text.split("=", 1)
    if key.count(".") != 1:
        raise ConfigError(f"--set key must look like section.key (e.g. algo.beta), got '{key}'")
    section, name = key.split(".")
    try:
        value = read_yaml(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return section, name, value


def load_config(
    path: str | Path | None = None, overrides: list[str] = (), *, base: RunConfig | None = None
) -> RunConfig:
    """Defaults (or `base`), then the YAML file, then `--set` overrides, then validation."""
    cfg = copy.deepcopy(base) if base is not None else RunConfig()
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            data = read_yaml(p.read_text())
        except yaml.YAMLError as err:
            raise ConfigError(f"{p}: not valid YAML ({err})") from None
        apply_mapping(cfg, data, str(p))
    for text in overrides:
        _apply(cfg, *parse_override(text))
    return cfg.validate()


def config_from_dict(data: dict[str, Any]) -> RunConfig:
    return apply_mapping(RunConfig(), data, "config").validate()


def describe_fields() -> str:
    """Every settable key with its default and docstring, for --help."""
    lines = []
    for section, cls in sections().items():
        lines.append(f"{section}:")
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else None
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            lines.append(f"  {section}.{f.name} = {default!r}\n      {docs.get(f.name, '')}")
    return "\n".join(lines)
