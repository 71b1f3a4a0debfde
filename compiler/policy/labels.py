"""The label, taint and label-prefix keys SPEC §9 fixes: what generated objects, admission policies,
node contracts and ``gpupolicy nodes`` agree on. Keys only; objects are built in ``compiler.lower``."""

from __future__ import annotations

LABEL_TEAM = "gpupolicy.dev/team"
LABEL_DEPARTMENT = "gpupolicy.dev/department"
LABEL_PURPOSE = "gpupolicy.dev/purpose"
LABEL_POOL = "gpupolicy.dev/pool"
LABEL_CLASS = "gpupolicy.dev/class"
LABEL_MODEL = "gpupolicy.dev/model"
LABEL_DATA_CLASS = "gpupolicy.dev/data-class"
LABEL_QUEUE = "kueue.x-k8s.io/queue-name"
DATA_CLASS_PREFIX = "data-class.gpupolicy.dev/"
# Training namespaces: one `priority.gpupolicy.dev/<tier>: "true"` per tier the team may use, and the
# team's default tier (compiler.policy.priorities); jobs name their tier with LABEL_PRIORITY_CLASS.
PRIORITY_PREFIX = "priority.gpupolicy.dev/"
LABEL_DEFAULT_PRIORITY = "gpupolicy.dev/priority"
LABEL_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"
SERVING_TAINT_KEY = "gpupolicy.dev/serving"
SERVING_NODE_LABEL = "node-restriction.kubernetes.io/gpupolicy-serving"
# Read by the GPU Operator's device plugin / MIG Manager; written by gpupolicy's node contract.
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
