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

# hw/tofino/red_ecn.p4 (TNA): thresholds live in red_pb, the average in the Lpf.
TNA_RED_CONFIG_KEY = "eg_intr_md.egress_port"
TNA_RED_PB = "MyEgress.red_pb"
TNA_RED_PB_KEYS = ("eg_intr_md.egress_port", "meta.red.avg")
TNA_SET_PB = "MyEgress.set_pb"
TNA_RED_FORCED = "MyEgress.red_forced"
# The Lpf's time constant (ns) per port: a register on the built-in target; on
# bf_switchd it is BF Runtime's $LPF_SPEC_*_TIME_CONSTANT_NS (hw/tofino/README.md).
TNA_LPF = "MyEgress.red_avg_lpf"
