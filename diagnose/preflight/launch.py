"""The launch configuration, from whichever form the user has:

* a ``vllm serve MODEL --flag value ...`` command line, or a shell script holding one (backslash
  continuations, ``export VAR=...`` lines and ``$VAR`` / ``${VAR}`` expansions, comments);
* the ``non-default args: {...}`` line vLLM prints at start-up (a Python dict repr, read with
  ``ast.literal_eval``, never evaluated);
* a MindIE ``config.json`` (``BackendConfig.ModelDeployConfig.ModelConfig[0]``, ``ScheduleConfig``).

Everything becomes one ``Launch``; fields the launch does not set stay ``None`` so checks can say "default".
A launch that is not one (no ``vllm serve`` in the script) or a flag value that does not parse is a
*problem* naming what could not be read (diagnose/preflight/flag_values.py), and the keys of such values are
``unknown``: no check reads them as unset.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from diagnose.bounded import json_loads
from diagnose.preflight.flag_values import flag_name, read_fraction, read_int, read_length, read_object


@dataclass
class Launch:
    engine: str  # vllm | mindie
    source: str  # where it came from, for the facts' notes
    model: str | None = None
    tp: int | None = None
    dp: int | None = None
    expert_parallel: bool = False
    moe_ep: int | None = None  # MindIE ModelConfig moe_ep
    moe_tp: int | None = None
    world_size: int | None = None  # MindIE worldSize
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    mem_util: float | None = None  # --gpu-memory-utilization / NPU_MEMORY_FRACTION
    kv_pool_gb: float | None = None  # MindIE npuMemSize when > 0
    quantization: str | None = None
    spec_method: str | None = None
    num_spec_tokens: int | None = None
    redundant_experts: int = 0
    graph_mode: bool = False  # vllm-ascend torchair graph mode (MLA then needs 32/64/128 heads per rank)
    served_name: str | None = None
    command: str = ""  # the command as one line
    args: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)  # keys whose value could not be read: neither set nor unset

    @property
    def mtp_enabled(self) -> bool:
        return bool(self.spec_method and re.search(r"mtp", self.spec_method, re.I)) or (
            self.spec_method is None and bool(self.num_spec_tokens)
        )


_VALUE_NEEDED_NEVER = {"enable_expert_parallel", "trust_remote_code", "enforce_eager", "enable_prefix_caching",
                       "no_enable_prefix_caching", "disable_log_requests", "disable_log_stats", "enable_eplb", "headless"}

# vLLM's short spellings of the flags the checks read.
_SHORT = {"-tp": "--tensor-parallel-size", "-dp": "--data-parallel-size", "-q": "--quantization"}

_SERVE = re.compile(r"(?:^|\s|/)(?:vllm\s+serve|vllm\.entrypoints\.openai\.api_server)\b")


def _join_continuations(text: str) -> list[str]:
    out, buf = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return out


def _expand(text: str, env: dict[str, str]) -> str:
    def one(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))

    return re.sub(r"\$\{([A-Za-z_]\w*)(?::-[^}]*)?\}|\$([A-Za-z_]\w*)", one, text)


def parse_serve_script(text: str, source: str = "launch script") -> Launch:
    """A shell script or a single command line holding ``vllm serve``."""
    env: dict[str, str] = {}
    command = None
    for line in _join_continuations(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = re.match(r"^(?:export\s+)?([A-Za-z_]\w*)=(.*)$", stripped)
        if m and not _SERVE.search(stripped):
            try:
                parts = shlex.split(m.group(2), comments=True)
                env[m.group(1)] = _expand(parts[0], env) if parts else ""
            except ValueError:
                env[m.group(1)] = m.group(2)
            continue
        if _SERVE.search(stripped):
            command = _expand(stripped, env)
            break
    launch = Launch(engine="vllm", source=source)
    if command is None:
        given = " ".join(text.split())
        shown = f" in {given[:120]!r}" if source == "--serve-cmd" else ""
        launch.problems.append(f"{source}: not a vLLM launch: no `vllm serve MODEL ...` or "
                               f"`python -m vllm.entrypoints.openai.api_server ...` command{shown}")
        return launch
    launch.command = command
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError as exc:
        launch.problems.append(f"{source}: cannot split the command line into words ({exc}): an unclosed quote?")
        tokens = command.split()
    launch.args = _cli_args(tokens)
    return _from_args(launch, cli=True)


def _cli_args(tokens: list[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    try:
        start = tokens.index("serve") + 1
        if start < len(tokens) and not tokens[start].startswith("-"):
            args["model"] = tokens[start]
            start += 1
    except ValueError:
        start = next((i + 1 for i, t in enumerate(tokens) if t.endswith("api_server")), 0)
    i = start
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok in ("&", "|", ";", "&&", ">", "2>&1") or tok.startswith(">"):
            break
        if tok in _SHORT:
            tok = _SHORT[tok]
        if not tok.startswith("--"):
            continue
        key, eq, value = tok[2:].partition("=")
        key = key.replace("-", "_")
        if eq:
            args[key] = value
        elif key in _VALUE_NEEDED_NEVER or i >= len(tokens) or tokens[i].startswith("-") and tokens[i] != "-1":
            args[key] = True
        else:
            args[key] = tokens[i]
            i += 1
    return args


_NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")


def parse_non_default_args(line: str, source: str = "non-default args") -> Launch | None:
    m = _NON_DEFAULT.search(line)
    launch = Launch(engine="vllm", source=source)
    if not m:
        return None
    launch.command = m.group(0)
    try:
        value = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, dict):
        launch.problems.append(f"{source}: cannot read the argument dict")
        return launch
    launch.args = {str(k): v for k, v in value.items()}
    if "model" not in launch.args and "model_tag" in launch.args:
        launch.args["model"] = launch.args["model_tag"]
    return _from_args(launch, cli=False)


def _json_arg(value: Any) -> dict:
    """A JSON object or dict, {} when it is not one (MindIE's plugin_params; vLLM flags go through values.py)."""
    parsed, _ = read_object(value, "value")
    return parsed or {}


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def _dotted(args: dict[str, Any], key: str) -> dict[str, Any]:
    """``--speculative-config.method mtp`` (vLLM's dotted form of a JSON flag) as a dict of its fields."""
    prefix = key + "."
    return {k[len(prefix):]: v for k, v in args.items() if k.startswith(prefix)}


class _Reader:
    """Reads the flags of one launch; every value that does not parse becomes a problem naming the flag."""

    def __init__(self, launch: Launch, cli: bool):
        self.launch, self.cli = launch, cli

    def get(self, reader, *keys: str, **kw):
        key = next((k for k in keys if k in self.launch.args), None)
        if key is None:
            return None
        value, problem = reader(self.launch.args[key], flag_name(key, self.cli), **kw)
        if problem:
            self.launch.problems.append(f"{self.launch.source}: {problem}")
            self.launch.unknown.add(keys[0])
        return value

    def obj(self, key: str) -> dict:
        value = self.get(read_object, key) or {}
        return {**value, **_dotted(self.launch.args, key)}


def _from_args(launch: Launch, cli: bool = True) -> Launch:
    a = launch.args
    read = _Reader(launch, cli)
    launch.model = a.get("model")
    launch.served_name = str(a["served_model_name"]) if a.get("served_model_name") else None
    launch.tp = read.get(read_int, "tensor_parallel_size", "tp")
    launch.dp = read.get(read_int, "data_parallel_size", "dp")
    launch.expert_parallel = bool(a.get("enable_expert_parallel")) and str(a.get("enable_expert_parallel")).lower() != "false"
    launch.max_model_len = read.get(read_length, "max_model_len")
    launch.max_num_seqs = read.get(read_int, "max_num_seqs")
    launch.mem_util = read.get(read_fraction, "gpu_memory_utilization")
    launch.quantization = str(a["quantization"]) if a.get("quantization") not in (None, True) else None
    spec = read.obj("speculative_config")
    if spec:
        launch.spec_method = str(spec.get("method") or spec.get("model") or "") or None
        launch.num_spec_tokens = _spec_tokens(read, spec.get("num_speculative_tokens"), cli)
    elif "num_speculative_tokens" in a:
        launch.num_spec_tokens = read.get(read_int, "num_speculative_tokens")
    if "speculative_config" in launch.unknown:
        launch.unknown.add("num_speculative_tokens")
    extra = read.obj("additional_config")
    eplb = extra.get("eplb_config") if isinstance(extra.get("eplb_config"), dict) else {}
    redundant = eplb.get("num_redundant_experts", extra.get("init_redundancy_expert", a.get("num_redundant_experts")))
    eplb_cli = read.obj("eplb_config")
    redundant = eplb_cli.get("num_redundant_experts", redundant) if eplb_cli else redundant
    launch.redundant_experts, problem = read_int(redundant, "num_redundant_experts", minimum=0)
    if problem:
        launch.problems.append(f"{launch.source}: {problem}")
        launch.unknown.add("additional_config")
    launch.redundant_experts = launch.redundant_experts or 0
    torchair = extra.get("torchair_graph_config")
    launch.graph_mode = isinstance(torchair, dict) and bool(torchair.get("enabled"))
    return launch


def _spec_tokens(read: _Reader, value: Any, cli: bool) -> int | None:
    number, problem = read_int(value, flag_name("speculative_config", cli) + " num_speculative_tokens")
    if problem:
        read.launch.problems.append(f"{read.launch.source}: {problem}")
        read.launch.unknown.update({"speculative_config", "num_speculative_tokens"})
    return number


def parse_mindie_config(text: str, source: str = "MindIE config.json", npus: int | None = None) -> Launch:
    launch = Launch(engine="mindie", source=source)
    try:
        data = json_loads(text)
    except ValueError as exc:
        launch.problems.append(f"{source}: not valid JSON ({exc})")
        return launch
    backend = data.get("BackendConfig", {}) if isinstance(data, dict) else {}
    deploy = backend.get("ModelDeployConfig", {}) if isinstance(backend, dict) else {}
    models = deploy.get("ModelConfig", []) if isinstance(deploy, dict) else []
    model = models[0] if isinstance(models, list) and models and isinstance(models[0], dict) else {}
    schedule = backend.get("ScheduleConfig", {}) if isinstance(backend, dict) else {}
    if not model:
        launch.problems.append(f"{source}: no BackendConfig.ModelDeployConfig.ModelConfig entry")
    launch.args = {"ModelConfig": model, "maxSeqLen": deploy.get("maxSeqLen"), "maxBatchSize": schedule.get("maxBatchSize"),
                   "multiNodesInferEnabled": backend.get("multiNodesInferEnabled"), "npuDeviceIds": backend.get("npuDeviceIds")}
    launch.model = model.get("modelWeightPath")
    launch.served_name = model.get("modelName")
    launch.world_size = _int(model.get("worldSize"))
    launch.tp = _int(model.get("tp"))
    launch.dp = _int(model.get("dp"))
    launch.moe_ep = _int(model.get("moe_ep"))
    launch.moe_tp = _int(model.get("moe_tp"))
    launch.expert_parallel = bool(launch.moe_ep and launch.moe_ep > 1)
    launch.max_model_len = _int(deploy.get("maxSeqLen"))
    launch.max_num_seqs = _int(schedule.get("maxBatchSize"))
    mem = _float(model.get("npuMemSize"))
    launch.kv_pool_gb = mem if mem is not None and mem > 0 else None
    plugin, problem = read_object(model.get("plugin_params"), "ModelConfig plugin_params")
    plugin = plugin or {}
    if problem:
        launch.problems.append(f"{source}: {problem}")
        launch.unknown.add("speculative_config")
    if plugin.get("plugin_type"):
        launch.spec_method = str(plugin["plugin_type"])
        launch.num_spec_tokens = _int(plugin.get("num_speculative_tokens"))
    launch.command = json.dumps({k: model.get(k) for k in ("modelWeightPath", "worldSize", "tp", "dp", "moe_tp", "moe_ep",
                                                            "npuMemSize", "plugin_params") if k in model})
    return launch


def looks_like_mindie_config(text: str) -> bool:
    return '"BackendConfig"' in text and '"ModelDeployConfig"' in text
