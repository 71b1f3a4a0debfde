"""Paths as shown to people and written into generated files: relative to the repository root."""

from __future__ import annotations

from pathlib import Path


def display_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` in POSIX form, or as given when it lies outside."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
