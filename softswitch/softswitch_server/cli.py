"""`softswitch`: run the built-in P4 target with its P4Runtime server.

Flags mirror simple_switch_grpc (see softswitch/README.md, "Contract: the
`softswitch` command"). Bad flags print a clear error and exit with status 2;
SIGINT/SIGTERM stop the gRPC server and the packet threads cleanly.
"""
import argparse
import logging
import os
import resource
import signal
import sys
import threading
import time

from google.protobuf import text_format

from .tm import TmError, build_port_configs, parse_port


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="softswitch",
        description="aqmlab's built-in P4 software switch with a P4Runtime server "
                    "(flags mirror simple_switch_grpc).")
    p.add_argument("json", nargs="?", help="BMv2 JSON to load at start "
                   "(otherwise wait for SetForwardingPipelineConfig)")
    p.add_argument("--p4info", help="P4Info (text or binary) of JSON: serve it over "
                   "P4Runtime at once, as if pushed with VERIFY_AND_COMMIT (default: "
                   "PROG.p4info.txtpb next to PROG.json, as softswitch-p4c writes it)")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach a network interface as a switch port (repeatable)")
    p.add_argument("--grpc-server-addr", default="127.0.0.1:9559", metavar="HOST:PORT")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--cpu-port", type=int, default=None,
                   help="port number of the CPU port for PacketIn/PacketOut")
    p.add_argument("--log-console", action="store_true",
                   help="log server events and a per-packet trace to stderr")
    p.add_argument("--pcap", metavar="DIR", help="write a pcap file per port into DIR")
    p.add_argument("--pcap-drops", metavar="DIR", help="write the frames each port's queue "
                   "tail-drops (headers: first 128 bytes) into DIR/port<N>.drops.pcap")
    p.add_argument("--seed", type=int, default=None, help="seed of the random extern and of the links' loss, jitter and glitches")
    p.add_argument("--lenient", action="store_true",
                   help="debugging: also load BMv2 JSON that BMv2 itself refuses but the engine can run")
    p.add_argument("--busy-poll", action="store_true",
                   help="the packet thread never sleeps: lowest latency and departure error, "
                        "at the cost of a whole CPU (for a machine with a core to spare)")
    p.add_argument("--realtime", type=int, default=0, metavar="PRIO",
                   help="run the packet thread in SCHED_FIFO at PRIO (1-99; 0: off) so it "
                        "preempts the hosts sharing its cores (the labs use 10)")
    p.add_argument("--tm", action="append", default=[], metavar="PORT:OPTS",
                   help="traffic manager of a port: rate=10mbit,buffer=100,"
                        "buffer-bytes=150000,delay=20ms,ingress-delay=0ms,prio-queues=1")
    p.add_argument("--tm-config", metavar="FILE.toml", help="traffic manager options per port")
    return p


def parse_interfaces(specs: list) -> dict:
    ports = {}
    for spec in specs:
        port_text, sep, iface = spec.partition("@")
        if not sep or not iface:
            raise ValueError(f"-i '{spec}': expected PORT@IFACE, e.g. 0@veth0")
        port = parse_port(port_text)
        if port in ports or iface in ports.values():
            raise ValueError(f"-i '{spec}': port or interface given twice")
        if len(iface) > 15:
            raise ValueError(f"-i '{spec}': interface names have at most 15 characters")
        ports[port] = iface
    return ports


def parse_args(argv=None):
    """Parse and check all flags; exit 2 with a message on any mistake."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.json and not _looks_like_json(args.json):
        what = "is P4 source" if args.json.endswith(".p4") else "is not BMv2 JSON (P4 source?)"
        parser.exit(2, f"softswitch: {args.json} {what}: compile it first "
                       f"(softswitch-p4c {args.json} -o build --p4runtime-files "
                       f"build/{_stem(args.json)}.p4info.txtpb) and pass build/{_stem(args.json)}.json\n")
    try:
        args.ports = parse_interfaces(args.interface)
        if args.cpu_port is not None:
            parse_port(args.cpu_port)
            if args.cpu_port in args.ports:
                raise ValueError(f"--cpu-port {args.cpu_port} is also an -i port")
        args.port_configs = build_port_configs(args.tm, args.tm_config, args.ports)
        _check_scheduling(args)
        _check_files(args)
    except (ValueError, TmError) as e:
        parser.error(str(e))
    return args


def _check_scheduling(args):
    if not 0 <= args.realtime <= 99:
        raise ValueError(f"--realtime {args.realtime}: a SCHED_FIFO priority is 1-99 (0: off)")
    if args.realtime and args.busy_poll:
        raise ValueError("--busy-poll with --realtime would starve a core: choose one")


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _looks_like_json(path: str) -> bool:
    """False for a .p4 file or a file whose text does not start like JSON;
    True also for a file that cannot be read (_check_files reports it)."""
    if path.endswith(".p4"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return True
    return not head or head[:1] in (b"{", b"[")


def default_p4info(json_path: str):
    """PROG.p4info.txtpb next to PROG.json (how softswitch-p4c and p4c name it), if present."""
    base = json_path[:-len(".json")] if json_path.endswith(".json") else json_path
    candidate = base + ".p4info.txtpb"
    return candidate if os.path.isfile(candidate) else None


def _check_files(args):
    if args.device_id < 0:
        raise ValueError("--device-id must be >= 0")
    if args.seed is not None and args.seed < 0:
        raise ValueError("--seed must be >= 0")
    if args.p4info and not args.json:
        raise ValueError("--p4info needs the JSON argument")
    if args.json and not args.p4info:
        args.p4info = default_p4info(args.json)
    for path in filter(None, (args.json, args.p4info)):
        if not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")
    for flag, path in (("--pcap", args.pcap), ("--pcap-drops", args.pcap_drops)):
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise ValueError(f"{flag} {path}: not a directory")


def load_p4info(path: str):
    from p4.config.v1 import p4info_pb2
    p4info = p4info_pb2.P4Info()
    with open(path, "rb") as f:
        data = f.read()
    try:
        text_format.Parse(data.decode("utf-8"), p4info)
    except (UnicodeDecodeError, text_format.ParseError):
        p4info.ParseFromString(data)
    return p4info


def run(args) -> int:
    import softswitch_engine as se
    from .errors import P4RuntimeError
    from .server import SoftswitchServer

    for path in filter(None, (args.pcap, args.pcap_drops)):
        os.makedirs(path, exist_ok=True)
    sw = se.Switch(ports=args.ports, cpu_port=args.cpu_port, seed=args.seed,
                   pcap_dir=args.pcap, trace=args.log_console, lenient=args.lenient,
                   drop_pcap_dir=args.pcap_drops, busy_poll=args.busy_poll,
                   realtime=args.realtime)
    if args.lenient:
        print("softswitch: --lenient: loading JSON that BMv2 would refuse", file=sys.stderr)
    for port, config in args.port_configs.items():
        sw.configure_port(port, **config.engine_kwargs())
    server = SoftswitchServer(sw, args.grpc_server_addr, args.device_id, interfaces=args.ports)
    if args.json:
        try:
            _load_initial(server, sw, args)
        except P4RuntimeError as e:
            print(f"softswitch: {args.json}: {e.message}", file=sys.stderr)
            return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    sw.start()
    server.start()
    started = time.monotonic()
    print(f"softswitch: P4Runtime on {args.grpc_server_addr}, ports "
          f"{ {p: i for p, i in sorted(args.ports.items())} }", file=sys.stderr, flush=True)
    stop.wait()
    server.stop()
    sw.stop()
    print_timing(sw)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"softswitch: cpu: {usage.ru_utime + usage.ru_stime:.1f} s over "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return 0


def print_timing(sw):
    """How late each port sent its frames against their due time: the
    traffic manager's timing error over the switch's life (one line per port)."""
    for port, c in sorted(sw.port_stats().items()):
        if c["tx"]:
            print(f"softswitch: port {port} timing: {c['tx']} frames sent, "
                  f"{c['tx_late_us_total'] / c['tx']:.1f} us late on average, max "
                  f"{c['tx_late_us_max']} us, {c['tx_late_over_1ms']} more than 1 ms late",
                  file=sys.stderr, flush=True)


def _load_initial(server, sw, args):
    from . import engine_calls as ec
    with open(args.json, encoding="utf-8") as f:
        json_text = f.read()
    if args.p4info:
        server.device.load_json(json_text, load_p4info(args.p4info))
        print(f"softswitch: serving {args.json} with P4Info {args.p4info}", file=sys.stderr)
    else:
        ec.call(sw.load_pipeline, json_text)
        print(f"softswitch: {args.json} forwards, but without a P4Info a controller cannot "
              f"address it: give --p4info or push a pipeline", file=sys.stderr)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.log_console:
        # gRPC's C core would log its own multi-line account of, e.g., a port
        # in use next to our one-line error (read when grpc is first imported).
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    logging.basicConfig(level=logging.INFO if args.log_console else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return run(args)
    except (OSError, ValueError, RuntimeError) as e:
        # e.g. an -i interface that does not exist, an address already in use
        print(f"softswitch: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
