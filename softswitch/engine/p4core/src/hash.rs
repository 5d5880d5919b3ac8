//! BMv2's hash algorithms over a byte string (calculations.cpp semantics).

use crate::program::HashAlgo;
use crc::{Crc, CRC_16_ARC, CRC_32_ISO_HDLC};

/// BMv2 `crc16`: poly 0x8005, reflected, init 0, no final xor (CRC-16/ARC).
const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_ARC);
/// BMv2 `crc32`: the Ethernet CRC-32 (reflected, init and final xor 0xffffffff).
const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// Hashes `buf`; `random` takes the value from the caller's RNG.
pub fn compute(algo: HashAlgo, buf: &[u8], random: impl FnOnce() -> u64) -> u64 {
    match algo {
        // The *_custom variants keep BMv2's default parameters (= crc16 / crc32).
        HashAlgo::Crc16 | HashAlgo::Crc16Custom => CRC16.checksum(buf) as u64,
        HashAlgo::Crc32 | HashAlgo::Crc32Custom => CRC32.checksum(buf) as u64,
        HashAlgo::Csum16 => csum16(buf) as u64,
        HashAlgo::Xor16 => xor16(buf) as u64,
        HashAlgo::Identity => buf.iter().take(8).fold(0u64, |a, b| (a << 8) | *b as u64),
        HashAlgo::Random => random(),
    }
}

/// 16-bit words, big-endian; an odd last byte is the high byte of a word.
fn words(buf: &[u8]) -> impl Iterator<Item = u16> + '_ {
    buf.chunks(2).map(|c| ((c[0] as u16) << 8) | *c.get(1).unwrap_or(&0) as u16)
}

/// The Internet checksum (RFC 1071): one's complement of the one's complement sum.
pub fn csum16(buf: &[u8]) -> u16 {
    let mut sum: u64 = words(buf).map(u64::from).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn xor16(buf: &[u8]) -> u16 {
    words(buf).fold(0, |a, w| a ^ w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_check_values() {
        let check = b"123456789";
        assert_eq!(compute(HashAlgo::Crc16, check, || 0), 0xBB3D);
        assert_eq!(compute(HashAlgo::Crc32, check, || 0), 0xCBF4_3926);
        assert_eq!(compute(HashAlgo::Identity, &[1, 2, 3], || 0), 0x010203);
        assert_eq!(compute(HashAlgo::Xor16, &[0x12, 0x34, 0x0f, 0x0f], || 0), 0x1d3b);
        // RFC 1071 example: words 0001 f203 f4f5 f6f7 sum to 0xddf2 (folded).
        assert_eq!(csum16(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), !0xddf2);
    }
}
