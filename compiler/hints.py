"""'Did you mean' suggestions, shared by every diagnostic that names an unknown thing."""

from __future__ import annotations

import difflib
from typing import Iterable


def closest(value: str, options: Iterable[str]) -> str | None:
    """The option most like ``value`` (difflib ratio >= 0.6), or None."""
    found = difflib.get_close_matches(value, list(options), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(value: str, options: Iterable[str]) -> str | None:
    match = closest(value, options)
    return None if match is None else f"did you mean {match!r}?"
