"""Where the sweep fixtures live (tests/data/sweep/README.md says how they were made)."""

from __future__ import annotations

from tests.conftest import DATA

SWEEP = DATA / "sweep"
AGG_JOB = SWEEP / "srt-slurm" / "outputs" / "4242001"
DISAGG_JOB = SWEEP / "srt-slurm" / "outputs" / "4242002"
LEGACY_JOB = SWEEP / "legacy" / "3100_1P_1D_20250901_120000"
ROLLUP_JOB = SWEEP / "rollup-only" / "outputs" / "4242003"
AGG_RESULTS = AGG_JOB / "logs" / "sa-bench_isl_256_osl_128"
DISAGG_RESULTS = DISAGG_JOB / "logs" / "sa-bench_isl_256_osl_128"
