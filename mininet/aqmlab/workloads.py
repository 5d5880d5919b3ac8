"""Run workloads on host pairs: one sender agent per (server, workload), one
client agent per client host, all starting at a common epoch; collect their
per-transfer records."""

import ctypes
import json
import os
import re
import socket
import sys
import threading
import time
from pathlib import Path

from aqmlab import iperf
from aqmlab.config import measured_transfer

AGENT = [sys.executable, "-m", "aqmlab.agent"]
READY_TIMEOUT = 15.0
# seconds between launching clients and their common epoch: a base plus a
# launch time per client (128 clients took 6 s at 100 Mb/s once the first ones
# were sending; a run whose last clients start late fails)
START_LEAD = 1.0
START_LEAD_PER_CLIENT = 0.05
STOP_GRACE = 5.0        # seconds a client may take past its deadline to log and exit
SENDER_LOG_GRACE = 1.0  # seconds for senders to see the clients' closes and log tcp_info


def start_servers(lab, pairs):
    """One sender agent per (server host, workload port); wait until all listen."""
    started, ready_files = {}, []
    for pair in pairs:
        key = (pair.server.host.name, pair.port)
        if key in started or pair.workload.kind == "echo":   # the server's kernel answers echoes
            continue
        log_name = f"server-{pair.server.host.name}-{pair.port}.log"
        if pair.workload.tool == "iperf3":
            started[key] = lab.popen(pair.server.host, iperf.server_args(pair.port), log_name,
                                     watch=f"iperf3 server {key[0]}:{pair.port}")
            wait_listening(pair.server.host, pair.port, started[key], lab.workdir)
            continue
        ready = lab.workdir / f"ready-{pair.server.host.name}-{pair.port}"
        ready.unlink(missing_ok=True)
        log = tcp_info_log(lab, pair)
        log.unlink(missing_ok=True)
        args = AGENT + ["serve", "--port", str(pair.port), "--ready-file", str(ready),
                        "--log", str(log)]
        started[key] = lab.popen(pair.server.host, args + pair.workload.tcp.sender_args(),
                                 log_name, watch=f"traffic server {key[0]}:{pair.port}")
        ready_files.append((ready, started[key]))
    wait_ready(ready_files, lab.workdir)
    return list(started.values())


def tcp_info_log(lab, pair):
    """Where a sender agent logs its connections' tcp_info."""
    return lab.workdir / f"tcpinfo-{pair.server.host.name}-{pair.port}.jsonl"


def wait_listening(host, port, proc, workdir):
    deadline = time.time() + READY_TIMEOUT
    while not host.cmd(f"ss -Hltn 'sport = :{port}'").strip():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"iperf3 server on {host.name}:{port} did not start; see "
                               f"{workdir}")
        time.sleep(0.05)


def wait_ready(ready_files, workdir):
    deadline = time.time() + READY_TIMEOUT
    for ready, proc in ready_files:
        while not ready.exists():
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"traffic server did not start ({ready.name}); see logs in "
                                   f"{workdir}")
            time.sleep(0.05)


def client_args(pair, epoch, duration, seed, log):
    workload = pair.workload
    args = AGENT + [
        "client", "--kind", workload.kind, "--server", pair.server.ip, "--port", str(pair.port),
        "--log", str(log), "--workload", workload.name, "--host", pair.client.host.name,
        "--flow-prefix", f"{workload.name}.{pair.index}", "--epoch", f"{epoch:.6f}",
        "--start", str(workload.start), "--duration", str(max(0.0, duration - workload.start)),
        "--seed", str(seed), "--connections", str(workload.connections),
        "--size", str(workload.size), "--request-bytes", str(workload.request_bytes),
        "--object-size", json.dumps(workload.object_size), "--think", json.dumps(workload.think),
        "--embedded", str(workload.embedded), "--max-size", str(workload.max_size),
        "--volleys", str(workload.volleys), "--timeout", str(workload.timeout_s)]
    if workload.repeat:
        args.append("--repeat")
    return args + workload.tcp.receiver_args()


PRIME_REQUEST = b"1000 x\n"    # unlabelled: the sender logs no tcp_info for it
PRIME_BYTES = 1000
PRIME_TIMEOUT = 10.0        # seconds for one priming transfer
CACHE_TIMEOUT = 2.0         # seconds for the senders' caches to show the clamps
CLONE_NEWNET = 0x40000000   # setns(2): a network namespace
_LIBC = ctypes.CDLL(None, use_errno=True)


def prime_window_clamps(pairs, spacing_s=0.0):
    """Seed each clamped sender's TCP metrics cache with its route's locked
    cwnd (Linux applies the maximum window from that cache), then check every
    cache holds it. One small transfer per pair, from the client's namespace,
    all under way together: started `spacing_s` apart (a full-size frame's
    time at the path's slowest link), their packets do not queue behind each
    other, so the RTT they leave in the cache (the first RTO of the measured
    connections) is the path's, as when they ran one at a time."""
    clamped = [pair for pair in pairs
               if pair.workload.tcp.window_clamp and pair.workload.tool == "agent"]
    errors, threads = {}, []
    for pair in clamped:
        if threads:
            time.sleep(spacing_s)
        threads.append(threading.Thread(target=_prime_one, args=(pair, errors), daemon=True))
        threads[-1].start()
    for thread in threads:
        thread.join()
    for pair in clamped:
        if pair.client.ip in errors:
            raise RuntimeError(f"priming {pair.server.host.name} -> {pair.client.ip} failed: "
                               f"{errors[pair.client.ip]}")
    wait_for_clamps(clamped)


def _prime_one(pair, errors):
    """One priming transfer in this thread, moved into the client's network
    namespace (setns affects the calling thread only)."""
    try:
        enter_network_namespace(pair.client.host.pid)
        with socket.create_connection((pair.server.ip, pair.port), timeout=PRIME_TIMEOUT) as sock:
            sock.sendall(PRIME_REQUEST)
            got = 0
            while got < PRIME_BYTES:
                data = sock.recv(PRIME_BYTES - got)
                if not data:
                    raise ConnectionError(f"closed after {got} of {PRIME_BYTES} bytes")
                got += len(data)
    except OSError as error:
        errors[pair.client.ip] = repr(error)


def enter_network_namespace(pid):
    """Move the calling thread into the network namespace of process `pid`."""
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if _LIBC.setns(fd, CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"setns into pid {pid}'s network namespace: "
                                 f"{os.strerror(error)}")
    finally:
        os.close(fd)


def wait_for_clamps(pairs):
    """Until each pair's sender caches its client's locked cwnd (one
    `ip tcp_metrics` per server host and poll)."""
    deadline = time.monotonic() + CACHE_TIMEOUT
    while True:
        cached = {}
        missing = []
        for pair in pairs:
            host = pair.server.host
            if host.name not in cached:
                cached[host.name] = cached_cwnds(host)
            if cached[host.name].get(pair.client.ip) != pair.workload.tcp.window_clamp:
                missing.append(pair)
        if not missing:
            return
        if time.monotonic() > deadline:
            pair = missing[0]
            raise RuntimeError(f"maximum window for {pair.server.host.name} -> {pair.client.ip} "
                               f"did not reach the TCP metrics cache ({len(missing)} of "
                               f"{len(pairs)} pairs missing)")
        time.sleep(0.02)


def cached_cwnds(host):
    """{destination address: cwnd} of a host's TCP metrics cache."""
    cwnds = {}
    for line in host.cmd("ip tcp_metrics show").splitlines():
        found = re.match(r"(\S+) .*\bcwnd (\d+)", line)
        if found:
            cwnds[found.group(1)] = int(found.group(2))
    return cwnds


class Run:
    """Clients of one scenario run, started together at `epoch` (after the
    servers and the window clamps' priming, `prime_spacing_s` apart)."""

    def __init__(self, lab, pairs, duration, seed, prime_spacing_s=0.0):
        self.lab, self.pairs, self.duration = lab, pairs, duration
        self.servers = start_servers(lab, pairs)
        self.sender_ports = {}      # host -> ports of its agent senders
        for pair in pairs:
            if pair.workload.tool == "agent" and pair.workload.kind != "echo":
                self.sender_ports.setdefault(pair.server.host, set()).add(pair.port)
        prime_window_clamps(pairs, prime_spacing_s)
        lead = START_LEAD + START_LEAD_PER_CLIENT * len(pairs)
        self.epoch = time.time() + lead
        self.logs, self.clients = [], []
        for pair in pairs:
            name = f"{pair.workload.name}-{pair.index}"
            if pair.workload.tool == "iperf3":
                log = lab.workdir / f"iperf3-{name}.json"
                args = iperf.client_args(pair, self.epoch + pair.workload.start - time.time(),
                                         duration - pair.workload.start, log)
            else:
                log = lab.workdir / f"transfers-{name}.jsonl"
                args = client_args(pair, self.epoch, duration, seed, log)
            log.unlink(missing_ok=True)
            self.logs.append((pair, log))
            self.clients.append(lab.popen(pair.client.host, args, f"client-{name}.log"))
        overrun = time.time() - self.epoch
        if overrun > 0:     # the last clients started late, and the window is not theirs
            raise RuntimeError(f"starting {len(pairs)} client(s) took {lead + overrun:.1f} s, "
                               f"{overrun:.1f} s past their common start: the machine is too "
                               "busy for this run (fewer hosts, or fewer runs at once)")

    @property
    def end(self):
        return self.epoch + self.duration

    def wait(self, on_tick=None):
        """Block until the run is over, then let clients finish; see wait_until_end."""
        self.wait_until_end(on_tick)
        self.finish()

    def wait_until_end(self, on_tick=None, until_complete=False):
        """Block until epoch + duration, calling on_tick(seconds elapsed) ~ every 0.5 s;
        with until_complete, only until every client of a fixed-size bulk
        workload has exited (its transfer done). `ended` is when it stopped."""
        measured = [proc for (pair, _), proc in zip(self.logs, self.clients)
                    if measured_transfer(pair.workload)] if until_complete else []
        while time.time() < self.end:
            time.sleep(min(0.5, max(0.0, self.end - time.time())))
            if on_tick:
                on_tick(min(self.duration, max(0.0, time.time() - self.epoch)))
            if measured and all(proc.poll() is not None for proc in measured):
                break
        self.ended = min(time.time(), self.end)

    def finish(self):
        """Give clients a moment to log their last transfer, and senders until
        their clients' closes have reached them (at most SENDER_LOG_GRACE),
        then stop everything: a sender logs the tcp_info of the connections
        it still holds when stopped, final once the close has arrived."""
        deadline = time.time() + STOP_GRACE
        for proc in self.clients:
            while proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
        deadline = time.time() + SENDER_LOG_GRACE
        clients_done = all(proc.poll() is not None for proc in self.clients)
        while time.time() < deadline and not (clients_done and not self.open_sender_connections()):
            time.sleep(0.05)
        self.stop()

    def open_sender_connections(self):
        """How many connections the agent senders hold that their clients'
        closes have not reached, or that they have not logged yet."""
        count = 0
        for host, ports in self.sender_ports.items():
            ports = " or ".join(f"sport = :{port}" for port in sorted(ports))
            out = host.cmd(f"ss -Htn state established state syn-recv state close-wait "
                           f"'( {ports} )'")
            count += sum(1 for line in out.splitlines() if line.strip())
        return count

    def stop(self):
        self.lab.stop_processes(self.clients + self.servers)

    def records(self):
        records = []
        for pair, log in self.logs:
            if pair.workload.tool == "iperf3":
                records += iperf.records(log, pair.workload.name, pair.client.host.name,
                                         f"{pair.workload.name}.{pair.index}",
                                         self.epoch + pair.workload.start)
            elif Path(log).exists():
                records += _read_jsonl(log)
        senders = {tcp_info_log(self.lab, pair) for pair in self.pairs
                   if pair.workload.tool == "agent"}
        for log in sorted(senders):
            if log.exists():
                records += _read_jsonl(log)
        return records


def _read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line]
