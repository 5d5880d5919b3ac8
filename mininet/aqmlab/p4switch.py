"""Mininet switches that run a P4 target process on their interfaces.

`SoftSwitch` runs the built-in `softswitch` (its traffic manager emulates each
link's rate, buffer and propagation delay, and the impairments netem would
add: loss, jitter, RFC 889's delay glitches); `Bmv2Switch` runs
`simple_switch_grpc` and sets rate/depth with `simple_switch_CLI` (BMv2 has no
delay, so delay uses netem, which exists on ordinary Ubuntu kernels). Both
listen for P4Runtime on 127.0.0.1 and get their pipeline from `redctl`.
"""

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mininet.node import Switch

from aqmlab.units import delay_arg, rate_arg

GRPC_START_TIMEOUT = 20.0
# The softswitch's packet thread runs in SCHED_FIFO at this priority where its
# bottleneck is slow (<= REALTIME_MAX_RATE_BPS): the bottleneck's departures stay
# on time while the hosts load every core (mininet/bench/JOBS.md); its gRPC
# threads and the hosts stay normal. At 100 Mb/s the thread needs most of a
# core (it spins before each deadline), and in FIFO it starved the hosts: 64
# clients took 30 s to launch, 2.4 s at normal priority (the buffer-sizing
# scale runs, 2026-11-29): normal there.
SWITCH_PRIORITY = 10
REALTIME_MAX_RATE_BPS = 10_000_000
MTU_BITS = 1500 * 8


@dataclass(frozen=True)
class PortQueue:
    """One egress port's traffic-manager settings (0 = unlimited / none)."""
    rate_bps: int = 0
    buffer_packets: int = 64
    delay_s: float = 0.0           # propagation delay after serialisation, egress
    ingress_delay_s: float = 0.0   # the link's other direction, frames arriving here
    jitter_s: float = 0.0          # egress impairments, netem's names and syntax:
    distribution: str = "uniform"  #   delay jitter and its distribution,
    loss: str = ""                 #   "1%" | "gemodel p r [1-h [1-k]]",
    glitch: str = ""               #   "MEAN_GAP HOLD" (softswitch only)

    def impairments(self):
        """{softswitch --tm key: value} of the impairments that are set."""
        found = {}
        if self.jitter_s:
            found["delay"] = f"{delay_arg(self.delay_s)} {delay_arg(self.jitter_s)}"
            found["distribution"] = self.distribution
        if self.loss:
            found["loss"] = self.loss
        if self.glitch:
            found["glitch"] = self.glitch
        return found


def free_tcp_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port, proc, log_path, timeout=GRPC_START_TIMEOUT):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"switch exited with code {proc.returncode}; log {log_path}:\n"
                               + Path(log_path).read_text()[-2000:])
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"switch did not open its P4Runtime port {port} in {timeout:.0f} s; "
                       f"log {log_path}")


class P4Switch(Switch):
    """Base: a userspace P4 target in the root namespace, ports numbered by Mininet."""

    command = None
    install_hint = "run `make setup`"

    def __init__(self, name, workdir, lab, seed=1, pcap_dir=None, drops_dir=None, **params):
        params["inNamespace"] = False   # the target process opens the root-namespace veths
        super().__init__(name, **params)
        self.workdir = Path(workdir)
        self.lab = lab
        self.seed = seed
        self.pcap_dir = pcap_dir        # softswitch: one pcap per port, both directions
        self.drops_dir = drops_dir      # softswitch: the frames each queue tail-drops
        self.queues = {}
        self.grpc_port = free_tcp_port()
        self.proc = None

    @property
    def grpc_address(self):
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def log_path(self):
        return self.workdir / f"{self.name}.log"

    def set_queue(self, port, queue):
        self.queues[port] = queue

    def port_interfaces(self):
        return {port: intf.name for intf, port in self.ports.items() if port > 0}

    def executable(self):
        """The command from this Python's venv (where `make setup` installs
        softswitch), else from PATH."""
        beside = Path(sys.executable).parent / self.command
        found = str(beside) if beside.exists() else shutil.which(self.command)
        if found is None:
            raise RuntimeError(f"{self.command} not found on PATH; {self.install_hint}")
        return found

    def start(self, controllers):
        """Launch the target; Mininet then calls batchStartup with every switch."""
        command = self.command_line()
        command[0] = self.executable()
        self.proc = self.lab.popen(self, command, self.log_path.name,
                                   watch=f"{self.command} {self.name}")

    @classmethod
    def batchStartup(cls, switches):
        """Wait until each switch listens for P4Runtime (they start side by side)."""
        for switch in switches:
            wait_for_port(switch.grpc_port, switch.proc, switch.log_path)
            switch.after_start()
        return switches

    def after_start(self):
        pass


def packet_thread_priority(queues):
    """The softswitch packet thread's SCHED_FIFO priority (0: normal) for these
    port queues, by the slowest shaped one: the bottleneck, which bounds the
    packets the switch handles."""
    slowest = min((queue.rate_bps for queue in queues.values() if queue.rate_bps), default=0)
    return SWITCH_PRIORITY if slowest <= REALTIME_MAX_RATE_BPS else 0


class SoftSwitch(P4Switch):
    command = "softswitch"

    def command_line(self):
        args = [self.command, "--grpc-server-addr", self.grpc_address, "--device-id", "0",
                "--seed", str(self.seed), "--realtime", str(packet_thread_priority(self.queues))]
        for port, name in sorted(self.port_interfaces().items()):
            args += ["-i", f"{port}@{name}"]
        for port, queue in sorted(self.queues.items()):
            args += ["--tm", f"{port}:{tm_option(queue)}"]
        if self.pcap_dir:
            args += ["--pcap", str(self.pcap_dir)]
        if self.drops_dir:
            args += ["--pcap-drops", str(self.drops_dir)]
        return args


def tm_option(queue):
    settings = {"buffer": queue.buffer_packets, "delay": delay_arg(queue.delay_s),
                "ingress-delay": delay_arg(queue.ingress_delay_s), **queue.impairments()}
    if queue.rate_bps:
        settings = {"rate": rate_arg(queue.rate_bps), **settings}
    return ",".join(f"{key}={value}" for key, value in settings.items())


class Bmv2Switch(P4Switch):
    """simple_switch_grpc; rates in packets/s of MTU-sized packets (BMv2's unit)."""

    command = "simple_switch_grpc"
    install_hint = "install BMv2 or use target softswitch"

    def __init__(self, name, workdir, lab, seed=1, **params):
        super().__init__(name, workdir, lab, seed, **params)
        self.thrift_port = free_tcp_port()

    def command_line(self):
        args = [self.command, "--no-p4", "--device-id", "0", "--thrift-port", str(self.thrift_port)]
        for port, name in sorted(self.port_interfaces().items()):
            args += ["-i", f"{port}@{name}"]
        return args + ["--", "--grpc-server-addr", self.grpc_address]

    def after_start(self):
        lines = []
        for port, queue in sorted(self.queues.items()):
            lines.append(f"set_queue_depth {queue.buffer_packets} {port}")
            if queue.rate_bps:
                lines.append(f"set_queue_rate {max(1, queue.rate_bps // MTU_BITS)} {port}")
        result = subprocess.run(["simple_switch_CLI", "--thrift-port", str(self.thrift_port)],
                                input="\n".join(lines) + "\n", capture_output=True, text=True)
        if result.returncode != 0 or "Error" in result.stdout:
            raise RuntimeError(f"simple_switch_CLI failed (simple_switch_grpc needs its Thrift "
                               f"server: configure BMv2 --with-thrift): {result.stdout}{result.stderr}")
        self.apply_netem_delays()

    def apply_netem_delays(self):
        for intf, port in self.ports.items():
            queue = self.queues.get(port)
            if queue is None:
                continue
            add_netem(self, intf.name, queue.delay_s, queue)
            peer = intf.link.intf2 if intf.link.intf1 is intf else intf.link.intf1
            add_netem(peer.node, peer.name, queue.ingress_delay_s)


def netem_impairments(queue):
    """netem's words for a queue's jitter and loss (netem has no glitches)."""
    if queue.glitch:
        raise RuntimeError("glitch needs target softswitch (netem has no delay glitches)")
    if queue.jitter_s and queue.distribution.endswith(".dist"):
        raise RuntimeError(f"distribution {queue.distribution}: netem reads tables by name from "
                           "iproute2's tc directory only; install it there and give its name")
    words = f" {delay_arg(queue.jitter_s)}" if queue.jitter_s else ""
    if queue.jitter_s and queue.distribution != "uniform":   # netem's default; it has no uniform table
        words += f" distribution {queue.distribution}"
    if queue.loss:   # netem takes a bare number as a percent: always write fractions as %
        loss = queue.loss.split()
        words += " loss " + " ".join(w if w.endswith("%") or not w[0].isdigit()
                                     else f"{float(w) * 100:g}%" for w in loss)
    return words


def add_netem(node, intf_name, delay_s, queue=None):
    extra = netem_impairments(queue) if queue else ""
    if delay_s <= 0 and not extra:
        return
    out = node.cmd(f"tc qdisc replace dev {intf_name} root netem delay "
                   f"{delay_arg(delay_s)}{extra} limit 100000 2>&1; echo rc=$?")
    if "rc=0" not in out:
        raise RuntimeError(f"netem on {intf_name} failed ({out.strip()}): the BMv2 target needs "
                           "the netem qdisc for link delay")


SWITCH_CLASSES = {"softswitch": SoftSwitch, "bmv2": Bmv2Switch}
