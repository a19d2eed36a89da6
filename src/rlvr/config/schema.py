"""The configuration's schema: one dataclass per concern, each field with its one-line docstring.

Every field carries a one-line docstring (the string right below it); `rlvr train --help` shows
them, so the help and the code cannot drift. A field with a range declares it here (`positive(16)`,
`unit_interval(1.0)`, ...); config/checks.py reads the declarations, so a bound is written once.
Loading lives in config/loading.py, the checks that span fields in config/checks.py.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from rlvr.errors import UserError
from rlvr.tasks.formats import FORMATS
from rlvr.tasks.registry import get_task, task_names


class ConfigError(UserError):
    """A configuration a user wrote is invalid; the message says which field and how to fix it."""


@dataclass(frozen=True)
class Bound:
    """A one-field range, declared on the field: `low` (closed, or open with `low_open`) and an
    optional closed `high`. `note` says why, after the bound; an empty value passes when `empty_ok`."""

    low: float
    high: float | None = None
    low_open: bool = False
    note: str = ""
    empty_ok: bool = False

    def problem(self, key: str, value: Any) -> str | None:
        """The message for a value outside the range, or None."""
        if value is None and self.empty_ok:
            return None
        above = value > self.low if self.low_open else value >= self.low
        if above and (self.high is None or value <= self.high):
            return None
        if self.high is None:
            empty = " or empty" if self.empty_ok else ""
            return f"{key} must be {'>' if self.low_open else '>='} {self.low}{empty} (got {value}){self.note}"
        return f"{key} must be in {'(' if self.low_open else '['}{self.low}, {self.high}] (got {value}){self.note}"


def bounded(default: Any, bound: Bound) -> Any:
    """A dataclass field with `default` whose value must lie in `bound`."""
    return field(default=default, metadata={"bound": bound})


def positive(default: Any) -> Any:
    return bounded(default, Bound(0, low_open=True))


def non_negative(default: Any, note: str = "") -> Any:
    """>= 0; a default of None makes the field optional (empty passes)."""
    return bounded(default, Bound(0, note=note, empty_ok=default is None))


def at_least(low: int, default: Any, note: str = "") -> Any:
    return bounded(default, Bound(low, note=note))


def unit_interval(default: Any) -> Any:
    """In [0, 1]."""
    return bounded(default, Bound(0, 1))


def share(default: Any) -> Any:
    """In (0, 1]."""
    return bounded(default, Bound(0, 1, low_open=True))


@dataclass
class ModelConfig:
    name: str = "tiny-arith"
    """Policy to train: a built-in base, one of {built-in bases} ('tiny-arith', the default, is the embedded ~0.9M-parameter Llama warmed up on arith; the others are it warmed up further, docs/models.md), or a path to a Hugging Face model directory."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where to train and sample; 'auto' picks CUDA when present."""
    forward: Literal["auto", "lean", "hf"] = "auto"
    """lean: plain Llama policies sample and score through rlvr's fused Llama forward, models/fast_llama.py (HF's math, each distinct prompt run once; faster on CPU); hf: transformers' forward and generate; auto: lean on CPU, hf on GPU."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Precision of the policy's weights: bfloat16 halves the base weights' memory and runs the forward in bf16, for LoRA only (model.lora_rank > 0): the adapters, all that trains, stay float32, with float32 gradients and AdamW states (`rlvr memory --precision bf16-mixed`); sample with it at rollout.dtype=bfloat16."""
    gradient_checkpointing: bool = False
    """Recompute each decoder layer's activations in the backward instead of keeping them (Chen et al. 2016, arXiv:1604.06174): activation memory falls from every layer's to one layer's plus each layer's input, for about one more forward pass; transformers' forward only (model.forward=auto picks it)."""
    lora_rank: int = non_negative(0)
    """LoRA rank r (Hu et al. 2021, arXiv:2106.09685): train rank-r adapters on lora_target_modules and freeze the base; 0 trains every weight."""
    lora_alpha: float = positive(16.0)
    """LoRA scale α: an adapter adds (α/r)·B A x to its projection."""
    lora_dropout: float = 0.0
    """Dropout on the adapters' input; must be 0: rlvr runs the policy in eval mode (sampling and scoring must see the same function), where dropout is off, so another value would do nothing."""
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Module names that get adapters (default: Llama's attention and MLP projections)."""


HfFormat = Literal[tuple(FORMATS)]  # type: ignore[valid-type]
"""The dataset layouts Hugging Face dataset files may have: the names of rlvr.tasks.formats.FORMATS."""


@dataclass
class TaskConfig:
    name: str = field(default="arith", metadata={"choices": task_names})
    """A task registered in rlvr/tasks/registry.py: arith generates multi-step arithmetic queries; jsonl reads dataset rows from train_path / eval_path; hf maps local Hugging Face dataset files (task.hf_*); funcsynth asks for a Python function from three examples (python rows with hidden tests); reasoning_gym generates one reasoning-gym dataset (task.rg_*; the `reasoning_gym` extra); verifiers loads a single-turn environment with the verifiers contract and scores with its rubric (task.vf_*; the `verifiers` extra); proofs generates Coq lemmas in five families (coq rows, checked by real Coq)."""
    train_path: str = ""
    """JSONL file of dataset rows ({"id", "prompt", "verifier"}) for task 'jsonl'."""
    eval_path: str = ""
    """JSONL file of held-out dataset rows for task 'jsonl'."""
    operands: int = at_least(2, 3, ": one operand has no step to reason")
    """arith: numbers per expression (operands - 1 reasoning steps)."""
    train_mix: str = ""
    """arith: training chain lengths as 'K:N,...' (e.g. '4:300,5:300': 300 train queries with 4 operands and 300 with 5), a curriculum over depths; empty = num_train queries with `operands` numbers. Held-out queries always have `operands` numbers."""
    digits: int = positive(1)
    """arith: digits per operand."""
    max_value: int = 99
    """arith: largest value an intermediate result may take (smallest is 0)."""
    min_operand: int = 0
    """arith: smallest operand (the largest has `digits` digits); 2 leaves out 0 and 1, so that few wrong chains land on the right answer."""
    num_train: int = positive(2000)
    """Tasks that generate their queries: number of distinct training queries; an environment (task verifiers): at most this many rows of its dataset."""
    num_eval: int = positive(200)
    """Tasks that generate their queries: number of distinct held-out queries (disjoint from training by construction); an environment: at most this many rows of its eval_dataset (without one: the last num_eval rows of its dataset, never trained on)."""
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
    group_size: int = at_least(
        2, 8, ": group-relative advantages compare samples of one query, so a group of one has no baseline"
    )
    """G: completions sampled per query (DeepSeekMath uses 64; 8 balances variance and cost)."""
    max_new_tokens: int = positive(40)
    """Largest completion length in tokens; longer samples are cut and finish with reason 'length'."""
    temperature: float = positive(1.0)
    """Sampling temperature; the trainer scales logits by the same value, so ratios start at 1."""
    top_p: float = share(1.0)
    """Nucleus sampling mass (1.0 = off). Log-probs are of the untruncated tempered policy."""
    backend: Literal["hf", "vllm"] = "hf"
    """Sampler: hf (transformers generate, CPU or GPU) or vllm (a colocated vLLM engine on the trainer's GPU, weights synced after every update; needs vllm and CUDA); docs/integrations.md."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Precision of the sampler: float32 samples with the policy itself; bfloat16 with a bf16 copy re-synced after every update (a real sampler/trainer mismatch, see algo.tis_cap), or with the policy itself when model.dtype=bfloat16."""
    vllm_gpu_memory_utilization: float = share(0.3)
    """backend=vllm: share of GPU memory vLLM may take for weights and KV cache; the trainer needs the rest (TRL's colocate default)."""
    tools: Literal["none", "python"] = "none"
    """Tool use while the model reasons: none, or python (a call's code runs in the sandbox and what it prints is appended as an observation, masked out of the loss, the KL term and the entropy); max_new_tokens is then the budget of the whole trajectory, observations included; docs/tools.md."""
    tool_format: Literal["tags", "fenced", "chat"] = "tags"
    """How a tool call is written: tags (<tool_call>CODE</tool_call>, answered by <tool_response>OUTPUT</tool_response>), fenced (a ```python block, answered by an ```output block), or chat (TRL's convention for instruct models: <tool_call>{"name": "python", "arguments": {"code": ...}}</tool_call> ends the turn and the chat template's tool message answers it; needs a template with tool calls)."""
    max_turns: int = positive(2)
    """tools: model turns per completion; a call is run only if a turn is left to read its output (TRL's max_tool_calling_iterations + 1)."""
    tool_timeout_s: float = positive(2.0)
    """tools: wall-clock (and CPU) seconds one call may run before it is killed; its observation then says so."""
    tool_output_chars: int = positive(200)
    """tools: characters of a call's output the observation keeps (its head; the rest is cut and marked)."""
    max_staleness: int = non_negative(0)
    """Asynchronous rollouts: 0 = synchronous (sample, then update, in turn; exactly reproducible); N >= 1 = sampling runs in its own process beside the trainer, on a policy copy at most N updates old (each group stamped with its version; the sampler is held back, never a group thrown away); docs/async.md."""
    sampler_threads: int = positive(1)
    """max_staleness >= 1: torch CPU threads of the sampler process; the trainer takes train.threads, or with train.threads=0 the cores left over (at least 1)."""


@dataclass
class RewardConfig:
    correctness_weight: float = 1.0
    """Weight of the query's own verifier (pass = 1, fail = 0)."""
    format_weight: float = 0.0
    """Weight of the format check (<think>...</think><answer>...</answer>); 0 keeps rewards binary."""
    reasoning_weight: float = 0.0
    """Weight of the reasoning check (task arith): 1 when every step is a true claim that chains through the query to the answer (the CoT-pass@k checker); with correctness_weight 0 the reward is CoT-correctness."""
    verifier_timeout_s: float = non_negative(600.0)
    """Watchdog: a verifier call (one batch of one verifier type) that gives no verdicts in this many seconds is abandoned and its completions get verdict error (class timeout), counted as unscorable, instead of hanging the run; 0 = no watchdog. Completions' own code runs in pools that end it as that completion's fail (class timeout) long before."""
    fidelity: Literal["gold", "visible_only", "lenient", "noisy", "random"] = "gold"
    """Training verifier: gold, visible_only (python: hidden tests dropped), lenient (math: answer anywhere in the text), noisy (gold with injected errors) or random (the correctness reward is a coin per rollout, Shao et al. 2025); see docs/hacking.md."""
    false_positive_rate: float = unit_interval(0.0)
    """fidelity=noisy: probability that a gold fail is reported as a pass."""
    false_negative_rate: float = unit_interval(0.0)
    """fidelity=noisy: probability that a gold pass is reported as a fail."""
    noise_seed: int = 0
    """fidelity=noisy: seed of the flips (each is fixed by seed, query id and completion)."""
    random_rate: float = unit_interval(0.5)
    """fidelity=random: the probability that a rollout's correctness reward is 1, whatever its text (one coin per rollout, drawn from train.seed, the step and the rollout's place in it)."""
    hacking_sample: int = non_negative(32, "; 0 scores every completion")
    """Completions per step also scored by the gold verifier for hacking/rate (0 = all); unused when fidelity=gold."""
    hacking_warn: float = unit_interval(0.2)
    """The progress bar warns when hacking/rate rises above this share."""
    backend: Literal["local", "ray"] = "local"
    """Where verification runs: local (this machine's sandbox pool and worker pools) or ray (Ray tasks on a cluster, each node using the same sandbox; needs the ray extra); docs/integrations.md."""
    ray_address: str = ""
    """backend=ray: the Ray cluster to join (ray.init(address=...)); empty joins a running local one or starts one."""


@dataclass
class AlgoConfig:
    algorithm: Literal["grpo", "gspo", "rloo", "reinforce_pp", "ppo", "dpo"] = "grpo"
    """grpo (DeepSeekMath eq. 3), gspo (sequence-level ratio), rloo (leave-one-out baseline), reinforce_pp (batch-normalised advantages), ppo (learned critic + GAE, see ppo.*), dpo (online pass-vs-fail preference pairs); see docs/algorithms.md."""
    epsilon: float = non_negative(0.2)
    """Clipping range: the ratio is clipped to [1 - epsilon, 1 + epsilon_high]."""
    epsilon_high: float | None = non_negative(None)
    """Upper clipping range (DAPO's clip-higher); empty means equal to epsilon."""
    beta: float = non_negative(0.04)
    """KL weight toward the frozen reference. 0 drops the term and holds no reference model."""
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    """Per-token KL estimator (Schulman 2020); DeepSeekMath eq. 4 uses k3."""
    aggregation: Literal["sequence_mean", "token_mean", "constant", "sequence_sum"] = "sequence_mean"
    """Loss aggregation: DeepSeekMath's per-sequence token mean, a global token mean (DAPO), Dr. GRPO's constant, or RLOO's per-sequence token sum."""
    scale_rewards: bool = True
    """Divide advantages by the group std (GRPO); false gives Dr. GRPO's r - mean."""
    advantage_eps: float = positive(1e-4)
    """epsilon in A = (r - mean) / (std + epsilon)."""
    num_iterations: int = positive(1)
    """Optimisation passes over each batch of rollouts (mu in DeepSeekMath Alg. 1); >1 makes ratios differ from 1."""
    kl_placement: Literal["loss", "reward"] = "loss"
    """Where beta*KL goes: 'loss' adds it to the per-token loss (GRPO eq. 3); 'reward' subtracts it from each token's reward (PPO/RLHF r_t - beta*KL_t)."""
    entropy_coef: float = non_negative(0.0)
    """Entropy bonus: subtract entropy_coef * mean token entropy from the loss (PPO eq. 9's c2); 0 = off."""
    dynamic_sampling: bool = False
    """DAPO dynamic sampling: drop groups whose rewards are all equal and sample more queries until the batch is full."""
    max_sampling_rounds: int = positive(3)
    """Dynamic sampling: most generation rounds per step (the first included); trains on what was kept if the cap is hit."""
    overlong_penalty: bool = False
    """DAPO soft overlong punishment (eq. 13): add a length penalty ramping from 0 to -1 over the last overlong_cache tokens."""
    overlong_cache: int = 8
    """L_cache in tokens for the overlong penalty; L_max is rollout.max_new_tokens."""
    overlong_filter: bool = False
    """DAPO overlong filtering: mask truncated completions (no EOS) out of the loss; they keep their reward."""

    dpo_beta: float = positive(0.1)
    """dpo: beta of DPO eq. 7, the inverse temperature of the implicit reward beta*log(pi/pi_ref) (the paper's and TRL's 0.1); dpo ignores the KL weight algo.beta."""
    dpo_pairs_per_group: int = non_negative(0)
    """dpo: most (pass, fail) pairs per query group; 0 = min(#pass, #fail), each completion in at most one pair."""
    tis_cap: float = non_negative(0.0)
    """Truncated importance sampling for the sampler/trainer mismatch (Yao et al. 2025; TRL's vllm_importance_sampling_correction): weight each token by min(pi_old/pi_sampler, tis_cap); 0 = off; TRL's default cap is 3 (docs/algorithms.md)."""
    tis_mode: Literal["truncate", "mask"] = "truncate"
    """With tis_cap > 0: truncate (w = min(ratio, tis_cap); TRL's vllm_importance_sampling_mode="token_truncate") or mask (w = ratio, but 0 where ratio > tis_cap: the token leaves the surrogate; TRL's "token_mask")."""


@dataclass
class PPOConfig:
    gamma: float = unit_interval(1.0)
    """PPO: discount over completion tokens (1.0: the verifier reward counts fully at every token)."""
    lam: float = unit_interval(1.0)
    """PPO: GAE lambda (Schulman et al. 2016); 1 (Monte-Carlo return minus value, as Open-Reasoner-Zero) suits one terminal reward."""
    value_clip: float = non_negative(0.2)
    """PPO: clip the new value to within this of the sampling-time value (PPO2/baselines form); 0 = no clipping."""
    critic_lr: float = positive(1e-3)
    """PPO: AdamW learning rate of the critic (its own optimizer)."""
    critic_weight_decay: float = non_negative(0.0)
    """PPO: AdamW weight decay of the critic."""
    whiten_advantages: bool = True
    """PPO: normalise GAE advantages to mean 0, std 1 over the batch's real tokens (as baselines and cleanrl)."""


@dataclass
class OptimConfig:
    lr: float = positive(1e-4)
    """AdamW learning rate (peak, after warm-up). The default is the shipped atlas's best on the default run
    (diagnostics/lint.py best_lr: highest held-out pass@1 among the rates that cost greedy accuracy at most 2 points)."""
    weight_decay: float = non_negative(0.0)
    """AdamW decoupled weight decay."""
    warmup_steps: int = non_negative(0)
    """Linear learning-rate warm-up, in optimizer steps; constant afterwards."""
    max_grad_norm: float = non_negative(1.0)
    """Clip the global gradient norm to this value (0 = no clipping)."""
    micro_batch_size: int = non_negative(32)
    """Completions per forward/backward micro-batch, grouped by length (0 = the whole batch at once); the gradient is the same."""


@dataclass
class TrainConfig:
    steps: int = positive(100)
    """Number of GRPO steps (each: sample, verify, advantages, update)."""
    batch_queries: int = positive(16)
    """B: queries per step; each gets G completions."""
    seed: int = 0
    """Seed of sampling, query order and anything random in training."""
    eval_every: int = non_negative(0)
    """Evaluate on the held-out split every this many steps (0 = only before and after training)."""
    eval_samples: int = positive(4)
    """n: completions per held-out query used to estimate pass@1 (at the training temperature)."""
    eval_ks: list[int] = field(default_factory=list)
    """Also log held-out pass@k for these k (each 2..train.eval_samples), from the same n samples: eval/pass@<k>."""
    save_every: int = non_negative(1)
    """Write a resumable checkpoint every this many steps (0 = only at the end)."""
    keep_every: int = non_negative(0)
    """Keep the policy every this many steps in the run's steps/<N>/ (Hugging Face format, model and tokenizer; merged under LoRA), whatever train.save_every is, for `rlvr eval --run DIR --checkpoint N` and `rlvr inspect --run DIR --step N+1`; 0 keeps none; each costs a model's size on disk."""
    keep_best: Literal["none", "pass@1", "greedy"] = "none"
    """Keep the model with the best held-out score of this name in the run's best/ (the base's, every train.eval_every steps, the final; ties keep the earlier), and its step in summary.json's "best"."""
    threads: int = non_negative(0)
    """torch CPU threads (0 = torch's default)."""
    sharding: Literal["ddp", "fsdp2"] = "ddp"
    """Under torchrun/accelerate: ddp keeps the whole policy and AdamW state on every process; fsdp2 shards them over the processes with FSDP2 (each holds 1/N, plus a whole copy to sample from; engine/sharding.py, docs/scaling.md). One process shards nothing."""
    fsdp_mixed_precision: Literal["none", "bfloat16"] = "none"
    """train.sharding=fsdp2: bfloat16 runs each sharded layer's forward and backward in bfloat16 from float32 shards (FSDP2 MixedPrecisionPolicy: weights gathered in bfloat16, gradients reduce-scattered and AdamW stepped in float32, logits returned in float32); none computes in model.dtype."""
    fsdp_cpu_offload: bool = False
    """train.sharding=fsdp2: keep the parameter, gradient and AdamW shards in CPU memory and copy each layer's weights to the device when it runs (FSDP2 CPUOffloadPolicy; AdamW steps on the CPU). Saves 16 B per parameter / N of device memory; on a CPU-only machine it moves nothing."""
    on_alarm: Literal["warn", "stop", "ignore"] = "warn"
    """A tripped health check (config section health): warn prints a line and goes on; stop writes a checkpoint and ends the run with exit code 3 and the reason; ignore only logs it (health.jsonl, health/* metrics)."""
    recorder_steps: int = non_negative(0)
    """Flight recorder: keep the checkpoints after the last this many steps in the run's recorder/ (each one checkpoint's size on disk: weights and optimizer state) and those steps' batches (completions, old log-probs, rewards, RNG state), so that `rlvr inspect --run DIR --step N` repeats any of those steps exactly on the batch it trained on; needs train.save_every=1 (the default) to hold every step. 0 (the default) keeps none. Whatever it is, the first non-finite alarm pins the state before its step and the step's batch there (engine/flight.py)."""
    max_restarts: int = non_negative(3)
    """rlvr train --supervise: how many times a crashed training process is restarted from its last checkpoint."""
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

    def sharding_options(self) -> list[tuple[str, str, str]]:
        """The options of a sharded policy (train.fsdp_*) set away from their defaults, as config
        text: (name, value, default); config/checks.py and engine/build.py refuse them unsharded."""
        text = lambda value: str(value).lower() if isinstance(value, bool) else str(value)  # noqa: E731
        return [(f.name, text(getattr(self, f.name)), text(f.default)) for f in dataclasses.fields(self)
                if f.name.startswith("fsdp_") and getattr(self, f.name) != f.default]  # fmt: skip


@dataclass
class HealthConfig:
    """The thresholds of the run's alarms (engine/health.py; docs/troubleshooting.md, keyed by check).
    Each check logs health/<check> every step and a line of <out>/health.jsonl; train.on_alarm
    says what a tripped one does."""

    no_signal_steps: int = positive(5)
    """no_signal: trips when every group had zero reward spread (frac_reward_zero_std = 1) on this many steps in a row."""
    window: int = positive(10)
    """truncation, unscorable and kl: the mean over the last this many steps is compared with the bound."""
    max_truncated: float = unit_interval(0.5)
    """truncation: the share of completions cut at rollout.max_new_tokens (completions/clipped_ratio) above this trips."""
    max_unscorable: float = unit_interval(0.1)
    """unscorable: the share of completions the verifier could not judge (verifier/unscorable / N) above this trips."""
    max_verify_p99_s: float = non_negative(30.0)
    """verifier_latency: the correctness verifier's 99th-percentile seconds per completion in a step (time/verify_p99) above this trips."""
    max_kl: float = non_negative(2.5)
    """kl: the per-token KL to the reference, averaged over the last health.window steps, above this trips (the shipped atlas: 10-step means at most 0.15 at every stable setting, 3.3-4.5 with the lr that collapses; the d8c9e54 build at the old default lr 5e-4 reached 2.0 with the random reward)."""
    entropy_range: list[float] = field(default_factory=lambda: [0.01, 3.0])
    """entropy: [low, high] as multiples of the run's first-step entropy; outside trips (collapse, or a policy blown up)."""
    max_logprob_mismatch: float = non_negative(1.0)
    """logprob_mismatch: rollout/logprob_mismatch (nats per token, sampler against trainer) above this trips."""
    max_sync_error: float = non_negative(0.0)
    """sampler_sync: mean |log-prob| difference per token on a fixed probe batch between a separate sampler copy and the policy version it claims; 0 = by rollout.dtype, or bfloat16 where train.fsdp_mixed_precision computes in it (1e-3 for float32, 0.02 for bfloat16 and float16)."""


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
    health: HealthConfig = field(default_factory=HealthConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def choice_problem(key: str, value: Any, choices: Any) -> str | None:
    """The message for a value that is not one of `choices`, or None."""
    if value in choices:
        return None
    return f"{key} must be one of {', '.join(map(str, choices))} (got {value!r})"


def sections() -> dict[str, type]:
    """Section name -> its dataclass, e.g. 'algo' -> AlgoConfig."""
    hints = typing.get_type_hints(RunConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(RunConfig)}


_EVAL_SHARED = ("task.data_seed", "task.prompt_format", "task.system_prompt", "rollout.max_new_tokens",
                "rollout.tools", "rollout.tool_format", "rollout.max_turns", "rollout.tool_timeout_s",
                "rollout.tool_output_chars")  # fmt: skip


def eval_fields(task: str) -> tuple[str, ...]:
    """The fields that decide a held-out evaluation of `task` (its queries, their prompt layout and
    sampling length): what `rlvr eval --set` takes."""
    return (*(f"task.{name}" for name in get_task(task).heldout_fields), *_EVAL_SHARED)


def eval_set_problem(overrides: list[str], task: str) -> str | None:
    """The message for the first `rlvr eval --task TASK --set` key eval does not take, or None."""
    fields = eval_fields(task)
    for item in overrides:
        if item.split("=", 1)[0].strip() not in fields:
            return f"--set {item}: rlvr eval takes only {', '.join(fields)}"
    return None


EVAL_FIELDS = eval_fields(TaskConfig.name)
"""The fields that decide a held-out evaluation of the default task: what `rlvr reproduce` passes
`rlvr eval` from a trained run's config."""
