"""Shared building blocks of the policy language: strict models, names, amounts."""

from __future__ import annotations

import re
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

API_VERSION = "gpupolicy.dev/v1alpha1"

# Each name's rule is one regular expression, read by the validator (``fullmatch``: a trailing
# newline is not a name) and written into the JSON Schema as its ``pattern`` (issue 19: the editor
# and the compiler give one verdict; tests/test_schema_parity.py). Lengths are ``maxLength`` there.
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# DNS-1123 label: what namespaces, pools, teams and clusters are named; also safe in paths.
DNS_LABEL = f"^{_LABEL}$"
# DNS-1123 subdomain: GPU class IDs contain MIG profiles such as `3g.40gb`.
DNS_SUBDOMAIN = rf"^{_LABEL}(\.{_LABEL})*$"
# A label key: an optional DNS-subdomain prefix of at most 253 characters and '/', then a name of at
# most 63 (the lookahead bounds the prefix, which a length limit on the whole key cannot).
_KEY_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = rf"^((?=[^/]{{1,253}}/){_LABEL}(\.{_LABEL})*/)?{_KEY_NAME}$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"


def _schema(pattern: str, max_length: int) -> WithJsonSchema:
    """The JSON Schema of a name type: the rule its validator checks, as ``pattern`` and ``maxLength``."""
    return WithJsonSchema({"type": "string", "pattern": pattern, "maxLength": max_length})


def _matches(pattern: str, max_length: int) -> Callable[[str], bool]:
    """The rule as a test, remembering the names it passed (a policy repeats its cluster, class
    and department names in every team file: 200,000 names at 5,000 teams, half of pydantic's own
    time there), up to a bound."""
    rx = re.compile(pattern)
    passed: set[str] = set()

    def test(v: str) -> bool:
        if v in passed:
            return True
        if len(v) <= max_length and rx.fullmatch(v) is not None:
            if len(passed) < 1 << 16:
                passed.add(v)
            return True
        return False

    return test


_is_subdomain = _matches(DNS_SUBDOMAIN, 253)
_is_key, _is_value = _matches(LABEL_KEY, 317), _matches(LABEL_VALUE, 63)


def label_message(v: object) -> str:
    """Why ``v`` is not a DNS-1123 label (``DnsLabel``)."""
    return (f"{v!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
            "starting and ending alphanumeric, at most 63 characters)")


# DNS_LABEL and its length in one pattern pydantic-core checks itself (its regex crate, anchored
# as ``fullmatch`` is: ``$`` is the end of the text): a Python validator was called for each of
# the ~150,000 labels of 5,000 team files, ~0.1 s before anything else could start. One pattern
# for both bounds, so that one error type (``string_pattern_mismatch`` with this pattern,
# ``name_error``) says a value is not a label, with ``label_message``.
DNS_LABEL_BOUNDED = r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$"


def name_error(etype: str, ctx: dict[str, Any] | None, value: object) -> str | None:
    """The message of a name type's error that pydantic-core raised itself (``DnsLabel``)."""
    if etype == "string_pattern_mismatch" and ctx is not None and ctx.get("pattern") == DNS_LABEL_BOUNDED:
        return label_message(value)
    return None


def _dns_subdomain(v: str) -> str:
    if not _is_subdomain(v):
        raise ValueError(f"{v!r} is not a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.')")
    return v


def _label_key(v: str) -> str:
    if not _is_key(v):
        raise ValueError(f"{v!r} is not a valid Kubernetes label key ([prefix/]name)")
    return v


def _label_value(v: str) -> str:
    if not _is_value(v):
        raise ValueError(f"{v!r} is not a valid Kubernetes label value (at most 63 characters)")
    return v


# The validator's message says what the name must be; the JSON Schema states the same rule.
DnsLabel = Annotated[str, Field(pattern=DNS_LABEL_BOUNDED), _schema(DNS_LABEL, 63)]
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain), _schema(DNS_SUBDOMAIN, 253)]
LabelKey = Annotated[str, AfterValidator(_label_key), _schema(LABEL_KEY, 317)]  # 253 + '/' + 63
LabelValue = Annotated[str, AfterValidator(_label_value), _schema(LABEL_VALUE, 63)]
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


SHADOWED_BY = "shadowedBy"  # json_schema_extra key: fields whose value, where set, wins over this one


def shadowed(default: Any, *by: str, description: str) -> Any:
    """The field's default, marked as *shadowed* where one of ``by`` is set (``Kind:path`` in YAML
    keys, ``[]`` into lists): its value is in force only where none of them is (a fleet default
    that every budget overrides, a tier marked default beside ``defaults.priority``). The JSON
    Schema shows the relation; ``tests/test_field_effects.py`` looks for the field's effect with
    those unset where it finds none as the file stands."""
    return Field(default, description=description, json_schema_extra={SHADOWED_BY: list(by)})


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
