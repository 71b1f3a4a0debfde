"""``compiler.model.once``: computed at the first read, then read from the instance."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model.manifest import Manifest
from compiler.model.once import once


@dataclass(frozen=True)
class Thing:
    x: int

    @once
    def double(self) -> int:
        """Twice x."""
        calls.append(self.x)
        return 2 * self.x


calls: list[int] = []


def test_computed_once_per_instance_on_a_frozen_dataclass() -> None:
    calls.clear()
    a, b = Thing(1), Thing(2)
    assert [a.double, a.double, b.double, a.double] == [2, 2, 4, 2]
    assert calls == [1, 2] and a.__dict__["double"] == 2
    assert isinstance(Thing.double, once) and Thing.double.__doc__ == "Twice x."


def test_manifest_identity() -> None:
    m = Manifest("c", "kueue", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "namespace": "ns"}})
    assert (m.kind, m.name, m.namespace, m.relpath) == ("ConfigMap", "n", "ns", "c/kueue/configmap.ns.n.yaml")
    assert m.relpath is m.__dict__["relpath"]
