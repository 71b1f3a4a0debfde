"""Paths as shown to people and written into generated files: relative to the repository root."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` in POSIX form. The last component is never resolved, so a
    symbolic link is shown where it is, not where it points (an absolute target would leak into
    headers, reports and CODEOWNERS). A path outside ``root`` is shown as given."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        pass
    try:
        return (path.parent.resolve() / path.name).relative_to(root.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):
        return path.as_posix()
