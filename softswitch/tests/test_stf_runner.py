"""softswitch-stf itself: STF syntax, name resolution, key encodings, failing
expectations and the command's exit status and messages."""
import pathlib

import pytest

from softswitch_stf.cli import main
from softswitch_stf.runner import compare_packet, run
from softswitch_stf.stf import StfError, parse_text
from test_stf_corpus import STF_DIR, compiled

BASIC = STF_DIR / "basic.p4"
IN = ("0000000001000000000000990800 4500002100010000401164C90A0000010A000202 "
      "03E807D0000D9A47 68656C6C6F")
OUT = ("0800000002220000000001000800 45000021000100003F1165C90A0000010A000202 "
       "03E807D0000D9A47 68656C6C6F")
ROUTE = "add ipv4_lpm hdr.ipv4.dstAddr:10.0.2.0/24 ipv4_forward(dstAddr:0x080000000222, port:2)\n"


def run_text(text, program=BASIC):
    return run(compiled(program), parse_text(text, "t.stf"))


def test_passing_test_passes():
    result = run_text(ROUTE + f"packet 0 {IN}\nexpect 2 {OUT} $\n")
    assert result.passed and result.packets_in == 1 and result.expected == 1


def test_wrong_byte_fails_and_shows_expected_and_got():
    wrong = OUT.replace("08000000022200", "08000000022300", 1)
    result = run_text(ROUTE + f"packet 0 {IN}\nexpect 2 {wrong}\n")
    assert not result.passed
    (failure,) = result.failures
    assert failure.startswith("t.stf:3: port 2, packet 1: differs at byte 5")
    assert "expected: 080000000223" in failure and "got:      080000000222" in failure
    assert "\n" + " " * 14 + " " * 11 + "^" in failure   # the caret sits under nibble 11


def test_missing_unexpected_and_wrong_port_packets_fail():
    missing = run_text(f"packet 0 {IN}\nexpect 2 {OUT}\n")          # no route: dropped
    assert missing.failures == [f"t.stf:2: port 2: expected packet not received\n"
                                f"    expected: {''.join(OUT.split())}"]
    extra = run_text(ROUTE + f"packet 0 {IN}\npacket 0 {IN}\nexpect 2 {OUT}\n")
    assert len(extra.failures) == 1
    assert extra.failures[0].startswith("t.stf:3: port 2: unexpected packet (no expect line left for it)")
    elsewhere = run_text(ROUTE + f"packet 0 {IN}\nexpect 3 {OUT}\nexpect 2\n")
    assert len(elsewhere.failures) == 1 and "port 3" in elsewhere.failures[0]


def test_an_odd_number_of_packet_digits_ends_with_a_byte_of_the_last_digit_as_in_p4c():
    """p4c's runner converts packet hex two digits at a time, so `... 20 0` sends 0x20 0x00
    (its gauntlet_index_3-bmv2.stf); expectations stay nibble patterns."""
    (packet,) = parse_text("packet 0 0A 2 0\n", "t.stf")
    assert packet.args["data"] == bytes([0x0A, 0x20])
    (packet,) = parse_text("packet 0 0A 5\n", "t.stf")
    assert packet.args["data"] == bytes([0x0A, 0x05])


def test_packets_to_unobserved_ports_are_not_checked_as_in_p4c():
    assert run_text(ROUTE + f"packet 0 {IN}\n").passed


def test_bare_expect_accepts_any_packets_on_its_port():
    assert run_text(ROUTE + f"packet 0 {IN}\npacket 0 {IN}\nexpect 2\n").passed


@pytest.mark.parametrize("pattern, exact, verdict", [
    ("0A0B", False, None), ("0A0B0C", True, None), ("0A*B", False, None), ("****0C", True, None),
    ("0A0C", False, "differs at byte 1"), ("0A0B", True, "too long"),
    ("0A0B0C0D", False, "too short"), ("0A0B0", False, None),
])
def test_packet_comparison(pattern, exact, verdict):
    problem = compare_packet(pattern, exact, bytes([10, 11, 12]))
    assert (problem is None) if verdict is None else problem.startswith(verdict)


def test_short_names_and_number_spellings_resolve():
    for spelling in ("MyIngress.ipv4_lpm hdr.ipv4.dstAddr:0x0A000200/24",
                     "ipv4_lpm ipv4.dstAddr:0x0A0002**",
                     "ipv4_lpm dstAddr:167772672/24"):
        text = (f"add {spelling} MyIngress.ipv4_forward(dstAddr:8:0:0:0:2:22, port:0b10)\n"
                f"packet 0 {IN}\nexpect 2 {OUT}$\n")
        assert run_text(text).passed, spelling


def test_packet_without_bytes_is_an_empty_frame():
    # p4c's corpus sends `packet 0` with no data to programs that parse nothing
    (command,) = parse_text("packet 0 \n", "t.stf")
    assert command.kind == "packet" and command.args == {"port": 0, "data": b""}


@pytest.mark.parametrize("line, message", [
    ("frobnicate 1", "t.stf:1: error: unknown command 'frobnicate'"),
    ("packet 0 0G", "t.stf:1: error: usage: packet PORT HEXBYTES"),
    ("packet x 0A", "t.stf:1: error: port must be a decimal number, got 'x'"),
    ("expect 1 0G", "t.stf:1: error: usage: expect PORT"),
    ("add ipv4_lpm dstAddr:1", "t.stf:1: error: usage: add TABLE"),
    ("add ipv4_lpm 5x dstAddr:1 drop()", "t.stf:1: error: priority must be a decimal number"),
    ("add ipv4_lpm dstAddr drop()", "t.stf:1: error: key 'dstAddr' is not FIELD:VALUE"),
    ("setdefault ipv4_lpm", "t.stf:1: error: usage: setdefault TABLE ACTION"),
    ("mc_node_create 1", "t.stf:1: error: usage: mc_node_create RID PORT"),
    ("check_counter c(1) packets = 2", "t.stf:1: error: usage: check_counter"),
    ("wait 5", "t.stf:1: error: wait takes no arguments"),
    ("queue", "t.stf:1: error: usage: queue reset | queue FIELD=N"),
    ("queue depth=3", "t.stf:1: error: usage: queue reset | queue FIELD=N"),
    ("queue enq_qdepth=x", "t.stf:1: error: usage: queue reset | queue FIELD=N"),
])
def test_malformed_lines_are_one_line_errors(line, message):
    with pytest.raises(StfError) as e:
        parse_text(line, "t.stf")
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


@pytest.mark.parametrize("line, message", [
    ("add nosuch dstAddr:1 drop()", "no table named 'nosuch'"),
    ("add ipv4_lpm srcAddr:1 drop()", "'srcAddr' is not a key of table MyIngress.ipv4_lpm"),
    ("add ipv4_lpm dstAddr:1 fly()", "no action of table MyIngress.ipv4_lpm named 'fly'"),
    ("add ipv4_lpm dstAddr:1 ipv4_forward(port:1)", "action MyIngress.ipv4_forward needs parameter dstAddr"),
    ("add ipv4_lpm dstAddr:1 drop(x:1)", "action MyIngress.drop has no parameter x"),
    ("add ipv4_lpm dstAddr:0x1FFFFFFFF/32 drop()", "value 0x1ffffffff does not fit key hdr.ipv4.dstAddr (32 bits)"),
    ("add ipv4_lpm dstAddr:1/33 drop()", "prefix length 33 is longer than key hdr.ipv4.dstAddr"),
    ("add ipv4_lpm dstAddr:1 ipv4_forward(dstAddr:1, port:512)", "value 0x200 does not fit parameter port (9 bits)"),
    ("add ipv4_lpm dstAddr:ten drop()", "'ten' is not a number"),
    ("mc_node_associate 1 0", "multicast group 1 was not created"),
])
def test_lines_naming_what_the_program_lacks_fail_with_their_line(line, message):
    with pytest.raises(StfError) as e:
        run_text(f"wait\n{line}\n")
    assert str(e.value).startswith(f"t.stf:2: error: {message}")


def test_duplicate_entry_is_reported_at_its_line():
    with pytest.raises(StfError) as e:
        run_text(ROUTE + ROUTE)
    assert str(e.value).startswith("t.stf:2: error: add: ")


def test_cli_exit_status_and_output(tmp_path, capsys):
    good, bad = tmp_path / "good.stf", tmp_path / "bad.stf"
    good.write_text(ROUTE + f"packet 0 {IN}\nexpect 2 {OUT}\n")
    bad.write_text(ROUTE + f"packet 0 {IN}\nexpect 1 {OUT}\n")
    assert main([str(BASIC), str(good)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"
    assert main([str(BASIC), str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {bad}" in out and out.splitlines()[-1] == "1 passed, 1 failed"


def test_cli_errors_are_one_line(tmp_path, capsys):
    broken = tmp_path / "broken.stf"
    broken.write_text("packet 0 zz\n")
    assert main([str(BASIC), str(broken)]) == 1
    assert capsys.readouterr().err == f"{broken}:1: error: usage: packet PORT HEXBYTES\n"
    bad_p4 = tmp_path / "bad.p4"
    bad_p4.write_text("control c( { }\n")
    assert main([str(bad_p4), str(broken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad_p4}:1:") and err.count("\n") == 1
    assert main([str(BASIC), str(tmp_path / "none.stf")]) == 1
    assert "No such file" in capsys.readouterr().err
    not_json, not_bmv2 = tmp_path / "a.json", tmp_path / "b.json"
    not_json.write_text('{"a":')
    not_bmv2.write_text('{"a": 1}')
    assert main([str(not_json), str(broken)]) == 1
    assert capsys.readouterr().err.startswith(f"softswitch-stf: error: {not_json}:1: not JSON")
    empty = tmp_path / "empty.stf"
    empty.write_text("# nothing\n")
    assert main([str(not_bmv2), str(empty)]) == 1
    assert capsys.readouterr().err.startswith(f"softswitch-stf: error: {not_bmv2}: ")


def test_precompiled_json_is_accepted(tmp_path):
    import json
    path = tmp_path / "basic.json"
    path.write_text(json.dumps(compiled(BASIC)))
    stf = tmp_path / "t.stf"
    stf.write_text(ROUTE + f"packet 0 {IN}\nexpect 2 {OUT}\n")
    assert main([str(path), str(stf)]) == 0


def test_wrong_counter_and_register_values_fail():
    program = STF_DIR.parent.parent.parent / "p4src" / "red_ecn.p4"
    route = ("add ipv4_lpm dstAddr:10.0.2.0/24 "
             "ipv4_forward(dstAddr:0x080000000222, srcAddr:0x000000000002, port:2)\n")
    result = run_text(route + f"packet 0 {IN}\n"
                      "check_counter port_tx(2) packets == 1\n"
                      "check_counter port_tx(2) packets == 2\n"
                      "check_counter port_tx(2) bytes < 10\n"
                      "check_register last_decision(2) == 0\n"
                      "check_register last_decision(2) != 0\n", program)
    assert result.failures == ["t.stf:4: counter MyEgress.port_tx(2) packets is 1, expected == 2",
                               "t.stf:5: counter MyEgress.port_tx(2) bytes is 47, expected < 10",
                               "t.stf:7: register last_decision(2) is 0, expected != 0"]


def test_direct_counters_are_read_through_named_entries(tmp_path):
    program = tmp_path / "direct.p4"
    program.write_text(BASIC.read_text().replace(
        "        size = 1024;", "        counters = hits;\n        size = 1024;").replace(
        "    table ipv4_lpm {", "    direct_counter(CounterType.packets_and_bytes) hits;\n    table ipv4_lpm {"))
    text = (ROUTE.rstrip() + " = route\n" + f"packet 0 {IN}\npacket 0 {IN}\n"
            "check_counter hits($route) packets == 2\ncheck_counter hits($route) bytes == 94\n")
    assert run_text(text, program).passed
    with pytest.raises(StfError, match="t.stf:1: error: no entry was added as '= nope'"):
        run_text("check_counter hits($nope) packets == 2\n", program)
    with pytest.raises(StfError, match="is a direct counter"):
        run_text("check_counter hits(1) packets == 2\n", program)


def test_stack_and_validity_key_spellings_resolve_as_in_p4c(tmp_path):
    program = tmp_path / "stack_key.p4"
    program.write_text(r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> h; bit<8> b; }
struct headers { h_t[2] extra; }
struct metadata { }
parser P(packet_in p, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.extra.next); p.extract(hdr.extra.next); transition accept; }
}
control NoCk(inout headers hdr, inout metadata m) { apply { } }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.extra[0].b = v; }
    table ex1 { key = { hdr.extra[0].h: ternary; hdr.extra[1].isValid(): exact; }
                actions = { set; NoAction; } default_action = NoAction(); }
    apply { ex1.apply(); }
}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.extra); } }
V1Switch(P(), NoCk(), I(), E(), NoCk(), D()) main;
""")
    text = ("add ex1 100 extra$0.h:0x25** extra$1.valid:1 set(v:0x25)\n"
            "add ex1 110 hdr.extra[0].h:0x2525 hdr.extra[1].$valid$:1 I.set(v:0x27)\n"
            "packet 0 2500 00 0000 00\nexpect 0 2500 25 0000 00\n"
            "packet 0 2525 00 0000 00\nexpect 0 2525 27 0000 00\n")
    assert run_text(text, program).passed
    with pytest.raises(StfError, match="is an exact key: '\\*' cannot match it"):
        run_text("add ex1 extra$1.valid:* set(v:1)\n", program)


def test_command_runs_as_a_module_with_defines_and_verbose_output(tmp_path):
    import subprocess
    import sys
    program = tmp_path / "defined.p4"
    program.write_text(BASIC.read_text().replace(
        "standard_metadata.egress_spec = port;", "standard_metadata.egress_spec = OUT_PORT;"))
    stf = tmp_path / "t.stf"
    stf.write_text(ROUTE + f"packet 0 {IN}\nexpect 7 {OUT}\n")
    done = subprocess.run([sys.executable, "-m", "softswitch_stf", str(program), str(stf),
                           "-D", "OUT_PORT=7", "-v"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{stf}:2: out port 7: {''.join(OUT.split())}" in done.stdout
    assert done.stdout.splitlines()[-1] == "1 passed, 0 failed"


def test_numbers_too_large_for_the_engine_are_line_errors():
    with pytest.raises(StfError, match="t.stf:1: error: mc_mgrp_create: "):
        run_text("mc_mgrp_create 99999999999\n")


@pytest.mark.parametrize("line, message", [
    ("add t k:1 member=x", "usage: add TABLE"),
    ("add t k:1", "usage: add TABLE"),
    ("member prof 1", "usage: member PROFILE ID ACTION"),
    ("member prof x a()", "usage: member PROFILE ID ACTION"),
    ("group prof", "usage: group PROFILE ID [MEMBER ...]"),
    ("group prof 1 a", "usage: group PROFILE ID [MEMBER ...]"),
])
def test_malformed_profile_lines_are_one_line_errors(line, message):
    with pytest.raises(StfError) as e:
        parse_text(line, "t.stf")
    assert str(e.value).startswith(f"t.stf:1: error: {message}")


def test_profile_references_need_a_profile_table():
    with pytest.raises(StfError, match="t.stf:1: error: MyIngress.ipv4_lpm has no action profile"):
        run_text("add ipv4_lpm dstAddr:1 member=1\n")
    with pytest.raises(StfError, match="t.stf:1: error: no action profile named 'nope'"):
        run_text("member nope 1 drop()\n")
