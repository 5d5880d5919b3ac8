"""Traffic agent: runs inside a Mininet host and records every transfer.

`python -m aqmlab.agent serve ...` is the data sender (the "server": data flows
server -> client, as in RFC 2415/2884). `python -m aqmlab.agent client ...` runs
one workload and appends one JSON line per transfer to its log:
{"kind", "flow", "start", "end", "bytes", ...}; times are wall-clock seconds
(all namespaces share the clock). A transfer on its own connection (`fetch`)
and the sender's tcp_info of a connection name it as `connection`, the data
direction's 4-tuple `server:port>client:port` (the form of drops.csv's flows).

Protocol: the client sends one request line `<nbytes> <padding>\\n`; nbytes = -1
means "send until I close". The server answers each request on the same
connection, so HTTP/1.1 pipelining is just several lines.
"""

import argparse
import json
import math
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import time

CHUNK = memoryview(b"\x00" * 65536)
UNLIMITED = -1
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
SO_MAX_PACING_RATE = 47
SAMPLE_INTERVAL = 0.5
TCP_INFO = getattr(socket, "TCP_INFO", 11)
# struct tcp_info (include/uapi/linux/tcp.h) up to tcpi_total_rto_time: 8 one-byte
# fields, rto .. total_retrans, pacing_rate .. bytes_received, segs_out/in,
# notsent_bytes .. data_segs_out, delivery_rate, busy_time .. sndbuf_limited,
# delivered, delivered_ce, bytes_sent, bytes_retrans, dsack_dups .. rehash (Linux
# 4.19-6.2), total_rto, total_rto_recoveries, total_rto_time (Linux 6.7).
TCP_INFO_FORMAT = "=8B24I4Q2I4IQ3Q2I2Q6I2HI"
TCP_INFO_FIELDS = {"snd_mss": 10, "rtt_us": 23, "snd_cwnd": 26, "total_retrans": 31,
                   "pacing_rate": 32, "bytes_acked": 34,
                   "bytes_received": 35,
                   "min_rtt_us": 39, "data_segs_out": 41, "delivered": 46, "delivered_ce": 47,
                   "bytes_retrans": 49, "dsack_dups": 50, "total_rto": 56,
                   "total_rto_recoveries": 57}     # index into the unpacked tuple


# ---------------------------------------------------------------- sizes/times
def make_sampler(spec, rng):
    """A size/time distribution from its experiment-file form -> callable()."""
    dist = spec["dist"]
    if dist == "fixed":
        return lambda: spec["value"]
    if dist == "uniform":
        return lambda: rng.uniform(spec["low"], spec["high"])
    if dist == "lognormal":
        return lambda: rng.lognormvariate(spec["mu"], spec["sigma"])
    if dist == "pareto":
        return lambda: spec["k"] / (1.0 - rng.random()) ** (1.0 / spec["alpha"])
    if dist == "surge":
        return surge_size_sampler(spec, rng)
    raise ValueError(f"unknown distribution {dist!r}")


def surge_size_sampler(spec, rng):
    """SURGE file sizes: lognormal body below the cut-off k, Pareto tail above.

    The tail keeps the probability mass the lognormal gives to sizes > k, so
    the two pieces join without a gap (Barford & Crovella 1998)."""
    mu, sigma, k, alpha = spec["mu"], spec["sigma"], spec["k"], spec["alpha"]
    tail_mass = 0.5 * math.erfc((math.log(k) - mu) / (sigma * math.sqrt(2)))

    def sample():
        if rng.random() < tail_mass:
            return k / (1.0 - rng.random()) ** (1.0 / alpha)
        while True:
            size = rng.lognormvariate(mu, sigma)
            if size <= k:
                return size
    return sample


def size_sampler(spec, rng, max_size):
    draw = make_sampler(spec, rng)
    return lambda: max(1, min(int(draw()), max_size))


# -------------------------------------------------------------------- server
def configure_sender(sock, opts):
    if opts.cc:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, opts.cc.encode())
    if opts.pacing_rate:
        # unsigned long: above 2^31 the value only fits the 64-bit form
        sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("Q", opts.pacing_rate))


def send_bytes(conn, nbytes):
    if nbytes == UNLIMITED:
        while True:
            conn.sendall(CHUNK)
    while nbytes > 0:
        sent = conn.send(CHUNK[: min(nbytes, len(CHUNK))])
        nbytes -= sent


def tcp_info_fields(raw: bytes) -> dict:
    """TCP_INFO_FIELDS from a tcp_info the kernel returned; a field an older
    kernel does not fill (beyond the returned length) is None."""
    size = struct.calcsize(TCP_INFO_FORMAT)
    values = struct.unpack(TCP_INFO_FORMAT, raw[:size].ljust(size, b"\0"))
    codes = "".join(c * int(n or 1) for n, c in re.findall(r"(\d*)([BHIQ])", TCP_INFO_FORMAT))
    return {name: values[index] if struct.calcsize("=" + codes[:index + 1]) <= len(raw) else None
            for name, index in TCP_INFO_FIELDS.items()}


def tcp_info(sock):
    """The sender's view of a connection (Linux tcp_info): retransmitted
    segments, smoothed/min RTT, MSS, cwnd, pacing rate (bytes/s), segments
    acknowledged with ECE, DSACKs received (retransmissions the receiver
    already had) and RTO expiries."""
    return tcp_info_fields(sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, struct.calcsize(TCP_INFO_FORMAT)))


class OpenConnections:
    """The server's labelled connections, so that each one's tcp_info is
    logged once: when it closes, or when the server is stopped (an unlimited
    flow still sending at the end of a run never closes before that)."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.lock = threading.Lock()
        self.labels = {}

    def label(self, conn, labels):
        with self.lock:
            self.labels[conn] = labels

    def log(self, conn):
        with self.lock:
            labels = self.labels.pop(conn, None)
        if self.recorder and labels:
            try:
                self.recorder.write(kind="tcp_info", t=time.time(), **labels, **tcp_info(conn))
            except OSError as error:
                print(f"tcp_info: {error!r}", file=sys.stderr, flush=True)

    def log_all(self):
        for conn in list(self.labels):
            self.log(conn)


def connection_name(server_address, client_address):
    """The data direction's 4-tuple, `server:port>client:port`."""
    return f"{server_address[0]}:{server_address[1]}>{client_address[0]}:{client_address[1]}"


def serve_connection(conn, opts, open_connections):
    """Answer the connection's requests; then log its tcp_info under the
    workload and flow the first request names, and the connection's 4-tuple."""
    labelled = False
    try:
        configure_sender(conn, opts)
        reader = conn.makefile("rb")
        for line in reader:
            words = line.split()
            if not labelled and len(words) >= 3:
                open_connections.label(conn, {
                    "workload": words[1].decode(), "flow": words[2].decode(),
                    "connection": connection_name(conn.getsockname(), conn.getpeername())})
                labelled = True
            send_bytes(conn, int(words[0]))
    except ConnectionError:
        pass                      # the client closed: the normal end of unlimited data
    except (OSError, ValueError, IndexError) as error:
        print(f"connection error: {error!r}", file=sys.stderr, flush=True)
    finally:
        open_connections.log(conn)
        conn.close()


def serve(opts):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if opts.sndbuf:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, opts.sndbuf)
    listener.bind((opts.bind, opts.port))
    listener.listen(4096)
    open_connections = OpenConnections(Recorder(opts.log, {}) if opts.log else None)

    def stop(*_):
        open_connections.log_all()
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)
    with open(opts.ready_file, "w") as ready:
        ready.write(str(os.getpid()))
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(conn, opts, open_connections),
                         daemon=True).start()


# -------------------------------------------------------------------- client
class Recorder:
    """Appends one JSON object per line; shared by the client's threads."""

    def __init__(self, path, common):
        self.file = open(path, "a", buffering=1)
        self.common = common
        self.lock = threading.Lock()

    def write(self, **record):
        line = json.dumps({**self.common, **record})
        with self.lock:
            self.file.write(line + "\n")


class Client:
    def __init__(self, opts):
        self.opts = opts
        self.deadline = opts.epoch + opts.start + opts.duration
        self.recorder = Recorder(opts.log, {"workload": opts.workload, "host": opts.host})

    def time_left(self):
        return self.deadline - time.time()

    def connect(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.opts.rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.opts.rcvbuf)
        sock.settimeout(max(self.time_left(), 0.1))
        sock.connect((self.opts.server, self.opts.port))
        return sock

    def request(self, sock, nbytes, flow=None):
        """`<nbytes> [<workload> <flow>] xxx..\\n`, request_bytes long; the labels
        (when they fit) let the sender log its tcp_info per flow."""
        head = f"{nbytes} "
        if flow and len(head) + len(self.opts.workload) + len(flow) + 3 <= self.opts.request_bytes:
            head += f"{self.opts.workload} {flow} "
        line = head.ljust(max(self.opts.request_bytes - 1, 1), "x") + "\n"
        sock.sendall(line.encode())

    def receive(self, sock, nbytes, on_progress=None):
        """Read nbytes (or until the deadline when unlimited); -> bytes read."""
        got = 0
        while nbytes == UNLIMITED or got < nbytes:
            left = self.time_left()
            if left <= 0:
                break
            sock.settimeout(left)
            want = 65536 if nbytes == UNLIMITED else min(65536, nbytes - got)
            try:
                data = sock.recv(want)
            except socket.timeout:
                break
            if not data:
                break
            got += len(data)
            if on_progress:
                on_progress(got)
        return got

    def fetch(self, nbytes, **labels):
        """One transfer on a new connection (HTTP/1.0, CRR, SURGE, bulk),
        recorded with its connection's 4-tuple once connected: the switch's
        drop records name the same 4-tuple."""
        start = time.time()
        try:
            with self.connect() as sock:
                labels["connection"] = connection_name(sock.getpeername(), sock.getsockname())
                self.request(sock, nbytes, labels.get("flow"))
                got = self.receive(sock, nbytes)
        except OSError as error:
            self.recorder.write(start=start, end=time.time(), bytes=0, size=nbytes,
                                complete=False, error=str(error), **labels)
            return False
        done = got == nbytes
        self.recorder.write(start=start, end=time.time(), bytes=got, size=nbytes,
                            complete=done, **labels)
        return done

    def sleep(self, seconds):
        time.sleep(max(0.0, min(seconds, self.time_left())))


def run_bulk(client, flow, rng):
    opts = client.opts
    if opts.size == UNLIMITED:
        return bulk_unlimited(client, flow)
    transfer = 0
    while client.time_left() > 0:
        client.fetch(opts.size, kind="bulk", flow=flow, transfer=transfer)
        transfer += 1
        if not opts.repeat:
            return


def bulk_unlimited(client, flow):
    """One connection for the whole run; every 0.5 s a sample of the bytes the
    receiving TCP has taken in order (tcp_info bytes_received), read with its
    time: unlike the bytes the reader has consumed, this count does not lag
    when the agent is descheduled, so a short window's goodput stays exact."""
    start = time.time()
    next_sample = [start + SAMPLE_INTERVAL]
    got = 0
    try:
        with client.connect() as sock:
            def sample(now):
                client.recorder.write(kind="sample", flow=flow, t=now,
                                      bytes=tcp_info(sock)["bytes_received"])
                next_sample[0] = now + SAMPLE_INTERVAL

            def on_progress(_):
                now = time.time()
                if now >= next_sample[0]:
                    sample(now)
            client.request(sock, UNLIMITED, flow)
            got = client.receive(sock, UNLIMITED, on_progress)
            sample(time.time())
    except OSError as error:
        client.recorder.write(kind="error", flow=flow, t=time.time(), error=str(error))
    client.recorder.write(kind="bulk", flow=flow, transfer=0, start=start, end=time.time(),
                          bytes=got, size=UNLIMITED, complete=client.time_left() <= 0)


def browse(client, flow, rng, fetch_page):
    """Pages until the run ends: draw the page's object sizes, fetch them with
    `fetch_page(client, flow, page, sizes) -> complete`, record, think."""
    opts = client.opts
    draw = size_sampler(opts.object_size, rng, opts.max_size)
    think = make_sampler(opts.think, rng)
    page = 0
    while client.time_left() > 0:
        start = time.time()
        sizes = [draw() for _ in range(1 + opts.embedded)]
        record_page(client, flow, page, start, sizes, fetch_page(client, flow, page, sizes))
        page += 1
        client.sleep(think())


def fetch_page_http10(client, flow, page, sizes):
    """Primary object, then the embedded objects on parallel new connections."""
    if not client.fetch(sizes[0], kind="object", flow=flow, page=page, object=0):
        return False
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(client.fetch(
        sizes[i], kind="object", flow=flow, page=page, object=i)))
        for i in range(1, len(sizes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return all(results) and len(results) == len(sizes) - 1


def fetch_page_http11(client, flow, page, sizes):
    """All objects of a page on one connection: primary, then the embedded pipelined."""
    try:
        with client.connect() as sock:
            client.request(sock, sizes[0], flow)
            if client.receive(sock, sizes[0]) != sizes[0]:
                return False
            for size in sizes[1:]:
                client.request(sock, size)
            rest = sum(sizes[1:])
            return client.receive(sock, rest) == rest
    except OSError:
        return False


def run_http10(client, flow, rng):
    browse(client, flow, rng, fetch_page_http10)


def run_http11(client, flow, rng):
    browse(client, flow, rng, fetch_page_http11)


def record_page(client, flow, page, start, sizes, complete):
    client.recorder.write(kind="page", flow=flow, page=page, start=start, end=time.time(),
                          bytes=sum(sizes) if complete else 0, size=sum(sizes),
                          objects=len(sizes), complete=complete)


def run_crr(client, flow, rng):
    """netperf TCP_CRR style: connect, request, response, close, repeat."""
    transaction = 0
    while client.time_left() > 0:
        client.fetch(client.opts.size, kind="transaction", flow=flow, transfer=transaction)
        transaction += 1


def run_surge(client, flow, rng):
    """SURGE: heavy-tailed file sizes, Pareto idle times between requests."""
    opts = client.opts
    draw = size_sampler(opts.object_size, rng, opts.max_size)
    interval = make_sampler(opts.think, rng)
    transfer = 0
    while client.time_left() > 0:
        client.fetch(draw(), kind="surge", flow=flow, transfer=transfer)
        transfer += 1
        client.sleep(interval())


# ------------------------------------------------------------ echo (RFC 889)
SO_TIMESTAMPNS = 35          # linux/asm-generic/socket.h (also SCM_TIMESTAMPNS); not in `socket`
ICMP_ECHO_REQUEST, ICMP_ECHO_REPLY = 8, 0
IP_ICMP_HEADERS = 28         # the 20-octet IPv4 header (no options) + the 8-octet ICMP header


def icmp_checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def echo_request(ident, seq, length):
    """An ICMP echo request whose IP datagram is `length` octets."""
    payload = bytes(length - IP_ICMP_HEADERS)
    header = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, 0, ident, seq)
    return struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, icmp_checksum(header + payload),
                       ident, seq) + payload


def await_reply(sock, ident, seq, until):
    """The kernel's receive time of the matching echo reply, or None at `until`."""
    while True:
        left = until - time.time()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            data, ancillary, _, _ = sock.recvmsg(2048, socket.CMSG_SPACE(16))
        except socket.timeout:
            return None
        icmp = data[(data[0] & 0x0F) * 4:]
        if len(icmp) < 8:
            continue
        kind, _, _, got_ident, got_seq = struct.unpack("!BBHHH", icmp[:8])
        if (kind, got_ident, got_seq) != (ICMP_ECHO_REPLY, ident, seq):
            continue
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = struct.unpack("qq", value[:16])
                return seconds + nanoseconds * 1e-9
        return time.time()


def run_echo(client, flow, rng):
    """RFC 889's probe: ICMP echoes to the server, one in flight, lengths
    (IP octets) drawn uniformly or fixed; one `echo` record per volley: start =
    sent, end = the reply's kernel timestamp (delay = round trip), complete =
    replied; no reply within `timeout` is a lost volley (end = start +
    timeout). A volley the run's end cuts short is not recorded. Records name
    their `probe`, not a `flow`: probes are not goodput flows."""
    opts, spec = client.opts, client.opts.object_size
    length = (lambda: int(spec["value"])) if spec["dist"] == "fixed" else \
        (lambda: rng.randint(int(spec["low"]), int(spec["high"])))
    ident = rng.getrandbits(16)
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as sock:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        for seq in range(opts.volleys):
            if client.time_left() <= 0:
                break
            octets = length()
            packet = echo_request(ident, seq & 0xFFFF, octets)
            sent = time.time()
            sock.sendto(packet, (opts.server, 0))
            received = await_reply(sock, ident, seq & 0xFFFF,
                                   min(sent + opts.timeout, client.deadline))
            if received is None and time.time() < sent + opts.timeout:
                break                       # the run ended first
            client.recorder.write(kind="echo", probe=flow, transfer=seq, start=sent,
                                  end=received if received else sent + opts.timeout,
                                  bytes=octets, size=octets, complete=received is not None)


WORKLOADS = {"bulk": run_bulk, "http10": run_http10, "http11": run_http11,
             "crr": run_crr, "surge": run_surge, "echo": run_echo}


def client_main(opts):
    client = Client(opts)
    client.sleep(opts.epoch + opts.start - time.time())
    threads = []
    for index in range(opts.connections):
        flow = f"{opts.flow_prefix}.{index}"
        rng = random.Random(f"{opts.seed}:{flow}")
        threads.append(threading.Thread(target=WORKLOADS[opts.kind], args=(client, flow, rng)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# ----------------------------------------------------------------- arguments
def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m aqmlab.agent")
    sub = parser.add_subparsers(dest="mode", required=True)
    server = sub.add_parser("serve")
    server.add_argument("--bind", default="0.0.0.0")
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--ready-file", required=True)
    server.add_argument("--cc", default="")
    server.add_argument("--pacing-rate", type=int, default=0, help="bytes/s; 0 = no pacing")
    server.add_argument("--sndbuf", type=int, default=0)
    server.add_argument("--log", default=None, help="JSON lines: tcp_info of every connection")
    client = sub.add_parser("client")
    client.add_argument("--kind", choices=sorted(WORKLOADS), required=True)
    client.add_argument("--server", required=True)
    client.add_argument("--port", type=int, required=True)
    client.add_argument("--log", required=True)
    client.add_argument("--workload", required=True)
    client.add_argument("--host", required=True)
    client.add_argument("--flow-prefix", required=True)
    client.add_argument("--epoch", type=float, required=True)
    client.add_argument("--start", type=float, default=0.0)
    client.add_argument("--duration", type=float, required=True)
    client.add_argument("--seed", default="1")
    client.add_argument("--connections", type=int, default=1)
    client.add_argument("--size", type=int, default=UNLIMITED)
    client.add_argument("--repeat", action="store_true")
    client.add_argument("--request-bytes", type=int, default=100)
    client.add_argument("--object-size", type=json.loads, default=None)
    client.add_argument("--think", type=json.loads, default=None)
    client.add_argument("--embedded", type=int, default=3)
    client.add_argument("--max-size", type=int, default=100_000_000)
    client.add_argument("--rcvbuf", type=int, default=0)
    client.add_argument("--volleys", type=int, default=512, help="echo: cycles")
    client.add_argument("--timeout", type=float, default=30.0, help="echo: seconds to a loss")
    return parser.parse_args(argv)


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.mode == "serve":
        serve(opts)
    else:
        client_main(opts)


if __name__ == "__main__":
    main()
