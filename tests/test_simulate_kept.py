"""Replays kept in the store (``compiler.tools.simulate.kept``): keyed by everything a replay
reads, taken back equal, and never stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from conftest import REPO, run_cli
from test_simulate_cli import TRACE, _budget_change, trace

from compiler.cache.store import Store
from compiler.pipeline.units import LazyFiles
from compiler.tools.simulate import kept
from compiler.tools.simulate.compare import Run, report_of
from compiler.tools.simulate.objects import read_out_dir


def _files() -> Mapping[str, bytes]:
    return read_out_dir(REPO / "out")


def test_replay_key_reads_every_input_and_nothing_else(tmp_path: Path) -> None:
    files = _files()
    t = Path(trace(tmp_path))
    key = kept.replay_key(files, "onprem", t, None, 1.0, 0.0)
    assert key is not None and key == kept.replay_key(dict(files), "onprem", t, None, 1.0, 0.0)
    changed = {
        "cluster": kept.replay_key(files, "cloud", t, None, 1.0, 0.0),
        "load": kept.replay_key(files, "onprem", t, None, 2.0, 0.0),
        "checkpoint": kept.replay_key(files, "onprem", t, None, 1.0, 0.5),
    }
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("teams: {}\n")
    changed["mapping"] = kept.replay_key(files, "onprem", t, mapping, 1.0, 0.0)
    mapping.write_text("teams: {a: nlp}\n")
    changed["mapping bytes"] = kept.replay_key(files, "onprem", t, mapping, 1.0, 0.0)
    other = tmp_path / "other.csv"
    other.write_text(TRACE.replace("3600", "3601"))
    changed["trace bytes"] = kept.replay_key(files, "onprem", other, None, 1.0, 0.0)
    as_json = tmp_path / "trace.json"
    as_json.write_bytes(t.read_bytes())
    changed["trace suffix"] = kept.replay_key(files, "onprem", as_json, None, 1.0, 0.0)
    for path in ("onprem/kueue/clusterqueue._.nlp.yaml", "argocd/onprem/application.argocd.gpupolicy-onprem-kueue-chart.yaml"):
        edited = {**files, path: files[path] + b"# x\n"}
        changed[path] = kept.replay_key(edited, "onprem", t, None, 1.0, 0.0)
    namespaces = next(p for p in files if p.startswith("onprem/namespaces/"))
    changed[namespaces] = kept.replay_key({**files, namespaces: b"x"}, "onprem", t, None, 1.0, 0.0)
    for what, other_key in changed.items():
        assert other_key is not None and other_key != key, what
    assert len(set(changed.values())) == len(changed)
    # what the replay does not read: the other cluster's objects, the reports
    unread = {**files, "REPORT.md": b"x", next(p for p in files if p.startswith("cloud/kueue/")): b"x"}
    assert kept.replay_key(unread, "onprem", t, None, 1.0, 0.0) == key
    # a compile's files are keyed by the digests it holds, without reading them
    lazy = LazyFiles({p: kept.file_digest(files, p) for p in files}, lambda rel: (_ for _ in ()).throw(AssertionError(rel)))
    assert kept.replay_key(lazy, "onprem", t, None, 1.0, 0.0) == key
    assert kept.replay_key(files, "onprem", tmp_path / "missing.csv", None, 1.0, 0.0) is None


def test_a_kept_report_is_the_replay_and_a_bad_entry_replays(tmp_path: Path) -> None:
    files = _files()
    run = Run(Path(trace(tmp_path)), "onprem")
    store = Store(tmp_path / "repo")
    (tmp_path / "repo").mkdir()
    first = report_of(files, "onprem", run, store)
    assert first.jobs == 6 and first.teams and first.never_fit
    key = kept.replay_key(files, "onprem", run.trace, None, 1.0, 0.0)
    assert key is not None and store.has(kept.KIND, key)

    def fail() -> kept.Report:
        raise AssertionError("replayed again")

    again = kept.kept_report(Store(tmp_path / "repo"), key, fail)  # a new process's store
    assert again == first and again.as_json() == first.as_json()
    assert isinstance(again.never_fit[0], tuple) and isinstance(again.teams[0].causes, list)
    calls: list[int] = []

    def counted() -> kept.Report:
        calls.append(1)
        return first

    entry = tmp_path / "repo" / ".gpupolicy-cache" / kept.KIND / key
    entry.write_bytes(b"garbage")
    assert kept.kept_report(Store(tmp_path / "repo"), key, counted) == first and calls == [1]
    store = Store(tmp_path / "repo")
    store.put(kept.KIND, key, {"cluster": "onprem"})  # another layout under the key: replayed
    assert kept.kept_report(store, key, counted) == first and calls == [1, 1]
    assert kept.kept_report(store, None, counted) == first and calls == [1, 1, 1]
    for i in range(40):  # other traces' replays: the store keeps a bounded number
        kept.kept_report(Store(tmp_path / "repo"), f"{i:032x}", counted)
    left = {p.name for p in entry.parent.iterdir()}
    assert f"{39:032x}" in left and len(left) <= 2 * 16 + 1


def test_diff_simulate_twice_replays_once_and_never_stale(tmp_path: Path) -> None:
    """The PR diff step's two runs: the second takes both replays from the store and prints the
    same; another trace is replayed again; ``--no-cache`` keeps nothing."""
    root = _budget_change(tmp_path)
    t = trace(root)
    args = ("diff", "--base", "HEAD", "--simulate", t, "--simulate-cluster", "onprem", "--format", "json")
    first = run_cli(*args, cwd=root)
    assert first.returncode == 0, first.stderr
    entries = root / ".gpupolicy-cache" / kept.KIND
    assert len(list(entries.iterdir())) == 2  # the base's objects and the work tree's differ
    second = run_cli(*args, cwd=root)
    assert second.returncode == 0 and second.stdout == first.stdout
    old = json.loads(first.stdout)["simulate"]
    trace(root, TRACE.replace("0,3600,32,nlp", "0,3600,4,nlp"))
    third = json.loads(run_cli(*args, cwd=root).stdout)["simulate"]
    assert len(list(entries.iterdir())) == 4
    assert third["head_report"] != old["head_report"] and third["base_report"] != old["base_report"]
    # nlp-big asked 32 of the 8 nlp now has: it never fit; at 4 it does (the replay ran again)
    assert [j for j, _ in old["head_report"]["never_fit"]] == ["nlp-big", "nlp-huge"]
    assert [j for j, _ in third["head_report"]["never_fit"]] == ["nlp-huge"]
    trace(root, TRACE.replace("0,3600,32,nlp", "0,3600,2,nlp"))
    r = run_cli(*args, "--no-cache", cwd=root)
    assert r.returncode == 0, r.stderr
    assert len(list(entries.iterdir())) == 4


def test_simulate_keeps_its_report_per_baselines_and_explains_from_a_replay(demo_repo: Path) -> None:
    """``gpupolicy simulate``: its report (with or without the baselines) kept as the pull
    request's replays are, so another format renders it without replaying; ``--explain`` replays."""
    t = trace(demo_repo)
    entries = demo_repo / ".gpupolicy-cache" / kept.KIND
    args = ("simulate", "--trace", t, "--cluster", "onprem", "--from-out")
    first = run_cli(*args, "--format", "json", cwd=demo_repo)
    assert first.returncode == 0, first.stderr
    assert len(list(entries.iterdir())) == 2 and json.loads(first.stdout)["baselines"]  # the report, the outcomes
    again = run_cli(*args, "--format", "json", cwd=demo_repo)
    assert again.stdout == first.stdout
    assert "as replayed before" in again.stderr and "as replayed before" not in first.stderr
    text = run_cli(*args, cwd=demo_repo)
    assert text.returncode == 0 and "why nlp waited" in text.stdout and len(list(entries.iterdir())) == 2
    bare = run_cli(*args, "--format", "json", "--no-baselines", cwd=demo_repo)
    assert not json.loads(bare.stdout)["baselines"] and len(list(entries.iterdir())) == 3
    files = read_out_dir(demo_repo / "out")
    assert kept.replay_key(files, "onprem", Path(t), None, 1.0, 0.0, True) != \
        kept.replay_key(files, "onprem", Path(t), None, 1.0, 0.0)
    explained = run_cli(*args, "--explain", "nlp-big", cwd=demo_repo)
    assert explained.returncode == 0 and "job nlp-big" in explained.stdout
    replayed = run_cli(*args, "--explain", "nlp-big", "--no-cache", cwd=demo_repo)
    assert replayed.returncode == 0 and replayed.stdout == explained.stdout and len(list(entries.iterdir())) == 3


def test_explain_reads_a_kept_replay_and_says_what_the_replay_says(tmp_path: Path) -> None:
    """``--explain JOB`` after a replay reads each job's outcome kept beside it (``keep_outcomes``)
    instead of replaying: the same text and JSON for every job of the trace, a preempted one
    included; an entry of another layout, or none, gives no track (the command replays)."""
    from compiler.tools.simulate.cluster import Cluster
    from compiler.tools.simulate.objects import load_setup
    from compiler.tools.simulate.render import explain_job, explain_job_json
    from compiler.tools.simulate.replay import replay
    from compiler.tools.simulate.traces import Mapping as TeamMapping
    from compiler.tools.simulate.traces import read_trace

    files = _files()
    t = Path(trace(tmp_path))
    setup = load_setup(files, "onprem")
    jobs, _, _ = read_trace(t, setup, TeamMapping.load(None))
    out = replay(Cluster.of(setup), jobs)
    assert any(tr.preempted_by for tr in out.tracks) and any(tr.never_fits for tr in out.tracks)
    (tmp_path / "repo").mkdir()
    store = Store(tmp_path / "repo")
    key = kept.outcomes_key(files, "onprem", t, None, 1.0, 0.0)
    assert key is not None and key != kept.replay_key(files, "onprem", t, None, 1.0, 0.0)
    assert key != kept.outcomes_key(files, "onprem", t, None, 2.0, 0.0)
    kept.keep_outcomes(store, key, out)
    again = Store(tmp_path / "repo")  # a new process's
    for tr in out.tracks:
        track = kept.kept_track(again, key, tr.job)
        assert track is not None and track.job is tr.job
        assert explain_job(track) == explain_job(tr) and explain_job_json(track) == explain_job_json(tr)
    assert kept.kept_track(again, None, jobs[0]) is None
    store.put(kept.KIND, key, {jobs[0].name: ("x",)})
    assert kept.kept_track(store, key, jobs[0]) is None


def test_out_files_are_the_yaml_paths_rglob_gives(tmp_path: Path) -> None:
    """``read_out_dir`` lists what ``rglob("*.yaml")`` lists (directories so named, linked ones
    not entered), read only when asked."""
    out = tmp_path / "out"
    (out / "a" / "d.yaml").mkdir(parents=True)
    (out / "a" / "x.yaml").write_text("kind: X\n")
    (out / "a" / "y.txt").write_text("")
    (out / "b" / "c").mkdir(parents=True)
    (out / "b" / "c" / "z.yaml").write_text("kind: Z\n")
    (out / "top.yaml").write_text("")
    (out / "link").symlink_to(out / "b")
    (out / "l.yaml").symlink_to(out / "a")
    files = read_out_dir(out)
    assert list(files) == sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert "a/x.yaml" in files and "link/c/z.yaml" not in files and files["b/c/z.yaml"] == b"kind: Z\n"


def test_a_compile_whose_store_entries_go_reads_its_files_compiled_again(demo_repo: Path) -> None:
    """The files a replay reads come from the store; pruned meanwhile by another process, they
    come from the tree compiled without it (as ``build`` and ``check`` recover), the same bytes."""
    import shutil

    from conftest import CRDS

    from compiler.pipeline.options import Options
    from compiler.tools.simulate.compare import Refetched, compiled_files, store_of

    opts = Options(root=demo_repo, policy_dir=demo_repo / "policies", out_dir=demo_repo / "out", crds=CRDS)
    assert compiled_files(opts, store_of(opts)).ok  # the store filled
    res = compiled_files(opts, store_of(opts))  # its units from the store: files read from it
    assert res.ok
    files = res.out_files
    assert isinstance(files, Refetched)
    path = "onprem/kueue/clusterqueue._.nlp.yaml"
    assert files.digests is not None
    first, digest, n = files.files, files.digests[path], len(files)
    shutil.rmtree(demo_repo / ".gpupolicy-cache" / "blob")
    assert files[path] == (demo_repo / "out" / path).read_bytes()
    assert files.files is not first  # compiled again
    assert kept.file_digest(files, path) == digest and len(files) == n
