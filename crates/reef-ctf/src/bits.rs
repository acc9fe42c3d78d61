//! Bit-level reads over a byte slice, in CTF's two bit orders.
//!
//! CTF numbers bits within a little-endian field from the least significant
//! bit of each byte, and within a big-endian field from the most significant
//! bit. Callers check bounds first; these functions assume
//! `bit_off + size <= data.len() * 8`.

/// Reads an unsigned little-endian field of `size` (1..=64) bits.
#[inline]
pub fn read_le(data: &[u8], bit_off: u64, size: u32) -> u64 {
    let byte = (bit_off >> 3) as usize;
    let shift = (bit_off & 7) as u32;
    if shift == 0 {
        match size {
            8 => return data[byte] as u64,
            16 => return u16::from_le_bytes([data[byte], data[byte + 1]]) as u64,
            32 => {
                return u32::from_le_bytes(data[byte..byte + 4].try_into().unwrap_or([0; 4])) as u64
            }
            64 => return u64::from_le_bytes(data[byte..byte + 8].try_into().unwrap_or([0; 8])),
            _ => {}
        }
    }
    // A bit field within one 8-byte load (when 8 bytes remain).
    if shift + size <= 64 {
        if let Some(w) = data.get(byte..byte + 8) {
            let v = u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) >> shift;
            return v & mask64(size);
        }
    }
    let nbytes = (shift + size).div_ceil(8) as usize;
    let mut v: u128 = 0;
    for (i, b) in data[byte..byte + nbytes].iter().enumerate() {
        v |= (*b as u128) << (8 * i);
    }
    let v = v >> shift;
    (v & mask128(size)) as u64
}

/// Reads an unsigned big-endian field of `size` (1..=64) bits.
#[inline]
pub fn read_be(data: &[u8], bit_off: u64, size: u32) -> u64 {
    let byte = (bit_off >> 3) as usize;
    let shift = (bit_off & 7) as u32;
    if shift == 0 {
        match size {
            8 => return data[byte] as u64,
            16 => return u16::from_be_bytes([data[byte], data[byte + 1]]) as u64,
            32 => {
                return u32::from_be_bytes(data[byte..byte + 4].try_into().unwrap_or([0; 4])) as u64
            }
            64 => return u64::from_be_bytes(data[byte..byte + 8].try_into().unwrap_or([0; 8])),
            _ => {}
        }
    }
    if shift + size <= 64 {
        if let Some(w) = data.get(byte..byte + 8) {
            let v = u64::from_be_bytes(w.try_into().unwrap_or([0; 8])) << shift;
            return v >> (64 - size);
        }
    }
    let nbytes = (shift + size).div_ceil(8) as usize;
    let mut v: u128 = 0;
    for b in &data[byte..byte + nbytes] {
        v = (v << 8) | *b as u128;
    }
    let v = v >> (nbytes as u32 * 8 - shift - size);
    (v & mask128(size)) as u64
}

#[inline]
fn mask64(size: u32) -> u64 {
    if size >= 64 {
        u64::MAX
    } else {
        (1u64 << size) - 1
    }
}

#[inline]
fn mask128(size: u32) -> u128 {
    (1u128 << size) - 1
}

/// Sign-extends the low `size` bits of `v`.
#[inline]
pub fn sign_extend(v: u64, size: u32) -> i64 {
    if size >= 64 {
        v as i64
    } else {
        let s = 64 - size;
        ((v << s) as i64) >> s
    }
}

/// Rounds `off` up to a multiple of `align` (a power of two, in bits).
#[inline]
pub fn align_up(off: u64, align: u32) -> u64 {
    let a = align.max(1) as u64;
    (off + a - 1) & !(a - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn le_bitfields() {
        // 0b1010_1101: low 3 bits = 0b101, next 5 bits = 0b10101
        let d = [0b1010_1101u8, 0xff];
        assert_eq!(read_le(&d, 0, 3), 0b101);
        assert_eq!(read_le(&d, 3, 5), 0b10101);
        assert_eq!(read_le(&d, 4, 8), 0xfa);
        assert_eq!(read_le(&[0x34, 0x12], 0, 16), 0x1234);
    }

    #[test]
    fn be_bitfields() {
        let d = [0b1010_1101u8, 0xff];
        assert_eq!(read_be(&d, 0, 3), 0b101);
        assert_eq!(read_be(&d, 3, 5), 0b01101);
        assert_eq!(read_be(&d, 4, 8), 0xdf);
        assert_eq!(read_be(&[0x12, 0x34], 0, 16), 0x1234);
    }

    #[test]
    fn sixty_four_unaligned() {
        let d = [0xffu8; 9];
        assert_eq!(read_le(&d, 3, 64), u64::MAX);
        assert_eq!(read_be(&d, 7, 64), u64::MAX);
    }

    #[test]
    fn wide_loads_agree_with_bytewise() {
        // Every offset and size, read with and without 8 bytes of slack
        // after the field (the 8-byte load path and the bytewise path).
        let d: Vec<u8> = (0..24u32).map(|i| (i * 37 + 11) as u8).collect();
        for off in 0..64u64 {
            for size in 1..=64u32 {
                let need = (off + size as u64).div_ceil(8) as usize;
                let tight = &d[..need];
                // Bit by bit, from CTF's definition of the two bit orders.
                let bit = |p: u64, msb_first: bool| {
                    let b = d[(p / 8) as usize];
                    let i = if msb_first { 7 - p % 8 } else { p % 8 };
                    (b >> i) as u64 & 1
                };
                let le: u64 = (0..size as u64).map(|i| bit(off + i, false) << i).sum();
                let be: u64 = (0..size as u64)
                    .map(|i| bit(off + i, true) << (size as u64 - 1 - i))
                    .sum();
                assert_eq!(read_le(&d, off, size), le, "le {off} {size}");
                assert_eq!(read_le(tight, off, size), le, "le tight {off} {size}");
                assert_eq!(read_be(&d, off, size), be, "be {off} {size}");
                assert_eq!(read_be(tight, off, size), be, "be tight {off} {size}");
            }
        }
    }

    #[test]
    fn sign() {
        assert_eq!(sign_extend(0b111, 3), -1);
        assert_eq!(sign_extend(0b011, 3), 3);
        assert_eq!(align_up(9, 8), 16);
        assert_eq!(align_up(16, 8), 16);
    }
}
