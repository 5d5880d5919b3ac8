//! AF_PACKET raw sockets bound to one interface each, with batched
//! receive/send (recvmmsg/sendmmsg). Frames are whole Ethernet frames; the
//! interface must have its offloads off (see README.md) so every frame is
//! MTU-sized and carries correct checksums.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Largest frame we accept; anything longer is truncated by the kernel and dropped here.
pub const MAX_FRAME: usize = 9216;
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

    /// Receives up to BATCH frames into `bufs`; returns their lengths
    /// (usize::MAX marks a frame truncated because it exceeded MAX_FRAME).
    pub fn recv_batch(&self, bufs: &mut RecvBufs) -> io::Result<usize> {
        for i in 0..BATCH {
            bufs.iov[i] = libc::iovec { iov_base: bufs.data[i * MAX_FRAME..].as_mut_ptr() as *mut _, iov_len: MAX_FRAME };
            bufs.hdrs[i] = unsafe { std::mem::zeroed() };
            bufs.hdrs[i].msg_hdr.msg_iov = &mut bufs.iov[i];
            bufs.hdrs[i].msg_hdr.msg_iovlen = 1;
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

/// Reusable sendmmsg headers (no allocation per send).
pub struct SendScratch {
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

unsafe impl Send for SendScratch {}

impl Default for SendScratch {
    fn default() -> Self {
        SendScratch {
            iov: (0..BATCH).map(|_| libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }).collect(),
            hdrs: (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }
}

impl SendScratch {
    fn prepare(&mut self, chunk: &[&[u8]]) {
        for (i, f) in chunk.iter().enumerate() {
            self.iov[i] = libc::iovec { iov_base: f.as_ptr() as *mut _, iov_len: f.len() };
            self.hdrs[i] = unsafe { std::mem::zeroed() };
            self.hdrs[i].msg_hdr.msg_iov = &mut self.iov[i];
            self.hdrs[i].msg_hdr.msg_iovlen = 1;
        }
    }
}

/// Room for one SCM_TIMESTAMPNS control message per frame.
const CONTROL_LEN: usize = 64;

/// Reusable receive buffers for one recvmmsg call.
pub struct RecvBufs {
    data: Vec<u8>,
    control: Vec<u8>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

unsafe impl Send for RecvBufs {}

impl RecvBufs {
    pub fn new() -> RecvBufs {
        RecvBufs {
            data: vec![0u8; BATCH * MAX_FRAME],
            control: vec![0u8; BATCH * CONTROL_LEN],
            iov: (0..BATCH).map(|_| libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }).collect(),
            hdrs: (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }

    /// The i-th received frame, or None if the kernel had to truncate it.
    pub fn frame(&self, i: usize) -> Option<&[u8]> {
        let len = self.hdrs[i].msg_len as usize;
        let truncated = self.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        if truncated || len > MAX_FRAME { None } else { Some(&self.data[i * MAX_FRAME..i * MAX_FRAME + len]) }
    }

    /// When the kernel received the i-th frame (CLOCK_REALTIME ns), if it said.
    pub fn kernel_timestamp_ns(&self, i: usize) -> Option<u64> {
        let hdr = &self.hdrs[i].msg_hdr;
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(hdr) };
        while !cmsg.is_null() {
            let c = unsafe { &*cmsg };
            if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec) };
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = unsafe { libc::CMSG_NXTHDR(hdr, cmsg) };
        }
        None
    }
}

impl Default for RecvBufs {
    fn default() -> Self {
        Self::new()
    }
}
