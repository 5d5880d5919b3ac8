//! Received frames as they were on the wire, whatever the ports' offload
//! settings. The kernel hands an AF_PACKET socket a frame without its 802.1Q
//! tag (kept aside in PACKET_AUXDATA), with a checksum left partial when the
//! sender offloaded it (CHECKSUM_PARTIAL: the field holds the pseudo-header
//! sum), and, when the sender used TSO/GSO or the port GRO, one super-frame
//! for many segments (both described by the virtio_net_hdr PACKET_VNET_HDR
//! prepends). This module restores the tag, finishes the checksum and cuts
//! super-frames into the MTU-sized segments the sender's NIC would have sent
//! (as Linux's tcp_gso_segment / __udp_gso_segment do), so the P4 program and
//! the traffic manager see what a wire would carry.

/// Length of `struct virtio_net_hdr`, which PACKET_VNET_HDR puts before each frame.
pub const VNET_HDR_LEN: usize = 10;
/// Length of an 802.1Q tag.
pub const VLAN_HLEN: usize = 4;

pub const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const VIRTIO_NET_HDR_GSO_NONE: u8 = 0;
const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;
const VIRTIO_NET_HDR_GSO_TCPV6: u8 = 4;
const VIRTIO_NET_HDR_GSO_UDP_L4: u8 = 5;
const VIRTIO_NET_HDR_GSO_ECN: u8 = 0x80;

const ETH_P_IPV4: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// The offload state of one received frame (`struct virtio_net_hdr`, host byte order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        VnetHdr { flags: b[0], gso_type: b[1], gso_size: u16_at(4), csum_start: u16_at(6), csum_offset: u16_at(8) }
    }

    pub fn is_gso(&self) -> bool {
        self.gso_type & !VIRTIO_NET_HDR_GSO_ECN != VIRTIO_NET_HDR_GSO_NONE
    }
}

/// Finishes a partial checksum: the ones' complement sum from `csum_start`
/// to the end (the field already holds the pseudo-header sum) goes into the
/// field at `csum_start + csum_offset` (the kernel's skb_checksum_help).
pub fn complete_checksum(frame: &mut [u8], hdr: &VnetHdr) -> Result<(), &'static str> {
    let start = hdr.csum_start as usize;
    let field = start + hdr.csum_offset as usize;
    if field + 2 > frame.len() {
        return Err("partial checksum offsets beyond the frame");
    }
    let sum = fold(add_bytes(0, &frame[start..]));
    frame[field..field + 2].copy_from_slice(&nonzero(!sum).to_be_bytes());
    Ok(())
}

/// Puts an 802.1Q tag back after the MAC addresses. `buf[at..at + len]` is
/// the frame; the 4 bytes before `at` are free. Returns the tagged frame's start.
pub fn insert_vlan_tag(buf: &mut [u8], at: usize, len: usize, tpid: u16, tci: u16) -> Result<usize, &'static str> {
    if at < VLAN_HLEN || len < 12 {
        return Err("no room for the VLAN tag");
    }
    let start = at - VLAN_HLEN;
    buf.copy_within(at..at + 12, start);
    buf[start + 12..start + 14].copy_from_slice(&tpid.to_be_bytes());
    buf[start + 14..start + 16].copy_from_slice(&tci.to_be_bytes());
    Ok(start)
}

/// Where a frame's L3 and L4 headers are.
struct Layout {
    l3: usize,
    ipv4: bool,
    l4: usize,
    l4_proto: u8,
    /// End of the L4 header (start of the payload).
    payload: usize,
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn layout(frame: &[u8]) -> Result<Layout, &'static str> {
    let mut l3 = 14;
    let short = "super-frame shorter than its headers";
    if frame.len() < l3 {
        return Err(short);
    }
    let mut ethertype = be16(frame, 12);
    while ethertype == ETH_P_8021Q || ethertype == ETH_P_8021AD {
        if frame.len() < l3 + 4 {
            return Err(short);
        }
        ethertype = be16(frame, l3 + 2);
        l3 += 4;
    }
    let (ipv4, l4, l4_proto) = match ethertype {
        ETH_P_IPV4 if frame.len() >= l3 + 20 => (true, l3 + (frame[l3] as usize & 0x0f) * 4, frame[l3 + 9]),
        ETH_P_IPV6 if frame.len() >= l3 + 40 => (false, l3 + 40, frame[l3 + 6]),
        ETH_P_IPV4 | ETH_P_IPV6 => return Err(short),
        _ => return Err("super-frame is neither IPv4 nor IPv6"),
    };
    let payload = match l4_proto {
        IPPROTO_TCP if frame.len() >= l4 + 20 => l4 + (frame[l4 + 12] as usize >> 4) * 4,
        IPPROTO_UDP => l4 + 8,
        IPPROTO_TCP => return Err(short),
        _ => return Err("super-frame is neither TCP nor UDP (IPv6 extension headers are not segmented)"),
    };
    if frame.len() < payload {
        return Err(short);
    }
    Ok(Layout { l3, ipv4, l4, l4_proto, payload })
}

/// Cuts a GSO/GRO super-frame into segments of at most `gso_size` payload
/// bytes, each with its own lengths, IPv4 id, TCP sequence number and flags,
/// and complete checksums; appends them to `out`.
pub fn segment(frame: &[u8], hdr: &VnetHdr, out: &mut Vec<Vec<u8>>) -> Result<(), &'static str> {
    let lay = layout(frame)?;
    let expected = match hdr.gso_type & !VIRTIO_NET_HDR_GSO_ECN {
        VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_TCPV6 => IPPROTO_TCP,
        VIRTIO_NET_HDR_GSO_UDP_L4 => IPPROTO_UDP,
        _ => return Err("unsupported GSO type"),
    };
    if lay.l4_proto != expected {
        return Err("GSO type does not match the frame's protocol");
    }
    if hdr.gso_size == 0 {
        return Err("GSO super-frame with gso_size 0");
    }
    let headers = &frame[..lay.payload];
    let chunks: Vec<&[u8]> = frame[lay.payload..].chunks(hdr.gso_size as usize).collect();
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let mut seg = Vec::with_capacity(headers.len() + chunk.len());
        seg.extend_from_slice(headers);
        seg.extend_from_slice(chunk);
        fix_ip_header(&mut seg, &lay, i as u16);
        if lay.l4_proto == IPPROTO_TCP {
            let seq = u32::from_be_bytes(seg[lay.l4 + 4..lay.l4 + 8].try_into().unwrap());
            let seq = seq.wrapping_add((i * hdr.gso_size as usize) as u32);
            seg[lay.l4 + 4..lay.l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if i + 1 < n {
                seg[lay.l4 + 13] &= !(TCP_FIN | TCP_PSH);
            }
            if i > 0 {
                seg[lay.l4 + 13] &= !TCP_CWR;
            }
        } else {
            let udp_len = (seg.len() - lay.l4) as u16;
            seg[lay.l4 + 4..lay.l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
        }
        set_l4_checksum(&mut seg, &lay);
        out.push(seg);
    }
    Ok(())
}

/// A segment's IP length (and, for IPv4, id + `index` and header checksum).
fn fix_ip_header(seg: &mut [u8], lay: &Layout, index: u16) {
    let l3 = lay.l3;
    if lay.ipv4 {
        let total = (seg.len() - l3) as u16;
        seg[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
        let id = be16(seg, l3 + 4).wrapping_add(index);
        seg[l3 + 4..l3 + 6].copy_from_slice(&id.to_be_bytes());
        seg[l3 + 10..l3 + 12].copy_from_slice(&[0, 0]);
        let sum = !fold(add_bytes(0, &seg[l3..lay.l4]));
        seg[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
    } else {
        let payload_len = (seg.len() - l3 - 40) as u16;
        seg[l3 + 4..l3 + 6].copy_from_slice(&payload_len.to_be_bytes());
    }
}

/// The TCP or UDP checksum over the pseudo-header (RFC 793 / RFC 768 / RFC 8200 8.1) and the segment.
fn set_l4_checksum(seg: &mut [u8], lay: &Layout) {
    let field = lay.l4 + if lay.l4_proto == IPPROTO_TCP { 16 } else { 6 };
    seg[field..field + 2].copy_from_slice(&[0, 0]);
    let l4_len = (seg.len() - lay.l4) as u32;
    let mut sum = if lay.ipv4 {
        add_bytes(0, &seg[lay.l3 + 12..lay.l3 + 20])
    } else {
        add_bytes(0, &seg[lay.l3 + 8..lay.l3 + 40])
    };
    sum += lay.l4_proto as u32 + (l4_len >> 16) + (l4_len & 0xffff);
    let sum = !fold(add_bytes(sum, &seg[lay.l4..]));
    seg[field..field + 2].copy_from_slice(&nonzero(sum).to_be_bytes());
}

/// Adds big-endian 16-bit words (an odd last byte padded with zero) to `sum`.
fn add_bytes(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum = fold_once(sum + u16::from_be_bytes([w[0], w[1]]) as u32);
    }
    if let [last] = words.remainder() {
        sum = fold_once(sum + ((*last as u32) << 8));
    }
    sum
}

fn fold_once(sum: u32) -> u32 {
    (sum & 0xffff) + (sum >> 16)
}

fn fold(sum: u32) -> u16 {
    fold_once(fold_once(sum)) as u16
}

/// A computed checksum of 0 is sent as 0xffff (the same in ones' complement;
/// for UDP, 0 would mean "no checksum").
fn nonzero(sum: u16) -> u16 {
    if sum == 0 { 0xffff } else { sum }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 checksum of `bytes` (0 when a header with its checksum is valid).
    fn rfc1071(bytes: &[u8]) -> u16 {
        !fold(add_bytes(0, bytes))
    }

    fn tcp_pseudo_ok(seg: &[u8], lay: &Layout) -> bool {
        let l4_len = (seg.len() - lay.l4) as u32;
        let mut pseudo = if lay.ipv4 { seg[lay.l3 + 12..lay.l3 + 20].to_vec() } else { seg[lay.l3 + 8..lay.l3 + 40].to_vec() };
        pseudo.extend_from_slice(&[0, lay.l4_proto]);
        pseudo.extend_from_slice(&if lay.ipv4 { (l4_len as u16).to_be_bytes().to_vec() } else { l4_len.to_be_bytes().to_vec() });
        pseudo.extend_from_slice(&seg[lay.l4..]);
        rfc1071(&pseudo) == 0
    }

    /// An Ethernet + IPv4 + TCP super-frame with `payload` bytes, flags PSH|FIN|CWR.
    fn tcp_v4_superframe(payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[12..14].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
        f[14] = 0x45;
        f[14 + 4..14 + 6].copy_from_slice(&0x1000u16.to_be_bytes());
        f[14 + 8] = 64;
        f[14 + 9] = IPPROTO_TCP;
        f[14 + 12..14 + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34 + 4..34 + 8].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        f[34 + 12] = 5 << 4;
        f[34 + 13] = TCP_PSH | TCP_FIN | TCP_CWR | 0x10;
        for (i, b) in f[54..].iter_mut().enumerate() {
            *b = i as u8;
        }
        f
    }

    #[test]
    fn tcp_super_frame_becomes_mss_sized_segments_with_valid_checksums() {
        let frame = tcp_v4_superframe(3000);
        let hdr = VnetHdr { gso_type: VIRTIO_NET_HDR_GSO_TCPV4, gso_size: 1448, ..Default::default() };
        let mut segs = Vec::new();
        segment(&frame, &hdr, &mut segs).unwrap();
        assert_eq!(segs.iter().map(|s| s.len() - 54).collect::<Vec<_>>(), [1448, 1448, 104]);
        let lay = layout(&segs[0]).unwrap();
        let mut payload = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            assert_eq!(be16(s, 16) as usize, s.len() - 14, "IPv4 total length");
            assert_eq!(be16(s, 18), 0x1000 + i as u16, "IPv4 id");
            assert_eq!(rfc1071(&s[14..34]), 0, "IPv4 header checksum");
            assert!(tcp_pseudo_ok(s, &lay), "TCP checksum of segment {i}");
            let seq = u32::from_be_bytes(s[38..42].try_into().unwrap());
            assert_eq!(seq, 0xffff_fff0u32.wrapping_add(1448 * i as u32), "sequence number wraps");
            let flags = s[47];
            assert_eq!(flags & (TCP_PSH | TCP_FIN) != 0, i == 2, "PSH/FIN only on the last");
            assert_eq!(flags & TCP_CWR != 0, i == 0, "CWR only on the first");
            payload.extend_from_slice(&s[54..]);
        }
        assert_eq!(payload, frame[54..]);
    }

    #[test]
    fn udp_l4_super_frame_over_ipv6_behind_a_vlan_tag() {
        let payload = 2500;
        let mut f = vec![0u8; 18 + 40 + 8 + payload];
        f[12..14].copy_from_slice(&ETH_P_8021Q.to_be_bytes());
        f[16..18].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
        f[18] = 0x60;
        f[18 + 6] = IPPROTO_UDP;
        f[18 + 8] = 0xfd;
        f[18 + 39] = 2;
        for (i, b) in f[66..].iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let hdr = VnetHdr { gso_type: VIRTIO_NET_HDR_GSO_UDP_L4, gso_size: 1000, ..Default::default() };
        let mut segs = Vec::new();
        segment(&f, &hdr, &mut segs).unwrap();
        assert_eq!(segs.len(), 3);
        let lay = layout(&segs[0]).unwrap();
        for s in &segs {
            assert_eq!(be16(s, 18 + 4) as usize, s.len() - 58, "IPv6 payload length");
            assert_eq!(be16(s, 58 + 4) as usize, s.len() - 58, "UDP length");
            assert!(tcp_pseudo_ok(s, &lay), "UDP checksum");
        }
    }

    #[test]
    fn partial_checksum_is_completed() {
        let mut frame = tcp_v4_superframe(101);
        let lay = layout(&frame).unwrap();
        // What the kernel leaves: the pseudo-header sum, not complemented, in the field.
        let l4_len = (frame.len() - lay.l4) as u32;
        let pseudo = add_bytes(IPPROTO_TCP as u32 + l4_len, &frame[26..34]);
        frame[50..52].copy_from_slice(&fold(pseudo).to_be_bytes());
        let hdr = VnetHdr { flags: VIRTIO_NET_HDR_F_NEEDS_CSUM, csum_start: 34, csum_offset: 16, ..Default::default() };
        complete_checksum(&mut frame, &hdr).unwrap();
        assert!(tcp_pseudo_ok(&frame, &lay));
        let beyond = VnetHdr { csum_start: 200, csum_offset: 16, ..hdr };
        assert!(complete_checksum(&mut frame, &beyond).is_err());
    }

    #[test]
    fn vlan_tag_goes_back_after_the_mac_addresses() {
        let mut buf = vec![0u8; 4];
        buf.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00, 0x45]);
        let start = insert_vlan_tag(&mut buf, 4, 15, ETH_P_8021Q, 0x2064).unwrap();
        assert_eq!(&buf[start..], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0x00, 0x20, 0x64, 0x08, 0x00, 0x45]);
        assert!(insert_vlan_tag(&mut buf, 2, 15, ETH_P_8021Q, 1).is_err());
    }

    #[test]
    fn unsupported_super_frames_are_refused_with_a_reason() {
        let frame = tcp_v4_superframe(100);
        let mut segs = Vec::new();
        let udp = VnetHdr { gso_type: VIRTIO_NET_HDR_GSO_UDP_L4, gso_size: 10, ..Default::default() };
        assert!(segment(&frame, &udp, &mut segs).is_err());
        let zero = VnetHdr { gso_type: VIRTIO_NET_HDR_GSO_TCPV4, gso_size: 0, ..Default::default() };
        assert!(segment(&frame, &zero, &mut segs).is_err());
        assert!(segs.is_empty());
    }
}
