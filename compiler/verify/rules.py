"""Rule IDs of the verify stage: what the API server (or an admission webhook) would reject."""

from __future__ import annotations

from compiler.diagnostics import Rule, Scope, Severity, define

UNKNOWN_FIELD = define(
    "VERIFY001",
    "A field the schema does not declare (the API server's strict field validation rejects it).",
    "kind: ClusterQueue\nspec:\n  cohortName: research",
    "kind: ClusterQueue\nspec:\n  cohort_name: research   # not a field of v1beta2",
    scope=Scope.OUTPUT,
)
INVALID_VALUE = define(
    "VERIFY002",
    "A value of the wrong type or outside the schema's enum, pattern, length or range.",
    "spec:\n  replicas: 2",
    'spec:\n  replicas: "two"',
    scope=Scope.OUTPUT,
)
MISSING_REQUIRED = define(
    "VERIFY003",
    "A field the schema requires is missing.",
    "spec:\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors: [...]",
    "spec:\n  resourceGroups:\n  - flavors: [...]   # coveredResources is required",
    scope=Scope.OUTPUT,
)
CEL_RULE = define(
    "VERIFY004",
    "An x-kubernetes-validations CEL rule of the CRD evaluates to false.",
    "kind: ClusterQueue\nspec:\n  cohortName: research\n  resourceGroups: [... borrowingLimit: 2 ...]",
    "kind: ClusterQueue\nspec:   # no cohortName\n  resourceGroups: [... borrowingLimit: 2 ...]",
    scope=Scope.OUTPUT,
)
CEL_ERROR = define(
    "VERIFY005",
    "An x-kubernetes-validations CEL rule fails with a runtime error on this object.",
    "rule: self.a.b > 0   with   a: {b: 1}",
    "rule: self.a.b > 0   with   a: {}   # no such key: b",
    scope=Scope.OUTPUT,
)
CEL_UNSUPPORTED = define(
    "VERIFY006",
    "A CRD's CEL rule uses something the compiler's CEL engine cannot compile; it was not checked.",
    "rule: self.size() <= 8",
    "rule: authorizer.group('').resource('x').check('get').allowed()",
    Severity.WARNING,
    scope=Scope.OUTPUT,
)
DUPLICATE_ITEM = define(
    "VERIFY007",
    "Two items of an x-kubernetes-list-type map share their keys, or a set has a duplicate.",
    "flavors:\n- name: h100\n- name: a100",
    "flavors:\n- name: h100\n- name: h100",
    scope=Scope.OUTPUT,
)
NO_SCHEMA = define(
    "VERIFY008",
    "A built-in API group has no schema for this apiVersion/kind at the cluster's Kubernetes version.",
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass   # cluster at 1.34",
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass   # cluster at 1.33: only v1beta1/v1beta2",
    scope=Scope.OUTPUT,
)
UNKNOWN_KIND = define(
    "VERIFY009",
    "No CRD in the CRD directory defines this kind (warning; an error under --strict).",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue   # CRD present in --crds",
    "apiVersion: example.com/v1\nkind: Widget   # no CRD for it",
    Severity.WARNING,
    scope=Scope.OUTPUT,
)
VERSION_NOT_SERVED = define(
    "VERIFY010",
    "The CRD exists but does not serve the object's apiVersion.",
    "apiVersion: kueue.x-k8s.io/v1beta2",
    "apiVersion: kueue.x-k8s.io/v1alpha1   # not served by the Kueue CRDs",
    scope=Scope.OUTPUT,
)
BAD_METADATA = define(
    "VERIFY011",
    "metadata the API server rejects: missing or malformed name, namespace, labels or annotations.",
    "metadata:\n  name: team-a\n  labels: {gpupolicy.dev/team: team-a}",
    "metadata:\n  name: Team_A   # not a DNS-1123 subdomain",
    scope=Scope.OUTPUT,
)
NO_KUBE_VERSION = define(
    "VERIFY012",
    "The object's cluster has no Kubernetes version, so its built-in kinds cannot be checked.",
    "kube_versions: {onprem: '1.34'}   # object for cluster onprem",
    "kube_versions: {onprem: '1.34'}   # object for cluster cloud",
    scope=Scope.OUTPUT,
)
NEAREST_SCHEMAS = define(
    "VERIFY013",
    "No bundled schemas for the cluster's exact Kubernetes version; the nearest bundled ones were used.",
    "cluster at 1.34 (schemas for 1.34 bundled)",
    "cluster at 1.38 (newest bundled: 1.37)",
    Severity.INFO,
    scope=Scope.OUTPUT,
)
CRD_UNUSABLE = define(
    "VERIFY014",
    "The CRD for a kind could not be read or has no schema for the served version.",
    "a CustomResourceDefinition with spec.versions[].schema.openAPIV3Schema",
    "a CRD file that no longer parses as YAML",
    scope=Scope.OUTPUT,
)
NOT_AN_OBJECT = define(
    "VERIFY015",
    "An emitted manifest is not a Kubernetes object (no apiVersion, kind or metadata mapping).",
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}",
    "kind: Namespace   # apiVersion missing",
    scope=Scope.OUTPUT,
)


RULES: tuple[Rule, ...] = (
    UNKNOWN_FIELD, INVALID_VALUE, MISSING_REQUIRED, CEL_RULE, CEL_ERROR, CEL_UNSUPPORTED, DUPLICATE_ITEM,
    NO_SCHEMA, UNKNOWN_KIND, VERSION_NOT_SERVED, BAD_METADATA, NO_KUBE_VERSION, NEAREST_SCHEMAS,
    CRD_UNUSABLE, NOT_AN_OBJECT,
)
