"""P4Runtime control-plane benchmark: how fast the server takes and returns entries.

    python -m softswitch_server.bench [--entries 1000] [--out softswitch/softswitch_server/BENCH.md]

Compiles p4src/red_ecn.p4 with softswitch-p4c, serves it from an in-process
server over real gRPC on loopback, and times: inserting N ipv4_lpm entries
one Write RPC each, the same in batches of 500, a wildcard Read of all N, and
deleting them in batches. The results file records the machine load, which
matters on a shared machine.
"""
import argparse
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .client import P4RTClient, Update

REPO = pathlib.Path(__file__).resolve().parents[2]
BATCH = 500


def compile_red_ecn(out: pathlib.Path):
    p4c = pathlib.Path(sys.executable).parent / "softswitch-p4c"
    subprocess.run([str(p4c), str(REPO / "p4src" / "red_ecn.p4"), "-o", str(out),
                    "--p4runtime-files", str(out / "red_ecn.p4info.txtpb")], check=True)
    p4info = text_format.Parse((out / "red_ecn.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return p4info, (out / "red_ecn.json").read_bytes()


def lpm_updates(p4info, n: int, update_type: int) -> list:
    table = next(t for t in p4info.tables if t.preamble.name == "MyIngress.ipv4_lpm")
    action = next(a for a in p4info.actions if a.preamble.name == "MyIngress.ipv4_forward")
    updates = []
    for i in range(n):
        e = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
        m = e.match.add(field_id=table.match_fields[0].id)
        m.lpm.value, m.lpm.prefix_len = bytes([10, i >> 8, i & 255, 0]), 24
        if update_type != Update.DELETE:
            e.action.action.action_id = action.preamble.id
            for p in action.params:
                e.action.action.params.add(param_id=p.id, value=bytes([1 + i % 200]))
        updates.append(Update(type=update_type, entity=p4runtime_pb2.Entity(table_entry=e)))
    return updates


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(client, p4info, n: int) -> list:
    inserts = lpm_updates(p4info, n, Update.INSERT)
    deletes = lpm_updates(p4info, n, Update.DELETE)
    table_id = inserts[0].entity.table_entry.table_id
    rows = []
    t = timed(lambda: [client.write(u) for u in inserts])
    rows.append(("insert, 1 entry per Write", n, t))
    client.write(*deletes)
    t = timed(lambda: [client.write(*inserts[i:i + BATCH]) for i in range(0, n, BATCH)])
    rows.append((f"insert, {BATCH} entries per Write", n, t))
    read = []
    t = timed(lambda: read.extend(client.read(table_entry=p4runtime_pb2.TableEntry(table_id=table_id))))
    if len(read) != n:
        raise RuntimeError(f"read {len(read)} entries, wrote {n}")
    rows.append(("wildcard Read of the table", n, t))
    t = timed(lambda: [client.write(*deletes[i:i + BATCH]) for i in range(0, n, BATCH)])
    rows.append((f"delete, {BATCH} entries per Write", n, t))
    return rows


def report(rows, n, load_before, load_after) -> str:
    lines = ["# P4Runtime server benchmark (`python -m softswitch_server.bench`)", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
             f"{os.cpu_count()} CPUs, load average {load_before:.1f} before / "
             f"{load_after:.1f} after (shared machine: compare ratios, not absolutes).",
             f"Program p4src/red_ecn.p4, table MyIngress.ipv4_lpm, {n} /24 entries, "
             "real gRPC over loopback, server in the benchmark's process.", "",
             "| operation | entries | seconds | entries/s |", "|---|---|---|---|"]
    lines += [f"| {name} | {count} | {secs:.3f} | {count / secs:,.0f} |" for name, count, secs in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import softswitch_engine as se
    from .server import SoftswitchServer
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000, help="entries (<= 1024, the table size)")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).with_name("BENCH.md")))
    args = parser.parse_args(argv)
    if not 0 < args.entries <= 1024:
        parser.error("--entries must be in 1..1024 (the ipv4_lpm table size)")
    with tempfile.TemporaryDirectory(prefix="sv_bench") as tmp:
        p4info, device_json = compile_red_ecn(pathlib.Path(tmp))
    server = SoftswitchServer(se.Switch(ports={}, cpu_port=None, seed=1), "127.0.0.1:0")
    server.start()
    client = P4RTClient(f"127.0.0.1:{server.port}", election_id=1)
    try:
        client.set_pipeline(p4info, device_json)
        load_before = os.getloadavg()[0]
        rows = measure(client, p4info, args.entries)
        text = report(rows, args.entries, load_before, os.getloadavg()[0])
    finally:
        client.close()
        server.stop()
    pathlib.Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
