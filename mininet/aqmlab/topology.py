"""Topologies: servers -- R1 ==bottleneck== R2 -- clients, built in Mininet.

All three study testbeds have this shape (data flows server -> client):
the RFC 2415 dumbbell (one server per client), the RFC 2884 testbed (one
shared server; R1 is the RED bottleneck, the path delay sits on R1-R2) and
the buffer-sizing single bottleneck with n sender/receiver pairs. R1 and R2
are P4 switches; every link's rate, buffer and delay live in their traffic
managers (the kernel has no netem); host-side access rates use tbf.

Addressing: servers 10.1.x.y/32, clients 10.2.x.y/32; every host routes
everything via 10.0.0.1 (on-link) whose MAC, the switch port's, is a
permanent neighbour entry, so no ARP crosses the P4 routers.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path

from aqmlab.config import ConfigError
from aqmlab.p4switch import SWITCH_CLASSES, PortQueue
from aqmlab.shells import run_commands
from aqmlab.tuning import sysctl_commands

GATEWAY = "10.0.0.1"
SERVER_NET, CLIENT_NET = 1, 2
MTU_BITS = 1500 * 8
REVERSE_BUFFER = 1000   # packets, the ACK direction of the bottleneck
UNLIMITED_RATE_FOR_RED = 10**10   # idle-decay rate the controller assumes for unshaped ports
REPO = Path(__file__).resolve().parents[2]
# /proc/net/dev's columns per direction (receive, then transmit), as the kernel prints them
NET_DEV_COLUMNS = ("bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast")


def host_ip(net, index):
    return f"10.{net}.{index // 250}.{index % 250 + 1}"


def host_mac(net, index):
    return f"02:0{net}:00:{index >> 16 & 255:02x}:{index >> 8 & 255:02x}:{index & 255:02x}"


def port_mac(switch_index, port):
    return f"02:5{switch_index}:00:00:{port >> 8 & 255:02x}:{port & 255:02x}"


def bdp_packets(rate_bps, rtt_s):
    """C x RTT in MTU packets, where RTT is what a full-size packet sees: the
    propagation RTT plus its own transmission time (8 ms at 1.5 Mb/s)."""
    return max(1, math.ceil(rate_bps * rtt_s / MTU_BITS) + 1)


def resolve_buffer(link, topology, flows):
    """Packets for a link: a count, C x RTT ("bdp"), or C x RTT / sqrt(n)."""
    if link.buffer == "bdp":
        return bdp_packets(link.rate_bps, topology.base_rtt_s)
    if link.buffer == "bdp/sqrtn":
        return max(1, math.ceil(bdp_packets(link.rate_bps, topology.base_rtt_s) / math.sqrt(flows)))
    return link.buffer


@dataclass
class Endpoint:
    """A host and what the lab needs to know about it."""
    host: object
    ip: str
    mac: str
    switch_port: int
    gateway_mac: str
    tuning: object
    workloads: list = field(default_factory=list)


@dataclass
class Pair:
    """One server -> client pair of a workload."""
    workload: object
    index: int
    server: Endpoint
    client: Endpoint
    port: int          # the server agent's TCP port


class Dumbbell:
    """The built network of one scenario."""

    def __init__(self, scenario, target, lab, seed=1, capture_dir=None, drops_dir=None):
        self.scenario, self.target, self.lab = scenario, target, lab
        self.servers, self.clients, self.pairs = [], [], []
        self.controllers = []
        self.bottleneck_buffer = resolve_buffer(
            scenario.topology.bottleneck, scenario.topology, self.flow_count())
        cls = SWITCH_CLASSES[target]
        self.r1 = lab.add_switch(cls, seed=seed, pcap_dir=capture_dir, drops_dir=drops_dir)
        self.r2 = lab.add_switch(cls, seed=seed + 1)
        self._add_hosts()
        link = lab.add_link(self.r1, self.r2, port_mac(1, 1000), port_mac(2, 1000))
        self.r1_bottleneck_port = self.r1.ports[link.intf1]
        self.r2_bottleneck_port = self.r2.ports[link.intf2]
        self._set_queues()

    def flow_count(self):
        return sum(w.pairs * w.connections for w in self.scenario.workloads)

    # ---------------------------------------------------------------- hosts
    def _add_hosts(self):
        shared = None
        agent_port = 5000
        for workload in self.scenario.workloads:
            agent_port += 1
            for index in range(workload.pairs):
                if self.scenario.topology.shared_server:
                    shared = shared or self._add_endpoint(SERVER_NET, self.r1, 1,
                                                          self.scenario.tcp)
                    server = shared
                else:
                    server = self._add_endpoint(SERVER_NET, self.r1, 1, workload.tcp)
                client = self._add_endpoint(CLIENT_NET, self.r2, 2, workload.tcp)
                server.workloads.append(workload)
                self.pairs.append(Pair(workload, index, server, client, agent_port))

    def _add_endpoint(self, net, switch, switch_index, tuning):
        group = self.servers if net == SERVER_NET else self.clients
        index = len(group) + 1
        ip, mac = host_ip(net, index), host_mac(net, index)
        host = self.lab.add_host(ip=None)
        gateway_mac = port_mac(switch_index, switch.newPort())
        link = self.lab.add_link(host, switch, mac, gateway_mac)
        endpoint = Endpoint(host, ip, mac, switch.ports[link.intf2], gateway_mac, tuning)
        group.append(endpoint)
        return endpoint

    def _set_queues(self):
        topo = self.scenario.topology
        for endpoints, switch, access in ((self.servers, self.r1, topo.server_access),
                                          (self.clients, self.r2, topo.client_access)):
            for endpoint in endpoints:
                switch.set_queue(endpoint.switch_port, PortQueue(
                    access.rate_bps, resolve_buffer(access, topo, 1), access.delay_s,
                    access.delay_s))
        bottleneck = topo.bottleneck
        impairments = dict(jitter_s=bottleneck.jitter_s, distribution=bottleneck.distribution,
                           loss=bottleneck.loss, glitch=bottleneck.glitch)   # both directions
        self.r1.set_queue(self.r1_bottleneck_port, PortQueue(
            bottleneck.rate_bps, self.bottleneck_buffer, bottleneck.delay_s, 0.0, **impairments))
        self.r2.set_queue(self.r2_bottleneck_port, PortQueue(
            bottleneck.rate_bps, REVERSE_BUFFER, bottleneck.delay_s, 0.0, **impairments))

    # ---------------------------------------------------------------- start
    def start(self, build_dir):
        """Start the switches, configure every host (all at once), program the switches."""
        self.lab.start()
        topo = self.scenario.topology
        commands = {}
        for endpoints, access in ((self.servers, topo.server_access),
                                  (self.clients, topo.client_access)):
            for endpoint in endpoints:
                commands[endpoint.host] = host_commands(endpoint, access.rate_bps)
        for pair in self.pairs:
            commands[pair.server.host] += route_to_client(pair)
        run_commands(commands)
        self._program_switches(build_dir)

    def _program_switches(self, build_dir):
        from redctl import Controller
        from redctl.convert import PortSpec

        p4info, pipeline = pipeline_files(build_dir)
        for switch, index, local, remote_net, uplink in (
                (self.r1, 1, self.servers, CLIENT_NET, self.r1_bottleneck_port),
                (self.r2, 2, self.clients, SERVER_NET, self.r2_bottleneck_port)):
            ports = {port: PortSpec(buffer_packets=q.buffer_packets,
                                    rate_bps=q.rate_bps or UNLIMITED_RATE_FOR_RED)
                     for port, q in switch.queues.items()}
            ctl = Controller(switch.grpc_address, device_id=0, ports=ports)
            self.controllers.append(ctl)
            ctl.push_pipeline(str(p4info), str(pipeline))
            for endpoint in local:
                ctl.add_route(f"{endpoint.ip}/32", port=endpoint.switch_port,
                              dst_mac=endpoint.mac, src_mac=port_mac(index, endpoint.switch_port))
            peer = 2 if index == 1 else 1
            ctl.add_route(f"10.{remote_net}.0.0/16", port=uplink, dst_mac=port_mac(peer, 1000),
                          src_mac=port_mac(index, 1000))
        self.set_aqm(self.scenario.aqm)

    def prime_spacing_s(self):
        """A full-size frame's time at the path's slowest link: how far apart
        the window clamps' priming transfers start (workloads.prime_window_clamps)."""
        topo = self.scenario.topology
        rates = [link.rate_bps for link in (topo.bottleneck, topo.server_access,
                                            topo.client_access) if link.rate_bps]
        return MTU_BITS / min(rates) if rates else 0.0

    def interface_counter(self, endpoints, name):
        """Sum of a statistics counter ("rx_packets", "tx_bytes", ...) over the
        endpoints' interfaces, read from each host's /proc/PID/net/dev (its
        namespace's view) in this process: no shell round trip, so every host
        is read within a millisecond of the others, also on a loaded machine."""
        direction, kind = name.split("_", 1)
        column = NET_DEV_COLUMNS.index(kind) + (8 if direction == "tx" else 0)
        total = 0
        for endpoint in endpoints:
            intf = endpoint.host.defaultIntf().name
            lines = Path(f"/proc/{endpoint.host.pid}/net/dev").read_text().splitlines()
            row = next(line for line in lines if line.strip().startswith(f"{intf}:"))
            total += int(row.split(":", 1)[1].split()[column])
        return total

    def enable_telemetry(self, period):
        """One queue sample per `period` packets leaving the bottleneck port."""
        self.bottleneck_controller.set_sampling(self.r1_bottleneck_port, period)

    def set_aqm(self, aqm):
        """RED on R1's bottleneck port; drop-tail is the port without a RED entry."""
        from redctl import RedConfig

        if aqm.mode == "droptail":
            return
        config = RedConfig(minth=aqm.minth, maxth=aqm.maxth, maxp=aqm.maxp, wq_log=aqm.wq_log,
                           gentle=aqm.gentle, mode=aqm.mode, ecn=aqm.ecn)
        try:
            self.controllers[0].set_red(self.r1_bottleneck_port, config)
        except ValueError as error:
            raise RuntimeError(f"aqm: {error} (bottleneck buffer {self.bottleneck_buffer} "
                               "packets)") from None

    @property
    def bottleneck_controller(self):
        return self.controllers[0]

    def close_controllers(self):
        for ctl in self.controllers:
            ctl.close()
        self.controllers = []


def pipeline_files(build_dir):
    """(p4info, pipeline JSON) of red_ecn in build_dir (default: the repo's build/)."""
    fix = ("run `make build` first" if build_dir is None else
           f"build it with `python -m redctl.compiler p4src/red_ecn.p4 -o {build_dir}`")
    build_dir = Path(build_dir or REPO / "build")
    p4info, pipeline = build_dir / "red_ecn.p4info.txtpb", build_dir / "red_ecn.json"
    for path in (p4info, pipeline):
        if not path.exists():
            raise RuntimeError(f"{path} is missing: {fix}")
    return p4info, pipeline


def check_build(build_dir):
    """pipeline_files as a one-line error (ConfigError) for a command's input."""
    try:
        pipeline_files(build_dir)
    except RuntimeError as error:
        raise ConfigError(str(error)) from None


def host_commands(endpoint, access_rate_bps):
    """Address, route via the switch with the TCP route options, static
    neighbour, namespace sysctls, and the host side of the access link."""
    intf, tuning = endpoint.host.defaultIntf().name, endpoint.tuning
    commands = [
        f"ip addr flush dev {intf}",
        f"ip addr add {endpoint.ip}/32 dev {intf}",
        f"ip link set {intf} up",
        f"ip neigh replace {GATEWAY} lladdr {endpoint.gateway_mac} dev {intf} nud permanent",
        f"ip route replace {GATEWAY} dev {intf} scope link",
        f"ip route replace default via {GATEWAY} dev {intf} onlink {tuning.route_options()}",
    ]
    if access_rate_bps:
        commands.append(tbf_command(intf, access_rate_bps))
    return commands + sysctl_commands(tuning)


def route_to_client(pair):
    """The server's route to this client carries the workload's route options,
    so a shared server tunes each workload's connections separately -> commands
    for the server's shell, after its host_commands."""
    tuning, intf = pair.workload.tcp, pair.server.host.defaultIntf().name
    commands = [f"ip route replace {pair.client.ip}/32 via {GATEWAY} dev {intf} onlink "
                f"{tuning.route_options()}"]
    if tuning.window_clamp:
        commands += sysctl_commands(tuning, only=("net.ipv4.tcp_no_metrics_save",
                                                  "net.ipv4.tcp_no_ssthresh_metrics_save"))
    return commands


def tbf_command(intf, rate_bps):
    """Host-side access rate; a small burst so the host sends at line rate."""
    burst = max(3200, rate_bps // 8 // 250)
    return f"tc qdisc replace dev {intf} root tbf rate {rate_bps}bit burst {burst} latency 100ms"


def build(scenario, target, lab, build_dir=None, seed=1, capture_dir=None, drops_dir=None):
    """Build and start the network of one scenario on `lab` (a LabNetwork);
    with capture_dir, R1 writes a pcap per port there (capture.py); with
    drops_dir, the frames its queues tail-drop (drops.py)."""
    network = Dumbbell(scenario, target, lab, seed, capture_dir, drops_dir)
    network.start(build_dir)
    return network

