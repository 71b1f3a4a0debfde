"""Plain-data records for ``compiler.cache.incremental``: what the cache stores for diagnostics and
verify statistics (``marshal``-able: tuples, dicts, str, int)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from compiler.diagnostics import Diagnostic, Location, Severity

def diag_out(d: Diagnostic) -> tuple[Any, ...]:
    loc = None if d.location is None else (d.location.file, d.location.line, d.location.col)
    return (d.code, d.message, loc, d.severity.value, d.hint, d.path, d.extra)


def diag_in(t: Any) -> Diagnostic:
    code, message, loc, sev, hint, path, extra = t
    return Diagnostic(code, message, None if loc is None else Location(*loc), Severity(sev), hint, path,
                      tuple(tuple(x) for x in extra))


def stats_out(stats: Any) -> tuple[Any, ...]:
    return (dict(stats.objects), stats.cel_rules_evaluated, stats.transition_rules_skipped,
            stats.cel_rules_unsupported, stats.cel_skipped_invalid_objects, stats.webhook_checks,
            stats.embedded_expressions)


def stats_sum(parts: Iterable[tuple[Any, ...]]) -> dict[str, object]:
    from compiler.verify import VerifyStats

    total = VerifyStats()
    for objects, *ints in parts:
        total.objects.update(Counter(objects))
        total.cel_rules_evaluated += ints[0]
        total.transition_rules_skipped += ints[1]
        total.cel_rules_unsupported += ints[2]
        total.cel_skipped_invalid_objects += ints[3]
        total.webhook_checks += ints[4]
        total.embedded_expressions += ints[5]
    return total.as_dict()


def failed_record(diags: list[Diagnostic], stats: dict[str, object]) -> dict[str, Any]:
    return {"diags": [diag_out(d) for d in diags], "failed": True, "units": [], "inline": {}, "glob": "",
            "repo": {}, "n": 0, "stats": stats}
