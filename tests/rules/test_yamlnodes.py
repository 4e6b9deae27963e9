"""Rules files composed by libyaml give the nodes the Python loader gives; errors keep its messages."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pdwatch.rules import yamlnodes
from tests.conftest import REPO

RULE_FILES = sorted((REPO / "rules" / "builtin").glob("*.yaml")) + sorted((REPO / "tests").rglob("*rules*.yaml"))
# Every YAML the tests hold, broken ones included.
ANY_YAML = sorted(p for p in (REPO / "tests").rglob("*.yaml") if "data" not in p.parts) + RULE_FILES


def _tree(node: yaml.Node) -> tuple:
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.value, node.style or None, node.start_mark.line)  # plain: "" in C, None in Python
    children = [(_tree(k), _tree(v)) for k, v in node.value] if isinstance(node, yaml.MappingNode) \
        else [_tree(v) for v in node.value]
    return (type(node).__name__, node.tag, node.start_mark.line, children)


def _python_compose(text: str) -> yaml.Node | None:
    loader = yaml.SafeLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")
@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_libyaml_nodes_are_the_python_loaders(path: Path):
    text = path.read_text()
    fast = yamlnodes._compose_fast(text)
    assert fast is not yamlnodes._NOT_FAST
    assert _tree(fast) == _tree(_python_compose(text))
    assert yamlnodes.compose(text) is not None


@pytest.mark.parametrize("path", ANY_YAML, ids=lambda p: str(p.relative_to(REPO)))
def test_what_libyaml_accepts_python_accepts_alike(path: Path):
    """libyaml is never the more lenient: a file it composes, the Python loader composes the same."""
    text = path.read_text(errors="replace")
    fast = yamlnodes._compose_fast(text)
    if fast is yamlnodes._NOT_FAST:
        return
    python = _python_compose(text)
    assert (fast is None and python is None) or _tree(fast) == _tree(python)


def test_a_broken_file_keeps_the_python_loaders_message():
    text = "rules:\n  - name: a\n    when: [unclosed\n"
    assert yamlnodes._compose_fast(text) is yamlnodes._NOT_FAST
    with pytest.raises(yamlnodes.YamlProblem) as err:
        yamlnodes.compose(text)
    with pytest.raises(yaml.MarkedYAMLError) as python_err:
        _python_compose(text)
    mark = python_err.value.problem_mark or python_err.value.context_mark
    assert err.value.line == mark.line + 1
    assert err.value.message == f"YAML syntax: {python_err.value.problem or python_err.value.context}"


def test_aliases_are_still_refused():
    with pytest.raises(yamlnodes.YamlProblem, match="anchors and aliases"):
        yamlnodes.compose("a: &x [1]\nb: *x\n")
