"""`aqmlab run --executor slurm`: a study as one Slurm job array.

Array task i runs the i-th run id of the submission's run list with
`aqmlab run DIR/experiment.toml --out DIR --only <run id>`, so every node
needs the same aqmlab at the same path and DIR on a shared filesystem.
The run folders' markers (aqmlab.study) are the truth about each run; Slurm's
task states only explain runs that left no marker (time limit, node failure,
cancelled). A submission's files go to DIR/slurm/<UTC stamp>/: job.sh (can be
resubmitted by hand with `sbatch job.sh`), runs.txt and logs/<task>.log.
See mininet/SLURM.md.
"""

import contextlib
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from aqmlab import study
from aqmlab.config import ConfigError

# Slurm task states after which a task will not run again (squeue %T).
FINISHED_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                   "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"}
POLL_SECONDS = 5.0
DEFAULT_MAX_ARRAY_SIZE = 1001
SQUEUE_RETRIES = 5           # consecutive squeue errors tolerated (controller busy, restart)


@dataclass(frozen=True)
class SlurmOptions:
    """How the array is submitted (command-line `--slurm-*` options and --jobs)."""
    jobs: int = 1                     # runs per node: 1 = a whole node each (--exclusive)
    partition: str | None = None
    time_limit: str | None = None     # sbatch --time, per run
    max_running: int | None = None    # array throttle %N: runs at once over the whole cluster
    sbatch_args: list = field(default_factory=list)

    def check(self):
        if self.jobs < 1:
            raise ConfigError(f"--jobs: must be >= 1, got {self.jobs}")
        if self.max_running is not None and self.max_running < 1:
            raise ConfigError(f"--slurm-max-running: must be >= 1, got {self.max_running}")


def check_cli_options(args):
    """`aqmlab run`'s --slurm-* options: only with --executor slurm, and valid."""
    given = [f"--{name.replace('_', '-')}" for name, value in vars(args).items()
             if name.startswith("slurm_") and value not in (None, [])]
    if args.executor != "slurm":
        if given:
            raise ConfigError(f"{given[0]}: only with --executor slurm")
        return
    SlurmOptions(args.jobs, args.slurm_partition, args.slurm_time, args.slurm_max_running,
                 args.slurm_option).check()


@dataclass(frozen=True)
class Submission:
    folder: Path          # DIR/slurm/<stamp>/
    run_ids: list

    @property
    def script(self):
        return self.folder / "job.sh"

    def log(self, task):
        return self.folder / "logs" / f"{task}.log"


def run_study(experiment_file, out_dir, run_ids, quick=False, build_dir=None, jobs=1,
              partition=None, time_limit=None, max_running=None, sbatch_args=(),
              poll_seconds=POLL_SECONDS):
    """Submit the runs as one job array, wait for it, -> {run_id: None or why it failed}.

    `out_dir` is the prepared study folder (study.json, experiment.toml)."""
    options = SlurmOptions(jobs, partition, time_limit, max_running, list(sbatch_args or ()))
    options.check()
    if not run_ids:
        return {}
    out_dir = Path(out_dir).resolve()
    source = out_dir / "experiment.toml"
    if not source.exists():
        source = Path(experiment_file).resolve()
    check_array_size(len(run_ids))
    command = task_command(source, out_dir, quick, build_dir)
    submission = write_submission(out_dir, run_ids, command, options)
    try:
        job_id = submit(submission)
    except RuntimeError:
        shutil.rmtree(submission.folder)      # nothing was submitted: leave no trace
        with contextlib.suppress(OSError):
            submission.folder.parent.rmdir()
        raise
    print(f"aqmlab: submitted {len(run_ids)} run(s) as Slurm job array {job_id} "
          f"(script {submission.script})", file=sys.stderr)
    try:
        states = wait(job_id, len(run_ids), poll_seconds)
    except KeyboardInterrupt:
        print(f"aqmlab: stopped waiting; Slurm job {job_id} keeps running (cancel: scancel "
              f"{job_id}; report when it ends: aqmlab report {out_dir})", file=sys.stderr)
        raise
    result = outcomes(out_dir, submission, job_id, states)
    for run_id, reason in result.items():
        if reason:
            print(f"aqmlab: {run_id} failed: {reason}", file=sys.stderr)
    return result


# ------------------------------------------------------------- the job script
def task_command(source, out_dir, quick, build_dir):
    """The aqmlab command one array task runs; $RUN_ID is filled in by the script."""
    command = [sys.executable, "-m", "aqmlab", "run", str(source), "--out", str(out_dir),
               "--only", "$RUN_ID", "--no-progress"]
    if quick:
        command.append("--quick")
    if build_dir:
        command += ["--build-dir", str(Path(build_dir).resolve())]
    return command


def sbatch_directives(options):
    """#SBATCH lines for the array (without --array/--output, added per submission)."""
    lines = ["--job-name=aqmlab"]
    if options.jobs == 1:
        lines.append("--exclusive")
    else:
        lines.append(f"--cpus-per-task={max(1, partition_cpus(options.partition) // options.jobs)}")
    if options.partition:
        lines.append(f"--partition={options.partition}")
    if options.time_limit:
        lines.append(f"--time={options.time_limit}")
    return lines + list(options.sbatch_args)


def check_array_size(runs):
    """Array indices must stay below the cluster's MaxArraySize (Slurm's default 1001)."""
    config = slurm_command(["scontrol", "show", "config"])
    limit = next((int(line.split("=")[1]) for line in config.splitlines()
                  if line.split("=")[0].strip() == "MaxArraySize"), DEFAULT_MAX_ARRAY_SIZE)
    if runs > limit:
        raise ConfigError(f"--executor slurm: {runs} runs exceed this cluster's MaxArraySize "
                          f"{limit}; submit them in parts with --only")


def partition_cpus(partition):
    """CPUs of the smallest node in the partition (in any partition if None)."""
    command = ["sinfo", "--noheader", "--format=%c"]
    command += [f"--partition={partition}"] if partition else []
    output = slurm_command(command)
    counts = [int(word.rstrip("+")) for word in output.split() if word.rstrip("+").isdigit()]
    if not counts:
        where = f" in partition {partition}" if partition else ""
        raise RuntimeError(f"sinfo found no nodes{where}"
                           " (needed to share nodes between runs with --jobs > 1)")
    return min(counts)


def write_submission(out_dir, run_ids, command, options):
    """DIR/slurm/<stamp>/ with runs.txt (line i = run of array task i) and job.sh."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    folder = out_dir / "slurm" / stamp
    (folder / "logs").mkdir(parents=True)
    submission = Submission(folder, list(run_ids))
    (folder / "runs.txt").write_text("".join(f"{run_id}\n" for run_id in run_ids))
    throttle = f"%{options.max_running}" if options.max_running else ""
    header = [f"--array=0-{len(run_ids) - 1}{throttle}", f"--output={folder}/logs/%a.log",
              f"--chdir={out_dir}", *sbatch_directives(options)]
    run = " ".join(shlex.quote(word) if word != "$RUN_ID" else '"$RUN_ID"' for word in command)
    submission.script.write_text("\n".join([
        "#!/bin/bash",
        "# aqmlab study as a Slurm job array: task i runs line i+1 of runs.txt.",
        *(f"#SBATCH {shlex.quote(line)}" for line in header),
        "set -euo pipefail",
        f'RUN_ID=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {shlex.quote(str(folder / "runs.txt"))})',
        'echo "aqmlab: Slurm job ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}: run $RUN_ID '
        'on $(hostname)"',
        f"exec {run}", ""]))
    submission.script.chmod(0o755)
    return submission


# ------------------------------------------------------------- Slurm commands
def slurm_command(command):
    """Run a Slurm client command -> stdout; a clear error if it is missing or fails."""
    if shutil.which(command[0]) is None:
        raise RuntimeError(f"{command[0]} not found: --executor slurm needs the Slurm client "
                           "commands (Debian: slurm-client) and a configured cluster")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        message = last_line(done.stderr or done.stdout).removeprefix(f"{command[0]}: error: ")
        raise RuntimeError(f"{command[0]}: {message}")
    return done.stdout


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def submit(submission):
    """sbatch --parsable -> the array's job id ("id" or "id;cluster")."""
    return slurm_command(["sbatch", "--parsable", str(submission.script)]).strip().split(";")[0]


def task_states(job_id):
    """{array task: (state, reason)} from squeue, or None when Slurm has
    forgotten the job (finished longer than MinJobAge ago)."""
    done = subprocess.run(["squeue", "--noheader", "--array", "--states=all", f"--jobs={job_id}",
                           "--format=%K %T %r"], capture_output=True, text=True)
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:
            return None
        raise RuntimeError(f"squeue: {last_line(done.stderr)}")
    states = {}
    for line in done.stdout.splitlines():
        task, state, reason = (line.split(maxsplit=2) + ["", ""])[:3]
        if task.isdigit():
            states[int(task)] = (state, reason)
    return states


def wait(job_id, tasks, poll_seconds):
    """Poll squeue until no task can run any more; print a line when the
    picture changes. -> {task: last state seen} (forgotten tasks are absent)."""
    last, seen, errors = None, {}, 0
    while True:
        try:
            states = task_states(job_id)
            errors = 0
        except RuntimeError:
            errors += 1
            if errors > SQUEUE_RETRIES:
                raise
            time.sleep(poll_seconds)
            continue
        if states is None:
            return {task: state for task, (state, _) in seen.items()}
        seen.update(states)
        line = progress_line(seen, tasks)
        if line != last:
            print(f"aqmlab: Slurm job {job_id}: {line}", file=sys.stderr)
            last = line
        if len(seen) >= tasks and all(state in FINISHED_STATES for state, _ in seen.values()):
            return {task: state for task, (state, _) in seen.items()}
        time.sleep(poll_seconds)


def progress_line(states, tasks):
    """"2 completed, 1 failed, 1 running, 4 waiting (Resources)"."""
    counts = {"completed": 0, "failed": 0, "running": 0}
    reasons = set()
    for state, reason in states.values():
        if state == "COMPLETED":
            counts["completed"] += 1
        elif state in FINISHED_STATES:
            counts["failed"] += 1
        elif state in ("RUNNING", "COMPLETING"):
            counts["running"] += 1
        elif reason and reason != "None":
            reasons.add(reason)
    waiting = tasks - sum(counts.values())
    parts = [f"{n} {what}" for what, n in counts.items() if n]
    if waiting:
        parts.append(f"{waiting} waiting" + (f" ({', '.join(sorted(reasons))})" if reasons else ""))
    return ", ".join(parts)


# ------------------------------------------------------------- outcomes
def outcomes(out_dir, submission, job_id, states):
    """{run_id: None if complete else why}, naming the task's Slurm log."""
    result = {}
    for task, run_id in enumerate(submission.run_ids):
        folder = out_dir / run_id
        state = study.run_state(folder)
        log = submission.log(task)
        if state == study.COMPLETE:
            result[run_id] = None
        elif state == study.FAILED:
            result[run_id] = f"{study.failure_reason(folder)} (Slurm log {log})"
        else:
            slurm_state = states.get(task, "no longer known to Slurm")
            result[run_id] = (f"no result ({state}); Slurm task {job_id}_{task}: "
                              f"{slurm_state} (Slurm log {log})")
    return result
