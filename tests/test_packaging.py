"""What `pip install gpupolicy` gets: the wheel and sdist built from this tree (setuptools'
PEP 517 backend, in-process and offline), their licence metadata (PEP 639), the packaged CRDs with
their SOURCE notes, the sdist's file list (MANIFEST.in), and the pinned versions
(requirements-lock.txt, constraints-min.txt) against pyproject.toml's ranges."""

from __future__ import annotations

import email
import email.message
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from compiler.diagnostics import HOMEPAGE

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
NAME_VERSION = f"{PROJECT['name']}-{PROJECT['version']}"
# Build and cache output that is never part of a distribution (a fresh clone has none of it).
_NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                     ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis",
                                     ".gpupolicy-cache", ".out.*")


@dataclass(frozen=True)
class Dists:
    wheel: zipfile.ZipFile
    sdist: tarfile.TarFile

    def wheel_names(self) -> set[str]:
        return set(self.wheel.namelist())

    def sdist_names(self) -> set[str]:
        """Members of the sdist below its top folder (``gpupolicy-0.1.0/``), files only."""
        prefix = f"{NAME_VERSION}/"
        return {m.name.removeprefix(prefix) for m in self.sdist.getmembers() if m.isfile()}

    def metadata(self) -> email.message.Message:
        return email.message_from_bytes(self.wheel.read(f"{NAME_VERSION}.dist-info/METADATA"))


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dists]:
    pytest.importorskip("setuptools", minversion="77", reason="the [test] extra installs setuptools>=77")
    src = tmp_path_factory.mktemp("src") / "gpupolicy"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCE)  # setuptools writes build/ and egg-info beside the source
    out = src / "dist"
    for hook in ("build_sdist", "build_wheel"):  # one process each: build_meta keeps state between calls
        build = f"from setuptools import build_meta; import sys; build_meta.{hook}(sys.argv[1])"
        proc = subprocess.run([sys.executable, "-c", build, str(out)], cwd=src, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel_path,), (sdist_path,) = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    with zipfile.ZipFile(wheel_path) as wheel, tarfile.open(sdist_path) as sdist:
        yield Dists(wheel, sdist)


def _package_files() -> set[str]:
    """Every file of the ``compiler`` package in this tree (code and data), as a wheel names it."""
    root = REPO / "compiler"
    return {f"compiler/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_licence_metadata_is_pep_639(dists: Dists) -> None:
    meta = dists.metadata()
    assert meta["Name"] == PROJECT["name"] and meta["Version"] == PROJECT["version"]
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE", "NOTICE"]
    # PEP 639: a licence expression replaces the free-text field and the licence classifiers
    assert meta["License"] is None
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    licence = dists.wheel.read(f"{NAME_VERSION}.dist-info/licenses/LICENSE").decode()
    assert licence == (REPO / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence and "APPENDIX: How to apply the Apache License" in licence
    notice = dists.wheel.read(f"{NAME_VERSION}.dist-info/licenses/NOTICE").decode()
    for folder in sorted(p.name for p in (REPO / "compiler" / "verify" / "crds").iterdir() if p.is_dir()):
        assert f"  {folder}/" in notice, f"NOTICE does not name the third-party folder crds/{folder}"


def test_classifiers_urls_and_entry_point(dists: Dists) -> None:
    meta = dists.metadata()
    classifiers = set(meta.get_all("Classifier") or [])
    assert {"Programming Language :: Python :: 3.11", "Typing :: Typed"} <= classifiers
    assert meta["Requires-Python"] == ">=3.11"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert urls["Homepage"] == HOMEPAGE and urls["Issues"] == f"{HOMEPAGE}/issues"
    assert all(u.startswith(HOMEPAGE) for u in urls.values())
    entry_points = dists.wheel.read(f"{NAME_VERSION}.dist-info/entry_points.txt").decode()
    assert "gpupolicy = compiler.cli.main:entrypoint" in entry_points


def test_wheel_is_the_package_with_its_crds_and_source_notes(dists: Dists) -> None:
    names = dists.wheel_names()
    package = {n for n in names if not n.startswith(f"{NAME_VERSION}.dist-info/")}
    assert package == _package_files()
    crds = {n for n in package if n.startswith("compiler/verify/crds/")}
    folders = {n.split("/")[3] for n in crds if n.count("/") > 3}
    assert len(folders) >= 10, folders
    for folder in folders:  # every pinned component ships its CRDs and where they came from
        assert f"compiler/verify/crds/{folder}/SOURCE.txt" in crds
        assert any(n.startswith(f"compiler/verify/crds/{folder}/") and n.endswith(".yaml") for n in crds)
    assert "compiler/py.typed" in package


def test_sdist_holds_the_package_and_no_tests(dists: Dists) -> None:
    names = dists.sdist_names()
    for top in ("LICENSE", "NOTICE", "README.md", "pyproject.toml", "MANIFEST.in", "PKG-INFO",
                "requirements-lock.txt", "constraints-min.txt"):
        assert top in names, top
    assert {n for n in names if n.startswith("compiler/")} == _package_files()
    # tests need the repository around them (policies/, out/, golden files): none or all, and it is none
    assert not [n for n in names if n.startswith(("tests/", "bench/", "docs/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    pkg_info = dists.sdist.extractfile(f"{NAME_VERSION}/PKG-INFO")
    assert pkg_info is not None and b"License-Expression: Apache-2.0" in pkg_info.read()


def _pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a pip constraints file (comments and blank lines skipped)."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        text = line.split(" #", 1)[0].strip()
        if text and not text.startswith("#"):
            req = Requirement(text)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{path.name}: {text} is not an exact pin"
            pins[canonicalize_name(req.name)] = spec.version
    return pins


def _declared() -> list[Requirement]:
    return [Requirement(r) for r in [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["test"]]]


def test_the_lock_pins_every_declared_dependency_inside_its_range() -> None:
    lock = _pins(REPO / "requirements-lock.txt")
    for req in _declared():
        name = canonicalize_name(req.name)
        assert name in lock, f"requirements-lock.txt does not pin {req.name}"
        assert req.specifier.contains(lock[name]), f"the lock's {req.name}=={lock[name]} is outside {req}"


def test_the_minimum_constraints_are_the_declared_floors() -> None:
    floors = _pins(REPO / "constraints-min.txt")
    runtime = [Requirement(r) for r in PROJECT["dependencies"]]
    assert set(floors) == {canonicalize_name(r.name) for r in runtime}
    for req in runtime:
        lower = [s for s in req.specifier if s.operator == ">="]
        assert len(lower) == 1, f"{req} declares no single floor"
        assert Version(floors[canonicalize_name(req.name)]) == Version(lower[0].version), req
