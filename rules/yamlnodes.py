"""Read YAML as nodes that remember their line, with only plain data allowed.

Rules files are composed (not constructed) with ``yaml.SafeLoader``, so every value keeps
its position for error messages. Tags other than the plain YAML types
(``!!python/object``, custom ``!tags``) are refused, as are anchors/aliases (no
billion-laughs expansion) and duplicate keys (YAML would silently keep the last).
"""

from __future__ import annotations

from typing import Any

import yaml

_PLAIN = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}


class YamlProblem(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def line_of(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def compose(text: str) -> yaml.Node | None:
    """The document's root node; YamlProblem on syntax errors and forbidden constructs."""
    try:
        loader = yaml.SafeLoader(text)  # the reader checks every character here already
    except yaml.reader.ReaderError as e:
        raise YamlProblem(text.count("\n", 0, e.position) + 1,
                          f"YAML syntax: unacceptable character #x{e.character:04x}") from None
    try:
        root = _compose_fast(text)
        if root is _NOT_FAST:  # no libyaml, or the text has a problem: its message comes from the Python loader
            root = loader.get_single_node()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise YamlProblem(mark.line + 1 if mark else None,
                          f"YAML syntax: {e.problem or e.context}") from None
    except yaml.YAMLError as e:  # e.g. a control character found while scanning
        line = text.count("\n", 0, getattr(e, "position", 0)) + 1 if hasattr(e, "position") else None
        raise YamlProblem(line, f"YAML syntax: {getattr(e, 'reason', None) or e}") from None
    finally:
        loader.dispose()
    if root is not None:
        _check(root, set())
    return root


_NOT_FAST = object()


def _compose_fast(text: str) -> yaml.Node | None | object:
    """The nodes composed by libyaml (the built-in rules take ~20 ms to compose in Python, ~1 ms
    in C, on every ``report``), or ``_NOT_FAST``. The same nodes, tags and lines as the Python
    loader's (``tests/rules/test_yamlnodes.py``); a text libyaml rejects is composed again in
    Python, whose messages the rules files' errors quote."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is None:
        return _NOT_FAST
    loader = fast(text)
    try:
        return loader.get_single_node()
    except yaml.YAMLError:
        return _NOT_FAST
    finally:
        loader.dispose()


def _check(node: yaml.Node, seen: set[int]) -> None:
    if id(node) in seen:
        raise YamlProblem(line_of(node), "YAML anchors and aliases are not allowed in rules files")
    seen.add(id(node))
    if node.tag not in _PLAIN:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        raise YamlProblem(line_of(node), f"YAML tag {tag} is not allowed: rules files hold plain data")
    if isinstance(node, yaml.MappingNode):
        keys: dict[str, int] = {}
        for k, v in node.value:
            _check(k, seen)
            if isinstance(k, yaml.ScalarNode):
                if k.value in keys:
                    raise YamlProblem(line_of(k), f"duplicate key '{k.value}' (first on line {keys[k.value]})")
                keys[k.value] = line_of(k)
            _check(v, seen)
    elif isinstance(node, yaml.SequenceNode):
        for v in node.value:
            _check(v, seen)


def scalar(node: yaml.ScalarNode) -> Any:
    """The Python value of a plain scalar (str, int, float, bool or None)."""
    # A constructor alone: a whole SafeLoader each (reader, scanner, parser) cost ~20 us.
    return yaml.constructor.SafeConstructor().construct_object(node)


def kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    v = scalar(node)  # type: ignore[arg-type]
    return {type(None): "empty", bool: "a boolean", int: "a number", float: "a number"}.get(type(v), "text")
