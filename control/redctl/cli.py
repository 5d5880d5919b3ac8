"""`redctl`: push, set, show, watch and adaptive RED over P4Runtime."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from . import adaptive, labconfig
from .controller import Controller
from .convert import RedConfig, wq_log_from_wq
from .p4rt import P4RuntimeError

DEFAULT_ADDRESS = "127.0.0.1:9559"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = args.config or getattr(args, "file", None)
        lab = labconfig.load(config) if config else None
        with _connect(args, lab) as ctl:
            return args.run(ctl, args, lab) or 0
    except (ValueError, P4RuntimeError, OSError) as e:
        print(f"redctl {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _connect(args, lab) -> Controller:
    address = args.address or (lab.address if lab else DEFAULT_ADDRESS)
    device_id = args.device_id if args.device_id is not None else (lab.device_id if lab else 0)
    return Controller(address, device_id, ports=lab.ports if lab and lab.ports else None)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="redctl", description=__doc__)
    p.add_argument("--address", help=f"P4Runtime server (default: the config's, else {DEFAULT_ADDRESS})")
    p.add_argument("--device-id", type=int)
    p.add_argument("--config", default=os.environ.get("REDCTL_CONFIG"),
                   help="switch configuration TOML (ports, buffers, rates; see control/README.md); "
                        "default: $REDCTL_CONFIG")
    sub = p.add_subparsers(dest="command", required=True)

    push = sub.add_parser("push", help="install pipeline, routes, RED and sampling from a TOML file")
    push.add_argument("file", help="the switch configuration TOML")
    push.add_argument("--p4info", help="override [switch].p4info")
    push.add_argument("--json", help="override [switch].json")
    push.add_argument("--no-pipeline", action="store_true",
                      help="keep the running pipeline; only write entries")
    push.set_defaults(run=cmd_push)

    s = sub.add_parser("set", help="set RED parameters of a port (unset ones keep their value)")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--minth", type=float)
    s.add_argument("--maxth", type=float)
    s.add_argument("--maxp", type=float)
    wq = s.add_mutually_exclusive_group()
    wq.add_argument("--wq", type=float, help="averaging weight, rounded to a power of two")
    wq.add_argument("--wq-log", type=int, help="wq = 2^-WQ_LOG")
    s.add_argument("--gentle", action=argparse.BooleanOptionalAction)
    s.add_argument("--mode", choices=["red", "droptail"])
    s.add_argument("--ecn", choices=["on", "off"])
    s.set_defaults(run=cmd_set)

    show = sub.add_parser("show", help="RED parameters and counters")
    show.add_argument("--port", type=int, action="append", help="repeatable; default: all configured")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(run=cmd_show)

    w = sub.add_parser("watch", help="live average/instantaneous queue and marks/drops per second")
    w.add_argument("--port", type=int, required=True)
    w.add_argument("--interval", type=float, default=1.0, help="seconds per line")
    w.add_argument("--sampling", type=int, help="set one sample per N packets (default: keep, else 10)")
    w.add_argument("--duration", type=float, help="stop after this many seconds")
    w.set_defaults(run=cmd_watch)

    a = sub.add_parser("adaptive", help="Adaptive RED: retune maxp every 0.5 s")
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--sampling", type=int, help="set one sample per N packets (default: keep, else 10)")
    a.add_argument("--duration", type=float, help="stop after this many seconds")
    a.set_defaults(run=cmd_adaptive)
    return p


def cmd_push(ctl: Controller, args, lab) -> None:
    if args.config:
        lab = labconfig.load(args.file)
        ctl.ports = lab.ports or None
    if not args.no_pipeline:
        p4info, bmv2_json = args.p4info or lab.p4info, args.json or lab.json
        if not (p4info and bmv2_json):
            raise ValueError("no pipeline: give [switch] p4info/json, --p4info/--json, or --no-pipeline")
        ctl.push_pipeline(str(p4info), str(bmv2_json))
        print(f"pipeline {p4info} + {bmv2_json} installed")
    for r in lab.routes:
        ctl.add_route(r.prefix, r.port, r.dst_mac, r.src_mac)
    for port, red in lab.red.items():
        ctl.set_red(port, red)
    for port, period in lab.sampling.items():
        ctl.set_sampling(port, period)
    print(f"{len(lab.routes)} routes, RED on ports {sorted(lab.red)}, "
          f"sampling on ports {sorted(lab.sampling)}")


def cmd_set(ctl: Controller, args, _lab) -> None:
    current = ctl.get_red(args.port)
    given = {k: v for k, v in (("minth", args.minth), ("maxth", args.maxth), ("maxp", args.maxp),
                               ("gentle", args.gentle), ("mode", args.mode)) if v is not None}
    if args.ecn is not None:
        given["ecn"] = args.ecn == "on"
    if args.wq is not None:
        given["wq_log"] = wq_log_from_wq(args.wq)
    elif args.wq_log is not None:
        given["wq_log"] = args.wq_log
    if current is None:
        missing = {"minth", "maxth", "maxp"} - set(given)
        if missing:
            raise ValueError(f"port {args.port} has no RED settings yet: give "
                             + ", ".join(f"--{m}" for m in sorted(missing)))
        cfg = RedConfig(**given)
    else:
        cfg = dataclasses.replace(current, **given)
    ctl.set_red(args.port, cfg)
    print(f"port {args.port}: {_describe(cfg)}")


def cmd_show(ctl: Controller, args, lab) -> None:
    ports = args.port or sorted(set(lab.ports if lab else ()) | set(ctl.red_ports()))
    report = {}
    for port in ports:
        red = ctl.get_red(port)
        report[port] = {"red": dataclasses.asdict(red) if red else None,
                        "counters": ctl.port_counters(port)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for port, info in report.items():
        red = info["red"]
        print(f"port {port}: " + (_describe(RedConfig(**red)) if red else "drop-tail (no RED entry)"))
        print("  " + "  ".join(f"{k}={v}" for k, v in info["counters"].items()))


WATCH_COLUMNS = (("t[s]", 6), ("avg[pkt]", 8), ("q[pkt]", 6), ("age[s]", 6), ("samples", 7),
                 ("tx[pkt/s]", 9), ("marks[/s]", 9), ("edrops[/s]", 10), ("fdrops[/s]", 10))


def cmd_watch(ctl: Controller, args, _lab) -> None:
    """One line per interval. avg and q come from the latest sample of that
    interval only: "idle" when no packet left the port, "-" when packets left
    but none was sampled; age is how long ago the latest sample arrived."""
    _ensure_sampling(ctl, args.port, args.sampling)
    print(" ".join(f"{name:>{width}}" for name, width in WATCH_COLUMNS), flush=True)
    start = time.monotonic()
    before = ctl.port_counters(args.port)
    last, last_at = None, None
    tick = start + args.interval
    while args.duration is None or tick - start <= args.duration + 1e-9:
        n = 0
        while (remaining := tick - time.monotonic()) > 0:
            sample = ctl.poll_sample(remaining)
            if sample is not None and sample.port == args.port:
                last, last_at, n = sample, time.monotonic(), n + 1
        now = ctl.port_counters(args.port)
        rate = {k: (now[k] - before[k]) / args.interval for k in now}
        print(_watch_row(tick - start, last if n else None, n, rate,
                         None if last_at is None else tick - last_at), flush=True)
        before, tick = now, tick + args.interval


def _watch_row(t: float, sample, n: int, rate: dict, age) -> str:
    if sample is not None:
        avg, q = f"{sample.avg:.2f}", str(sample.qdepth)
    else:
        avg = q = "idle" if rate["packets"] == 0 else "-"
    cells = (f"{t:.1f}", avg, q, "-" if age is None else f"{age:.1f}", str(n),
             f"{rate['packets']:.1f}", f"{rate['early_marks']:.1f}", f"{rate['early_drops']:.1f}",
             f"{rate['forced_drops']:.1f}")
    return " ".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, WATCH_COLUMNS))


def cmd_adaptive(ctl: Controller, args, _lab) -> None:
    _ensure_sampling(ctl, args.port, args.sampling)

    def report(t, avg, maxp):
        print(f"t={t:6.1f}s avg={avg:7.2f} maxp={maxp:.4f}", flush=True)

    final = adaptive.run(ctl, args.port, args.duration, report)
    print(f"port {args.port}: {_describe(final)}")


def _ensure_sampling(ctl: Controller, port: int, period: int | None) -> None:
    if period is not None:
        ctl.set_sampling(port, period)
    elif not ctl.get_sampling(port):
        ctl.set_sampling(port, 10)
        print(f"port {port}: telemetry sampling was off, set to 1 per 10 packets", file=sys.stderr)


def _describe(cfg: RedConfig) -> str:
    return (f"mode={cfg.mode} minth={cfg.minth:g} maxth={cfg.maxth:g} maxp={cfg.maxp:g} "
            f"wq=2^-{cfg.wq_log} gentle={'on' if cfg.gentle else 'off'} "
            f"ecn={'on' if cfg.ecn else 'off'}")


if __name__ == "__main__":
    sys.exit(main())
