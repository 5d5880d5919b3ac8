"""The traffic agent's records on loopback (no root, no lab): a transfer and
its sender's tcp_info name the same connection, as drops.csv names flows."""

import json
import re
import socket
import threading
import time

from aqmlab import agent


def read_records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_transfer_and_its_senders_tcp_info_name_the_same_connection(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        sender = agent.OpenConnections(agent.Recorder(tmp_path / "sender.jsonl", {}))
        serve = agent.parse_args(["serve", "--port", str(port), "--ready-file", "unused"])
        server = threading.Thread(target=lambda: agent.serve_connection(
            listener.accept()[0], serve, sender))
        server.start()
        client = agent.Client(agent.parse_args([
            "client", "--kind", "surge", "--server", "127.0.0.1", "--port", str(port),
            "--log", str(tmp_path / "client.jsonl"), "--workload", "web", "--host", "h1",
            "--flow-prefix", "web.0", "--epoch", str(time.time()), "--duration", "10"]))
        assert client.fetch(50_000, kind="surge", flow="web.0.0", transfer=0)
        server.join(timeout=10)
    [transfer] = read_records(tmp_path / "client.jsonl")
    [info] = read_records(tmp_path / "sender.jsonl")
    assert re.fullmatch(rf"127\.0\.0\.1:{port}>127\.0\.0\.1:\d+", transfer["connection"])
    assert info["connection"] == transfer["connection"]
    assert (info["workload"], info["flow"]) == ("web", "web.0.0") and info["data_segs_out"] > 0
