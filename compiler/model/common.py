"""Shared building blocks of the policy language: strict models, names, amounts."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

API_VERSION = "gpupolicy.dev/v1alpha1"

# DNS-1123 label: what namespaces, pools, teams and clusters are named; also safe in paths.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# DNS-1123 subdomain: GPU class IDs contain MIG profiles such as `3g.40gb`.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _dns_label(v: str) -> str:
    if len(v) > 63 or not _DNS_LABEL.match(v):
        raise ValueError(
            f"{v!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
            "starting and ending alphanumeric, at most 63 characters)"
        )
    return v


def _dns_subdomain(v: str) -> str:
    if len(v) > 253 or not _DNS_SUBDOMAIN.match(v) or ".." in v:
        raise ValueError(f"{v!r} is not a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.')")
    return v


def _label_key(v: str) -> str:
    prefix, _, name = v.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))) or not (
        0 < len(name) <= 63 and _LABEL_NAME.match(name)
    ):
        raise ValueError(f"{v!r} is not a valid Kubernetes label key ([prefix/]name)")
    return v


def _label_value(v: str) -> str:
    if len(v) > 63 or not _LABEL_VALUE.match(v):
        raise ValueError(f"{v!r} is not a valid Kubernetes label value (at most 63 characters)")
    return v


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain)]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
GpuClassId = DnsSubdomain

# unset (field absent) = inherit; 0 = none; N = up to N; "unlimited" = no limit.
Unlimited = Literal["unlimited"]
Amount = Union[Annotated[int, Field(ge=0, le=1_000_000)], Unlimited]
Count = Annotated[int, Field(ge=0, le=1_000_000)]


INFORMATIONAL = "informational"  # json_schema_extra key: the field is recorded, read by no check or rendering


def informational(reason: str, default: Any = None) -> Any:
    """The field's default, marked *informational*: the compiler records the value and shows it nowhere
    in ``out/``, the reports or the checks (``reason`` says why). The JSON Schema description and the
    README show the marker; ``tests/test_field_effects.py`` exempts exactly these fields."""
    return Field(default, description=f"Informational (no effect on output or checks): {reason}",
                 json_schema_extra={INFORMATIONAL: reason})


class Strict(BaseModel):
    """Every policy object: unknown keys rejected, camelCase keys in YAML."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=False,
        frozen=True,
        str_strip_whitespace=False,
        defer_build=True,
    )


Description = Annotated[str, Field(max_length=2048)]


class Metadata(Strict):
    name: DnsLabel
    description: Description | None = informational("free text for the people who read the file")
