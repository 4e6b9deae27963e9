"""A simulated sa-bench concurrency sweep, written as an srt-slurm job folder.

``SweepSimulation`` runs one deployment under srt-slurm's sa-bench client (per concurrency a
warm-up, then the measured run, each client starting with a test prompt), and
``write_sweep_job`` writes the job: worker and frontend logs under srt-slurm's names,
``benchmark.out`` with bench.sh's markers, one sa-bench result file per concurrency whose
numbers agree with the logs over its window, the job metadata and a README saying where the
bottleneck changes. ``pdwatch simulate --sweep C1,C2,...`` is its command.
"""

from .client import RequestRecord, RunRecord, SweepPlan, SweepSimulation
from .job import DEFAULT_CONCURRENCIES, DEFAULT_JOB_ID, SweepJob, SweepPoint, sweep_config, write_sweep_job
from .results import printed_block, result_json

__all__ = [
    "DEFAULT_CONCURRENCIES",
    "DEFAULT_JOB_ID",
    "RequestRecord",
    "RunRecord",
    "SweepJob",
    "SweepPlan",
    "SweepPoint",
    "SweepSimulation",
    "printed_block",
    "result_json",
    "sweep_config",
    "write_sweep_job",
]
