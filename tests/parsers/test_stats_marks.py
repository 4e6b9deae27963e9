"""Where a stats line's values stand (parsers.stats_marks): the evidence highlights."""

from pdwatch.parsers.stats_marks import value_marks


def test_the_values_a_rule_read_are_found_in_a_v1_stats_line():
    line = ("Engine 001: Avg prompt throughput: 42261.7 tokens/s, Avg generation throughput: 5.8 tokens/s, "
            "Running: 2 reqs, Waiting: 280 reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 0.0%")
    marks = value_marks(line, ["waiting", "kv_usage_pct", "no_such_field"])
    assert [line[a:b] for a, b in marks] == ["Waiting: 280 reqs", "GPU KV cache usage: 0.7%"]
    assert value_marks("a line without stats", ["waiting"]) == []
