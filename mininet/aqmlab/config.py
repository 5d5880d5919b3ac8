"""Experiment files (TOML): loading, presets, scenario overrides, validation.

Every mistake raises ConfigError whose message starts with the field's path,
e.g. `scenario[1].aqm.maxp: must be in (0, 1], got 2`. See
mininet/experiments/README.md for the format.
"""

import copy
import dataclasses
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from softswitch_server.tm import TmError, parse_glitch, parse_loss
from softswitch_server.tm import parse_distribution as parse_jitter_distribution

from aqmlab.tuning import TcpTuning
from aqmlab.units import parse_delay, parse_rate, parse_size

UNLIMITED = -1
TOPOLOGY_KINDS = ("dumbbell", "rfc2884", "single_bottleneck")
WORKLOAD_KINDS = ("bulk", "http10", "http11", "crr", "surge", "echo")
TARGETS = ("softswitch", "bmv2")
AQM_MODES = ("red", "droptail")
BUFFER_RULES = ("bdp", "bdp/sqrtn")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# The studies' testbeds (EXPERIMENTS.md); a file's own values override these.
TOPOLOGY_PRESETS = {
    "dumbbell": {  # RFC 2415: 10 Mb/s access, 1.5 Mb/s 50 ms bottleneck, 25 packets
        "shared_server": False,
        "bottleneck": {"rate": "1.5mbit", "delay": "50ms", "buffer": 25},
        "server_access": {"rate": "10mbit", "delay": "100us"},
        "client_access": {"rate": "10mbit", "delay": "100us"},
    },
    "rfc2884": {  # one server; R1 = 1.5 Mb/s RED bottleneck; R2 adds 20 ms path delay
        "shared_server": True,
        "bottleneck": {"rate": "1.5mbit", "delay": "20ms", "buffer": 60},
        "server_access": {"rate": "10mbit", "delay": "0ms"},
        "client_access": {"rate": "10mbit", "delay": "0ms"},
    },
    "single_bottleneck": {  # buffer sizing: access links at C with 5 ms delay
        "shared_server": False,
        "bottleneck": {"rate": "100mbit", "delay": "90ms", "buffer": "bdp"},
        "server_access": {"rate": "100mbit", "delay": "5ms"},
        "client_access": {"rate": "100mbit", "delay": "5ms"},
    },
}
DISTRIBUTIONS = {
    "fixed": ("value",), "uniform": ("low", "high"), "lognormal": ("mu", "sigma"),
    "pareto": ("k", "alpha"), "surge": ("mu", "sigma", "k", "alpha"),
}
SURGE_SIZES = {"dist": "surge", "mu": 9.357, "sigma": 1.318, "k": 133_000, "alpha": 1.1}
SURGE_INTERVAL = {"dist": "pareto", "k": 1.0, "alpha": 1.5}
WEB_OBJECT = {"dist": "lognormal", "mu": 7.6, "sigma": 1.0}   # median ~2 KB: two packets
THINK_TIME = {"dist": "uniform", "low": 1.0, "high": 5.0}
ECHO_LENGTH = {"dist": "uniform", "low": 40, "high": 256}    # RFC 889: IP octets
ECHO_LENGTH_RANGE = (28, 1500)    # an IP + ICMP header .. the MTU (no fragments)


class ConfigError(ValueError):
    """A mistake in an experiment file; the message names the field."""


@dataclass(frozen=True)
class LinkSpec:
    rate_bps: int
    delay_s: float
    buffer: object = 1000      # packets (int) or a rule from BUFFER_RULES
    # impairments (bottleneck only), each direction, in the softswitch's traffic manager:
    jitter_s: float = 0.0      # netem `delay TIME JITTER`
    distribution: str = "uniform"   # or a netem table: name, or absolute .dist path
    loss: str = ""             # netem loss text ("1%", "gemodel 1% 30%"), validated
    glitch: str = ""           # "MEAN_GAP HOLD" (RFC 889's delay glitches), validated


@dataclass(frozen=True)
class TopologySpec:
    kind: str
    shared_server: bool
    bottleneck: LinkSpec
    server_access: LinkSpec
    client_access: LinkSpec

    @property
    def base_rtt_s(self):
        one_way = self.server_access.delay_s + self.bottleneck.delay_s + self.client_access.delay_s
        return 2 * one_way


@dataclass(frozen=True)
class AqmSpec:
    mode: str = "red"
    minth: int = 5
    maxth: int = 15
    maxp: float = 0.1
    wq_log: int = 9
    gentle: bool = False
    ecn: bool = True


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    kind: str
    pairs: int
    connections: int
    start: float
    size: int
    repeat: bool
    request_bytes: int
    object_size: dict
    think: dict
    embedded: int
    max_size: int
    tcp: TcpTuning
    tool: str = "agent"
    volleys: int = 512          # echo: echo/reply cycles per client (the run's duration caps them)
    timeout_s: float = 30.0     # echo: no reply within this = lost (RFC 889: 30 s)


@dataclass(frozen=True)
class Scenario:
    name: str
    topology: TopologySpec
    aqm: AqmSpec
    tcp: TcpTuning
    workloads: tuple


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    seed: int
    duration: float
    quick_duration: float
    warmup: float
    target: str
    scenarios: tuple            # the points: every [[scenario]] x every sweep point
    source: dict = field(repr=False, default_factory=dict)
    repeat: int = 1             # runs of every point, seeds seed, seed + 1, ...
    sweep: tuple = ({},)        # {dotted path: value} of each sweep point
    quick_repeat: int = 1       # repeat under --quick
    capture: bool = False       # pcap on R1 -> per-workload drops and CE marks (capture.py)
    until_complete: bool = False  # end once every fixed-size bulk transfer / echo series is done
    drop_records: bool = False  # R1 records each tail-dropped packet -> drops.csv (drops.py)

    def for_quick(self):
        """The same experiment shortened to quick_duration (CI, `--quick`);
        warm-up and workload start times shrink in proportion."""
        factor = self.quick_duration / self.duration
        scenarios = tuple(dataclasses.replace(s, workloads=tuple(
            dataclasses.replace(w, start=w.start * factor) for w in s.workloads))
            for s in self.scenarios)
        return dataclasses.replace(self, duration=self.quick_duration,
                                   warmup=self.warmup * factor, scenarios=scenarios,
                                   repeat=self.quick_repeat)


# ------------------------------------------------------------------ helpers
def _fail(path, message):
    raise ConfigError(f"{path}: {message}")


def _check_keys(table, allowed, path):
    if not isinstance(table, dict):
        _fail(path, f"must be a table, got {type(table).__name__}")
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        _fail(f"{path}.{unknown[0]}" if path else unknown[0],
              f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _number(table, key, path, default=None, low=None, high=None, integer=False,
            low_open=False):
    value = table.get(key, default)
    where = f"{path}.{key}" if path else key
    if value is None:
        _fail(where, "is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (integer and not isinstance(value, int)):
        _fail(where, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    if low is not None and (value < low or (low_open and value == low)):
        _fail(where, f"must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and value > high:
        _fail(where, f"must be <= {high}, got {value!r}")
    return value


def _boolean(table, key, path, default):
    value = table.get(key, default)
    if not isinstance(value, bool):
        _fail(f"{path}.{key}", f"must be true or false, got {value!r}")
    return value


def _choice(table, key, path, choices, default=None):
    value = table.get(key, default)
    if value not in choices:
        _fail(f"{path}.{key}" if path else key,
              f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _unit(table, key, path, parser, default=None):
    value = table.get(key, default)
    if value is None:
        _fail(f"{path}.{key}", "is required")
    try:
        return parser(value)
    except ValueError as error:
        _fail(f"{path}.{key}", str(error))


def _merge(base, override):
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# ------------------------------------------------------------------ sections
IMPAIRMENTS = ("loss", "distribution", "glitch")   # and a jitter in `delay`


def parse_link(table, path, default_buffer, impairments=False):
    _check_keys(table, ("rate", "delay", "buffer") + (IMPAIRMENTS if impairments else ()), path)
    buffer = table.get("buffer", default_buffer)
    if isinstance(buffer, str):
        if buffer not in BUFFER_RULES:
            _fail(f"{path}.buffer", f"must be a packet count or one of {', '.join(BUFFER_RULES)}, "
                                    f"got {buffer!r}")
    else:
        buffer = _number(table, "buffer", path, default_buffer, low=1, integer=True)
    delay, jitter = _delay_jitter(table, path, impairments)
    return LinkSpec(_unit(table, "rate", path, parse_rate), delay, buffer, jitter,
                    _jitter_distribution(table, path),
                    _tm_text(table, "loss", path, parse_loss),
                    _tm_text(table, "glitch", path, parse_glitch))


def _delay_jitter(table, path, jitter_allowed):
    """`delay = "20ms"` or, with impairments, netem's `"20ms 5ms"` -> (delay, jitter) seconds."""
    words = str(table.get("delay", "")).split()
    if len(words) == 2 and jitter_allowed:
        return tuple(_unit({"delay": word}, "delay", path, parse_delay) for word in words)
    if len(words) == 2:
        _fail(f"{path}.delay", "a jitter (TIME JITTER) is allowed on the bottleneck only")
    return _unit(table, "delay", path, parse_delay), 0.0


def _jitter_distribution(table, path):
    """uniform | normal | pareto | a netem table (name, or a .dist file, made absolute)."""
    name = _tm_text(table, "distribution", path, parse_jitter_distribution) or "uniform"
    return str(Path(name).resolve()) if name.endswith(".dist") else name


def _tm_text(table, key, path, parser):
    """An impairment in netem's words, checked with the switch's own parser."""
    value = table.get(key, "")
    if value == "":
        return ""
    try:
        parser(value)
    except TmError as error:
        _fail(f"{path}.{key}", str(error))
    return " ".join(str(value).split())


def parse_topology(table, path="topology"):
    _check_keys(table, ("kind", "shared_server", "bottleneck", "server_access", "client_access"),
                path)
    kind = _choice(table, "kind", path, TOPOLOGY_KINDS, "dumbbell")
    table = _merge(TOPOLOGY_PRESETS[kind], table)
    return TopologySpec(
        kind, _boolean(table, "shared_server", path, False),
        parse_link(table["bottleneck"], f"{path}.bottleneck", 100, impairments=True),
        parse_link(table["server_access"], f"{path}.server_access", 1000),
        parse_link(table["client_access"], f"{path}.client_access", 1000))


def parse_aqm(table, path="aqm"):
    names = [f.name for f in fields(AqmSpec)]
    _check_keys(table, names, path)
    d = AqmSpec()
    aqm = AqmSpec(
        _choice(table, "mode", path, AQM_MODES, d.mode),
        _number(table, "minth", path, d.minth, low=0, integer=True),
        _number(table, "maxth", path, d.maxth, low=1, integer=True),
        _number(table, "maxp", path, d.maxp, low=0, high=1, low_open=True),
        _number(table, "wq_log", path, d.wq_log, low=0, high=31, integer=True),
        _boolean(table, "gentle", path, d.gentle), _boolean(table, "ecn", path, d.ecn))
    if aqm.minth >= aqm.maxth:
        _fail(f"{path}.maxth", f"must be greater than minth ({aqm.minth}), got {aqm.maxth}")
    return aqm


def available_congestion_controls():
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def parse_tcp(table, path, base=TcpTuning()):
    names = [f.name for f in fields(TcpTuning)]
    _check_keys(table, names, path)
    values = {}
    for name in names:
        default = getattr(base, name)
        if isinstance(default, bool):
            values[name] = _boolean(table, name, path, default)
        elif isinstance(default, int):
            values[name] = _number(table, name, path, default, low=0, integer=True)
    values["cc"] = table.get("cc", base.cc)
    if values["cc"] not in available_congestion_controls():
        _fail(f"{path}.cc", f"must be one of {', '.join(available_congestion_controls())} "
                            f"(this kernel), got {values['cc']!r}")
    if values["initcwnd"] < 1:
        _fail(f"{path}.initcwnd", "must be >= 1")
    for name, high in (("recovery", 7), ("early_retrans", 4)):   # the sysctls' ranges
        if values[name] > high:
            _fail(f"{path}.{name}", f"must be within 0..{high} (net.ipv4.tcp_{name}), "
                                    f"got {values[name]}")
    if values["mss"] and not 88 <= values["mss"] <= 1460:
        _fail(f"{path}.mss", f"must be 0 (default) or within 88..1460, got {values['mss']}")
    return TcpTuning(**values)


def parse_distribution(value, path, default):
    value = default if value is None else value
    if not isinstance(value, dict):
        _fail(path, f"must be a table like {{dist = \"uniform\", low = 1, high = 5}}, got {value!r}")
    dist = _choice(value, "dist", path, tuple(DISTRIBUTIONS))
    _check_keys(value, ("dist",) + DISTRIBUTIONS[dist], path)
    parsed = {"dist": dist}
    for key in DISTRIBUTIONS[dist]:
        if key == "mu":
            parsed[key] = _number(value, key, path)
        else:
            parsed[key] = _number(value, key, path, low=0, low_open=key not in ("low", "value"))
    if dist == "uniform" and parsed["high"] < parsed["low"]:
        _fail(f"{path}.high", "must be >= low")
    return parsed


WORKLOAD_FIELDS = ("name", "kind", "pairs", "connections", "start", "size", "repeat",
                   "request_bytes", "object_size", "think", "embedded", "max_size", "tcp", "tool",
                   "volleys", "timeout")
TOOLS = ("agent", "iperf3")


def parse_workload(table, path, tcp_defaults):
    _check_keys(table, WORKLOAD_FIELDS, path)
    kind = _choice(table, "kind", path, WORKLOAD_KINDS)
    name = table.get("name", kind)
    if not isinstance(name, str) or not NAME.match(name):
        _fail(f"{path}.name", f"must be letters, digits, '_', '-' or '.', got {name!r}")
    size = table.get("size", "unlimited" if kind == "bulk" else "5KB")
    if size == "unlimited":
        if kind != "bulk":
            _fail(f"{path}.size", "only bulk workloads may be unlimited")
        size = UNLIMITED
    else:
        size = _unit(table, "size", path, parse_size, size)
    is_surge = kind == "surge"
    default_size = SURGE_SIZES if is_surge else ECHO_LENGTH if kind == "echo" else WEB_OBJECT
    object_size = parse_distribution(table.get("object_size"), f"{path}.object_size", default_size)
    if kind == "echo":
        _check_echo_length(object_size, f"{path}.object_size")
    tool = _choice(table, "tool", path, TOOLS, "agent")
    if tool == "iperf3" and (kind != "bulk" or table.get("repeat", False)):
        _fail(f"{path}.tool", "iperf3 runs only bulk workloads without repeat")
    if tool == "iperf3" and table.get("tcp", {}).get("window_clamp", tcp_defaults.window_clamp):
        _fail(f"{path}.tool", "window_clamp needs the agent (it primes the sender's metrics)")
    return WorkloadSpec(
        name, kind,
        _number(table, "pairs", path, 1, low=1, integer=True),
        _number(table, "connections", path, 1, low=1, high=1000, integer=True),
        float(_number(table, "start", path, 0.0, low=0)),
        size, _boolean(table, "repeat", path, False),
        _number(table, "request_bytes", path, 100, low=2, high=65536, integer=True),
        object_size,
        parse_distribution(table.get("think"), f"{path}.think",
                           SURGE_INTERVAL if is_surge else THINK_TIME),
        _number(table, "embedded", path, 3, low=0, high=100, integer=True),
        _unit(table, "max_size", path, parse_size, "100MB"),
        parse_tcp(table.get("tcp", {}), f"{path}.tcp", tcp_defaults), tool,
        _number(table, "volleys", path, 512, low=1, high=10**6, integer=True),
        _positive_delay(table, "timeout", path, "30s"))


def _positive_delay(table, key, path, default):
    seconds = _unit(table, key, path, parse_delay, default)
    if seconds <= 0:
        _fail(f"{path}.{key}", f"must be above 0, got {table.get(key)!r}")
    return seconds


def _check_echo_length(dist, path):
    """Echo lengths are IP datagram octets: uniform or fixed within ECHO_LENGTH_RANGE."""
    low, high = ECHO_LENGTH_RANGE
    if dist["dist"] not in ("uniform", "fixed"):
        _fail(f"{path}.dist", f"echo lengths must be uniform or fixed, got {dist['dist']!r}")
    values = [dist[k] for k in ("low", "high", "value") if k in dist]
    if not all(low <= v <= high for v in values):
        _fail(path, f"echo lengths must be within {low}..{high} octets (IP datagram), got "
                    f"{', '.join(f'{v:g}' for v in values)}")


def parse_scenario(table, name, prefix):
    """prefix: '' for a file without [[scenario]], else 'scenario[i].'."""
    tcp = parse_tcp(table.get("tcp", {}), f"{prefix}tcp")
    workloads = table.get("workload")
    if not isinstance(workloads, list) or not workloads:
        _fail(f"{prefix}workload", "needs at least one [[workload]] table")
    parsed = tuple(parse_workload(w, f"{prefix}workload[{i}]", tcp)
                   for i, w in enumerate(workloads))
    names = [w.name for w in parsed]
    for i, workload_name in enumerate(names):
        if names.index(workload_name) != i:
            _fail(f"{prefix}workload[{i}].name", f"duplicate workload name {workload_name!r}")
    topology = parse_topology(table.get("topology", {}), f"{prefix}topology")
    aqm = parse_aqm(table.get("aqm", {}), f"{prefix}aqm")
    buffer = topology.bottleneck.buffer
    if aqm.mode == "red" and isinstance(buffer, int) and aqm.maxth > buffer:
        _fail(f"{prefix}aqm.maxth", f"must not exceed the bottleneck buffer ({buffer} packets), "
                                    f"got {aqm.maxth}")
    return Scenario(name, topology, aqm, tcp, parsed)


TOP_FIELDS = ("name", "description", "seed", "duration", "quick_duration", "warmup", "target",
              "repeat", "quick_repeat", "capture", "drop_records", "until_complete", "topology", "aqm", "tcp",
              "workload", "scenario", "sweep")
SCENARIO_FIELDS = ("name", "topology", "aqm", "tcp", "workload")
SWEEP_SECTIONS = ("topology", "aqm", "tcp", "workload")


def parse_sweep(table):
    """[sweep] -> list of points, each a dict {dotted path: value}, in file order.

    Keys are dotted parameter paths (`aqm.maxp`, `workload.web.tcp.initcwnd`)
    with lists of values; the points are their cartesian product, except that
    the paths of one `zip` group move together (one value of each per point)."""
    if table is None:
        return [{}]
    if not isinstance(table, dict):
        _fail("sweep", "must be a table of dotted.path = [values]")
    paths = _flatten({k: v for k, v in table.items() if k != "zip"})
    if not paths:
        _fail("sweep", "needs at least one dotted.path = [values]")
    for path, values in paths.items():
        parts = path.split(".")
        if parts[0] not in SWEEP_SECTIONS or len(parts) < 2 or \
                (parts[0] == "workload" and len(parts) < 3):
            _fail(f"sweep.{path}", f"must start with one of {', '.join(SWEEP_SECTIONS)} "
                                   "(workload.<name>.<field>)")
        if not isinstance(values, list) or not values:
            _fail(f"sweep.{path}", f"must be a non-empty list of values, got {values!r}")
    groups = _zip_groups(table.get("zip", []), paths)
    points = [{}]
    for group in groups:
        points = [{**point, **dict(zip(group, values))} for point in points
                  for values in zip(*(paths[p] for p in group))]
    return points


def _flatten(table, prefix=""):
    """TOML reads `aqm.maxp = [...]` as nested tables: back to dotted paths."""
    flat = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _zip_groups(zipped, paths):
    """The sweep's axes: each zip group is one axis, every other path its own."""
    if not isinstance(zipped, list) or not all(isinstance(g, list) for g in zipped):
        _fail("sweep.zip", "must be a list of lists of swept paths, e.g. "
                           "[[\"aqm.minth\", \"aqm.maxth\"]]")
    grouped = []
    for i, group in enumerate(zipped):
        for path in group:
            if path not in paths:
                _fail(f"sweep.zip[{i}]", f"{path!r} is not a swept path")
            if path in grouped:
                _fail(f"sweep.zip[{i}]", f"{path!r} is already in another zip group")
            grouped.append(path)
        lengths = {len(paths[p]) for p in group}
        if len(lengths) > 1:
            _fail(f"sweep.zip[{i}]", f"zipped lists must have the same length, got "
                                     f"{', '.join(f'{p}: {len(paths[p])}' for p in group)}")
    axes = {}
    for path in paths:              # file order: each axis at its first path
        group = next((tuple(g) for g in zipped if path in g), (path,))
        axes.setdefault(group, None)
    return list(axes)


def apply_sweep_point(table, point):
    """A copy of a scenario table with the point's dotted paths set."""
    table = copy.deepcopy(table)
    for path, value in point.items():
        parts = path.split(".")
        node = table
        if parts[0] == "workload":
            named = [w for w in table.get("workload", [])
                     if isinstance(w, dict) and w.get("name", w.get("kind")) == parts[1]]
            if not named:
                _fail(f"sweep.{path}", f"no workload named {parts[1]!r}")
            node, parts = named[0], parts[2:]
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                _fail(f"sweep.{path}", f"{part!r} is not a table")
        node[parts[-1]] = copy.deepcopy(value)
    return table


def point_label(point):
    """`aqm.maxp=0.02,tcp.ecn=true`: a sweep point as text."""
    return ",".join(f"{path}={_value_text(value)}" for path, value in point.items())


def _value_text(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={_value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def parse_experiment(data):
    _check_keys(data, TOP_FIELDS, "")
    name = data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        _fail("name", f"is required: letters, digits, '_', '-' or '.', got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        _fail("description", "must be a string")
    duration = float(_number(data, "duration", "", 60, low=1))
    base = {key: data[key] for key in SCENARIO_FIELDS[1:] if key in data}
    overrides = data.get("scenario", [{"name": "base"}])
    explicit = "scenario" in data
    if not isinstance(overrides, list) or not overrides:
        _fail("scenario", "must be a list of [[scenario]] tables")
    repeat = _number(data, "repeat", "", 1, low=1, high=1000, integer=True)
    sweep = parse_sweep(data.get("sweep"))
    names, scenarios = [], []
    for i, override in enumerate(overrides):
        path = f"scenario[{i}]"
        prefix = f"{path}." if explicit else ""
        _check_keys(override, SCENARIO_FIELDS, path)
        scenario_name = override.get("name")
        if not isinstance(scenario_name, str) or not NAME.match(scenario_name):
            _fail(f"{path}.name", f"is required: letters, digits, '_', '-', got {scenario_name!r}")
        if scenario_name in names:
            _fail(f"{path}.name", f"duplicate scenario name {scenario_name!r}")
        names.append(scenario_name)
        merged = _merge(base, {k: v for k, v in override.items() if k != "name"})
        for point in sweep:
            label = f"{scenario_name}:{point_label(point)}" if point else scenario_name
            table = apply_sweep_point(merged, point)
            try:
                scenarios.append(parse_scenario(table, label, prefix))
            except ConfigError as error:
                if not point:
                    raise
                raise ConfigError(f"sweep point {label}: {error}") from None
    return Experiment(
        name, description, _number(data, "seed", "", 1, low=0, integer=True), duration,
        float(_number(data, "quick_duration", "", min(duration, 10.0), low=1)),
        float(_number(data, "warmup", "", 0.0, low=0, high=duration / 2)),
        _choice(data, "target", "", TARGETS, "softswitch"), tuple(scenarios), data,
        repeat, tuple(sweep),
        _number(data, "quick_repeat", "", repeat, low=1, high=repeat, integer=True),
        _capture(data), _until_complete(data, scenarios), _drop_records(data))


def _until_complete(data, scenarios):
    until = _boolean(data, "until_complete", "", False)
    if until and not any(measured_transfer(w) for s in scenarios for w in s.workloads):
        _fail("until_complete", "needs an echo workload or a bulk workload with a fixed size "
                                "and repeat = false")
    return until


def measured_transfer(workload):
    """A workload whose clients each do a fixed amount of work and exit: one
    fixed-size bulk transfer, or `volleys` echoes."""
    return workload.kind == "echo" or (
        workload.kind == "bulk" and workload.size != UNLIMITED and not workload.repeat)


def _capture(data):
    capture = _boolean(data, "capture", "", False)
    if capture and data.get("target", "softswitch") != "softswitch":
        _fail("capture", "needs target = \"softswitch\" (its --pcap)")
    return capture


def _drop_records(data):
    records = _boolean(data, "drop_records", "", False)
    if records and data.get("target", "softswitch") != "softswitch":
        _fail("drop_records", "needs target = \"softswitch\" (its --pcap-drops)")
    return records


def load_experiment(path):
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return parse_experiment(data)
