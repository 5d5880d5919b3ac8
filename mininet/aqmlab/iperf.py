"""Bulk transfers with iperf3 (Debian's), as an alternative to the agent.

`iperf3 -R` makes the server the data sender, as everywhere in the lab. The
client's JSON report becomes the same records the agent writes: one `bulk`
record per stream and cumulative `sample` records per reporting interval."""

import json
from pathlib import Path

INTERVAL = 0.5


def server_args(port):
    return ["iperf3", "--server", "--port", str(port), "--one-off"]


def client_args(pair, delay_s, duration_s, log):
    """iperf3 client command, started after `delay_s` (a shell sleep)."""
    workload, tcp = pair.workload, pair.workload.tcp
    args = ["iperf3", "--client", pair.server.ip, "--port", str(pair.port), "--reverse",
            "--json", "--logfile", str(log), "--interval", str(INTERVAL),
            "--parallel", str(workload.connections), "--congestion", tcp.cc]
    if workload.size > 0:
        args += ["--bytes", str(workload.size)]
    else:
        args += ["--time", str(max(1, round(duration_s)))]   # iperf3 takes whole seconds
    if tcp.pacing:
        args += ["--fq-rate", str(tcp.pacing_rate or 10**10)]
    if tcp.rmem:
        args += ["--window", str(tcp.rmem)]
    command = " ".join(args)
    return ["sh", "-c", f"sleep {max(0.0, delay_s):.6f}; exec {command}"]


def records(log, workload_name, host, flow_prefix, started_at):
    """Agent-style records from an iperf3 JSON report (none if it never ran).

    iperf3 stamps its start in whole seconds only, so interval times are taken
    relative to `started_at`, when the client was released (ms-accurate)."""
    path = Path(log)
    if not path.exists() or not path.read_text().strip():
        return []
    report = json.loads(path.read_text())
    if "error" in report:
        raise RuntimeError(f"iperf3 ({host}): {report['error']}")
    start = started_at
    common = {"workload": workload_name, "host": host}
    out = []
    streams = {s["socket"]: i for i, s in enumerate(report["start"]["connected"])}
    totals = {}
    for interval in report["intervals"]:
        for stream in interval["streams"]:
            index = streams[stream["socket"]]
            totals[index] = totals.get(index, 0) + stream["bytes"]
            out.append({**common, "kind": "sample", "flow": f"{flow_prefix}.{index}",
                        "t": start + stream["end"], "bytes": totals[index]})
    for stream in report["end"]["streams"]:
        receiver = stream["receiver"]
        index = streams[receiver["socket"]]
        out.append({**common, "kind": "bulk", "flow": f"{flow_prefix}.{index}", "transfer": 0,
                    "start": start + receiver["start"], "end": start + receiver["end"],
                    "bytes": totals.get(index, receiver["bytes"]), "size": -1,
                    "complete": True})
    return out
