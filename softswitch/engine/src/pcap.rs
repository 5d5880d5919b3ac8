//! One pcap file per port (both directions), written with the pcap-file crate.
//! Records are buffered and flushed when the packet thread stops.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

pub struct PortCapture {
    writer: PcapWriter<BufWriter<File>>,
}

impl PortCapture {
    /// Creates `DIR/port<N>.pcap` (truncating an old one).
    pub fn create(dir: &Path, port: u32) -> std::io::Result<PortCapture> {
        PortCapture::create_file(dir, &format!("port{port}.pcap"))
    }

    /// Creates `DIR/port<N>.drops.pcap`: the frames the port's queue tail-dropped.
    pub fn create_drops(dir: &Path, port: u32) -> std::io::Result<PortCapture> {
        PortCapture::create_file(dir, &format!("port{port}.drops.pcap"))
    }

    fn create_file(dir: &Path, name: &str) -> std::io::Result<PortCapture> {
        std::fs::create_dir_all(dir)?;
        let file = File::create(dir.join(name))?;
        let header = PcapHeader { snaplen: 65535, ..PcapHeader::default() };
        let writer = PcapWriter::with_header(BufWriter::new(file), header)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(PortCapture { writer })
    }

    pub fn record(&mut self, when: Duration, frame: &[u8]) {
        // A full disk must not stop the switch: the capture just loses records.
        let _ = self.writer.write_packet(&PcapPacket::new(when, frame.len() as u32, frame));
    }

    /// Records only the first `snap` bytes (the headers), keeping the frame's length.
    pub fn record_headers(&mut self, when: Duration, frame: &[u8], snap: usize) {
        let data = &frame[..frame.len().min(snap)];
        let _ = self.writer.write_packet(&PcapPacket::new(when, frame.len() as u32, data));
    }
}
