"""softswitch-p4c: aqmlab's P4-16 (v1model) front-end emitting BMv2 JSON and P4Info."""
