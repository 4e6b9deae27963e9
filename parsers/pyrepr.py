"""Read Python ``repr`` text (vLLM's ``non-default args`` dict, NIXL contexts) as data.

The text is parsed with ``ast`` and walked; nothing is ever evaluated. Class reprs
such as ``KVTransferConfig(kv_role='kv_both', ...)`` become dicts of their keyword
fields; enum reprs ``<CUDAGraphMode.NONE: 0>`` and bare names become strings.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

import regex

_ENUM_REPR = regex.compile(r"<([A-Za-z_][\w.]*)(?:: [^<>]*)?>")
_FLAT_PAIR = regex.compile(r"'(\w+)': ('(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|True|False|None)")
_KW_PAIR = regex.compile(r"\b(kv_role|kv_connector|kv_buffer_device)='([^']*)'")
_MAX_REPR_CHARS = 1 << 20


class ReprError(ValueError):
    pass


def _quietly(parse, *args, **kwargs):
    """``parse`` with Python's compile warnings off: a log's ``'\\d'`` is data, and an invalid
    escape in it must not reach pdwatch's stderr as a SyntaxWarning (Python 3.12+; 3.11 a
    DeprecationWarning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return parse(*args, **kwargs)


def parse_repr(text: str) -> Any:
    """Parse a Python literal repr (with class and enum reprs). Raises ReprError."""
    if len(text) > _MAX_REPR_CHARS:
        raise ReprError("repr too long")
    text = _ENUM_REPR.sub(lambda m: repr(m[1]), text)
    try:
        tree = _quietly(ast.parse, text.strip(), mode="eval")
        return _walk(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ReprError(str(exc)) from None


def parse_args_dict(text: str) -> dict[str, Any]:
    """The ``non-default args`` dict; a cut or mangled repr still yields its simple pairs."""
    try:
        value = parse_repr(text)
        if isinstance(value, dict):
            return value
    except ReprError:
        pass
    out: dict[str, Any] = {}
    for key, raw in _FLAT_PAIR.findall(text):
        try:
            out[key] = _quietly(ast.literal_eval, raw)
        except (ValueError, SyntaxError):
            continue
    kv = {k: v for k, v in _KW_PAIR.findall(text)}
    if kv:
        out["kv_transfer_config"] = kv
    return out


# ``key=value`` at the top of a Namespace(...) repr, for the values that are literals.
_NS_PAIR = regex.compile(r"(?:^|[(,]\s*)(\w+)=('(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|True|False|None)(?=\s*[,)]|$)")


def parse_namespace_args(text: str) -> dict[str, Any]:
    """``Namespace(host='0.0.0.0', port=8000, ...)`` as the dict of its literal values.

    vLLM up to 0.8 (and V0) logs its parsed arguments this way, every one of them, defaults
    included; values that are not literals (functions, enums, configs) are left out, and a
    cut or garbled line still yields the pairs it has.
    """
    body = text[text.index("Namespace(") + len("Namespace("):] if "Namespace(" in text else text
    out: dict[str, Any] = {}
    for key, raw in _NS_PAIR.findall("(" + body):
        try:
            out.setdefault(key, _quietly(ast.literal_eval, raw))
        except (ValueError, SyntaxError):
            continue
    kv = {k: v for k, v in _KW_PAIR.findall(body)}
    if kv:
        out["kv_transfer_config"] = kv
    return out


def _walk(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {_key(k): _walk(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_walk(e) for e in node.elts]
    if isinstance(node, ast.Call):
        fields = {kw.arg: _walk(kw.value) for kw in node.keywords if kw.arg}
        if node.args and not fields:
            return [_walk(a) for a in node.args]
        return fields
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _walk(node.operand)
        if isinstance(inner, (int, float)):
            return -inner if isinstance(node.op, ast.USub) else inner
        return inner
    if isinstance(node, ast.Name):
        return {"inf": float("inf"), "nan": float("nan")}.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return ast.unparse(node)
    return ast.unparse(node)


def _key(node: ast.AST) -> str:
    value = _walk(node)
    return value if isinstance(value, str) else str(value)
