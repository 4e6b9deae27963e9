"""Every family's declared samples give the declared events (formats as data, checked)."""

from __future__ import annotations

import pytest

from pdwatch.parsers import FAMILIES, KINDS

CASES = [(fam, i, sample) for fam in FAMILIES for i, sample in enumerate(fam.samples)]


def test_every_family_has_samples():
    assert all(fam.samples for fam in FAMILIES), [f.name for f in FAMILIES if not f.samples]


@pytest.mark.parametrize("fam,index,sample", CASES, ids=[f"{f.name}-{i}" for f, i, _ in CASES])
def test_family_sample(fam, index, sample):
    got = fam.parse(sample.message)
    assert [kind for kind, _ in got] == [kind for kind, _ in sample.expect]
    for (kind, values), (_, expected) in zip(got, sample.expect):
        for key, want in expected.items():
            assert key in values, f"{kind}: missing {key}"
            assert values[key] == want, f"{kind}.{key}: {values[key]!r} != {want!r}"


@pytest.mark.parametrize("fam,index,sample", CASES, ids=[f"{f.name}-{i}" for f, i, _ in CASES])
def test_family_keys_are_declared(fam, index, sample):
    for kind, values in fam.parse(sample.message):
        if kind.startswith("_"):
            continue
        declared = set(KINDS[kind]) | {"_engine"}
        assert set(values) <= declared, f"{kind} has undeclared keys {set(values) - declared}"


def test_needles_occur_in_samples():
    # A sample a needle can't find would never reach its parser through the prefilter.
    for fam in FAMILIES:
        for sample in fam.samples:
            if sample.expect:
                assert any(n in sample.message.encode() for n in fam.needles), (fam.name, sample.message)
