"""Traffic-manager options: `--tm PORT:key=value,...` and `--tm-config FILE.toml`.

Both produce one `PortConfig` per port, in the engine's units (bit/s,
packets, bytes, microseconds). Rates take a plain bit/s number or a
kbit/mbit/gbit suffix; delays need a us/ms/s unit. The TOML file has one
table per port, the same keys:

    [ports.1]
    rate = "10mbit"
    buffer = 100
    delay = "20ms"
    loss = "gemodel 1% 30%"

`loss` follows Linux netem: `loss=P` or `loss=random P` loses each frame
independently; `loss=gemodel p r [1-h [1-k]]` is the Gilbert-Elliott model
(good->bad p, bad->good r, loss 1-h in the bad state (default 100 %), 1-k in
the good state (default 0 %)). Each probability is `N%` or a fraction 0..1
(a bare number is a fraction below 1, unlike netem where it is a percent).
`delay = "20ms 5ms"` adds netem's jitter, shaped by `distribution` (uniform
+-jitter by default, normal or pareto with standard deviation jitter, or an
empirical table: a netem `.dist` file or the name of one iproute2 installs);
frames are never reordered. `glitch = "2s 300ms"` stops the transmitter for
300 ms after exponential gaps of mean 2 s (RFC 889's delay glitches).
"""
import re
import tomllib
from pathlib import Path
from dataclasses import dataclass, fields

RATE_UNITS = {"": 1, "bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
DELAY_UNITS = {"us": 1, "ms": 10**3, "s": 10**6}
MAX_PORT = 511  # v1model ports are 9 bits


class TmError(ValueError):
    """A traffic-manager option the switch cannot apply (message says which)."""


@dataclass
class PortConfig:
    rate_bps: int = 0
    buffer_packets: int = 64
    buffer_bytes: int = 0
    delay_us: int = 0
    ingress_delay_us: int = 0
    prio_queues: int = 1
    loss: float = 0.0
    loss_gemodel: tuple | None = None
    jitter_us: int = 0
    distribution: str = "uniform"
    glitch_every_us: int = 0
    glitch_hold_us: int = 0
    distribution_table: tuple | None = None   # distribution "table": entries, units of jitter

    def engine_kwargs(self) -> dict:
        """configure_port's keywords (distribution_table only for a table)."""
        kwargs = {f.name: getattr(self, f.name) for f in fields(self)}
        table = kwargs.pop("distribution_table")
        if table is not None:
            kwargs["distribution_table"] = list(table)
        return kwargs


def parse_rate(text) -> int:
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", str(text).strip().lower())
    if not m or m.group(2) not in RATE_UNITS:
        raise TmError(f"rate '{text}': expected a number with optional kbit/mbit/gbit")
    return round(float(m.group(1)) * RATE_UNITS[m.group(2)])


def parse_delay(text) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(us|ms|s)", str(text).strip().lower())
    if not m:
        raise TmError(f"delay '{text}': expected a number with a us/ms/s unit")
    return round(float(m.group(1)) * DELAY_UNITS[m.group(2)])


def parse_probability(text) -> float:
    """'1%' -> 0.01, '0.01' -> 0.01 (a fraction); 0..1 only."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?(?:e-?\d+)?)(%?)", str(text).strip().lower())
    value = float(m.group(1)) / (100 if m.group(2) else 1) if m else -1
    # A bare 1 or more is most likely netem's percent without '%': refuse it.
    if not (0 <= value <= 1) or (m and not m.group(2) and value >= 1):
        raise TmError(f"probability '{text}': expected N% (0-100%) or a fraction below 1")
    return value


def parse_loss(text) -> tuple:
    """netem's loss: '1%' / 'random 1%' / 'gemodel p r [1-h [1-k]]' -> (loss, loss_gemodel)."""
    words = str(text).split()
    if words[:1] == ["gemodel"]:
        if not 3 <= len(words) <= 5:
            raise TmError(f"loss '{text}': expected gemodel p r [1-h [1-k]]")
        p, r, loss_bad, loss_good = ([parse_probability(w) for w in words[1:]] + [1.0, 0.0])[:4]
        return 0.0, (p, r, loss_bad, loss_good)
    if words[:1] == ["random"]:
        words = words[1:]
    if len(words) != 1:
        raise TmError(f"loss '{text}': expected P, random P or gemodel p r [1-h [1-k]] (no correlation)")
    return parse_probability(words[0]), None


def parse_delay_jitter(text) -> tuple:
    """netem's 'delay TIME [JITTER]': '20ms 5ms' -> (20000, 5000)."""
    words = str(text).split()
    if not 1 <= len(words) <= 2:
        raise TmError(f"delay '{text}': expected TIME [JITTER] (no correlation)")
    return parse_delay(words[0]), parse_delay(words[1]) if len(words) == 2 else 0


def parse_glitch(text) -> tuple:
    """'2s 300ms' -> (2000000, 300000): mean gap between glitches, hold time."""
    words = str(text).split()
    if len(words) != 2:
        raise TmError(f"glitch '{text}': expected MEAN_GAP HOLD, e.g. '2s 300ms'")
    every, hold = parse_delay(words[0]), parse_delay(words[1])
    if not every or not hold:
        raise TmError(f"glitch '{text}': gap and hold must be above 0")
    return every, hold


DISTRIBUTIONS = ("uniform", "normal", "pareto")
# Where iproute2 installs netem's tables (normal, pareto, paretonormal, experimental .dist).
TC_TABLE_DIRS = ("/usr/lib/tc", "/usr/lib/x86_64-linux-gnu/tc", "/usr/lib/aarch64-linux-gnu/tc",
                 "/usr/lib64/tc", "/usr/share/tc")
NETEM_DIST_SCALE = 8192     # a table entry / 8192 = standard deviations (netem's tabledist)
MAX_TABLE = 16384            # netem's NETEM_DIST_MAX
ENTRY_RANGE = range(-32768, 32768)   # netem stores entries as 16-bit integers


def parse_distribution(text) -> tuple:
    """uniform | normal | pareto, or an empirical table as netem takes it: a
    `.dist` file (path) or a table name iproute2 installs (paretonormal,
    experimental, ...) -> (name, None) or ("table", entries in units of jitter)."""
    text = str(text).strip()
    if text in DISTRIBUTIONS:
        return text, None
    path = Path(text) if text.endswith(".dist") else next(
        (Path(d) / f"{text}.dist" for d in TC_TABLE_DIRS if (Path(d) / f"{text}.dist").is_file()
         and "/" not in text), None)
    if path is None:
        raise TmError(f"distribution '{text}': expected one of {', '.join(DISTRIBUTIONS)}, the "
                      f"name of a table iproute2 installs (paretonormal, experimental) or a .dist file")
    return "table", read_table(path)


def read_table(path) -> tuple:
    """A netem distribution table: integers (standard deviations x 8192), '#' comments."""
    try:
        words = " ".join(line.split("#")[0] for line in Path(path).read_text().splitlines()).split()
        values = [int(w) for w in words]
    except (OSError, UnicodeDecodeError) as e:
        raise TmError(f"distribution table {path}: {e}") from None
    except ValueError:
        values = None
    if values is None or any(v not in ENTRY_RANGE for v in values):
        raise TmError(f"distribution table {path}: entries must be integers in -32768..32767 "
                      f"(standard deviations x {NETEM_DIST_SCALE}, netem's format)")
    if not 1 <= len(values) <= MAX_TABLE:
        raise TmError(f"distribution table {path}: needs 1..{MAX_TABLE} entries, has {len(values)}")
    return tuple(v / NETEM_DIST_SCALE for v in values)


def _count(text, name, low, high=None) -> int:
    try:
        value = int(str(text), 10)
    except ValueError:
        raise TmError(f"{name} '{text}': expected an integer") from None
    if value < low or (high is not None and value > high):
        raise TmError(f"{name} {value}: must be in {low}..{high if high is not None else 'inf'}")
    return value


SETTERS = {
    "rate": ("rate_bps", parse_rate),
    "buffer": ("buffer_packets", lambda v: _count(v, "buffer", 1)),
    "buffer-bytes": ("buffer_bytes", lambda v: _count(v, "buffer-bytes", 0)),
    "delay": (("delay_us", "jitter_us"), parse_delay_jitter),
    "distribution": (("distribution", "distribution_table"), parse_distribution),
    "glitch": (("glitch_every_us", "glitch_hold_us"), parse_glitch),
    "ingress-delay": ("ingress_delay_us", parse_delay),
    "prio-queues": ("prio_queues", lambda v: _count(v, "prio-queues", 1, 8)),
    "loss": (("loss", "loss_gemodel"), parse_loss),
}


def apply_settings(config: PortConfig, settings: dict, where: str) -> None:
    for key, value in settings.items():
        if key not in SETTERS:
            raise TmError(f"{where}: unknown option '{key}' (known: {', '.join(SETTERS)})")
        attr, parse = SETTERS[key]
        try:
            parsed = parse(value)
        except TmError as e:
            raise TmError(f"{where}: {e}") from None
        if isinstance(attr, tuple):
            for name, part in zip(attr, parsed):
                setattr(config, name, part)
        else:
            setattr(config, attr, parsed)


def parse_port(text) -> int:
    port = _count(text, "port", 0, MAX_PORT)
    return port


def parse_tm_flag(text: str) -> tuple:
    """'1:rate=10mbit,buffer=100' -> (1, {'rate': '10mbit', 'buffer': '100'})."""
    port_text, sep, options = text.partition(":")
    if not sep or not options:
        raise TmError(f"--tm '{text}': expected PORT:key=value[,key=value...]")
    settings = {}
    for item in options.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise TmError(f"--tm '{text}': '{item}' is not key=value")
        settings[key.strip()] = value.strip()
    return parse_port(port_text), settings


def load_tm_file(path: str) -> dict:
    """port -> settings dict, from a TOML file with [ports.N] tables."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise TmError(f"--tm-config {path}: {e}") from None
    unknown = set(doc) - {"ports"}
    if unknown or not isinstance(doc.get("ports", {}), dict):
        raise TmError(f"--tm-config {path}: only [ports.N] tables are allowed")
    out = {}
    for port_text, settings in doc.get("ports", {}).items():
        if not isinstance(settings, dict):
            raise TmError(f"--tm-config {path}: ports.{port_text} must be a table")
        out[parse_port(port_text)] = settings
    return out


def build_port_configs(tm_flags: list, tm_file, ports) -> dict:
    """Merge the file (first) and --tm flags (override) into PortConfigs."""
    configs = {}
    sources = []
    if tm_file:
        sources += [(port, s, f"--tm-config port {port}") for port, s in load_tm_file(tm_file).items()]
    for flag in tm_flags:
        port, settings = parse_tm_flag(flag)
        sources.append((port, settings, f"--tm {flag}"))
    for port, settings, where in sources:
        if port not in ports:
            raise TmError(f"{where}: port {port} is not one of the -i ports {sorted(ports)}")
        apply_settings(configs.setdefault(port, PortConfig()), settings, where)
    return configs
