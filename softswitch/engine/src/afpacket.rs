//! AF_PACKET raw sockets bound to one interface each. Frames are received
//! from a PACKET_MMAP ring (TPACKET_V2) the kernel writes into, no system
//! call per batch, or with recvmmsg where the ring cannot be set up (or
//! `SOFTSWITCH_RX=recvmmsg` asks for it); they are sent with sendmmsg.
//! Frames are whole Ethernet frames as on the wire, whatever the interface's
//! offload settings: each received frame comes with its offload state
//! (PACKET_VNET_HDR) and its stripped 802.1Q tag (PACKET_AUXDATA, or the
//! ring slot's header), and `offload.rs` turns it back into wire frames.

use crate::offload::{complete_checksum, insert_vlan_tag, segment, VnetHdr, VLAN_HLEN, VNET_HDR_LEN};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Largest frame we accept; anything longer is dropped (GSO super-frames are cut into segments first).
pub const MAX_FRAME: usize = 9216;
/// Largest super-frame we receive (the kernel's default GSO/GRO limit is 64 KiB).
const MAX_RX: usize = 65536 + 64;
/// Receive slot: room to put a stripped VLAN tag back in front of the frame.
const RX_SLOT: usize = VLAN_HLEN + MAX_RX;
/// Frames moved per recvmmsg/sendmmsg call.
pub const BATCH: usize = 64;

// Not exported by the libc crate for every target; values from linux/if_packet.h.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// `SOFTSWITCH_RX=recvmmsg` in the environment keeps the ports off the
/// receive ring (A/B runs); otherwise each port uses one where it can.
pub const RX_ENV: &str = "SOFTSWITCH_RX";
/// Receive ring slot: the kernel's headers (tpacket2_hdr, sockaddr_ll and
/// virtio_net_hdr: 76 bytes before the frame) and a full 1514-byte frame.
/// A longer frame (jumbo, GSO super-frame) comes whole through the socket queue.
const RING_SLOT: usize = 2048;
/// Ring memory comes in blocks of whole pages, each holding whole slots.
const RING_BLOCK: usize = 64 * 1024;
/// 4096 slots (8 MiB): as many full-size frames as the socket buffer held
/// (SO_RCVBUF 4 MiB, which the kernel doubles), about half as many short ones.
/// With 2048, a test's burst of 3,000 short frames lost 146 of them before
/// the switch read them, its thread starved by other load.
const RING_SLOTS: usize = 4096;

fn last_err(what: &str, ifname: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{ifname}: {what}: {e}"))
}

pub struct RawPort {
    /// The receive ring, or why the port receives with recvmmsg instead
    /// (before `fd`: fields drop in order, so the ring is unmapped before the socket closes).
    ring: Result<RxRing, String>,
    fd: OwnedFd,
    pub ifname: String,
    ifindex: i32,
}

impl RawPort {
    /// Opens a non-blocking raw socket that sees only `ifname`'s incoming frames.
    pub fn open(ifname: &str) -> io::Result<RawPort> {
        let cname = CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{ifname}: no such interface")));
        }
        // Protocol 0 at creation: the socket receives nothing until bound to the interface.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(last_err("socket(AF_PACKET)", ifname));
        }
        let mut port = RawPort { fd: unsafe { OwnedFd::from_raw_fd(raw) }, ifname: ifname.to_string(), ifindex,
                                 ring: Err(String::new()) };
        port.setsockopt(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING")?;
        port.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, 4 << 20, "SO_RCVBUF")?;
        port.setsockopt(libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20, "SO_SNDBUF")?;
        // Kernel receive timestamps: a frame's arrival time does not depend on when we got to it.
        port.setsockopt(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS")?;
        // The VLAN tag the kernel strips, and the offload state (partial checksum, GSO) of each frame.
        port.setsockopt(libc::SOL_PACKET, libc::PACKET_AUXDATA, 1, "PACKET_AUXDATA")?;
        port.setsockopt(libc::SOL_PACKET, libc::PACKET_VNET_HDR, 1, "PACKET_VNET_HDR")?;
        // Before the bind, so no frame is queued on the socket instead of the ring.
        port.ring = match std::env::var(RX_ENV).as_deref() {
            Ok("recvmmsg") => Err(format!("{RX_ENV}=recvmmsg")),
            _ => RxRing::set_up(&port),
        };
        port.bind()?;
        Ok(port)
    }

    /// How the port receives, for the start-up log.
    pub fn rx_path(&self) -> String {
        match &self.ring {
            Ok(_) => format!("PACKET_MMAP ring (TPACKET_V2, {RING_SLOTS} slots of {RING_SLOT} bytes)"),
            Err(why) => format!("recvmmsg ({why})"),
        }
    }

    fn setsockopt(&self, level: i32, name: i32, value: i32, what: &str) -> io::Result<()> {
        let rc = unsafe {
            libc::setsockopt(self.fd.as_raw_fd(), level, name, &value as *const i32 as *const libc::c_void,
                             std::mem::size_of::<i32>() as libc::socklen_t)
        };
        if rc < 0 { Err(last_err(what, &self.ifname)) } else { Ok(()) }
    }

    fn bind(&self) -> io::Result<()> {
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = self.ifindex;
        let rc = unsafe {
            libc::bind(self.fd.as_raw_fd(), &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                       std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t)
        };
        if rc < 0 { Err(last_err("bind", &self.ifname)) } else { Ok(()) }
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receives up to BATCH frames; returns how many. Read them in order with
    /// `frame`, then hand them back with `release`.
    pub fn recv_batch(&self, bufs: &mut RecvBufs) -> io::Result<usize> {
        match &self.ring {
            Ok(ring) => match ring.ready() {
                // Nothing in the ring for a port polled readable: the socket's error, if it has one.
                0 => self.socket_error().map(|_| 0),
                n => Ok(n),
            },
            Err(_) => self.recv_socket(bufs, BATCH),
        }
    }

    /// The i-th frame of the batch: when the kernel received it (CLOCK_REALTIME ns, if it said) and the frame.
    pub fn frame<'a>(&'a self, bufs: &'a mut RecvBufs, i: usize) -> (Option<u64>, Received<'a>) {
        let Ok(ring) = &self.ring else {
            return (bufs.kernel_timestamp_ns(i), bufs.received(i));
        };
        let slot = ring.slot(i);
        let stamp = Some(slot.timestamp_ns());
        if slot.status() & libc::TP_STATUS_COPY != 0 {
            // Longer than a slot: the whole frame is next on the socket queue.
            return match self.recv_socket(bufs, 1) {
                Ok(1) => (stamp, bufs.received(0)),
                _ => (stamp, Received::Dropped("frame longer than a ring slot, gone from the socket queue")),
            };
        }
        (stamp, slot.received(&mut bufs.segments))
    }

    /// Hands the batch's `n` frames back to the kernel (ring slots to refill).
    pub fn release(&self, n: usize) {
        if let Ok(ring) = &self.ring {
            ring.release(n);
        }
    }

    fn socket_error(&self) -> io::Result<()> {
        let mut err: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut _ as *mut libc::c_void, &mut len)
        };
        match (rc, err) {
            (rc, _) if rc < 0 => Err(io::Error::last_os_error()),
            (_, 0) => Ok(()),
            (_, e) => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// Receives up to `count` frames from the socket queue into `bufs`.
    fn recv_socket(&self, bufs: &mut RecvBufs, count: usize) -> io::Result<usize> {
        for i in 0..count {
            bufs.iov[2 * i] = libc::iovec { iov_base: bufs.vnet[i].as_mut_ptr() as *mut _, iov_len: VNET_HDR_LEN };
            let slot = bufs.data[i * RX_SLOT + VLAN_HLEN..].as_mut_ptr();
            bufs.iov[2 * i + 1] = libc::iovec { iov_base: slot as *mut _, iov_len: MAX_RX };
            bufs.hdrs[i] = unsafe { std::mem::zeroed() };
            bufs.hdrs[i].msg_hdr.msg_iov = &mut bufs.iov[2 * i];
            bufs.hdrs[i].msg_hdr.msg_iovlen = 2;
            bufs.hdrs[i].msg_hdr.msg_control = bufs.control[i * CONTROL_LEN..].as_mut_ptr() as *mut _;
            bufs.hdrs[i].msg_hdr.msg_controllen = CONTROL_LEN;
        }
        let n = unsafe {
            libc::recvmmsg(self.fd.as_raw_fd(), bufs.hdrs.as_mut_ptr(), count as u32, libc::MSG_TRUNC, std::ptr::null_mut())
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        Ok(n as usize)
    }

    /// Sends frames from the front of `frames` until all are sent or the
    /// kernel pushes back (device or socket queue full: retry those later).
    /// A frame the kernel refuses for any other reason is skipped and counted.
    pub fn send_batch(&self, frames: &[&[u8]], scratch: &mut SendScratch) -> SendOutcome {
        let mut out = SendOutcome::default();
        while out.done() < frames.len() {
            let chunk = &frames[out.done()..frames.len().min(out.done() + BATCH)];
            scratch.prepare(chunk);
            let n = unsafe { libc::sendmmsg(self.fd.as_raw_fd(), scratch.hdrs.as_mut_ptr(), chunk.len() as u32, 0) };
            if n > 0 {
                out.sent += n as usize;
                continue;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => {
                    out.blocked = true;
                    break;
                }
                _ => out.refused += 1,
            }
        }
        out
    }
}

/// One line per receive path in use: which ports take it; all send with sendmmsg.
pub fn io_summary<'a>(ports: impl Iterator<Item = &'a RawPort>) -> Vec<String> {
    let mut by_path: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for port in ports {
        by_path.entry(port.rx_path()).or_default().push(&port.ifname);
    }
    by_path.into_iter().map(|(path, names)| format!("{} receive from {path}, send with sendmmsg", names.join(", "))).collect()
}

#[derive(Default, Debug)]
pub struct SendOutcome {
    /// Frames the kernel took.
    pub sent: usize,
    /// Frames it refused for good (counted as drops).
    pub refused: usize,
    /// It pushed back: the remaining frames should be sent again later.
    pub blocked: bool,
}

impl SendOutcome {
    /// How many frames from the front are finished with (sent or refused).
    pub fn done(&self) -> usize {
        self.sent + self.refused
    }
}

/// The virtio_net_hdr PACKET_VNET_HDR wants before each sent frame: no offload asked.
static NO_OFFLOAD: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

/// Reusable sendmmsg headers (no allocation per send).
pub struct SendScratch {
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

unsafe impl Send for SendScratch {}

impl Default for SendScratch {
    fn default() -> Self {
        SendScratch {
            iov: (0..2 * BATCH).map(|_| libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }).collect(),
            hdrs: (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }
}

impl SendScratch {
    fn prepare(&mut self, chunk: &[&[u8]]) {
        for (i, f) in chunk.iter().enumerate() {
            self.iov[2 * i] = libc::iovec { iov_base: NO_OFFLOAD.as_ptr() as *mut _, iov_len: VNET_HDR_LEN };
            self.iov[2 * i + 1] = libc::iovec { iov_base: f.as_ptr() as *mut _, iov_len: f.len() };
            self.hdrs[i] = unsafe { std::mem::zeroed() };
            self.hdrs[i].msg_hdr.msg_iov = &mut self.iov[2 * i];
            self.hdrs[i].msg_hdr.msg_iovlen = 2;
        }
    }
}

/// Room for the SCM_TIMESTAMPNS and PACKET_AUXDATA control messages of one frame.
const CONTROL_LEN: usize = 128;

/// One received frame, as it was on the wire.
pub enum Received<'a> {
    Frame(&'a [u8]),
    /// A GSO/GRO super-frame, cut into the segments the wire carried.
    Segments(&'a [Vec<u8>]),
    /// Not deliverable; the reason, for the log.
    Dropped(&'static str),
}

/// Reusable receive buffers for one recvmmsg call.
pub struct RecvBufs {
    data: Vec<u8>,
    vnet: Vec<[u8; VNET_HDR_LEN]>,
    control: Vec<u8>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    segments: Vec<Vec<u8>>,
}

unsafe impl Send for RecvBufs {}

impl RecvBufs {
    pub fn new() -> RecvBufs {
        RecvBufs {
            data: vec![0u8; BATCH * RX_SLOT],
            vnet: vec![[0u8; VNET_HDR_LEN]; BATCH],
            control: vec![0u8; BATCH * CONTROL_LEN],
            iov: (0..2 * BATCH).map(|_| libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }).collect(),
            hdrs: (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect(),
            segments: Vec::new(),
        }
    }

    /// The i-th received frame as it was on the wire: its VLAN tag restored,
    /// a partial checksum completed, a super-frame cut into segments.
    pub fn received(&mut self, i: usize) -> Received<'_> {
        let total = self.hdrs[i].msg_len as usize;
        if self.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || total < VNET_HDR_LEN {
            return Received::Dropped("frame longer than 64 KiB");
        }
        let vnet = VnetHdr::parse(&self.vnet[i]);
        let vlan = self.vlan_tag(i);
        let slot = &mut self.data[i * RX_SLOT..(i + 1) * RX_SLOT];
        wire_frame(slot, VLAN_HLEN, total - VNET_HDR_LEN, &vnet, vlan, &mut self.segments)
    }

    fn cmsgs(&self, i: usize) -> impl Iterator<Item = *const libc::cmsghdr> + '_ {
        let hdr = &self.hdrs[i].msg_hdr;
        let first = unsafe { libc::CMSG_FIRSTHDR(hdr) };
        std::iter::successors((!first.is_null()).then_some(first as *const _), move |&c| {
            let next = unsafe { libc::CMSG_NXTHDR(hdr, c) };
            (!next.is_null()).then_some(next as *const _)
        })
    }

    /// When the kernel received the i-th frame (CLOCK_REALTIME ns), if it said.
    pub fn kernel_timestamp_ns(&self, i: usize) -> Option<u64> {
        self.cmsgs(i).find_map(|cmsg| {
            let c = unsafe { &*cmsg };
            (c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS).then(|| {
                let ts: libc::timespec = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec) };
                ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
            })
        })
    }

    /// The 802.1Q tag (TPID, TCI) the kernel took off the i-th frame, if any.
    fn vlan_tag(&self, i: usize) -> Option<(u16, u16)> {
        self.cmsgs(i).find_map(|cmsg| {
            let c = unsafe { &*cmsg };
            if c.cmsg_level != libc::SOL_PACKET || c.cmsg_type != libc::PACKET_AUXDATA {
                return None;
            }
            let aux: libc::tpacket_auxdata = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const _) };
            stripped_vlan_tag(aux.tp_status, aux.tp_vlan_tpid, aux.tp_vlan_tci)
        })
    }
}

/// The 802.1Q tag (TPID, TCI) the kernel took off a frame, from its status bits and tag fields.
fn stripped_vlan_tag(status: u32, tpid: u16, tci: u16) -> Option<(u16, u16)> {
    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { tpid } else { 0x8100 };
    (status & libc::TP_STATUS_VLAN_VALID != 0).then_some((tpid, tci))
}

/// The frame at `buf[start..start + len]` as it was on the wire: a partial
/// checksum completed, its VLAN tag put back (the `VLAN_HLEN` bytes before
/// `start` are free), a super-frame cut into `segments`.
fn wire_frame<'a>(buf: &'a mut [u8], mut start: usize, mut len: usize, vnet: &VnetHdr, vlan: Option<(u16, u16)>,
                  segments: &'a mut Vec<Vec<u8>>) -> Received<'a> {
    if vnet.flags & crate::offload::VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 && !vnet.is_gso() {
        // Offsets count from the frame as delivered, so before the tag goes back.
        if let Err(why) = complete_checksum(&mut buf[start..start + len], vnet) {
            return Received::Dropped(why);
        }
    }
    if let Some((tpid, tci)) = vlan {
        match insert_vlan_tag(buf, start, len, tpid, tci) {
            Ok(s) => (start, len) = (s, len + VLAN_HLEN),
            Err(why) => return Received::Dropped(why),
        }
    }
    let frame = &buf[start..start + len];
    if vnet.is_gso() {
        segments.clear();
        return match segment(frame, vnet, segments) {
            Ok(()) => Received::Segments(segments),
            Err(why) => Received::Dropped(why),
        };
    }
    if len > MAX_FRAME {
        return Received::Dropped("frame longer than 9216 bytes");
    }
    Received::Frame(frame)
}

/// A PACKET_MMAP receive ring (TPACKET_V2): slots the kernel fills in order
/// and hands over (TP_STATUS_USER); each goes back (TP_STATUS_KERNEL) once
/// read. V2, not V3: V3 wakes the reader only when a whole block is retired
/// (full, or at its timeout of 1 ms or more), a millisecond on every frame
/// at low load; V2 wakes it per frame, as recvmmsg does (README: measured).
struct RxRing {
    base: *mut u8,
    /// The slot the next batch starts at (only the packet thread reads the ring).
    next: AtomicUsize,
}

// The mapping is the kernel's and ours; only the packet thread touches its slots.
unsafe impl Send for RxRing {}
unsafe impl Sync for RxRing {}

impl RxRing {
    fn set_up(port: &RawPort) -> Result<RxRing, String> {
        let version = libc::tpacket_versions::TPACKET_V2 as i32;
        port.setsockopt(libc::SOL_PACKET, libc::PACKET_VERSION, version, "PACKET_VERSION").map_err(|e| e.to_string())?;
        // A frame too long for a slot is queued whole on the socket (TP_STATUS_COPY) instead of cut short.
        port.setsockopt(libc::SOL_PACKET, libc::PACKET_COPY_THRESH, 1, "PACKET_COPY_THRESH").map_err(|e| e.to_string())?;
        let req = libc::tpacket_req {
            tp_block_size: RING_BLOCK as u32,
            tp_block_nr: (RING_SLOTS * RING_SLOT / RING_BLOCK) as u32,
            tp_frame_size: RING_SLOT as u32,
            tp_frame_nr: RING_SLOTS as u32,
        };
        Self::request(port.fd(), &req).map_err(|e| format!("PACKET_RX_RING: {e}"))?;
        let base = unsafe {
            libc::mmap(std::ptr::null_mut(), RING_SLOTS * RING_SLOT, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, port.fd(), 0)
        };
        if base == libc::MAP_FAILED {
            let why = format!("mmap of the ring: {}", io::Error::last_os_error());
            // Take the ring down again, or the kernel would fill it instead of the socket queue.
            let none: libc::tpacket_req = unsafe { std::mem::zeroed() };
            return Self::request(port.fd(), &none).map_err(|e| format!("{why}; removing the ring: {e}")).and(Err(why));
        }
        Ok(RxRing { base: base as *mut u8, next: AtomicUsize::new(0) })
    }

    /// Sets the socket's receive ring to `req` (no blocks: none).
    fn request(fd: RawFd, req: &libc::tpacket_req) -> io::Result<()> {
        let rc = unsafe {
            libc::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, req as *const _ as *const libc::c_void,
                             std::mem::size_of::<libc::tpacket_req>() as libc::socklen_t)
        };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// The i-th slot from the batch's start.
    fn slot(&self, i: usize) -> RingSlot {
        let index = (self.next.load(Ordering::Relaxed) + i) % RING_SLOTS;
        RingSlot { base: unsafe { self.base.add(index * RING_SLOT) } }
    }

    /// How many slots from the batch's start the kernel has handed over (at most BATCH).
    fn ready(&self) -> usize {
        (0..BATCH).take_while(|&i| self.slot(i).status() & libc::TP_STATUS_USER != 0).count()
    }

    fn release(&self, n: usize) {
        for i in 0..n {
            self.slot(i).status_word().store(libc::TP_STATUS_KERNEL, Ordering::Release);
        }
        self.next.store((self.next.load(Ordering::Relaxed) + n) % RING_SLOTS, Ordering::Relaxed);
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.base as *mut libc::c_void, RING_SLOTS * RING_SLOT) };
    }
}

/// One slot of the receive ring: a tpacket2_hdr, then the frame at `tp_mac`
/// with its virtio_net_hdr just before it.
struct RingSlot {
    base: *mut u8,
}

impl RingSlot {
    fn hdr(&self) -> &libc::tpacket2_hdr {
        unsafe { &*(self.base as *const libc::tpacket2_hdr) }
    }

    /// tp_status, the word the kernel and we pass the slot back and forth with.
    fn status_word(&self) -> &AtomicU32 {
        unsafe { &*(self.base as *const AtomicU32) }
    }

    /// Acquire: the slot's contents are read after its status says they are ours.
    fn status(&self) -> u32 {
        self.status_word().load(Ordering::Acquire)
    }

    fn timestamp_ns(&self) -> u64 {
        self.hdr().tp_sec as u64 * 1_000_000_000 + self.hdr().tp_nsec as u64
    }

    /// The slot's frame as it was on the wire. Its virtio_net_hdr is read
    /// first, so its bytes are free room for a VLAN tag put back.
    fn received<'a>(&self, segments: &'a mut Vec<Vec<u8>>) -> Received<'a> {
        let (status, mac, snaplen, len) = {
            let h = self.hdr();
            (h.tp_status, h.tp_mac as usize, h.tp_snaplen as usize, h.tp_len as usize)
        };
        if snaplen < len || mac < VNET_HDR_LEN || mac + snaplen > RING_SLOT {
            return Received::Dropped("frame longer than a ring slot, and the socket buffer full");
        }
        let vlan = stripped_vlan_tag(status, self.hdr().tp_vlan_tpid, self.hdr().tp_vlan_tci);
        // SAFETY: the slot is ours (TP_STATUS_USER) until released, and only this thread reads it.
        let buf: &'a mut [u8] = unsafe { std::slice::from_raw_parts_mut(self.base, RING_SLOT) };
        let vnet = VnetHdr::parse(buf[mac - VNET_HDR_LEN..mac].try_into().unwrap());
        wire_frame(buf, mac, snaplen, &vnet, vlan, segments)
    }
}

impl Default for RecvBufs {
    fn default() -> Self {
        Self::new()
    }
}
