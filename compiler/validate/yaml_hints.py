"""Hints for schema errors that YAML itself caused (docs/misconfigurations.md, family "yaml"): the
value the author wrote is not the value the parser produced. Every SCHEMA002 gets a hint: these
specific ones first, else what the field takes.

- ``kubernetesVersion: 1.30`` is the float 1.3 (aws/eks-anywhere#9175, elastic/crd-ref-docs#88);
- ``key:`` with nothing after it is null;
- ``yes``/``no``/``on``/``off`` are strings under YAML 1.2 (booleans only in YAML 1.1);
- ``"8"`` is a string, ``8`` a number; ``true`` is not 1.
"""

from __future__ import annotations

from typing import Any

from compiler.load.source import SourceFile, YamlPath

_YAML11_BOOLS = frozenset({"yes", "no", "on", "off", "y", "n"})


def _written(src: SourceFile, path: YamlPath) -> str | None:
    """The token as written on the value's line (after the key's colon), if it is a plain scalar."""
    loc = src.locate(path)
    lines = src.text.splitlines()
    if not 0 < loc.line <= len(lines):
        return None
    text = lines[loc.line - 1][max(loc.col - 1, 0):]
    token = text.split("#", 1)[0].strip().rstrip(",]}")
    return token or None


def yaml_hint(src: SourceFile, path: YamlPath, value: Any, etype: str) -> str | None:
    """A hint when YAML turned what was written into another type; None otherwise."""
    if isinstance(value, float) and etype.startswith("string"):
        written = _written(src, path) or repr(value)
        return (f"YAML reads an unquoted {written} as a number ({value!r}); quote it to keep it text: "
                f"\"{written}\"")
    if value is None:
        return "the value is blank, which YAML reads as null; write a value, or remove the key to use the default"
    if isinstance(value, str) and value.lower() in _YAML11_BOOLS and etype.startswith("bool"):
        return f"{value!r} is text in YAML 1.2 (only YAML 1.1 read it as a boolean); write true or false"
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and etype.startswith(("int", "float")):
        return f"the quotes make {value!r} text; write the number without quotes: {value.strip()}"
    if isinstance(value, bool) and etype.startswith(("int", "float")):
        return "true/false is not a number; write the amount (0 for none)"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and etype.startswith("string"):
        return f"YAML reads {value!r} as a number; quote it to make it text: \"{value}\""
    return None


def generic_hint(etype: str) -> str:
    """What the field takes, for errors no specific hint explains."""
    if etype.startswith("list"):
        return "write a list: [a, b] or one '- item' per line"
    if etype.startswith(("dict", "model")):
        return "write a mapping: key: value lines indented under this key"
    return "see the field in schemas/fleet.schema.json or schemas/team.schema.json (`gpupolicy schema`)"
