//! A packet being written, bit by bit: fields copied from another packet
//! (in either of CTF's bit orders), alignment padding, integers patched in
//! place.

use reef_ctf::bits::align_up;

/// The bytes of one packet being built; `len` bits of them are written.
#[derive(Debug, Default)]
pub struct Bits {
    pub buf: Vec<u8>,
    pub len: u64,
}

/// Bit `i` of `data` in a field of that byte order: little-endian fields
/// fill each byte from its least significant bit, big-endian ones from its
/// most significant bit.
#[inline]
fn bit_of(i: u64, le: bool) -> (usize, u8) {
    let sh = (i & 7) as u8;
    ((i >> 3) as usize, if le { sh } else { 7 - sh })
}

impl Bits {
    pub fn clear(&mut self) {
        self.buf.clear();
        self.len = 0;
    }

    /// Pads with zero bits up to bit `n`.
    pub fn pad_to(&mut self, n: u64) {
        if n > self.len {
            self.buf.resize(n.div_ceil(8) as usize, 0);
            self.len = n;
        }
    }

    /// Pads with zero bits up to the next multiple of `align` bits
    /// (alignment is relative to the packet's start, bit 0 here).
    pub fn align(&mut self, align: u32) {
        if align > 1 {
            let n = align_up(self.len, align);
            self.pad_to(n);
        }
    }

    /// Drops what was written after bit `n`.
    pub fn truncate(&mut self, n: u64) {
        if n < self.len {
            self.len = n;
            self.buf.truncate(n.div_ceil(8) as usize);
        }
    }

    /// Appends bits `s..e` of `src` (a field of that byte order): whole
    /// bytes when both sides are byte-aligned, bit by bit otherwise.
    pub fn append(&mut self, src: &[u8], s: u64, e: u64, le: bool) {
        let d = self.len;
        let n = e - s;
        self.buf.resize((d + n).div_ceil(8) as usize, 0);
        let mut done = 0;
        if s.is_multiple_of(8) && d.is_multiple_of(8) {
            let whole = (n / 8) as usize;
            let (si, di) = ((s / 8) as usize, (d / 8) as usize);
            self.buf[di..di + whole].copy_from_slice(&src[si..si + whole]);
            done = whole as u64 * 8;
        }
        for k in done..n {
            let (sb, ss) = bit_of(s + k, le);
            let (db, ds) = bit_of(d + k, le);
            let v = (src[sb] >> ss) & 1;
            self.buf[db] = (self.buf[db] & !(1 << ds)) | (v << ds);
        }
        self.len = d + n;
    }

    /// Writes `v` into the `size`-bit field of that byte order at bit
    /// `at` (already written).
    pub fn put(&mut self, at: u64, size: u32, le: bool, v: u64) {
        for k in 0..size as u64 {
            // Bit k of the value: little-endian fields hold the least
            // significant bit first, big-endian ones the most significant.
            let vb = if le { k } else { size as u64 - 1 - k };
            let bit = if vb < 64 { ((v >> vb) & 1) as u8 } else { 0 };
            let (db, ds) = bit_of(at + k, le);
            self.buf[db] = (self.buf[db] & !(1 << ds)) | (bit << ds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reef_ctf::bits::{read_be, read_le};

    #[test]
    fn put_reads_back_in_both_orders() {
        let mut b = Bits::default();
        b.pad_to(128);
        b.put(3, 27, true, 0x5ab_cdef);
        assert_eq!(read_le(&b.buf, 3, 27), 0x5ab_cdef);
        b.put(40, 13, false, 0x1234);
        assert_eq!(read_be(&b.buf, 40, 13), 0x1234);
        assert_eq!(read_le(&b.buf, 3, 27), 0x5ab_cdef);
    }

    #[test]
    fn append_moves_fields_to_other_bit_offsets() {
        let mut src = Bits::default();
        src.pad_to(200);
        src.put(5, 33, true, 0x1_2345_6789);
        src.put(70, 21, false, 0x1f_0f0f);
        let mut d = Bits::default();
        d.pad_to(11);
        d.append(&src.buf, 5, 38, true);
        assert_eq!(read_le(&d.buf, 11, 33), 0x1_2345_6789);
        d.pad_to(61);
        d.append(&src.buf, 70, 91, false);
        assert_eq!(read_be(&d.buf, 61, 21), 0x1f_0f0f);
        let mut w = Bits::default();
        w.append(&src.buf, 0, 200, true);
        assert_eq!(w.buf, src.buf);
    }
}
