"""The lab network: Mininet hosts and switches under one unique tag, with a
cleanup that removes exactly what this run created, even after a failure,
Ctrl-C or a crash of the run itself (`aqmlab cleanup`).

Every name starts with the run's tag (`l` + two letters): hosts `<tag>h<k>`,
switches `<tag>s<k>`, interfaces `<node>-eth<n>`. Every process we start and
every root-namespace interface is listed in a state file
`/tmp/aqmlab-state/<tag>.json` until it is gone.
"""

import json
import os
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from mininet.net import Mininet
from mininet.node import Host

from aqmlab.shells import run_commands

STATE_DIR = Path(os.environ.get("AQMLAB_STATE_DIR", "/tmp/aqmlab-state"))
OFFLOADS = "rx off tx off tso off gso off gro off"
UNFINISHED_STATE_S = 60         # a state file is written within milliseconds of its claim
DEVICE_GROUP_BASE = 0x61710000   # + the tag's number: the lab's own interface group


def claim_tag():
    """A tag no live interface, process or other lab uses, claimed by creating
    its state file exclusively (labs started side by side never share one)."""
    used = _live_names()
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    for _ in range(1000):
        tag = "l" + "".join(random.choices(string.ascii_lowercase, k=2))
        if any(name.startswith(tag) for name in used):
            continue
        try:
            with (STATE_DIR / f"{tag}.json").open("x") as claim:
                # the owner at once: a claim whose process dies before its lab
                # starts is then stale like any other (cleanup_all_stale)
                claim.write(json.dumps(state_record(tag)))
        except FileExistsError:
            continue
        return tag
    raise RuntimeError("no free lab tag")


def _live_names():
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}
    for state in STATE_DIR.glob("*.json"):
        names.add(state.stem)
    return names


def device_group(tag):
    """The interface group of a lab's root-namespace links (ip-link(8) `group`):
    one per tag, so `ip link del group` removes this lab's links and no other's."""
    return DEVICE_GROUP_BASE + int(tag[1:], 36)


def interface_commands(intf_name, group=None):
    """Offloads off (a frame-copying switch needs MTU-sized, checksummed frames
    on every veth); a root-namespace end joins the lab's device group."""
    return [f"ethtool -K {intf_name} {OFFLOADS}"] + \
        ([f"ip link set dev {intf_name} group {group}"] if group else [])


def remove_links(tag):
    """Delete every veth pair with an end in the lab's device group (both
    ends: the host's goes with it), in one netlink request."""
    subprocess.run(["ip", "link", "del", "group", str(device_group(tag))], capture_output=True)


def state_record(tag):
    """A state file's content before the lab has processes or interfaces."""
    return {"tag": tag, "owner": [os.getpid(), _start_time(os.getpid())], "pids": {},
            "interfaces": []}


class StateFile:
    """What this run must remove: process ids (with their start time, so a
    reused pid is never killed) and root-namespace interface names."""

    def __init__(self, tag):
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.path = STATE_DIR / f"{tag}.json"
        self.data = state_record(tag)
        self.save()

    def add_pid(self, pid):
        self.data["pids"][str(pid)] = _start_time(pid)
        self.save()

    def add_interface(self, name):
        self.data["interfaces"].append(name)
        self.save()

    def save(self):
        self.path.write_text(json.dumps(self.data))


def _start_time(pid):
    """Clock ticks since boot when pid started (unchanged by exec), or None."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _kill(processes, grace=2.0):
    """SIGTERM, then SIGKILL, processes we started ({pid: start time}; those
    still ours), all at once."""
    alive = {pid: start for pid, start in processes.items()
             if start is not None and _start_time(pid) == start}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in list(alive):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                del alive[pid]
        deadline = time.time() + grace
        while alive and time.time() < deadline:
            for pid, start in list(alive.items()):
                if _start_time(pid) != start or _is_zombie(pid):
                    _reap(pid)
                    del alive[pid]
            if alive:
                time.sleep(0.02)
        if not alive:
            return


def _is_zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _tag_pattern(tag):
    """Names of this lab's nodes: `<tag>h<k>`, `<tag>s<k>` (and their interfaces)."""
    return re.compile(rf"(?<![A-Za-z0-9]){tag}[hs][0-9]+")


def _tagged_processes(tag):
    """Processes whose command line names one of the lab's nodes (a shell
    `mininet:<node>`, a switch on `<node>-ethN`, an agent's files)."""
    pattern, found = _tag_pattern(tag), {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if pattern.search(cmdline):
                found[int(entry.name)] = _start_time(int(entry.name))
    return found


def _tagged_interfaces(tag):
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = (line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line)
    return [name for name in names if _tag_pattern(tag).match(name)]


def cleanup_state(path):
    """Remove everything a (possibly crashed or interrupted) run created: the
    processes and interfaces its state file lists, then anything else that
    carries its tag (a Ctrl-C can land between creating and recording)."""
    data = json.loads(Path(path).read_text())
    pids = {int(pid): start for pid, start in data["pids"].items()}
    pids.update(_tagged_processes(data["tag"]))
    _kill(pids)
    remove_links(data["tag"])
    for name in set(data["interfaces"]) | set(_tagged_interfaces(data["tag"])):
        if Path(f"/sys/class/net/{name}").exists():
            subprocess.run(["ip", "link", "del", name], capture_output=True)
    Path(path).unlink(missing_ok=True)


def cleanup_all_stale():
    """Remove the leftovers of labs whose owning aqmlab process is gone
    (`aqmlab cleanup`, and every `aqmlab run` before it starts) -> their tags.
    A state file being written (empty or partial) is left alone for a minute;
    older, it is a claim from before claims named their owner: removed."""
    removed = []
    for path in STATE_DIR.glob("*.json"):
        try:
            age = time.time() - path.stat().st_mtime
            owner = json.loads(path.read_text()).get("owner")
        except OSError:        # removed meanwhile by its own lab
            continue
        except ValueError:
            if age > UNFINISHED_STATE_S:
                path.unlink(missing_ok=True)
                removed.append(path.stem)
            continue
        if not owner or _start_time(owner[0]) == owner[1]:
            continue
        cleanup_state(path)
        removed.append(path.stem)
    return removed


class LabProcessDied(RuntimeError):
    """A switch or traffic server of the lab exited during the run."""


class LabNetwork:
    """A Mininet network whose every object carries this run's tag.

    Use as a context manager; leaving the block (normally, by exception, or by
    SIGINT/SIGTERM turned into KeyboardInterrupt) removes everything."""

    def __init__(self, tag=None, workdir=None):
        self.tag = tag or claim_tag()
        # logs and agent records; a directory we create ourselves goes on close
        self.own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"aqmlab-{self.tag}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state = StateFile(self.tag)
        self.device_group = device_group(self.tag)
        self.net = Mininet(controller=None, build=False, autoSetMacs=False,
                           autoStaticArp=False, cleanup=False)
        self.processes = []
        self.watched = []          # (what, process, log path) that must outlive the run
        self.host_count = 0
        self.switch_count = 0

    # ------------------------------------------------------------ building
    def add_host(self, **params):
        self.host_count += 1
        host = self.net.addHost(f"{self.tag}h{self.host_count}", cls=Host, **params)
        self.state.add_pid(host.pid)
        return host

    def add_switch(self, cls, **params):
        self.switch_count += 1
        switch = self.net.addSwitch(f"{self.tag}s{self.switch_count}", cls=cls,
                                    workdir=self.workdir, lab=self, **params)
        self.state.add_pid(switch.pid)
        return switch

    def add_link(self, node1, node2, mac1, mac2):
        link = self.net.addLink(node1, node2, addr1=mac1, addr2=mac2)
        commands = {}
        for intf in (link.intf1, link.intf2):
            root = not intf.node.inNamespace
            if root:
                self.state.add_interface(intf.name)
            commands[intf.node] = commands.get(intf.node, []) + interface_commands(
                intf.name, self.device_group if root else None)
        run_commands(commands)
        return link

    def start(self):
        self.net.build()
        self.net.start()

    # ----------------------------------------------------------- processes
    def popen(self, node, args, log_name, watch=None):
        """Start a long-running process in a node's namespace, logging to workdir.
        `watch` ("softswitch on ls1"): the process must live for the whole run
        (`check_alive`)."""
        log = open(self.workdir / log_name, "ab")
        proc = node.popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.processes.append(proc)
        self.state.add_pid(proc.pid)
        if watch:
            self.watched.append((watch, proc, self.workdir / log_name))
        return proc

    def dead_processes(self, grace_s=0.0):
        """One line per watched process that has exited: what, pid, how, its log.
        `grace_s`: after an error, wait up to that long for a death to show: a
        killed process closes its sockets (the peer's error) before it can be reaped."""
        deadline = time.monotonic() + grace_s
        while True:
            dead = self._exited()
            if dead or time.monotonic() >= deadline:
                return dead
            time.sleep(0.05)

    def _exited(self):
        dead = []
        for what, proc, log in self.watched:
            code = proc.poll()
            if code is not None:
                how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
                dead.append(f"{what} (pid {proc.pid}) died ({how}); log: {log}")
        return dead

    def check_alive(self):
        dead = self.dead_processes()
        if dead:
            raise LabProcessDied("; ".join(dead))

    def stop_process(self, proc):
        self.stop_processes([proc])

    def stop_processes(self, procs):
        """Stop processes started with popen, all at once (SIGTERM, then SIGKILL)."""
        stopping = {id(proc) for proc in procs}
        self.watched = [entry for entry in self.watched if id(entry[1]) not in stopping]
        # an unreaped child keeps its pid, so its start time read now is safe
        # (an interrupt can land between starting a process and recording it)
        _kill({proc.pid: self.state.data["pids"].get(str(proc.pid)) or _start_time(proc.pid)
               for proc in procs if proc.poll() is None})
        for proc in procs:
            proc.wait()

    # ------------------------------------------------------------- cleanup
    def close(self):
        """Stop every process, delete every link in one request, end the
        nodes' shells (their namespaces go with them), then remove whatever
        the state file still names. Signals wait until it is done."""
        with interrupts_deferred():
            try:
                self.stop_processes(self.processes)
                nodes = self.net.hosts + self.net.switches
                for node in nodes:   # an interrupt inside node.cmd() leaves the shell marked busy
                    node.waiting = False
                remove_links(self.tag)
                for node in nodes:
                    node.terminate()
            except Exception as error:   # the state cleanup below removes what is left
                print(f"aqmlab: lab {self.tag}: stopping failed ({error!r}); removing by "
                      "pid and name", file=sys.stderr)
            finally:
                cleanup_state(self.state.path)
                if self.own_workdir:
                    shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        """SIGTERM becomes KeyboardInterrupt (so the lab is removed), unless the
        caller already handles it (a study runner)."""
        self._previous_handler = signal.getsignal(signal.SIGTERM)
        if self._previous_handler in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc):
        try:
            self.close()
        finally:
            signal.signal(signal.SIGTERM, self._previous_handler or signal.SIG_DFL)
        return False


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def interrupts_deferred():
    """Hold SIGINT and SIGTERM until the block ends, then act on the first one
    as its handler would. A lab's removal must not be cut short: a study's
    workers get the terminal's SIGINT and, a moment later, their parent's
    SIGTERM, and a second KeyboardInterrupt inside the removal left labs
    running. Only the main thread can set handlers; elsewhere, no deferral."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler or signal.SIG_DFL)   # None: not set from Python
    if caught:
        _deliver(caught[0], previous[caught[0]])


def _deliver(signum, handler):
    """Act on a held signal as `handler` (the one installed before) would."""
    if callable(handler):
        handler(signum, None)
    elif handler != signal.SIG_IGN:   # default: SIGINT and SIGTERM both end the run
        raise KeyboardInterrupt(f"signal {signum}")
