"""Emit: deterministic bytes, atomic replacement of out/, stale files removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

import compiler.emit.tree as emit
from compiler.emit.tree import read_tree, write_tree


def test_write_tree_replaces_and_prunes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert write_tree(out, {"a/x.yaml": b"1\n", "b.yaml": b"2\n"})
    assert write_tree(out, {"a/x.yaml": b"3\n"})
    assert read_tree(out) == {"a/x.yaml": b"3\n"}
    assert not write_tree(out, {"a/x.yaml": b"3\n"})  # unchanged: nothing rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("fail_after", [1, 2, 5])
def test_interrupted_write_leaves_old_tree(tmp_path: Path, fail_after: int, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    old = {f"c/{i}.yaml": b"old\n" for i in range(4)}
    write_tree(out, old)
    calls = {"n": 0}

    def boom(_: Path) -> None:
        calls["n"] += 1
        if calls["n"] >= fail_after:
            raise KeyboardInterrupt

    monkeypatch.setattr(emit, "_after_write", boom)
    new = {f"c/{i}.yaml": b"new\n" for i in range(8)}
    with pytest.raises(KeyboardInterrupt):
        write_tree(out, new)
    assert read_tree(out) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_interrupted_swap_is_recovered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a.yaml": b"old\n"})
    out.rename(tmp_path / ".out.old")  # crash between the two renames
    write_tree(out, {"a.yaml": b"new\n"})
    assert read_tree(out) == {"a.yaml": b"new\n"}
    assert not (tmp_path / ".out.old").exists()


def test_refuses_paths_outside(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_tree(tmp_path / "out", {"../evil.yaml": b"x"})
    assert not (tmp_path / "evil.yaml").exists()


def _build_hash(root: Path, seed: str, reverse: bool) -> dict[str, bytes]:
    code = (
        "import sys, os\n"
        "from pathlib import Path\n"
        "import compiler.load.files as L\n"
        "if sys.argv[2] == '1':\n"
        "    orig = L.discover\n"
        "    def rev(d, r):\n"
        "        files, diags = orig(d, r)\n"
        "        return list(reversed(files)), diags\n"
        "    L.discover = rev\n"
        "from compiler.pipeline.options import Options\n"
        "from compiler.pipeline.run import compile_policies\n"
        "root = Path(sys.argv[1])\n"
        "res = compile_policies(Options(root=root, policy_dir=root/'policies', out_dir=root/'out', verify=False))\n"
        "import hashlib\n"
        "for k, v in sorted(res.out_files.items()):\n"
        "    print(k, hashlib.sha256(v).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code, str(root), "1" if reverse else "0"], env=env,
                         capture_output=True, text=True, check=True)
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())  # type: ignore[misc]


def test_deterministic_across_hash_seed_and_file_order() -> None:
    a = _build_hash(REPO, "1", False)
    b = _build_hash(REPO, "12345", True)
    assert a and a == b
