"""Acknowledged removals: changes a sync cannot undo, accepted on purpose in the policy itself
(GITOPS302, ``compiler.validate.sync_safety``). Listed in REPORT.md as the record of who accepted
what and why."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from compiler.model.common import DnsLabel, DnsSubdomain, Strict

RemovableKind = Literal["ClusterQueue", "ResourceFlavor"]


class AcknowledgedRemoval(Strict):
    """An object this change removes from a cluster, on purpose: a ClusterQueue (a team's budget on a
    cluster dropped, or the team renamed or deleted) or a ResourceFlavor (a GPU class gone)."""

    cluster: DnsLabel
    kind: RemovableKind
    name: DnsSubdomain
    reason: Annotated[str, Field(min_length=3, max_length=512)]
