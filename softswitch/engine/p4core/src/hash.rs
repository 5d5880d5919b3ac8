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
/// Sums 32-bit big-endian words, then the 16-bit rest: the end-around carry
/// makes this equal to summing 16-bit words (RFC 1071 section 2, parallel summation).
pub fn csum16(buf: &[u8]) -> u16 {
    let wide = buf.chunks_exact(4);
    let rest = wide.remainder();
    let mut sum: u64 = wide.map(|c| u32::from_be_bytes(c.try_into().unwrap()) as u64).sum();
    sum += words(rest).map(u64::from).sum::<u64>();
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

    /// The 32-bit summation equals the 16-bit one on every length and carry pattern.
    #[test]
    fn csum16_equals_the_sum_of_16_bit_words() {
        let reference = |buf: &[u8]| {
            let mut sum: u64 = words(buf).map(u64::from).sum();
            while sum >> 16 != 0 {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            !(sum as u16)
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..300 {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x % 3 == 0 { 0xff } else { x as u8 }
                })
                .collect();
            assert_eq!(csum16(&buf), reference(&buf), "length {len}");
        }
    }
}
