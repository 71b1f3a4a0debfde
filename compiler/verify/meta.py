"""ObjectMeta as the API server validates it (apimachinery ValidateObjectMeta): name format per
kind, namespace only on namespaced kinds, label and annotation syntax, known fields only.
The bundled JSON schemas check metadata's *shape* for built-in kinds but none of its syntax.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import compiler.verify.rules as R
from compiler.verify.context import ObjectContext

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TOTAL_ANNOTATION_BYTES = 256 * 1024

OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})

# Built-in kinds whose names are not DNS-1123 subdomains (the default).
_NAME_RULES: dict[str, str] = {
    "Namespace": "label", "Service": "1035",
    "Role": "segment", "ClusterRole": "segment", "RoleBinding": "segment", "ClusterRoleBinding": "segment",
}

# Cluster-scoped built-in kinds (custom resources take their scope from the CRD).
BUILTIN_CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass",
    "CSIDriver", "CSINode", "VolumeAttachment", "PriorityClass", "RuntimeClass", "IngressClass",
    "DeviceClass", "ResourceSlice", "DeviceTaintRule", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "CustomResourceDefinition",
    "APIService", "CertificateSigningRequest", "ClusterTrustBundle", "FlowSchema",
    "PriorityLevelConfiguration", "ComponentStatus", "IPAddress", "ServiceCIDR",
    "StorageVersionMigration", "VolumeAttributesClass",
})


@functools.lru_cache(maxsize=8192)
def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label/annotation key (``prefix/name``), or None."""
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"prefix {prefix!r} must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return "name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None


def label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"label values must be strings, not {type(value).__name__}"
    return _label_string_problem(value)


@functools.lru_cache(maxsize=8192)
def _label_string_problem(value: str) -> str | None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return "must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None


def name_problem(name: str, rule: str) -> str | None:
    if rule == "segment":
        bad = name in (".", "..") or "/" in name or "%" in name
        return "may not be '.' or '..' or contain '/' or '%'" if bad else None
    pattern, limit, what = {
        "label": (DNS1123_LABEL, 63, "a DNS-1123 label"),
        "1035": (DNS1035_LABEL, 63, "a DNS-1035 label"),
    }.get(rule, (DNS1123_SUBDOMAIN, 253, "a DNS-1123 subdomain"))
    if len(name) > limit or not pattern.match(name):
        return f"must be {what} (lower-case alphanumerics and '-', at most {limit} characters)"
    return None


def verify_metadata(obj: dict[str, Any], ctx: ObjectContext, *, cluster_scoped: bool, custom: bool) -> None:
    """Report metadata problems; ``custom`` objects also get the unknown-field check."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        ctx.report(R.NOT_AN_OBJECT, "metadata", "metadata must be a mapping with a name")
        return
    kind = str(obj.get("kind", ""))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        ctx.report(R.BAD_METADATA, ["metadata", "name"], "name is required", hint="set metadata.name")
    else:
        problem = name_problem(name, "subdomain" if custom else _NAME_RULES.get(kind, "subdomain"))
        if problem:
            ctx.report(R.BAD_METADATA, ["metadata", "name"], f"Invalid value {name!r}: {problem}")
    namespace = meta.get("namespace")
    if namespace is not None:
        if cluster_scoped:
            ctx.report(R.BAD_METADATA, ["metadata", "namespace"],
                       f"{kind} is cluster-scoped; metadata.namespace must not be set")
        elif not isinstance(namespace, str) or name_problem(namespace, "label"):
            ctx.report(R.BAD_METADATA, ["metadata", "namespace"],
                       f"Invalid value {namespace!r}: must be a DNS-1123 label")
    if custom:
        for key in meta:
            if key not in OBJECT_META_FIELDS:
                ctx.report(R.UNKNOWN_FIELD, ["metadata", key], f"unknown field {key!r} in ObjectMeta")
    _check_map(meta, "labels", ctx, values_are_labels=True)
    _check_map(meta, "annotations", ctx, values_are_labels=False)


def _check_map(meta: dict[str, Any], field: str, ctx: ObjectContext, *, values_are_labels: bool) -> None:
    mapping = meta.get(field)
    if mapping is None:
        return
    if not isinstance(mapping, dict):
        ctx.report(R.BAD_METADATA, ["metadata", field], f"{field} must be a map of strings")
        return
    size = 0
    for key, value in mapping.items():
        path = ["metadata", field, str(key)]
        problem = qualified_name_problem(str(key) if values_are_labels else str(key).lower())
        if problem:
            ctx.report(R.BAD_METADATA, path, f"Invalid key {key!r}: {problem}")
        if values_are_labels:
            problem = label_value_problem(value)
            if problem:
                ctx.report(R.BAD_METADATA, path, f"Invalid value {value!r}: {problem}")
        elif not isinstance(value, str):
            ctx.report(R.BAD_METADATA, path, f"annotation values must be strings, not {type(value).__name__}")
        else:
            size += len(str(key)) + len(value.encode())
    if size > _TOTAL_ANNOTATION_BYTES:
        ctx.report(R.BAD_METADATA, ["metadata", field], f"annotations total {size} bytes, more than 256 KiB")
