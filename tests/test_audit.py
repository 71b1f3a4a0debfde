"""``gpupolicy audit`` on the Kueue-shaped fixtures, through the installed CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import REPO, SHARED, run_cli

FIX = REPO / "tests" / "fixtures" / "audit"
WORKLOADS = FIX / "workloads.json"


def _schema() -> dict[str, Any]:
    path = SHARED / "kueue-workload" / "kueue.x-k8s.io_workloads.yaml"
    if not path.is_file():
        pytest.skip(f"Workload CRD not found at {path}")
    crd = yaml.safe_load(path.read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"]


def test_fixtures_validate_against_the_workload_crd() -> None:
    validator = jsonschema.Draft7Validator(_schema())
    items = json.loads(WORKLOADS.read_text())["items"]
    assert len(items) == 6
    for w in items:
        assert not list(validator.iter_errors(w)), w["metadata"]["name"]
    broken = json.loads(json.dumps(items[0]))
    del broken["status"]["conditions"][0]["reason"]
    assert list(validator.iter_errors(broken))  # the schema does check what we rely on


def _audit(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    p = run_cli("audit", "--workloads", str(WORKLOADS), "--cluster", "onprem", "--root", str(REPO), *extra,
                cwd=tmp_path)
    return p.returncode, p.stdout, p.stderr


def test_ledger_answers_who_what_when_and_why_it_waited(tmp_path: Path) -> None:
    out = tmp_path / "evidence"
    code, _, err = _audit(tmp_path, "--out", str(out), "--pods", str(FIX / "pods.json"),
                          "--metrics-before", str(FIX / "metrics-before.json"),
                          "--metrics-after", str(FIX / "metrics-after.json"))
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((out / "ledger.csv").read_text())))
    assert len(rows) == 6
    by = {r["name"]: r for r in rows}
    llama = by["job-llama-pretrain-5k2lq"]
    assert (llama["team"], llama["model"], llama["data_class"], llama["gpu_class"], llama["gpus"]) == \
        ("nlp", "llama-3.1-70b", "pii", "h100-80gb", "32")
    assert llama["admitted"] == "2026-11-30T08:00:04Z" and llama["residency"] == "eu"
    assert llama["borrowed"] == "within guarantee (32 of 32)"
    assert by["job-finetune-chat-x8d2p"]["ended"] == "2026-11-29T16:30:00Z"
    ranker = by["job-ranker-7-q9w4t"]
    assert ranker["state"] == "evicted" and ranker["preempted_by"] == "nlp-train/job-llama-pretrain-5k2lq (team nlp)"
    assert "InCohortReclamation" in ranker["preemption"]
    assert by["job-eval-1-p2x8c"]["borrowed"] == "no budget"
    md = (out / "AUDIT.md").read_text()
    waits = md.split("## Why did it wait")[1].split("## Findings")[0]
    for r in rows:  # every workload's wait is explained
        assert f"{r['namespace']}/{r['name']}" in waits
    assert "2 more GPUs needed" in waits and "guaranteed 8, borrow 8" in waits
    assert "LocalQueue default doesn't exist (namespace default is not a training namespace" in waits
    findings = md.split("## Findings")[1]
    for kind in ("missing-labels", "no-budget", "data-class-not-declared", "unknown-namespace", "unqueued-gpu-pod",
                 "serving-on-training-pool", "training-on-serving-pool"):
        assert f"**{kind}**" in findings, kind
    util = md.split("## Utilisation")[1]
    assert "| h100-80gb | nlp | 42.0% (24 h with data, 4 GPUs, 96 samples) | 73.0%" in util
    assert "+31.0 points" in util and "| a100-80gb-mig-3g.40gb | vision | no data |" in util
    everything = md + (out / "ledger.csv").read_text()
    for secret in ("hf-token", "do-not-copy", "WANDB", "last-applied"):
        assert secret not in everything


def test_no_metrics_no_number(tmp_path: Path) -> None:
    code, out, err = _audit(tmp_path)
    assert code == 0, err
    assert "no utilisation figure" in out and "%" not in out.split("## Utilisation")[1]


def test_residency_finding(tmp_path: Path) -> None:
    items = json.loads(WORKLOADS.read_text())["items"][:1]
    items[0]["metadata"]["namespace"] = "recsys-train"
    items[0]["status"]["admission"]["clusterQueue"] = "recsys"
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"kind": "List", "items": items}))
    p = run_cli("audit", "--workloads", str(wl), "--cluster", "cloud", "--root", str(REPO), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "**residency**" in p.stdout and "may be handled in eu only; cluster cloud is in us" in p.stdout


def _conditions_as_object(text: str) -> str:
    doc = json.loads(text)
    doc["items"][2]["status"]["conditions"] = {"type": "Evicted"}
    return json.dumps(doc)


@pytest.mark.parametrize("mutate, needle", [
    (lambda t: t[: len(t) // 2], "truncated"),
    (lambda t: "garbage" + t, "not a JSON export"),
    (lambda t: t.replace('"kind": "Workload"', '"kind": "Pod"', 1), "is a Pod, expected Workload"),
    (lambda t: t.replace("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1alpha1", 1),
     "Workload nlp-train/job-llama-pretrain-5k2lq (item 0) has apiVersion kueue.x-k8s.io/v1alpha1"),
    (lambda t: _conditions_as_object(t), "Workload recsys-train/job-ranker-7-q9w4t (item 2): status.conditions is not a list"),
])
def test_bad_exports_name_the_file_and_object(tmp_path: Path, mutate: Any, needle: str) -> None:
    text = json.dumps(json.loads(WORKLOADS.read_text()))
    bad = tmp_path / "bad.json"
    bad.write_text(mutate(text))
    p = run_cli("audit", "--workloads", str(bad), "--cluster", "onprem", "--root", str(REPO), cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert str(bad) in p.stderr and needle in p.stderr, p.stderr


def test_never_writes_into_out(tmp_path: Path) -> None:
    p = run_cli("audit", "--workloads", str(WORKLOADS), "--cluster", "onprem", "--root", str(REPO),
                "--out", str(REPO / "out" / "audit"), cwd=tmp_path)
    assert p.returncode == 2 and "out/" in p.stderr
    assert not (REPO / "out" / "audit").exists()


def _wl(ns: str, name: str, created: str, admitted: str | None, gpus: int, cls: str, ended: str | None = None,
        pending_msg: str | None = None) -> dict[str, Any]:
    res = f"gpupolicy.dev/{cls}"
    conds = []
    status: dict[str, Any] = {"conditions": conds}
    if admitted:
        conds.append({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                      "message": f"Quota reserved in ClusterQueue {ns}", "lastTransitionTime": admitted})
        status["admission"] = {"clusterQueue": ns.split("-")[0], "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {res: cls}, "resourceUsage": {res: str(gpus)}}]}
    if ended:
        conds.append({"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
                      "lastTransitionTime": ended})
    if pending_msg:
        conds.append({"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": pending_msg,
                      "lastTransitionTime": created})
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "uid": name, "creationTimestamp": created,
                         "labels": {"gpupolicy.dev/team": ns.split("-")[0], "gpupolicy.dev/model": "m",
                                    "gpupolicy.dev/data-class": "internal"}},
            "spec": {"queueName": ns.split("-")[0], "podSets": []}, "status": status}


def test_borrowing_and_derived_waits() -> None:
    from compiler.load.source import load_policy_dir
    from compiler.tools.audit.command import audit_workloads
    from compiler.tools.audit.context import policy_view
    from compiler.validate import build_policy

    policy, _ = build_policy(load_policy_dir(REPO / "policies", REPO)[0])
    assert policy is not None
    view = policy_view(policy, "onprem")
    mig = "a100-80gb-mig-3g.40gb"
    items = [
        _wl("nlp-train", "big", "2026-11-30T00:00:00Z", "2026-11-30T00:00:01Z", 32, "h100-80gb"),
        _wl("nlp-train", "late", "2026-11-30T01:00:00Z", "2026-11-30T03:00:00Z", 8, "h100-80gb",
            ended="2026-11-30T04:00:00Z"),  # nlp: guarantee 32, borrow 0: waited while big held 32
        _wl("vision-train", "v1", "2026-11-30T00:00:00Z", "2026-11-30T00:00:02Z", 8, mig),
        _wl("vision-train", "v2", "2026-11-30T00:10:00Z", "2026-11-30T00:40:00Z", 4, mig),  # borrows 4 of 8
    ]
    result = audit_workloads(items, "test", view)
    rows = {r.name: r for r in result.rows}
    assert rows["big"].borrowed == "within guarantee (32 of 32)"
    assert rows["v2"].borrowed == "borrowed (12 in use, guarantee 8)"
    waits = {w.key: w for w in result.waits}
    assert "the team's queue was at its limit: 32 h100-80gb in use + 8 asked > guarantee 32 + borrow 0" in \
        waits["nlp-train/late"].cause
    assert waits["nlp-train/late"].seconds == 7200 and waits["nlp-train/late"].derived
    assert "needed to borrow 4 beyond the guarantee 8" in waits["vision-train/v2"].cause


def _admitted(name: str, usage: Any, **labels: str) -> dict[str, Any]:
    w = _wl("nlp-train", name, "2026-11-30T00:00:00Z", "2026-11-30T00:00:05Z", 1, "h100-80gb")
    psa = w["status"]["admission"]["podSetAssignments"][0]
    psa["flavors"], psa["resourceUsage"] = {"nvidia.com/gpu": "h100-80gb"}, {"nvidia.com/gpu": usage}
    w["metadata"]["labels"].update(labels)
    return w


def _run(tmp_path: Path, items: list[dict[str, Any]]) -> tuple[Path, Any]:
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"kind": "List", "items": items}))
    return wl, run_cli("audit", "--workloads", str(wl), "--cluster", "onprem", "--root", str(REPO),
                       "--out", str(tmp_path / "ev"), cwd=tmp_path)


def test_export_text_is_escaped_in_the_markdown(tmp_path: Path) -> None:
    """A model label ``__bold__`` is shown as written (a code span), not bold; a QuotaReserved message
    with HTML, a heading and an @mention renders as text."""
    pending = _wl("nlp-train", "waits", "2026-11-30T00:00:00Z", None, 8, "h100-80gb",
                  pending_msg="<img src=x onerror=alert(1)> ## Heading @acme/ml-platform `x` | y")
    _, p = _run(tmp_path, [_admitted("bold", "8", **{"gpupolicy.dev/model": "__bold__"}), pending])
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "ev" / "AUDIT.md").read_text()
    assert "| nlp-train/bold | nlp | `__bold__` | internal |" in md
    assert "<img" not in md and "@acme" not in md and "## Heading" not in md
    assert ("Pending&#58; &lt;img src=x onerror=alert(1)&gt; \\#\\# Heading @\u2060acme/ml-platform \\`x\\` \\| y"
            in md)
    csv_text = (tmp_path / "ev" / "ledger.csv").read_text()
    assert ",__bold__," in csv_text  # the CSV keeps the value itself


def test_fraction_of_a_gpu_is_kept_and_warned_about(tmp_path: Path) -> None:
    """``resourceUsage: "500m"`` is half a GPU, not 0: kept, and a located warning in AUDIT.md and on stderr."""
    later = _admitted("two", "2000m")
    later["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-30T00:10:00Z"
    wl, p = _run(tmp_path, [_admitted("half", "500m"), later])
    assert p.returncode == 0, p.stderr
    where = ("Workload nlp-train/half (item 0): status.admission.podSetAssignments[0].resourceUsage[nvidia.com/gpu] "
             "is '500m', 0.5 GPUs: not a whole number")
    assert f"warning: {wl}: {where}" in p.stderr
    assert "nlp-train/two" not in p.stderr  # 2000m is 2 whole GPUs
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO((tmp_path / "ev" / "ledger.csv").read_text()))}
    assert (rows["half"]["gpus"], rows["two"]["gpus"]) == ("0.5", "2")
    assert rows["half"]["borrowed"] == "within guarantee (0.5 of 32)"
    assert rows["two"]["borrowed"] == "within guarantee (2.5 of 32)"
    md = (tmp_path / "ev" / "AUDIT.md").read_text()
    assert "## Warnings about the export" in md and "resourceUsage\\[nvidia.com/gpu\\] is '500m', 0.5 GPUs" in md
    assert "| h100-80gb | 0.5 |" in md


@pytest.mark.parametrize("usage, needle", [
    ("1e30", "status.admission.podSetAssignments[0].resourceUsage[nvidia.com/gpu] is '1e30': more than 1,000,000 "
             "GPUs is not a real count"),
    ("-2", "status.admission.podSetAssignments[0].resourceUsage[nvidia.com/gpu] is '-2': a GPU count cannot be "
           "negative"),
    ("eight", "status.admission.podSetAssignments[0].resourceUsage[nvidia.com/gpu] is 'eight', not a Kubernetes "
              "quantity"),
])
def test_absurd_or_malformed_gpu_amounts_are_located_errors(tmp_path: Path, usage: str, needle: str) -> None:
    wl, p = _run(tmp_path, [_admitted("ok", "1"), _admitted("bad", usage)])
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"{wl}: Workload nlp-train/bad (item 1): {needle}" in p.stderr, p.stderr
    assert not (tmp_path / "ev").exists()


def test_pod_set_counts_and_eviction_counts_are_checked(tmp_path: Path) -> None:
    w = _wl("nlp-train", "req", "2026-11-30T00:00:00Z", None, 8, "h100-80gb", pending_msg="waiting")
    w["spec"]["podSets"] = [{"name": "main", "count": "many", "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}]
    wl, p = _run(tmp_path, [w])
    assert p.returncode == 1 and f"{wl}: Workload nlp-train/req (item 0): spec.podSets[0].count is 'many', not a " \
        "whole number" in p.stderr, p.stderr
    w["spec"]["podSets"][0]["count"] = 4
    w["status"]["schedulingStats"] = {"evictions": [{"reason": "Preempted", "count": 1.5}]}
    wl, p = _run(tmp_path, [w])
    assert p.returncode == 1 and "status.schedulingStats.evictions[0].count is 1.5, not a whole number" in p.stderr
    del w["status"]["schedulingStats"]
    wl, p = _run(tmp_path, [w])
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "ev" / "ledger.csv").read_text())))
    assert rows[0]["gpus"] == "4"  # 4 pods x 1 GPU asked
