//! Shared helpers for the integration tests: program loading and frame builders.
#![allow(dead_code)]

use p4core::*;
use std::sync::Arc;

pub fn load(name: &str) -> (Arc<Program>, State, Executor) {
    let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let prog = Arc::new(Program::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}")));
    let state = State::new(&prog);
    let ex = Executor::new(prog.clone(), 7);
    (prog, state, ex)
}

pub fn field(prog: &Program, h: &str, f: &str) -> usize {
    prog.field_index(h, f).unwrap_or_else(|| panic!("no field {h}.{f}"))
}

/// RFC 1071 checksum of a byte string.
pub fn csum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes.chunks(2).map(|c| ((c[0] as u32) << 8) | *c.get(1).unwrap_or(&0) as u32).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub const MAC_A: [u8; 6] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x0a];
pub const MAC_B: [u8; 6] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x0b];

pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An IPv4 header (+ options, + payload) with a correct checksum.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, options: &[u8], payload: &[u8]) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let ihl = 5 + options.len() / 4;
    let total = (ihl * 4 + payload.len()) as u16;
    let mut h = vec![0x40 | ihl as u8, 0x02, 0, 0, 0x12, 0x34, 0x40, 0x00, 64, proto, 0, 0];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(options);
    let c = csum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

/// Ethernet/IPv4/UDP frame.
pub fn udp_frame(src: [u8; 4], dst: [u8; 4], dport: u16) -> Vec<u8> {
    eth(MAC_B, MAC_A, 0x0800, &ipv4(src, dst, 17, &[], &udp(1234, dport, b"hello p4core")))
}

/// The checksum a UDP datagram must carry (pseudo-header + header + payload).
pub fn udp_checksum(ip: &[u8]) -> u16 {
    let ihl = (ip[0] & 0xf) as usize * 4;
    let seg = &ip[ihl..];
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&ip[12..20]);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    pseudo.extend_from_slice(&seg[..6]);
    pseudo.extend_from_slice(&seg[8..]);
    csum(&pseudo)
}

pub fn mpls(label: u32, bos: bool, ttl: u8) -> [u8; 4] {
    let v = (label << 12) | ((bos as u32) << 8) | ttl as u32;
    v.to_be_bytes()
}

/// Runs ingress then egress (empty queue) and returns the output frames.
pub fn forward(st: &State, ex: &mut Executor, port: u32, frame: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let out = ex.ingress(st, port, frame, 1000);
    out.queued
        .into_iter()
        .filter_map(|q| ex.egress(st, q, QueueMeta::default(), 1010).out)
        .collect()
}
