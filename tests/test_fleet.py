"""Fleet mode: a 20-node incident (bench/gen_fleet.py, from the project's bundle generator) analysed by one run
over every node and by ``extract`` per node then ``fleet`` gives the same findings, root cause and expert-load
numbers; a local folder and a local S3-compatible server (moto in server mode) hold the same dataset; bad
datasets are refused or reported, never misread."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import gen_fleet  # noqa: E402

pytestmark = pytest.mark.slow  # a generated two-node bundle extracted per node (the module's fixture) and judged again

NODES = 20


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def fleet_bundle(tmp_path_factory) -> Path:
    return gen_fleet.generate(tmp_path_factory.mktemp("fleet"), NODES, "1M", expert_load=True)


def essentials(report: dict) -> dict:
    """What must agree: every finding (where, how often, when, what it quotes, what caused it), the verdict
    (the root cause), and what was read."""
    cov = report["coverage"]
    return {
        "findings": [{k: f[k] for k in ("rule_id", "severity", "summary", "count", "first_seen", "last_seen", "nodes",
                                       "ranks", "evidence", "caused_by", "fingerprint")} for f in report["findings"]],
        "verdict": report["verdict"],
        "coverage": (cov["status"], cov["files_read"], cov["lines"]),
        "inputs": sorted(i["path"] for i in report["inputs"]),
        "unrecognised": [(u.get("signature"), u.get("count")) for u in report["unrecognised"]],
    }


def expert_numbers(result: dict) -> dict:
    """The expert-load report's numbers (the inputs list names files by where they were read)."""
    return {k: v for k, v in result.items() if k not in ("inputs", "files", "generated")}


@pytest.fixture(scope="module")
def single_run(fleet_bundle: Path, tmp_path_factory) -> tuple[dict, dict]:
    out = tmp_path_factory.mktemp("single")
    code, _, err = run("check", str(fleet_bundle), "--no-config", "-q", "--json", str(out / "one.json"))
    assert code == 1, err
    # the nodes that hold dumps, whole: their logs' EPLB values are in the report as in the fleet's
    nodes = [str(fleet_bundle / f"node-{i}") for i in (0, 1)]
    code, _, err = run("expert-load", *nodes, "-o", str(out / "load.json"))
    assert code == 0, err
    return json.loads((out / "one.json").read_text()), json.loads((out / "load.json").read_text())


def extract_all(bundle: Path, dataset: str, nodes=range(NODES)) -> None:
    for i in nodes:
        code, _, err = run("extract", str(bundle / f"node-{i}"), "--out", dataset, "--cluster", "r1", "--no-config")
        assert code == 0, err
        assert f"extracted node node-{i} (cluster r1" in err


def fleet_json(dataset: str, tmp: Path, *more: str) -> tuple[int, dict, str]:
    code, _, err = run("fleet", dataset, "--no-config", "-q", "--json", str(tmp / "fleet.json"), *more)
    return code, json.loads((tmp / "fleet.json").read_text()), err


@pytest.mark.slow  # a whole bundle extracted per node and judged again: ~50 s of CPU
def test_extract_then_fleet_agrees_with_one_run(fleet_bundle: Path, single_run, tmp_path: Path):
    one, one_load = single_run
    dataset = str(tmp_path / "ds")
    extract_all(fleet_bundle, dataset)
    code, fleet, err = fleet_json(dataset, tmp_path, "--expert-load", str(tmp_path / "load.json"))
    assert code == 1, err
    assert essentials(fleet) == essentials(one)
    # The planted incident is on every pair of nodes: the fault on many nodes, and one first failing rank. Its
    # planted cause chain (bench/gen_bundle.py CHAINS: the older driver of each pair's node-1 -> rank 13 slow ->
    # its MoE kernel times out) leads the ranking from its start.
    ids = [f["rule_id"] for f in one["findings"]]
    assert {"DEV010", "COMM003", "ENG001"} <= set(ids)  # the chain's start (the driver mismatch) may lead
    dev010 = next(f for f in one["findings"] if f["rule_id"] == "DEV010")
    assert len(dev010["nodes"]) == NODES // 2 and 13 in dev010["ranks"]
    assert {f["caused_by"] for f in one["findings"] if f["rule_id"] in ("COMM003", "ENG001")} == {"DEV010"}
    assert fleet["verdict"]["kind"] == one["verdict"]["kind"]
    fleet_load = json.loads((tmp_path / "load.json").read_text())
    assert expert_numbers(fleet_load) == expert_numbers(one_load)
    assert fleet_load["recommendation"] == one_load["recommendation"]
    # Every node's own findings are in the dataset too, for queries across the fleet.
    import polars as pl

    own = pl.scan_parquet(str(tmp_path / "ds" / "date=*" / "cluster=r1" / "node=*" / "findings-*.parquet"),
                          hive_partitioning=False).collect()
    assert own.filter(pl.col("rule_id") == "DEV010").height == NODES // 2


def test_the_dataset_on_an_s3_compatible_server(fleet_bundle: Path, tmp_path: Path, monkeypatch):
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is in the test extra (.ci/run installs it)")
    pytest.importorskip("s3fs", reason="s3fs comes with diagnose[fleet] (.ci/run installs it)")
    import boto3

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server._server.server_address
        for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}",
                           "AWS_ALLOW_HTTP": "true"}.items():
            monkeypatch.setenv(key, value)
        boto3.client("s3").create_bucket(Bucket="fleet-logs")
        local = str(tmp_path / "local")
        nodes = range(4)
        extract_all(fleet_bundle, "s3://fleet-logs/weekly", nodes)
        extract_all(fleet_bundle, local, nodes)
        code_s3, on_s3, err = fleet_json("s3://fleet-logs/weekly", tmp_path)
        assert code_s3 == 1, err
        code_local, on_disk, _ = fleet_json(local, tmp_path)
        assert essentials(on_s3) == essentials(on_disk)
        assert on_s3["coverage"]["files_read"] == sum(1 for i in on_disk["inputs"])
    finally:
        server.stop()


@pytest.fixture
def two_nodes(fleet_bundle: Path, tmp_path: Path) -> Path:
    dataset = tmp_path / "ds"
    extract_all(fleet_bundle, str(dataset), range(2))
    return dataset


def test_a_dataset_of_another_schema_version_is_refused(fleet_bundle: Path, two_nodes: Path, tmp_path: Path):
    marker = two_nodes / "_dataset.json"
    marker.write_text(json.dumps({"format": "diagnose-fleet", "schema_version": 99}))
    code, _, err = run("fleet", str(two_nodes), "--no-config")
    assert code == 2
    assert "schema version 99" in err and "version 2" in err and "Traceback" not in err
    code, _, err = run("extract", str(fleet_bundle / "node-2"), "--out", str(two_nodes), "--no-config")
    assert code == 2 and "schema version 99" in err
    code, _, err = run("fleet", str(two_nodes), "--no-config", "--lang", "zh")
    assert code == 2 and "模式版本 99" in err


def test_a_partition_of_another_version_is_refused(two_nodes: Path):
    manifest = next(two_nodes.glob("date=*/cluster=*/node=node-1/_manifest.json"))
    data = json.loads(manifest.read_text())
    data["schema_version"] = 1  # a node extracted by a diagnose of the first schema, before its expert-load tables
    manifest.write_text(json.dumps(data))
    code, _, err = run("fleet", str(two_nodes), "--no-config")
    assert code == 2 and "node=node-1" in err and "schema version 1" in err and "version 2" in err


def test_half_written_and_absent_partitions_are_unread_coverage(two_nodes: Path, tmp_path: Path):
    (next(two_nodes.glob("date=*/cluster=*/node=node-1/_manifest.json"))).unlink()
    code, report, _ = fleet_json(str(two_nodes), tmp_path, "--expect", "node-0,node-1,node-7")
    cov = report["coverage"]
    assert cov["status"] == "partial"
    reasons = {Path(s["path"]).name: s["reason"] for s in cov["not_read"]}
    assert reasons["node=node-1"].startswith("fleet partition half-written or being written (no manifest)")
    assert reasons["node=node-7"] == "no extracted data for this node in the dataset (not read)"
    assert {i["node"] for i in report["inputs"]} == {"node-0"}
    code, out, _ = run("fleet", str(two_nodes), "--no-config", "--lang", "zh", "--expect", "node-7")
    assert "未写完或正在写入" in out and "没有该节点的提取数据" in out


def test_a_manifest_naming_a_missing_file_is_half_written(two_nodes: Path, tmp_path: Path):
    next(two_nodes.glob("date=*/cluster=*/node=node-0/records-*.parquet")).unlink()
    _, report, _ = fleet_json(str(two_nodes), tmp_path, "--allow-partial")
    (entry,) = report["coverage"]["not_read"]
    assert "node=node-0" in entry["path"] and "missing records-" in entry["reason"]


@pytest.mark.slow  # eight extractions racing on one dataset
def test_concurrent_extractions_never_corrupt_the_dataset(fleet_bundle: Path, tmp_path: Path):
    from diagnose.fleet.runs import extract_node
    from diagnose.fleet.store import Store
    from diagnose.pipeline import Settings, filters_for, load_catalog

    settings = Settings()
    rules, errors = load_catalog(settings)
    filters = filters_for(rules)
    dataset = tmp_path / "ds"
    failures = []

    def one(i: int) -> None:
        try:
            extract_node([str(fleet_bundle / f"node-{i}")], Store(str(dataset)), f"node-{i}", "r1", settings, rules,
                         errors, filters)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            failures.append(exc)

    # four nodes at once, and node-0 twice (a re-run while the first still writes)
    threads = [threading.Thread(target=one, args=(i,)) for i in (0, 1, 2, 3, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert not list(dataset.rglob(".*tmp-*")), "a temporary file was left behind"
    for node in dataset.glob("date=*/cluster=r1/node=*"):
        manifest = json.loads((node / "_manifest.json").read_text())
        listed = {e["file"] for e in manifest["tables"].values()} | {"_manifest.json"}
        assert listed <= {p.name for p in node.iterdir()}
    code, report, _ = fleet_json(str(dataset), tmp_path)
    assert report["coverage"]["status"] == "complete" and code == 1
    assert {i["node"] for i in report["inputs"]} == {f"node-{i}" for i in range(4)}


def test_since_prunes_partitions_before_reading(two_nodes: Path, tmp_path: Path):
    older = two_nodes / "date=2024-01-01" / "cluster=r1" / "node=node-9"
    older.mkdir(parents=True)
    (older / "_manifest.json").write_text("{not json")  # never opened: dated before --since
    code, report, _ = fleet_json(str(two_nodes), tmp_path, "--since", "2025-01-01", "--cluster", "r1")
    assert report["coverage"]["status"] == "complete"
    _, report, _ = fleet_json(str(two_nodes), tmp_path, "--allow-partial")
    assert any("unreadable manifest" in s["reason"] for s in report["coverage"]["not_read"])
    code, _, err = run("fleet", str(tmp_path / "nowhere"), "--no-config")
    assert code == 2 and "no such dataset" in err


@pytest.mark.slow
def test_the_ray_runner_on_a_local_cluster_agrees(fleet_bundle: Path, single_run, tmp_path: Path):
    ray = pytest.importorskip("ray", reason="Ray comes with diagnose[ray] (.ci/run installs it)")
    one, one_load = single_run
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        (node_id,) = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        nodes = ",".join(f"node-{i}@{node_id}" for i in range(NODES))
        dataset = str(tmp_path / "ds")
        code, _, err = run("fleet", "run", "--ray", "auto", "--nodes", nodes, dataset,
                           str(fleet_bundle / "{node}"), "--no-config", "-q", "--json", str(tmp_path / "ray.json"),
                           "--expert-load", str(tmp_path / "load.json"))
    finally:
        ray.shutdown()
    assert code == 1, err
    got = json.loads((tmp_path / "ray.json").read_text())
    assert essentials(got) == essentials(one)
    assert expert_numbers(json.loads((tmp_path / "load.json").read_text())) == expert_numbers(one_load)
