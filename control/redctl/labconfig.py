"""The switch configuration file read by `redctl push` (and `--config` of the
other commands): pipeline, ports, routes, RED and sampling, in TOML.

    [switch]
    address = "127.0.0.1:9559"
    device_id = 0
    p4info = "build/red_ecn.p4info.txtpb"       # relative to this file
    json = "build/red_ecn.json"

    [[port]]
    id = 1
    buffer = 100            # packets, as the target's --tm buffer
    rate = "10mbit"         # as the target's --tm rate
    sampling = 10           # optional: one telemetry sample per 10 packets
    red = { minth = 5, maxth = 15, maxp = 0.1, wq_log = 9, gentle = false, mode = "red", ecn = true }

    [[route]]
    prefix = "10.0.1.0/24"
    port = 1
    dst_mac = "00:00:00:00:01:01"
    src_mac = "00:00:00:00:00:01"
"""
from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .convert import PortSpec, RedConfig, validate, wq_log_from_wq

RATE_UNITS = {"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
SWITCH_KEYS = {"address", "device_id", "p4info", "json"}
PORT_KEYS = {"id", "buffer", "rate", "mean_packet_bytes", "sampling", "red"}
ROUTE_KEYS = {"prefix", "port", "dst_mac", "src_mac"}
RED_KEYS = {"minth", "maxth", "maxp", "wq", "wq_log", "gentle", "mode", "ecn"}


class ConfigError(ValueError):
    """A mistake in the configuration file; the message names file and place."""


@dataclass
class Route:
    prefix: str
    port: int
    dst_mac: str
    src_mac: str


@dataclass
class LabConfig:
    address: str = "127.0.0.1:9559"
    device_id: int = 0
    p4info: Path | None = None
    json: Path | None = None
    ports: dict[int, PortSpec] = field(default_factory=dict)
    red: dict[int, RedConfig] = field(default_factory=dict)
    sampling: dict[int, int] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)


def parse_rate(text) -> float:
    """'10mbit' / '1.5gbit' / 1000000 -> bit/s."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", str(text).lower())
        if not m or m.group(2) not in RATE_UNITS:
            raise ValueError(f"bad rate {text!r} (use e.g. 10mbit, 500kbit, 1gbit)")
        value = float(m.group(1)) * RATE_UNITS[m.group(2)]
    if value <= 0:
        raise ValueError(f"rate must be positive, got {text!r}")
    return value


def parse_mac(text: str) -> int:
    """'00:00:00:00:01:01' -> int; ValueError names the bad address."""
    parts = str(text).split(":")
    if len(parts) != 6 or not all(re.fullmatch(r"[0-9a-fA-F]{2}", p) for p in parts):
        raise ValueError(f"bad MAC address {text!r} (expected aa:bb:cc:dd:ee:ff)")
    return int("".join(parts), 16)


def red_from_table(table: dict) -> RedConfig:
    """A TOML/CLI dict of RED settings -> RedConfig (wq or wq_log, not both)."""
    unknown = set(table) - RED_KEYS
    if unknown:
        raise ValueError(f"unknown RED settings {sorted(unknown)}; allowed {sorted(RED_KEYS)}")
    missing = {"minth", "maxth", "maxp"} - set(table)
    if missing:
        raise ValueError(f"missing RED settings {sorted(missing)}")
    if "wq" in table and "wq_log" in table:
        raise ValueError("give wq or wq_log, not both")
    wq_log = wq_log_from_wq(table["wq"]) if "wq" in table else table.get("wq_log", 9)
    return RedConfig(minth=table["minth"], maxth=table["maxth"], maxp=table["maxp"],
                     wq_log=wq_log, gentle=bool(table.get("gentle", False)),
                     mode=table.get("mode", "red"), ecn=bool(table.get("ecn", True)))


def load(path: str | Path) -> LabConfig:
    """Parse and validate the file; every error is a ConfigError naming the place."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    unknown = set(doc) - {"switch", "port", "route"}
    if unknown:
        raise ConfigError(f"{path}: unknown sections {sorted(unknown)}")
    cfg = LabConfig()
    _load_switch(cfg, doc.get("switch", {}), path)
    for i, table in enumerate(doc.get("port", [])):
        _in_place(path, f"port[{i}]", _load_port, cfg, table)
    for i, table in enumerate(doc.get("route", [])):
        _in_place(path, f"route[{i}]", _load_route, cfg, table)
    return cfg


def _in_place(path, where, loader, cfg, table):
    try:
        loader(cfg, table)
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"{path}: {where}: {e}") from None


def _check_keys(table: dict, allowed: set, required: set):
    if not isinstance(table, dict):
        raise ValueError("expected a table")
    if set(table) - allowed:
        raise ValueError(f"unknown keys {sorted(set(table) - allowed)}")
    if required - set(table):
        raise ValueError(f"missing keys {sorted(required - set(table))}")


def _load_switch(cfg: LabConfig, table: dict, path: Path):
    try:
        _check_keys(table, SWITCH_KEYS, set())
    except ValueError as e:
        raise ConfigError(f"{path}: [switch]: {e}") from None
    cfg.address = str(table.get("address", cfg.address))
    cfg.device_id = int(table.get("device_id", cfg.device_id))
    for key in ("p4info", "json"):
        if key in table:
            setattr(cfg, key, (path.parent / table[key]).resolve())


def _load_port(cfg: LabConfig, table: dict):
    _check_keys(table, PORT_KEYS, {"id"})
    port = table["id"]
    if not isinstance(port, int) or not 0 <= port <= 510 or port in cfg.ports:
        raise ValueError(f"port id must be a new integer in [0, 510], got {port!r}")
    buffer = table.get("buffer", PortSpec().buffer_packets)
    if not isinstance(buffer, int) or buffer <= 0:
        raise ValueError(f"buffer must be a positive number of packets, got {buffer!r}")
    spec = PortSpec(buffer_packets=buffer, rate_bps=parse_rate(table.get("rate", PortSpec().rate_bps)),
                    mean_packet_bytes=int(table.get("mean_packet_bytes", 1500)))
    cfg.ports[port] = spec
    if "red" in table:
        red = red_from_table(table["red"])
        validate(red, spec)
        cfg.red[port] = red
    if "sampling" in table:
        if not isinstance(table["sampling"], int) or table["sampling"] < 0:
            raise ValueError(f"sampling must be a packet count >= 0, got {table['sampling']!r}")
        cfg.sampling[port] = table["sampling"]


def _load_route(cfg: LabConfig, table: dict):
    _check_keys(table, ROUTE_KEYS, ROUTE_KEYS)
    if cfg.ports and table["port"] not in cfg.ports:
        raise ValueError(f"route to unknown port {table['port']}")
    ipaddress.IPv4Network(str(table["prefix"]), strict=True)
    parse_mac(table["dst_mac"]), parse_mac(table["src_mac"])
    cfg.routes.append(Route(str(table["prefix"]), table["port"], table["dst_mac"], table["src_mac"]))
