"""Verify stage (SPEC §3 item 4): prove every emitted object against upstream schemas.

    registry = CrdRegistry.load(Path("../shared/crds"))
    result = verify(manifests, kube_versions={"onprem": "1.34"}, crds=registry, strict=False)
    result.diagnostics   # list[Diagnostic]: VERIFY001-016, Kueue webhook VERIFY020-030
    result.stats         # VerifyStats (.as_dict()): objects per (apiVersion, kind), CEL rules run/skipped

Rule definitions live in ``compiler.verify.rules``, ``.embedded_cel``, ``.kueue_webhook``,
``.kueue_config``, ``.dra_claims`` and ``.run``, each listed in its ``RULES``; ``compiler.rules``
collects them.
"""

from __future__ import annotations

from compiler.verify.context import VerifyStats, format_path
from compiler.verify.registry import CrdEntry, CrdLoadError, CrdRegistry
from compiler.verify.stage import VerifyResult, verify

__all__ = [
    "CrdEntry", "CrdLoadError", "CrdRegistry", "VerifyResult", "VerifyStats", "format_path", "verify",
]
