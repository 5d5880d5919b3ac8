//! Big-endian bit access into byte buffers (network order, MSB first).

/// Reads `width` (<= 128) bits starting `bit_off` bits into `buf`.
/// The caller guarantees the bits are inside `buf`.
#[inline]
pub fn read_bits(buf: &[u8], bit_off: usize, width: u32) -> u128 {
    let w = width as usize;
    let start = bit_off / 8;
    if bit_off.is_multiple_of(8) && w.is_multiple_of(8) {
        return buf[start..start + w / 8].iter().fold(0u128, |a, b| (a << 8) | *b as u128);
    }
    if w > 120 {
        // Would span 17 bytes: read in two parts so no bit is shifted out.
        let hi = read_bits(buf, bit_off, width - 64);
        return (hi << 64) | read_bits(buf, bit_off + w - 64, 64);
    }
    let lead = bit_off % 8;
    let nbytes = (lead + w).div_ceil(8);
    let acc = buf[start..start + nbytes].iter().fold(0u128, |a, b| (a << 8) | *b as u128);
    let trailing = (nbytes * 8 - lead - w) as u32;
    (acc >> trailing) & ((1u128 << width) - 1)
}

/// Writes the low `width` (<= 128) bits of `v` at `bit_off` bits into `buf`
/// (the reference `BitWriter::push` is tested against).
#[cfg(test)]
pub fn write_bits(buf: &mut [u8], bit_off: usize, width: u32, v: u128) {
    let w = width as usize;
    if bit_off.is_multiple_of(8) && w.is_multiple_of(8) {
        let start = bit_off / 8;
        let bytes = v.to_be_bytes();
        buf[start..start + w / 8].copy_from_slice(&bytes[16 - w / 8..]);
        return;
    }
    // Unaligned: merge the value into the covering bytes (at most 17) byte by byte.
    let lead = bit_off % 8;
    let nbytes = (lead + w).div_ceil(8);
    let trailing = nbytes * 8 - lead - w;
    let start = bit_off / 8;
    for (i, byte) in buf[start..start + nbytes].iter_mut().enumerate() {
        // Bit positions of this byte, counted from the field's end.
        let hi = (nbytes - i) * 8 - trailing; // exclusive upper bound
        let lo = hi as isize - 8;
        let field_mask: u8 = {
            let top = if i == 0 { 0xffu8 >> lead } else { 0xff };
            let bottom = if i == nbytes - 1 { 0xffu8 << trailing } else { 0xff };
            top & bottom
        };
        let bits = if lo >= 0 { (v >> lo) as u8 } else { (v << (-lo) as u32) as u8 };
        *byte = (*byte & !field_mask) | (bits & field_mask);
    }
}

/// Appends bits to a growing byte buffer (for hash inputs and deparsing).
#[derive(Default)]
pub struct BitWriter {
    pub buf: Vec<u8>,
    pub bits: usize,
}

impl BitWriter {
    pub fn clear(&mut self) {
        self.buf.clear();
        self.bits = 0;
    }

    /// Appends the low `width` (<= 128) bits of `v`. The buffer holds exactly
    /// the bytes covering `bits`, with unused low bits of the last byte zero,
    /// so bits are OR-ed into the partial byte and whole bytes are appended.
    pub fn push(&mut self, width: u32, v: u128) {
        if width == 0 {
            return;
        }
        if width <= 56 {
            self.push_small(width, v as u64 & ((1u64 << width) - 1));
            return;
        }
        let v = if width >= 128 { v } else { v & ((1u128 << width) - 1) };
        let mut rem = width;
        let used = (self.bits % 8) as u32;
        if used != 0 {
            let space = 8 - used;
            let take = space.min(rem);
            let top = (v >> (rem - take)) as u8 & (0xffu8 >> (8 - take));
            self.buf[self.bits / 8] |= top << (space - take);
            rem -= take;
        }
        if rem <= 64 {
            let v = v as u64;
            while rem >= 8 {
                rem -= 8;
                self.buf.push((v >> rem) as u8);
            }
            if rem > 0 {
                self.buf.push((v << (8 - rem)) as u8);
            }
        } else {
            while rem >= 8 {
                rem -= 8;
                self.buf.push((v >> rem) as u8);
            }
            if rem > 0 {
                self.buf.push((v << (8 - rem)) as u8);
            }
        }
        self.bits += width as usize;
    }

    /// `push` for widths up to 56 bits: the partial byte and the value fit in
    /// one u64, written out as big-endian bytes at once.
    #[inline]
    fn push_small(&mut self, width: u32, v: u64) {
        let used = self.bits % 8;
        let start = self.bits / 8;
        let total = used + width as usize;
        let mut acc = v << (64 - total);
        if used != 0 {
            acc |= (self.buf[start] as u64) << 56;
            self.buf.truncate(start);
        }
        // Byte pushes: cheaper than a memcpy call for these 1..8 bytes.
        for b in &acc.to_be_bytes()[..total.div_ceil(8)] {
            self.buf.push(*b);
        }
        self.bits += width as usize;
    }

    pub fn push_bytes(&mut self, bytes: &[u8]) {
        if self.bits.is_multiple_of(8) {
            self.buf.truncate(self.bits / 8);
            self.buf.extend_from_slice(bytes);
            self.bits += bytes.len() * 8;
        } else {
            for b in bytes {
                self.push(8, *b as u128);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_round_trip() {
        let mut buf = [0u8; 20];
        write_bits(&mut buf, 3, 13, 0x1abc);
        assert_eq!(read_bits(&buf, 3, 13), 0x1abc);
        assert_eq!(buf[0], 0b0001_1010);
        write_bits(&mut buf, 4, 128, u128::MAX - 5);
        assert_eq!(read_bits(&buf, 4, 128), u128::MAX - 5);
        assert_eq!(read_bits(&buf, 0, 4), 0b0001);
    }

    /// `read_bits` agrees with reading the same bits one at a time.
    #[test]
    fn read_bits_matches_bitwise_reference() {
        let buf: Vec<u8> = (0..40u32).map(|i| (i.wrapping_mul(0x9d) ^ 0x5a) as u8).collect();
        for off in 0..64 {
            for width in 0..=128u32 {
                let want = (0..width as usize).fold(0u128, |a, i| (a << 1) | ((buf[(off + i) / 8] >> (7 - (off + i) % 8)) & 1) as u128);
                assert_eq!(read_bits(&buf, off, width), want, "offset {off} width {width}");
            }
        }
    }

    /// `push` appends exactly what `write_bits` would write, for every width
    /// and alignment, with values carrying bits above their width.
    #[test]
    fn push_matches_write_bits() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let mut w = BitWriter::default();
            let mut reference = vec![0u8; 200];
            let mut bit = 0usize;
            for _ in 0..8 {
                let width = (next() % 129) as u32;
                let v = ((next() as u128) << 64) | next() as u128;
                w.push(width, v);
                if width > 0 {
                    write_bits(&mut reference, bit, width, v);
                }
                bit += width as usize;
            }
            assert_eq!(w.bits, bit);
            assert_eq!(w.buf, reference[..bit.div_ceil(8)]);
        }
    }
}
