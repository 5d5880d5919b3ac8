"""The switch configuration file: good files load, mistakes name their place."""
import pytest

from redctl.convert import RedConfig
from redctl.labconfig import ConfigError, load, parse_rate

GOOD = """
[switch]
address = "127.0.0.1:9600"
p4info = "build/red_ecn.p4info.txtpb"
json = "build/red_ecn.json"

[[port]]
id = 0

[[port]]
id = 1
buffer = 100
rate = "10mbit"
sampling = 10
red = { minth = 5, maxth = 15, maxp = 0.1, wq = 0.002 }

[[route]]
prefix = "10.0.1.0/24"
port = 1
dst_mac = "00:00:00:00:01:01"
src_mac = "00:00:00:00:00:01"
"""


def _write(tmp_path, text):
    path = tmp_path / "switch.toml"
    path.write_text(text)
    return path


def test_good_file_loads(tmp_path):
    cfg = load(_write(tmp_path, GOOD))
    assert cfg.address == "127.0.0.1:9600"
    assert cfg.p4info == (tmp_path / "build/red_ecn.p4info.txtpb").resolve()
    assert cfg.ports[1].buffer_packets == 100 and cfg.ports[1].rate_bps == 10e6
    assert cfg.red == {1: RedConfig(minth=5, maxth=15, maxp=0.1, wq_log=9)}
    assert cfg.sampling == {1: 10}
    assert cfg.routes[0].prefix == "10.0.1.0/24"


@pytest.mark.parametrize("old, new, message", [
    ("maxth = 15", "maxth = 150", "port\\[1\\].*buffer"),
    ("maxth = 15", "maxth = 4", "port\\[1\\].*below maxth"),
    ('rate = "10mbit"', 'rate = "10 furlongs"', "port\\[1\\].*rate"),
    ('prefix = "10.0.1.0/24"', 'prefix = "10.0.1.1/24"', "route\\[0\\]"),
    ('dst_mac = "00:00:00:00:01:01"', 'dst_mac = "00:00:00:01:01"', "route\\[0\\].*MAC"),
    ("port = 1\n", "port = 7\n", "route\\[0\\].*unknown port 7"),
    ("sampling = 10", "sampling = -1", "sampling"),
    ("wq = 0.002", "wq = 0.002, colour = 3", "unknown RED settings"),
    ("[[route]]", "[[routes]]", "unknown sections"),
    ("buffer = 100", "buffer = 100\nbufer = 3", "unknown keys"),
])
def test_mistakes_are_reported_with_their_place(tmp_path, old, new, message):
    assert old in GOOD
    with pytest.raises(ConfigError, match=message):
        load(_write(tmp_path, GOOD.replace(old, new, 1)))


def test_unparsable_toml_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="switch.toml"):
        load(_write(tmp_path, "[[port]\nid = 1"))


@pytest.mark.parametrize("text, bps", [("10mbit", 10e6), ("500kbit", 5e5), ("1gbit", 1e9), (1000, 1000.0)])
def test_rates(text, bps):
    assert parse_rate(text) == bps
