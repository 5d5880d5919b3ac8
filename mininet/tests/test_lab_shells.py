"""Commands in the lab's shells: one round trip per node, all nodes at once."""

import pytest

from aqmlab.shells import MAX_LINE, run_commands

pytestmark = pytest.mark.root


def test_each_nodes_commands_run_in_order_in_its_own_namespace(lab):
    hosts = [lab.add_host(ip=None) for _ in range(3)]
    many = [f"echo {index} >> /tmp/aqmlab-shells-{lab.tag}-{{name}}" for index in range(400)]
    assert len(" && ".join(many)) > MAX_LINE    # more than one line's worth
    run_commands({host: [f"ip addr add 10.77.0.{index}/32 dev lo"]
                  + [command.format(name=host.name) for command in many]
                  for index, host in enumerate(hosts)})
    for index, host in enumerate(hosts):
        assert host.cmd("ip -o -4 addr show dev lo").count("10.77.0.") == 1
        assert f"10.77.0.{index}/32" in host.cmd("ip -o -4 addr show dev lo")
        path = f"/tmp/aqmlab-shells-{lab.tag}-{host.name}"
        assert host.cmd(f"cat {path}; rm {path}").split() == [str(i) for i in range(400)]


def test_the_first_failing_command_is_named_with_its_output_and_stops_its_list(lab):
    good, bad = lab.add_host(ip=None), lab.add_host(ip=None)
    with pytest.raises(RuntimeError) as failure:
        run_commands({good: ["true"],
                      bad: ["true", "ip link set nosuchlink up", f"touch /tmp/{lab.tag}-after"]})
    assert str(failure.value).startswith(f"{bad.name}: `ip link set nosuchlink up` failed: ")
    assert "nosuchlink" in str(failure.value).split("failed: ")[1]
    assert bad.cmd(f"ls /tmp/{lab.tag}-after 2>/dev/null").strip() == ""
    assert good.cmd("echo still usable").strip() == "still usable"
