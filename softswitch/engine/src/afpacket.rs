//! AF_PACKET raw sockets bound to one interface each, with batched
//! receive/send (recvmmsg/sendmmsg). Frames are whole Ethernet frames as on
//! the wire, whatever the interface's offload settings: each received frame
//! comes with its offload state (PACKET_VNET_HDR) and its stripped 802.1Q tag
//! (PACKET_AUXDATA), and `offload.rs` turns it back into wire frames.

use crate::offload::{complete_checksum, insert_vlan_tag, segment, VnetHdr, VLAN_HLEN, VNET_HDR_LEN};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

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

fn last_err(what: &str, ifname: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{ifname}: {what}: {e}"))
}

pub struct RawPort {
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
        let port = RawPort { fd: unsafe { OwnedFd::from_raw_fd(raw) }, ifname: ifname.to_string(), ifindex };
        port.setsockopt(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING")?;
        port.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, 4 << 20, "SO_RCVBUF")?;
        port.setsockopt(libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20, "SO_SNDBUF")?;
        // Kernel receive timestamps: a frame's arrival time does not depend on when we got to it.
        port.setsockopt(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS")?;
        // The VLAN tag the kernel strips, and the offload state (partial checksum, GSO) of each frame.
        port.setsockopt(libc::SOL_PACKET, libc::PACKET_AUXDATA, 1, "PACKET_AUXDATA")?;
        port.setsockopt(libc::SOL_PACKET, libc::PACKET_VNET_HDR, 1, "PACKET_VNET_HDR")?;
        port.bind()?;
        Ok(port)
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

    /// Receives up to BATCH frames into `bufs`; returns how many (read them with `RecvBufs::received`).
    pub fn recv_batch(&self, bufs: &mut RecvBufs) -> io::Result<usize> {
        for i in 0..BATCH {
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
            libc::recvmmsg(self.fd.as_raw_fd(), bufs.hdrs.as_mut_ptr(), BATCH as u32, libc::MSG_TRUNC, std::ptr::null_mut())
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
        let (mut start, mut len) = (VLAN_HLEN, total - VNET_HDR_LEN);
        if vnet.flags & crate::offload::VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 && !vnet.is_gso() {
            // Offsets count from the frame as delivered, so before the tag goes back.
            if let Err(why) = complete_checksum(&mut slot[start..start + len], &vnet) {
                return Received::Dropped(why);
            }
        }
        if let Some((tpid, tci)) = vlan {
            match insert_vlan_tag(slot, start, len, tpid, tci) {
                Ok(s) => (start, len) = (s, len + VLAN_HLEN),
                Err(why) => return Received::Dropped(why),
            }
        }
        let frame = &slot[start..start + len];
        if vnet.is_gso() {
            self.segments.clear();
            return match segment(frame, &vnet, &mut self.segments) {
                Ok(()) => Received::Segments(&self.segments),
                Err(why) => Received::Dropped(why),
            };
        }
        if len > MAX_FRAME {
            return Received::Dropped("frame longer than 9216 bytes");
        }
        Received::Frame(frame)
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
            let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { aux.tp_vlan_tpid } else { 0x8100 };
            (aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0).then_some((tpid, aux.tp_vlan_tci))
        })
    }
}

impl Default for RecvBufs {
    fn default() -> Self {
        Self::new()
    }
}
