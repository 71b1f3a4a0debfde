"""Hints for schema errors that YAML itself caused (docs/misconfigurations.md, family "yaml"): the
value the author wrote is not the value the parser produced. Every SCHEMA002 gets a hint: these
specific ones first, else what the field takes.

- ``kubernetesVersion: 1.30`` is the float 1.3 (aws/eks-anywhere#9175, elastic/crd-ref-docs#88);
- ``key:`` with nothing after it is null;
- ``yes``/``no``/``on``/``off`` are strings under YAML 1.2 (booleans only in YAML 1.1);
- ``0b1000``, ``1_000``, ``1:30``, ``+0x1F`` are strings under YAML 1.2 (numbers only in YAML 1.1,
  or to a lenient parser), and ``010`` is 10 to YAML 1.2 but octal 8 to YAML 1.1 (the loader keeps
  it text: ``compiler.load.source``);
- ``"8"`` is a string, ``8`` a number; ``true`` is not 1.
"""

from __future__ import annotations

import re
from typing import Any

from compiler.load.source import SourceFile, YamlPath

_YAML11_BOOLS = frozenset({"yes", "no", "on", "off", "y", "n"})
_LEADING_ZERO = re.compile(r"[-+]?0[0-9]+")
_DIGITS = re.compile(r"\s*[-+]?[0-9]+\s*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # YAML 1.2's, as the loader's positions count lines (not str.splitlines')
# YAML 1.1's number forms (yaml.org/type/int, yaml.org/type/float) and ruamel's signed or
# separated hex and octal, which YAML 1.2's core schema reads as text.
_YAML11_INT = re.compile(r"[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0o[0-7_]+|[0-9][0-9_]*)")
_YAML11_SEXAGESIMAL = re.compile(r"[-+]?(?:[1-9][0-9_]*(?::[0-5]?[0-9])+|[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*)")
_YAML11_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+")


def yaml11_number(text: str) -> int | float | None:
    """The number YAML 1.1 (or a lenient YAML 1.2 parser) reads in a plain scalar that YAML 1.2
    reads as text: ``0b1000`` 8, ``1_6`` 16, ``1:30`` 90 (base 60), ``+0x1F`` 31, ``1_0.5`` 10.5;
    None for anything else."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").replace("_", "")
    try:
        if _YAML11_SEXAGESIMAL.fullmatch(text):
            total: float = 0
            for part in body.split(":"):
                total = total * 60 + float(part)
            return sign * (total if "." in body else int(total))
        if _YAML11_INT.fullmatch(text) and any(c.isdigit() for c in body):
            if body[:2] in ("0b", "0o", "0x"):
                return sign * int(body, 0)
            return sign * int(body, 8 if body[:1] == "0" and len(body) > 1 else 10)  # 010: YAML 1.1's octal
        if _YAML11_FLOAT.fullmatch(text) and any(c.isdigit() for c in body):
            return sign * float(body)
    except ValueError:
        return None
    return None


def _number_hint(src: SourceFile, path: YamlPath, value: str, etype: str) -> str | None:
    """The hint for text where a number is meant that YAML 1.1 would have read as one."""
    written = _written(src, path) or ""
    if written.startswith(("'", '"')):
        return None  # quoted: the author wrote text on purpose (the next hint says to drop the quotes)
    if _LEADING_ZERO.fullmatch(value):
        decimal = int(value)
        if not set(value.lstrip("+-")) <= set("01234567"):
            return f"YAML 1.2 reads {value} as {decimal} but YAML 1.1 as text; write {decimal} without the leading zero"
        if int(value, 8) == decimal:
            return f"write {decimal} without the leading zero (to YAML 1.1 a leading zero means octal)"
        return (f"a leading zero makes {value} ambiguous: YAML 1.2 reads it as {decimal}, YAML 1.1 as octal "
                f"{int(value, 8)}; write {decimal} without the leading zero")
    number = yaml11_number(value)
    if number is None:
        return None
    meant = int(number) if etype.startswith("int") and isinstance(number, float) and number.is_integer() else number
    return f"YAML 1.2 reads {value} as text, not a number (only YAML 1.1 reads it as {number}); write {meant}"


def _written(src: SourceFile, path: YamlPath) -> str | None:
    """The token as written on the value's line (after the key's colon), if it is a plain scalar."""
    loc = src.locate(path)
    lines = _LINE_BREAK.split(src.text)
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
    if isinstance(value, str) and etype.startswith(("int", "float")):
        unquoted = _number_hint(src, path, value, etype)
        if unquoted is not None:
            return unquoted
    if isinstance(value, str) and _DIGITS.fullmatch(value) and etype.startswith(("int", "float")):
        return f"the quotes make {value!r} text; write the number without quotes: {int(value.strip())}"
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
