"""P4Runtime keys of every kind on fields, slices and expressions, written by
a third-party client (p4runtime-shell) and checked on packets.

fixtures/keys.p4 has three tables with the same five key kinds (exact, lpm,
ternary, range, optional): on plain fields, on slices (h.p.c[27:8]...) and
on expressions (h.p.a ^ 0xff...). Values travel as the P4Runtime spec says:
canonical byte strings whose width is the P4Info key width (5 bits for
a[6:2]), so a slice key holds the slice's value, not the field's.
"""
import json
import subprocess
import sys

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from server_support import FIXTURES, compile_fixture, start_server, wait_for_no_clients


# The probe packet: a=0x5c c=0x0a0b0c0d b=0x1234 r=0x0100 o=0x07.
PROBE = dict(a=0x5C, c=0x0A0B0C0D, b=0x1234, r=0x0100, o=0x07)
ENTRIES = {
    "I.on_fields": {"action": "I.hit_f", "v": 0x11, "match": {
        "h.p.a": "0x5c", "h.p.c": "0x0a0b0000/16", "h.p.b": "0x1200&&&0xff00",
        "h.p.r": "0xff..0x200", "h.p.o": "0x07"}},
    "I.on_slices": {"action": "I.hit_s", "v": 0x22, "match": {
        "h.p.a[6:2]": "0x17",            # (0x5c >> 2) & 0x1f
        "h.p.c[27:8]": "0xa0b00/12",     # (0x0a0b0c0d >> 8) & 0xfffff = 0xa0b0c
        "h.p.b[12:3]": "0x246&&&0x3ff",  # (0x1234 >> 3) & 0x3ff
        "h.p.r[14:1]": "0x7f..0x81",     # (0x0100 >> 1) & 0x3fff = 0x80
        "h.p.o[3:0]": "0x7"}},
    "I.on_expressions": {"action": "I.hit_e", "v": 0x33, "match": {
        "a_flipped": "0xa3",              # 0x5c ^ 0xff
        "c_plus_1": "0x0a0b0c0e/32",
        "b_middle": "0x230&&&0xff0",      # 0x1234 & 0x0ff0
        "r_plus_16": "0x110..0x110",      # 0x0100 |+| 0x10
        "o_minus_1": "0x6"}},
}
# What each table reads back (field id -> [kind, canonical values...]): the
# shortest byte strings, widths from the P4Info.
READ_BACK = {
    "I.on_fields": {"1": ["exact", "5c"], "2": ["lpm", "0a0b0000", 16], "3": ["ternary", "1200", "ff00"],
                    "4": ["range", "ff", "0200"], "5": ["optional", "07"]},
    "I.on_slices": {"1": ["exact", "17"], "2": ["lpm", "0a0b00", 12], "3": ["ternary", "0246", "03ff"],
                    "4": ["range", "7f", "81"], "5": ["optional", "07"]},
    "I.on_expressions": {"1": ["exact", "a3"], "2": ["lpm", "0a0b0c0e", 32],
                         "3": ["ternary", "0230", "0ff0"], "4": ["range", "0110", "0110"],
                         "5": ["optional", "06"]},
}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_fixture(tmp_path_factory.mktemp("keys"), "keys")


@pytest.fixture(scope="module")
def switch(program):
    p4info, device_json = program
    srv, address = start_server()
    done = subprocess.run([sys.executable, str(FIXTURES / "p4rtsh_keys.py"), address, str(p4info),
                           str(device_json), json.dumps(ENTRIES)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    yield srv, json.loads(done.stdout.strip().splitlines()[-1])
    wait_for_no_clients(srv)
    srv.stop()


def probe(**changes) -> bytes:
    f = {**PROBE, **changes}
    return (bytes(6) + bytes([0, 0, 0, 0, 0, 1]) + b"\x88\xb5" + bytes([f["a"]])
            + f["c"].to_bytes(4, "big") + f["b"].to_bytes(2, "big") + f["r"].to_bytes(2, "big")
            + bytes([f["o"], 0, 0, 0]))


def hits(srv, frame) -> tuple:
    [(port, out)] = srv.sw.process_packet(0, frame)
    return tuple(out[-3:])   # hit_field, hit_slice, hit_expr


def test_p4info_widths_are_those_of_the_slices_and_expressions(program):
    p4info = text_format.Parse(program[0].read_text(), p4info_pb2.P4Info())
    widths = {t.preamble.name: [f.bitwidth for f in t.match_fields] for t in p4info.tables}
    assert widths == {"I.on_fields": [8, 32, 16, 16, 8], "I.on_slices": [5, 20, 10, 14, 4],
                      "I.on_expressions": [8, 32, 16, 16, 8]}


@pytest.mark.parametrize("table", list(ENTRIES))
def test_entries_read_back_canonical(switch, table):
    _, read = switch
    assert read[table] == [{"match": READ_BACK[table], "priority": 1}]


def test_the_probe_hits_every_table(switch):
    srv, _ = switch
    assert hits(srv, probe()) == (0x11, 0x22, 0x33)


@pytest.mark.parametrize("changes,expected", [
    (dict(a=0x5D), (0, 0x22, 0)),           # bit 0 of a: outside the slice a[6:2]
    (dict(a=0x7C), (0, 0, 0)),              # bit 5: inside it
    (dict(c=0x0A0C0C0D), (0, 0, 0)),        # the /16, the slice's /12 and c + 1's /32
    (dict(c=0x0A0B0C0E), (0x11, 0x22, 0)),  # only c + 1 changes
    (dict(b=0x1334), (0, 0, 0)),            # bit 8 of b: in every mask
    (dict(b=0x1235), (0x11, 0x22, 0x33)),   # bit 0 of b: in no mask
    (dict(r=0x0200), (0x11, 0, 0)),         # r at the top of the field range only
    (dict(r=0x0102), (0x11, 0x22, 0)),      # r[14:1] = 0x81 still in range; r + 16 not
    (dict(o=0x17), (0, 0x22, 0)),           # bit 4 of o: outside the slice o[3:0]
])
def test_a_changed_bit_misses_exactly_the_tables_whose_key_sees_it(switch, changes, expected):
    srv, _ = switch
    assert hits(srv, probe(**changes)) == expected
