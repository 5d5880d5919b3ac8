"""Per-host TCP tuning: namespace sysctls, route options and socket options.

Namespace-wide (sysctl): ECN, SACK, loss recovery (RACK: tcp_recovery,
TLP: tcp_early_retrans), socket buffer limits, per-packet pacing
(tcp_tso_rtt_log=0, tcp_min_tso_segs=1) and its rate: Linux paces at
ratio x cwnd x MSS / srtt, tcp_pacing_ss_ratio (200 %) in slow start
(cwnd < ssthresh / 2), tcp_pacing_ca_ratio (120 %) after; 100 % for both
sends the next segment srtt / cwnd after the previous one.
Per route (`ip route`): initcwnd, initrwnd, advmss (MSS), and the maximum
window as a locked `cwnd` (the sender's snd_cwnd_clamp; Linux applies it from
the TCP metrics cache, so a priming connection seeds the cache first: see
workloads.prime_window_clamps). TCP_WINDOW_CLAMP on the receiver is not used:
Linux 6.x raises it to the receive buffer's window as data arrives.
Per socket (the agent): TCP_CONGESTION, SO_MAX_PACING_RATE (data sender;
congestion control is per socket because a namespace may only select the
algorithms the root namespace allows, and only the sender's matters) and
SO_RCVBUF (receiver).
"""

from dataclasses import dataclass

# tcp_ecn: 1 = request ECN on outgoing connections; 2 = only accept it when asked.
ECN_ON, ECN_ACCEPT = 1, 2
# With SO_MAX_PACING_RATE at this cap the kernel paces at its own rate
# (cwnd/srtt times the ss/ca ratios); any value below ~0 turns pacing on.
UNCAPPED_PACING = 2**32 - 2
# Header bytes subtracted from the MTU for the default MSS.
TCP_IP_HEADERS = 40
MTU = 1500


@dataclass(frozen=True)
class TcpTuning:
    ecn: bool = False
    cc: str = "reno"
    sack: bool = True
    initcwnd: int = 10
    initrwnd: int = 0          # packets; 0 = kernel default
    window_clamp: int = 0      # packets; 0 = none: the sender's maximum window (RFC 2415)
    mss: int = 0               # bytes; 0 = MTU - 40
    pacing: bool = False
    pacing_rate: int = 0       # bit/s cap when pacing; 0 = kernel's own rate
    pacing_ss_ratio: int = 0   # % of cwnd/srtt paced in slow start; 0 = kernel default (200)
    pacing_ca_ratio: int = 0   # % in congestion avoidance; 0 = kernel default (120)
    rmem: int = 0              # bytes, max receive buffer; 0 = kernel default
    wmem: int = 0              # bytes, max send buffer; 0 = kernel default
    recovery: int = 1          # net.ipv4.tcp_recovery: 1 = RACK (default), 0 = dupack threshold
    early_retrans: int = 3     # net.ipv4.tcp_early_retrans: 3 = TLP (default), 0 = off

    @property
    def effective_mss(self):
        return self.mss or MTU - TCP_IP_HEADERS

    def sysctls(self):
        values = {
            "net.ipv4.tcp_ecn": ECN_ON if self.ecn else ECN_ACCEPT,
            "net.ipv4.tcp_sack": int(self.sack),
            "net.ipv4.tcp_recovery": self.recovery,
            "net.ipv4.tcp_early_retrans": self.early_retrans,
            # Cached metrics would carry ssthresh from one transfer to the next.
            "net.ipv4.tcp_no_metrics_save": 1,
            "net.ipv6.conf.all.disable_ipv6": 1,
        }
        if self.window_clamp:
            # The locked route cwnd reaches a connection only through the TCP
            # metrics cache, so keep it; ssthresh is still never carried over.
            values["net.ipv4.tcp_no_metrics_save"] = 0
            values["net.ipv4.tcp_no_ssthresh_metrics_save"] = 1
        if self.pacing:
            values["net.ipv4.tcp_tso_rtt_log"] = 0
            values["net.ipv4.tcp_min_tso_segs"] = 1
            for phase in ("ss", "ca"):
                if getattr(self, f"pacing_{phase}_ratio"):
                    values[f"net.ipv4.tcp_pacing_{phase}_ratio"] = getattr(
                        self, f"pacing_{phase}_ratio")
        if self.rmem:
            values["net.ipv4.tcp_rmem"] = f"4096 {min(131072, self.rmem)} {self.rmem}"
        if self.wmem:
            values["net.ipv4.tcp_wmem"] = f"4096 {min(16384, self.wmem)} {self.wmem}"
        return values

    def route_options(self):
        options = [f"initcwnd {self.initcwnd}"]
        if self.window_clamp:
            options.append(f"cwnd lock {self.window_clamp}")   # snd_cwnd_clamp
        if self.initrwnd:
            options.append(f"initrwnd {self.initrwnd}")
        if self.mss:
            options.append(f"advmss {self.mss}")
        return " ".join(options)

    def sender_args(self):
        """Agent `serve` options for the data sender."""
        args = ["--cc", self.cc]
        if self.pacing:
            rate = self.pacing_rate // 8 if self.pacing_rate else UNCAPPED_PACING
            args += ["--pacing-rate", str(rate)]
        if self.wmem:
            args += ["--sndbuf", str(self.wmem)]
        return args

    def receiver_args(self):
        """Agent `client` options for the data receiver."""
        args = []
        if self.rmem:
            args += ["--rcvbuf", str(self.rmem)]
        return args


def sysctl_commands(tuning, only=None):
    """The commands that set the namespace sysctls (or just those named in `only`)."""
    return [f"sysctl -q -w {key}='{value}'" for key, value in tuning.sysctls().items()
            if only is None or key in only]


def apply_sysctls(host, tuning, only=None):
    """Set the namespace sysctls (or just those named in `only`) in one round
    trip; raises RuntimeError naming the one that failed."""
    from aqmlab.shells import run_commands

    run_commands({host: sysctl_commands(tuning, only)})


def read_sysctl(host, key):
    return host.cmd(f"sysctl -n {key}").strip()
