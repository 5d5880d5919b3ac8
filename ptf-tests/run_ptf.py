#!/usr/bin/env python3
"""Run the PTF suite against a P4Runtime target on veth ports.

Everything lives in one network namespace of our own (prefix ``pt``, made
with softswitch_server.netlab, so IPv6 and offloads are off): four veth pairs (switch end ``ptsN``, PTF end ``pthN``), the target process, its
gRPC server on the namespace's loopback and the PTF process.  Nothing touches
the root namespace, so runs never collide with other users of the machine.
The namespace (and with it every veth) is deleted on exit, also on failure
or Ctrl-C.

    run_ptf.py [--target softswitch|bmv2|external] [--arch v1model|tna] [--check] [PTF TEST SPECS...]

--arch tna runs the suite against hw/tofino/red_ecn.p4 (the TNA program,
compiled by softswitch-p4c --arch tna into build/tofino/) on the built-in
target; the tests take the TNA profile's expectations (p4src/README.md).
Real Tofino needs bf-p4c and bf_switchd, which are not this harness's targets.
"""
import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from redctl import compiler
from softswitch_server import netlab

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PORTS = (0, 1, 2, 3)
GRPC_ADDR = "127.0.0.1:9559"
THRIFT_PORT = 9090
# Port 2 is the bottleneck: a slow, deep queue so bursts build known depths.
# 400 kbit/s with the suite's 100-byte frames = one frame every 2 ms.
BOTTLENECK_PORT = 2
BOTTLENECK_RATE_BPS = 400_000
BOTTLENECK_BUFFER = 200
FRAME_BYTES = 100
# "Typical packet" of the bottleneck for RED's idle decay: 20 ms at 400 kbit/s.
BOTTLENECK_MEAN_BYTES = 1000
# The TNA program's thresholds are in cells of the port's mean packet (TNA
# profile): the suite's frame, so that one frame is one packet of RED.
TNA_MEAN_BYTES = FRAME_BYTES
ARCHS = ("v1model", "tna")
TNA_PROGRAM = REPO / "hw/tofino/red_ecn.p4"


@contextmanager
def ptf_namespace(name):
    """A private namespace holding the switch and PTF ends of every veth; it
    is deleted on exit, and its veths with it."""
    with netlab.Namespace(name) as ns:
        for port in PORTS:
            netlab.VethPair(switch_iface(port), ptf_iface(port), ns=name, peer_ns=name).create()
        yield ns


def switch_iface(port):
    return f"pts{port}"


def ptf_iface(port):
    return f"pth{port}"


def wait_for_tcp(ns, addr, proc, timeout_s=30.0):
    """Block until something listens on ``addr`` inside ``ns``."""
    host, port = addr.rsplit(":", 1)
    probe = ("import socket,sys; s=socket.socket(); s.settimeout(0.5);"
             f"sys.exit(s.connect_ex(({host!r},{port})))")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"target exited with status {proc.returncode} before listening")
        if netlab.sh(sys.executable, "-c", probe, ns=ns, check=False).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"target did not listen on {addr} within {timeout_s:.0f} s")


class Target:
    """Base: start/stop a target process inside the namespace."""

    name = "?"
    #: commands that must be on PATH
    tools = ()
    #: shell command the tests run after every pipeline push ("" = none)
    after_push = ""

    def __init__(self, ns, log_dir, seed, trace=False):
        self.ns, self.log_dir, self.seed, self.trace = ns, log_dir, seed, trace
        self.proc = None

    def start(self):
        log = open(self.log_dir / f"{self.name}.log", "w")
        argv = netlab.netns_argv(self.ns, *self.argv())
        print("target:", shlex.join(argv), flush=True)
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_for_tcp(self.ns, GRPC_ADDR, self.proc)

    def stop(self):
        if self.proc is not None:
            netlab.stop(self.proc, signal.SIGTERM)


class Softswitch(Target):
    """The built-in target; the traffic manager is set on its command line."""

    name = "softswitch"
    tools = ()

    def argv(self):
        argv = [str(Path(sys.executable).parent / "softswitch")]
        for port in PORTS:
            argv += ["-i", f"{port}@{switch_iface(port)}"]
        argv += ["--grpc-server-addr", GRPC_ADDR, "--device-id", "0",
                 "--seed", str(self.seed),
                 "--tm", f"{BOTTLENECK_PORT}:rate={BOTTLENECK_RATE_BPS},"
                         f"buffer={BOTTLENECK_BUFFER}"]
        return argv + (["--log-console"] if self.trace else [])


class Bmv2(Target):
    """simple_switch_grpc; queue rate/depth go through simple_switch_CLI.

    Command line as BMv2's simple_switch_grpc README gives it: standard bmv2
    options (--no-p4, --device-id, -i PORT@IFACE, --thrift-port), then `--`
    and the target's own (--grpc-server-addr, --cpu-port). simple_switch_CLI
    needs simple_switch_grpc's Thrift server, which BMv2 builds only when
    configured --with-thrift. Queues: `set_queue_rate <packets/s> <port>` and
    `set_queue_depth <packets> <port>` (one queue per port; with the target
    option --priority-queues N both take a third argument, the priority).
    BMv2 sets rates in packets per second, so the bottleneck rate is
    converted with the suite's fixed frame size.  Its random() cannot be
    seeded, so statistical tests rely on their stated confidence alone.
    """

    name = "bmv2"
    tools = ("simple_switch_grpc", "simple_switch_CLI")

    def argv(self):
        argv = ["simple_switch_grpc", "--device-id", "0", "--no-p4",
                "--thrift-port", str(THRIFT_PORT)]
        for port in PORTS:
            argv += ["-i", f"{port}@{switch_iface(port)}"]
        return argv + ["--", "--grpc-server-addr", GRPC_ADDR, "--cpu-port", "255"]

    @property
    def after_push(self):
        pps = BOTTLENECK_RATE_BPS // (8 * FRAME_BYTES)
        return (f"printf 'set_queue_rate {pps} {BOTTLENECK_PORT}\\n"
                f"set_queue_depth {BOTTLENECK_BUFFER} {BOTTLENECK_PORT}\\n' | "
                f"simple_switch_CLI --thrift-port {THRIFT_PORT}")


TARGETS = {"softswitch": Softswitch, "bmv2": Bmv2}


def ptf_argv(args, test_params, interfaces):
    """The PTF command line; ``interfaces`` are PTF's "PORT@IFACE" specs."""
    argv = [str(Path(sys.executable).parent / "ptf"), "--test-dir", str(HERE / "tests"),
            "--log-dir", str(args.log_dir / "ptf"), "--qlen", "100000",
            "--default-negative-timeout", "0.3",
            "--test-params", ";".join(f"{k}={v!r}" for k, v in test_params.items())]
    if args.failfast:
        argv.append("--failfast")
    for spec in interfaces:
        argv += ["-i", spec]
    return argv + list(args.tests)


def run_external(args, test_params):
    """Target already running and wired by the user: PTF on their interfaces."""
    interfaces = args.interfaces.split()
    if sorted(int(s.split("@")[0]) for s in interfaces if "@" in s) != list(PORTS):
        sys.exit("run_ptf: --interfaces needs ports 0-3, e.g. '0@eth1 1@eth2 2@eth3 3@eth4'")
    return subprocess.run(ptf_argv(args, test_params, interfaces)).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="softswitch",
                    choices=sorted(TARGETS) + ["external"])
    ap.add_argument("--arch", default="v1model", choices=ARCHS,
                    help="tna: hw/tofino/red_ecn.p4 on the built-in target")
    ap.add_argument("--p4info", help="default: build/red_ecn.p4info.txtpb (tna: build/tofino/)")
    ap.add_argument("--json", help="default: build/red_ecn.json (tna: build/tofino/)")
    ap.add_argument("--seed", type=int, default=1, help="target's random seed")
    ap.add_argument("--grpc", default=GRPC_ADDR, help="external target only")
    ap.add_argument("--interfaces", default="", help="external target only")
    ap.add_argument("--after-push", default="", help="external target only")
    ap.add_argument("--log-dir", type=Path, default=REPO / "build/ptf-logs")
    ap.add_argument("--failfast", action="store_true")
    ap.add_argument("--trace", action="store_true",
                    help="per-packet trace in the target's log (softswitch --log-console)")
    ap.add_argument("--check", action="store_true",
                    help="only check that the target, compiler and artifacts are there")
    ap.add_argument("tests", nargs="*", help="PTF test specs (default: all)")
    args = ap.parse_args()
    build = REPO / ("build/tofino" if args.arch == "tna" else "build")
    args.p4info = args.p4info or str(build / "red_ecn.p4info.txtpb")
    args.json = args.json or str(build / "red_ecn.json")
    problem = missing_prerequisite(args)
    if problem:
        sys.exit(problem)
    if args.check:
        return 0
    if os.geteuid() != 0:
        sys.exit("run_ptf: needs root (network namespaces and raw sockets)")
    args.log_dir.mkdir(parents=True, exist_ok=True)
    params = {"p4info": args.p4info, "json": args.json, "grpc": args.grpc,
              "p4src": str(REPO / "p4src"), "tna_program": str(TNA_PROGRAM),
              "target": args.target, "arch": args.arch, "seed": args.seed,
              "bottleneck_port": BOTTLENECK_PORT, "bottleneck_bps": BOTTLENECK_RATE_BPS,
              "bottleneck_buffer": BOTTLENECK_BUFFER, "frame_bytes": FRAME_BYTES,
              "bottleneck_mean_bytes": TNA_MEAN_BYTES if args.arch == "tna" else BOTTLENECK_MEAN_BYTES,
              "after_push": args.after_push}
    if args.target == "external":
        return run_external(args, params)
    return run_in_namespace(args, params)


def missing_prerequisite(args):
    """One line saying what is missing to run the suite (None: nothing)."""
    if args.arch == "tna" and args.target != "softswitch":
        return (f"make ptf ARCH=tna: the TNA program runs on the built-in target only "
                f"(TARGET=softswitch); Tofino needs bf-p4c and bf_switchd (hw/tofino/README.md)")
    for tool in getattr(TARGETS.get(args.target), "tools", ()):
        if shutil.which(tool) is None:
            return (f"make ptf TARGET={args.target}: {tool} not found on PATH; "
                    "install BMv2 or use TARGET=softswitch")
    try:
        if args.arch == "v1model":  # broken.py compiles variants (TNA: softswitch-p4c --arch tna)
            compiler.resolve()
    except compiler.CompilerError as e:
        return f"make ptf: {e}"
    for f in (args.p4info, args.json):
        if not Path(f).is_file():
            how = "make build" if args.arch == "v1model" else "make -C ptf-tests build-tna"
            return f"run_ptf: {f} is missing: run `{how}` first"
    return None


def run_in_namespace(args, params):
    ns_name = f"pt{os.getpid()}"
    # SIGTERM (e.g. a CI timeout) must still run the finally blocks below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with ptf_namespace(ns_name):
        target = TARGETS[args.target](ns_name, args.log_dir, args.seed, args.trace)
        params["grpc"] = GRPC_ADDR
        params["after_push"] = target.after_push
        try:
            target.start()
            interfaces = [f"{port}@{ptf_iface(port)}" for port in PORTS]
            argv = netlab.netns_argv(ns_name, *ptf_argv(args, params, interfaces))
            print("ptf:", shlex.join(argv), flush=True)
            status = subprocess.run(argv).returncode
        finally:
            target.stop()
    if status != 0:
        print(f"run_ptf: FAILED (logs: {args.log_dir}/ptf/, target: {args.log_dir}/{args.target}.log)",
              file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
