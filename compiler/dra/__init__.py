"""DRA for NVIDIA GPUs: the device inventory each DRA cluster publishes, the DeviceClass selectors
gpupolicy writes, their proof against that inventory, and the Kueue accounting path per cluster.

The DeviceClasses and mappings derived from a policy are ``compiler.policy.dra_classes``; lowering
is ``compiler.lower.dra``; the per-cluster summary for REPORT.md / allocation.json is
``compiler.report.dra``; rules DRA002-DRA014 in ``compiler.validate.dra``.

The modules are imported by what uses them, not here: the proofs' CEL engine (``proof``) costs
~10 ms that a command whose fleet-scope verdict is stored never needs (``compiler.validate.dra``).
"""
