"""`aqmlab run --executor slurm` against a real single-node Slurm cluster
(munged + slurmctld + slurmd from Debian's packages) that the module starts
in a temporary folder on private ports and stops by PID, leaving nothing."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aqmlab import slurm, study
from aqmlab.config import ConfigError, load_experiment
from softswitch_server.netlab import stop

from labhelpers import REPO

START_TIMEOUT_S = 30
CANCEL_TIMEOUT_S = 30
DAEMON_STOP_TIMEOUT_S = 15
MAX_ARRAY_SIZE = 10
TEST_TIMEOUT_S = 300

TINY_STUDY = """
name = "slurm-tiny"
seed = 1
repeat = 3
duration = 3
warmup = 1

[topology]
kind = "dumbbell"
bottleneck = { rate = "10mbit", delay = "5ms", buffer = 50 }
server_access = { rate = "100mbit", delay = "100us" }
client_access = { rate = "100mbit", delay = "100us" }

[aqm]
mode = "red"
minth = 5
maxth = 15

[[workload]]
name = "bulk"
kind = "bulk"
pairs = 1
"""


def free_ports(count):
    """`count` distinct ports nobody listens on (all held open while chosen)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def node_cpus():
    """The CPUs slurmd itself detects here (`slurmd -C`), so the node registers
    with exactly its configuration (fewer CPUs than configured would drain it)."""
    done = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True)
    return int(re.search(r"\bCPUs=(\d+)", done.stdout).group(1))


def slurm_conf(root, munge_socket, cpus):
    """One controller and one node on this machine: no cgroups, no accounting."""
    host = socket.gethostname().split(".")[0]
    controller_port, node_port = free_ports(2)
    return f"""\
ClusterName=aqmlabtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={controller_port}
SlurmdPort={node_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=10
MinJobAge=300
MailProg=/bin/true
MaxArraySize={MAX_ARRAY_SIZE}
NodeName=aqmlabnode NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=aqmlab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """munged, slurmctld and slurmd as children of the test, in `root`."""

    def __init__(self, root):
        self.root, self.procs = root, []
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self):
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(mode=0o700)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        munge = self.root / "munge"
        self.spawn("munged", ["munged", "--foreground", "--force", f"--socket={munge}/socket",
                              f"--key-file={key}", f"--pid-file={munge}/munged.pid",
                              f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed"])
        self.wait_for(lambda: (munge / "socket").exists(), "munged's socket")
        self.conf.write_text(slurm_conf(self.root, munge / "socket", node_cpus()))
        self.spawn("slurmctld", ["slurmctld", "-D", "-i"])
        self.spawn("slurmd", ["slurmd", "-D", "-N", "aqmlabnode"])
        self.wait_for(self.node_idle, "the node to be idle in sinfo")

    def spawn(self, name, command):
        log = open(self.root / "log" / f"{name}.out", "w")
        self.procs.append(subprocess.Popen(command, env=self.env, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def node_idle(self):
        done = subprocess.run(["sinfo", "--noheader", "--format=%T"], env=self.env,
                              capture_output=True, text=True)
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def wait_for(self, ready, what):
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(f"--- {f.name}\n{f.read_text()[-2000:]}"
                                 for f in sorted((self.root / "log").glob("*")))
                why = f"exited: {', '.join(dead)}" if dead else "timeout"
                raise RuntimeError(f"Slurm test cluster: no {what} ({why})\n{logs}")
            time.sleep(0.3)

    def stop(self):
        """Cancel whatever still runs (its steps would outlive slurmd), then
        slurmd, slurmctld, munged: SIGTERM, then SIGKILL."""
        if self.procs and len(self.procs) == 3 and all(p.poll() is None for p in self.procs):
            subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True)
            deadline = time.monotonic() + CANCEL_TIMEOUT_S
            while self.jobs_left() and time.monotonic() < deadline:
                time.sleep(0.5)
        for proc in reversed(self.procs):
            stop(proc, signum=signal.SIGTERM, timeout_s=DAEMON_STOP_TIMEOUT_S)

    def jobs_left(self):
        done = subprocess.run(["squeue", "--noheader"], env=self.env, capture_output=True,
                              text=True)
        return done.returncode == 0 and done.stdout.strip() != ""

    def leftovers(self):
        """Processes still running with this cluster's config or files: the
        daemons, slurmstepd and job processes (they inherit SLURM_CONF)."""
        mark = f"{self.root}/".encode()
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                text = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
            except OSError:
                continue
            if mark in text:
                found.append(proc.name)
        return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = Path(tmp_path_factory.mktemp("slurm"))
    root.chmod(0o755)
    instance = Cluster(root)
    try:
        instance.start()
        yield instance
    finally:
        instance.stop()
        left = instance.leftovers()
        for pid in left:
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"Slurm test cluster left processes behind: {left}"


@pytest.fixture
def slurm_env(cluster, monkeypatch):
    """SLURM_CONF for the test, which is stopped (so the cluster is torn down)
    if it waits on a broken cluster for longer than any test needs."""
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))

    def give_up(signum, frame):
        raise TimeoutError(f"Slurm test still waiting after {TEST_TIMEOUT_S} s")
    previous = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield cluster.env
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def prepared_study(folder, text):
    """A study folder as `aqmlab run` prepares it before calling run_study."""
    source = folder.parent / "experiment.toml"
    source.write_text(text)
    study.prepare_study_folder(folder, text, quick=False, owner=True)
    return source


def aqmlab_run(env, *args):
    done = subprocess.run([sys.executable, "-m", "aqmlab", "run", *map(str, args),
                           "--executor", "slurm", "--no-progress"],
                          env=env, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    return done


def test_study_through_slurm_is_merged_into_one_report_and_resumed(slurm_env, tmp_path):
    """The CLI submits the 3 runs as one array (--jobs 2: each task asks for
    half the node's CPUs), every run completes in the shared folder, and the
    report covers all three; --resume then submits only a run that lost its marker."""
    source = tmp_path / "tiny.toml"
    source.write_text(TINY_STUDY)
    out = tmp_path / "study"
    done = aqmlab_run(slurm_env, source, "--out", out, "--jobs", 2)
    assert re.search(r"^aqmlab: Slurm job \d+: 3 completed$", done.stderr, re.M), done.stderr
    run_ids = [run.run_id for run in study.expand(load_experiment(source))]
    assert [study.run_state(out / run_id) for run_id in run_ids] == [study.COMPLETE] * 3
    (submission,) = (out / "slurm").iterdir()
    assert (submission / "runs.txt").read_text().split() == run_ids
    cpus = max(1, node_cpus() // 2)
    assert f"#SBATCH --cpus-per-task={cpus}\n" in (submission / "job.sh").read_text()
    logs = sorted(p.name for p in (submission / "logs").iterdir())
    assert logs == ["0.log", "1.log", "2.log"]
    for task, run_id in enumerate(run_ids):
        assert f"run {run_id} on" in (submission / "logs" / f"{task}.log").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert {r: v["state"] for r, v in summary["runs"].items()} == dict.fromkeys(run_ids,
                                                                                  "complete")
    goodput = [row for row in summary["points"] if row["metric"] == "goodput_mbps"
               and row["workload"] == "all"]
    assert goodput and goodput[0]["n"] == 3
    assert "report.md" in os.listdir(out)

    (out / run_ids[1] / study.COMPLETE).unlink()
    aqmlab_run(slurm_env, source, "--out", out, "--resume")
    resumed = next(p for p in (out / "slurm").iterdir() if p != submission)
    assert (resumed / "runs.txt").read_text().split() == [run_ids[1]]
    assert "#SBATCH --exclusive\n" in (resumed / "job.sh").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert {r: v["state"] for r, v in summary["runs"].items()} == dict.fromkeys(run_ids,
                                                                                  "complete")


def test_failed_runs_are_named_with_their_slurm_logs(slurm_env, tmp_path):
    """Runs that fail on the node (here: no compiled P4 program in --build-dir)
    come back with the run's own reason and the task's Slurm log."""
    empty_build = tmp_path / "empty-build"
    empty_build.mkdir()
    out = tmp_path / "study"
    source = prepared_study(out, TINY_STUDY.replace("repeat = 3", "repeat = 2"))
    run_ids = [run.run_id for run in study.expand(load_experiment(source))]
    result = slurm.run_study(source, out, run_ids, build_dir=empty_build, jobs=2,
                             poll_seconds=1)
    assert set(result) == set(run_ids)
    for task, run_id in enumerate(run_ids):
        assert study.run_state(out / run_id) == study.FAILED
        log = next((out / "slurm").iterdir()) / "logs" / f"{task}.log"
        assert result[run_id].startswith(study.failure_reason(out / run_id))
        assert result[run_id].endswith(f"(Slurm log {log})")
        assert log.exists()


def test_a_task_that_leaves_no_marker_is_named_with_its_slurm_state(slurm_env, tmp_path):
    """aqmlab on the node refuses the folder (its experiment.toml no longer
    matches study.json), so no run folder exists: Slurm's FAILED is the news."""
    out = tmp_path / "study"
    source = prepared_study(out, TINY_STUDY)
    (out / "experiment.toml").write_text(TINY_STUDY.replace("seed = 1", "seed = 2"))
    result = slurm.run_study(source, out, ["p00-r1"], poll_seconds=1)
    log = next((out / "slurm").iterdir()) / "logs" / "0.log"
    assert re.fullmatch(rf"no result \(missing\); Slurm task \d+_0: FAILED \(Slurm log {log}\)",
                        result["p00-r1"]), result
    assert "holds a study run with another experiment file" in log.read_text()


def test_a_refused_submission_leaves_nothing(slurm_env, tmp_path):
    out = tmp_path / "study"
    source = prepared_study(out, TINY_STUDY)
    with pytest.raises(RuntimeError, match="^sbatch: Batch job submission failed: "
                       "Invalid partition name specified$"):
        slurm.run_study(source, out, ["p00-r0"], partition="no-such-partition")
    assert not (out / "slurm").exists()


def test_a_study_larger_than_max_array_size_is_refused(slurm_env, tmp_path):
    out = tmp_path / "study"
    source = prepared_study(out, TINY_STUDY)
    run_ids = [f"p00-r{i:02d}" for i in range(MAX_ARRAY_SIZE + 1)]
    with pytest.raises(ConfigError, match=f"^--executor slurm: {MAX_ARRAY_SIZE + 1} runs exceed "
                       f"this cluster's MaxArraySize {MAX_ARRAY_SIZE}; submit them in parts "
                       "with --only$"):
        slurm.run_study(source, out, run_ids)
    assert not (out / "slurm").exists()


def test_job_script_maps_array_tasks_to_run_ids_and_options(tmp_path):
    options = slurm.SlurmOptions(jobs=1, partition="lab", time_limit="20:00", max_running=4,
                                 sbatch_args=["--account=net"])
    submission = slurm.write_submission(tmp_path, ["p00-r0", "p01-r0"],
                                        slurm.task_command(tmp_path / "experiment.toml", tmp_path,
                                                           True, None), options)
    script = submission.script.read_text()
    assert (submission.folder / "runs.txt").read_text() == "p00-r0\np01-r0\n"
    for directive in ("--array=0-1%4", f"--output={submission.folder}/logs/%a.log",
                      f"--chdir={tmp_path}", "--exclusive", "--partition=lab", "--time=20:00",
                      "--account=net"):
        assert f"#SBATCH {directive}\n" in script
    assert f'--out {tmp_path} --only "$RUN_ID" --no-progress --quick' in script


def test_progress_line_counts_tasks_and_says_why_they_wait():
    states = {0: ("COMPLETED", "None"), 1: ("FAILED", "NonZeroExitCode"), 2: ("RUNNING", "None"),
              3: ("PENDING", "Resources"), 4: ("PENDING", "JobArrayTaskLimit")}
    assert slurm.progress_line(states, 6) == \
        "1 completed, 1 failed, 1 running, 3 waiting (JobArrayTaskLimit, Resources)"


@pytest.mark.parametrize("argv, error", [
    (["--slurm-partition", "lab"], "--slurm-partition: only with --executor slurm"),
    (["--executor", "slurm", "--slurm-max-running", "0"],
     "--slurm-max-running: must be >= 1, got 0"),
])
def test_bad_command_lines_are_refused_before_anything_is_written(tmp_path, capsys, argv, error):
    from aqmlab.cli import main
    source = tmp_path / "tiny.toml"
    source.write_text(TINY_STUDY)
    assert main(["run", str(source), "--out", str(tmp_path / "study"), *argv]) == 2
    assert capsys.readouterr().err == f"aqmlab run: error: {error}\n"
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize("options, error", [
    ({"jobs": 0}, "--jobs: must be >= 1, got 0"),
    ({"max_running": 0}, "--slurm-max-running: must be >= 1, got 0"),
])
def test_bad_options_are_refused_before_anything_is_written(tmp_path, options, error):
    with pytest.raises(ConfigError, match=f"^{error}$"):
        slurm.run_study(tmp_path / "x.toml", tmp_path, ["p00-r0"], **options)
    assert list(tmp_path.iterdir()) == []
