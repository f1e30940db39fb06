"""The optional Ray runner (``diagnose[ray]``): one extraction task per node, pinned to the Ray node that holds
the logs with Ray's node-affinity scheduling (hard: a task never runs elsewhere, where the logs are not), then
the fleet step on the caller's machine. Ray does the scheduling, retries and placement; nothing here schedules.

Which nodes: every alive Ray node (named by its host name, address or id), or ``NAME@RAYNODE`` pairs when one
machine holds the logs of several nodes (containers, or a test on one machine); ``{node}`` in a path is
replaced by the node's name. A task that fails leaves its node without a partition, and the fleet step lists
that node as not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnose.fleet.runs import extract_node
from diagnose.fleet.store import Store
from diagnose.pipeline import Settings, filters_for, load_catalog


class FanoutError(Exception):
    """Ray is missing, the cluster cannot be reached, or a node named is not in it."""


@dataclass
class Fanned:
    nodes: list[str]  # every node an extraction was scheduled for
    failed: list[tuple[str, str]] = field(default_factory=list)  # (node, why)


def extract_task(paths: list[str], dataset: str, node: str, cluster: str) -> dict:
    """What a Ray task runs on its node: the extraction ``diagnose extract`` does, with the built-in rules."""
    settings = Settings()
    rules, errors = load_catalog(settings)
    done = extract_node(paths, Store(dataset), node, cluster, settings, rules, errors, filters_for(rules))
    return {"node": node, "date": done.manifest["date"], "findings": len(done.report.findings)}


def _ray():
    try:
        import ray  # deferred: ray is an optional extra (diagnose[ray]; only fleet run --ray)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # deferred: ray is an optional extra
    except ImportError as exc:
        raise FanoutError("the Ray runner needs Ray (pip install 'diagnose[ray]')") from exc
    return ray, NodeAffinitySchedulingStrategy


def _label(info: dict, naming: str) -> str:
    if naming == "id":
        return info["NodeID"]
    if naming == "address":
        return info["NodeManagerAddress"]
    return info.get("NodeManagerHostname") or info["NodeManagerAddress"]


def plan(alive: list[dict], wanted: list[str], naming: str) -> list[tuple[str, str]]:
    """(node name, Ray node id) of every extraction: each alive node, or the ``NAME[@RAYNODE]`` asked for."""
    if not wanted:
        return [(_label(info, naming), info["NodeID"]) for info in alive]
    out = []
    for item in wanted:
        name, _, where = item.partition("@")
        where = where or name
        found = [info for info in alive
                 if where in (info["NodeID"], info["NodeManagerAddress"], info.get("NodeManagerHostname"))]
        if not found:
            raise FanoutError(f"--nodes {item}: no alive Ray node has the id, address or host name {where!r}")
        out.append((name, found[0]["NodeID"]))
    return out


def fan_out(address: str, dataset: str, paths: list[str], wanted: list[str], naming: str = "hostname",
            cluster: str = "default") -> Fanned:
    ray, affinity = _ray()
    started_here = not ray.is_initialized()
    try:
        if started_here:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds for an unreachable cluster
        raise FanoutError(f"--ray {address}: {type(exc).__name__}: {exc}") from exc
    try:
        alive = [info for info in ray.nodes() if info.get("Alive")]
        jobs = plan(alive, wanted, naming)
        task = ray.remote(num_cpus=1, max_retries=1)(extract_task)
        refs = {}
        for name, node_id in jobs:
            node_paths = [p.replace("{node}", name) for p in paths]
            strategy = affinity(node_id=node_id, soft=False)
            refs[name] = task.options(scheduling_strategy=strategy).remote(node_paths, dataset, name, cluster)
        failed = []
        for name, ref in refs.items():
            try:
                ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - the node is then listed as not read by the fleet step
                failed.append((name, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))
        return Fanned([name for name, _ in jobs], failed)
    finally:
        if started_here:
            ray.shutdown()
