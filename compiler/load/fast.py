"""Compose ordinary policy files with libyaml, ~20x faster than ruamel's pure-Python parser.

``compiler.load.source`` composes each file into a node graph and converts it itself. ruamel (YAML
1.2) costs ~4.5 ms per team file, which for 1,000 teams is most of a build; libyaml's composer
(PyYAML's ``CSafeLoader``) gives the same nodes with the same marks in ~0.2 ms. Two things
differ, and both are handled so the result is exactly ruamel's:

* libyaml resolves plain scalars by YAML 1.1 (``yes`` is a bool, ``0o17`` a string); here each
  plain scalar's tag is re-resolved with ruamel's own 1.2 resolver, as ruamel's composer does.
* An empty plain value (``key:``) is marked at a different place; such files go to ruamel.
* An explicit tag cannot be told from a resolved one after composing, and anchors, merge keys,
  directives, tabs, several documents or a parse error need ruamel's exact diagnostics. Such
  files (a ``!``, ``&``, ``*``, ``<<``, ``%``, a tab, a document marker, a YAML 1.1-only line
  break anywhere in the text)
  are not composed here: ``compose`` returns None and the caller uses ruamel.

tests/test_load_fast.py compares nodes, tags and marks of both parsers on every policy file
in the repository and on generated organisations.
"""

from __future__ import annotations

from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode as RuamelScalar

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML without libyaml: always use ruamel
    _Loader = None

_RESOLVER = YAML(typ="safe", pure=True).resolver
_TAGS: dict[str, str] = {}
# ... and NEL/LS/PS, line breaks to YAML 1.1 (libyaml) but not to 1.2 (ruamel): lines would differ.
_RUAMEL_ONLY = ("!", "&", "*", "<<", "%", "\t", "---", "...", "\x85", "\u2028", "\u2029", "\ufeff")


def _tag(value: str) -> str:
    tag = _TAGS.get(value)
    if tag is None:
        resolved = _RESOLVER.resolve(RuamelScalar, value, (True, False))
        tag = str(getattr(resolved, "value", resolved))
        if len(_TAGS) < 100_000:
            _TAGS[value] = tag
    return tag


def _retag(node: Any) -> bool:
    """Plain scalars get the tag ruamel (YAML 1.2) would give them. False for an empty plain
    scalar (``key:`` with no value): ruamel marks it at the next token, libyaml after the colon."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.ScalarNode):
            if n.style == "" or n.style is None:
                if not n.value:
                    return False
                n.tag = _tag(n.value)
        elif isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                stack.append(k)
                stack.append(v)
        else:
            stack.extend(n.value)
    return True


def compose(text: str) -> Any | None:
    """The single document's root node, or None when ruamel must handle the file."""
    if _Loader is None or not text.strip() or any(s in text for s in _RUAMEL_ONLY):
        return None
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    if node is None or not _retag(node):
        return None
    return node
