"""The rendered files a run holds until ``out/`` is written (``Run.keep``/``Run.fetch``): without
a store they are held compressed, one unit at a time expanded, and read back the same in any
order."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from conftest import REPO

from compiler.cache.store import NullStore, Store, content_digest
from compiler.emit.tree import read_tree, write_tree
from compiler.pipeline.options import Options
from compiler.pipeline.run import Run, compile_policies


def _opts(root: Path) -> Options:
    return Options(root=root, policy_dir=root / "policies", out_dir=root / "out", crds=None, verify=False)


def _units() -> dict[str, dict[str, bytes]]:
    return {f"unit{u}": {f"c{c}/team{u}/f{c}.yaml": f"kind: X\nname: team{u}-{c}\n".encode() * (u + 1)
                         for c in range(5)} for u in range(4)}


def test_without_a_store_units_are_held_compressed_and_read_back_in_any_order(tmp_path: Path) -> None:
    run = Run(_opts(tmp_path), NullStore())
    units = _units()
    for key, files in units.items():
        run.keep(key, files)
    assert all(isinstance(held, bytes) for held in run.blobs.values())
    assert sum(map(len, run.blobs.values())) < sum(len(b) for f in units.values() for b in f.values())
    where = {rel: key for key, files in units.items() for rel in files}
    every = {rel: data for files in units.values() for rel, data in files.items()}
    get = run.fetch(where)
    order = list(every)
    for shuffled in (order, sorted(order), order[::-1], random.Random(3).sample(order, len(order))):
        assert {rel: get(rel) for rel in shuffled} == every


def test_with_a_store_units_are_held_as_rendered(tmp_path: Path) -> None:
    run = Run(_opts(tmp_path), Store(tmp_path))
    if run.store.off:  # no writable home for the key: the store behaves as the empty one
        return
    files = _units()["unit1"]
    run.keep("unit1", files)
    assert run.blobs["unit1"] is files
    assert run.fetch(dict.fromkeys(files, "unit1"))("c2/team1/f2.yaml") == files["c2/team1/f2.yaml"]


def test_an_uncached_build_writes_the_bytes_it_rendered(tmp_path: Path) -> None:
    """The demo through the empty store: the files written from the compressed units are the
    ones the digests name."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "policies", root / "policies")
    res = compile_policies(_opts(root))
    assert res.ok and len(res.out_digests) > 50
    assert write_tree(root / "out", res.out_files, digests=res.out_digests, current={})
    written = read_tree(root / "out")
    assert {rel: content_digest(data) for rel, data in written.items()} == res.out_digests
