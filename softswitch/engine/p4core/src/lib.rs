//! p4core: BMv2 JSON interpreter with v1model semantics. See README.md.
