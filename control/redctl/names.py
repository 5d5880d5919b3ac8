"""P4Info names of red_ecn.p4 (the stable list in p4src/README.md)."""

IPV4_LPM = "MyIngress.ipv4_lpm"
IPV4_LPM_KEY = "hdr.ipv4.dstAddr"
IPV4_FORWARD = "MyIngress.ipv4_forward"

SAMPLING = "MyIngress.telemetry_sampling"
SAMPLING_KEY = "standard_metadata.egress_spec"
SET_SAMPLING = "MyIngress.set_sampling"

RED_CONFIG = "MyEgress.red_config"
RED_CONFIG_KEY = "standard_metadata.egress_port"
SET_RED = "MyEgress.set_red"

RED_DECAY = "MyEgress.red_idle_decay"
RED_DECAY_KEYS = ("standard_metadata.egress_port", "meta.red.idle_bucket")
SET_DECAY_FACTOR = "MyEgress.set_decay_factor"

# port_counters() key -> counter; "packets" also yields "bytes".
COUNTERS = {
    "packets": "MyEgress.port_tx",
    "early_marks": "MyEgress.early_marks",
    "early_drops": "MyEgress.early_drops",
    "forced_drops": "MyEgress.forced_drops",
}

TELEMETRY_DIGEST = "telemetry_t"
