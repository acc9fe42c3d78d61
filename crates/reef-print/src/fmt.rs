//! Low-level formatting: integers in babeltrace2's bases, C's `%g`, string
//! escaping, wall-clock times.

use reef_ctf::Value;

use crate::ClockOptions;

/// Appends the decimal form of `v`.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends `v` in decimal, zero-padded to `width` digits.
#[inline]
pub fn push_padded(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut b = itoa::Buffer::new();
    let digits = b.format(v).as_bytes();
    const ZEROS: &[u8; 24] = b"000000000000000000000000";
    if digits.len() < width {
        out.extend_from_slice(&ZEROS[..(width - digits.len()).min(ZEROS.len())]);
    }
    out.extend_from_slice(digits);
}

#[inline]
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Formats an integer value as babeltrace2 does for its display base:
/// decimal (signed or not), `0x` + uppercase hex and `0` + octal (negative
/// values masked to the field's size rounded up to whole digits), `0b` +
/// every bit of the field.
#[inline]
pub fn integer(out: &mut Vec<u8>, v: Value, size: u32, signed: bool, base: u32) {
    let bits = if let Value::U(u) = v {
        u
    } else if let Value::I(i) = v {
        i as u64
    } else {
        0
    };
    if base == 10 {
        if signed {
            push_i64(out, bits as i64);
        } else {
            push_u64(out, bits);
        }
        return;
    }
    match base {
        // A CTF 2 boolean.
        reef_ctf::plan::BASE_BOOL => {
            out.extend_from_slice(if bits != 0 { b"true" } else { b"false" });
        }
        // A CTF 2 bit map's value (its flags are the caller's business).
        reef_ctf::plan::BASE_BITMAP => out.extend_from_slice(format!("0x{bits:X}").as_bytes()),
        16 => {
            let mut u = bits;
            if size < 64 {
                let rounded = (size + 3) & !3;
                if rounded < 64 {
                    u &= (1u64 << rounded) - 1;
                }
            }
            out.extend_from_slice(format!("0x{u:X}").as_bytes());
        }
        8 => {
            let mut u = bits;
            if signed && size < 64 {
                let rounded = ((size.max(1) - 1) / 3 + 1) * 3;
                if rounded < 64 {
                    u &= (1u64 << rounded) - 1;
                }
            }
            out.extend_from_slice(format!("0{u:o}").as_bytes());
        }
        2 => {
            out.extend_from_slice(b"0b");
            let len = size.min(64);
            for b in (0..len).rev() {
                out.push(if bits >> b & 1 == 1 { b'1' } else { b'0' });
            }
        }
        _ => {
            if signed {
                push_i64(out, bits as i64);
            } else {
                push_u64(out, bits);
            }
        }
    }
}

/// An integer wider than 64 bits, shown as hexadecimal.
pub fn big_int_hex(out: &mut Vec<u8>, data: &[u8], bit_off: u64, size: u32, le: bool) {
    // Gather bits 64 at a time from the most significant end.
    let mut digits = String::new();
    let mut remaining = size;
    let mut chunks = Vec::new();
    while remaining > 0 {
        let n = remaining.min(64);
        remaining -= n;
        // Big endian: the most significant chunk comes first in the data.
        let off = if le {
            bit_off + remaining as u64
        } else {
            bit_off + (size - remaining - n) as u64
        };
        let v = if le {
            reef_ctf::bits::read_le(data, off, n)
        } else {
            reef_ctf::bits::read_be(data, off, n)
        };
        chunks.push((v, n));
    }
    for (v, n) in chunks {
        let width = n.div_ceil(4) as usize;
        digits.push_str(&format!("{v:0width$X}"));
    }
    let trimmed = digits.trim_start_matches('0');
    out.extend_from_slice(b"0x");
    out.extend_from_slice(if trimmed.is_empty() {
        b"0"
    } else {
        trimmed.as_bytes()
    });
}

/// C's `printf("%g", v)` (6 significant digits).
pub fn format_g(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    const P: i32 = 6;
    let sci = format!("{:.*e}", (P - 1) as usize, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&x) {
        let mant = strip_zeros(mant);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", x.abs())
    } else {
        let s = format!("{:.*}", (P - 1 - x) as usize, v);
        strip_zeros(&s).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Appends `s` in double quotes with babeltrace2's escaping.
pub fn push_escaped(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    // Most strings need no escape: found with one table look-up a byte
    // and copied whole.
    let Some(first) = s.iter().position(|&b| NEEDS_ESCAPE[b as usize]) else {
        out.extend_from_slice(s);
        out.push(b'"');
        return;
    };
    let mut run = 0;
    for (i, &b) in s.iter().enumerate().skip(first) {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
        let esc: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\'' => b"\\'",
            b'"' => b"\\\"",
            b'?' => b"\\?",
            0x07 => b"\\a",
            0x08 => b"\\b",
            0x1b => b"\\e",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x0b => b"\\v",
            _ => {
                out.extend_from_slice(&s[run..i]);
                run = i + 1;
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'x',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 15) as usize],
                ]);
                continue;
            }
        };
        out.extend_from_slice(&s[run..i]);
        out.extend_from_slice(esc);
        run = i + 1;
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

/// The bytes [`push_escaped`] escapes: quotes, backslash, `?`, control
/// characters and DEL.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[0x7f] = true;
    t[b'\\' as usize] = true;
    t[b'\'' as usize] = true;
    t[b'"' as usize] = true;
    t[b'?' as usize] = true;
    t
};

/// Broken-down time, from the C library so that `TZ` applies as it does
/// for babeltrace2.
struct Tm {
    year: i32,
    mon: i32,
    mday: i32,
    hour: i32,
    min: i32,
    sec: i32,
}

fn broken_down(secs: i64, gmt: bool) -> Option<Tm> {
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain data, fully written by the call on success.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let r = if gmt {
            libc::gmtime_r(&t, &mut tm)
        } else {
            libc::localtime_r(&t, &mut tm)
        };
        if r.is_null() {
            return None;
        }
        Some(Tm {
            year: tm.tm_year + 1900,
            mon: tm.tm_mon + 1,
            mday: tm.tm_mday,
            hour: tm.tm_hour,
            min: tm.tm_min,
            sec: tm.tm_sec,
        })
    }
}

/// Appends a time given in ns from the origin: seconds (`--clock-seconds`)
/// or a wall-clock time of day, with the date for `--clock-date`.
pub fn wall_time(out: &mut Vec<u8>, ns: i64, o: &ClockOptions) {
    wall_time_cached(out, ns, o, &mut TimeCache::default());
}

/// The text of the last whole second [`wall_time_cached`] broke down
/// (the C library's time zone conversion is the costly part).
#[derive(Debug, Default)]
pub struct TimeCache {
    secs: Option<i64>,
    text: Vec<u8>,
}

/// [`wall_time`], reusing `cache` while the second does not change.
pub fn wall_time_cached(out: &mut Vec<u8>, ns: i64, o: &ClockOptions, cache: &mut TimeCache) {
    let secs = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000);
    if o.seconds {
        // Shown as sign, magnitude seconds and nanoseconds.
        let (s, n) = if ns < 0 {
            let a = ns.unsigned_abs();
            out.push(b'-');
            (a / 1_000_000_000, a % 1_000_000_000)
        } else {
            (ns as u64 / 1_000_000_000, ns as u64 % 1_000_000_000)
        };
        push_u64(out, s);
        out.push(b'.');
        push_padded(out, n, 9);
        return;
    }
    if cache.secs != Some(secs) {
        cache.text.clear();
        match broken_down(secs, o.gmt) {
            Some(tm) => {
                let t = &mut cache.text;
                if o.date {
                    push_padded(t, tm.year as u64, 4);
                    t.push(b'-');
                    push_padded(t, tm.mon as u64, 2);
                    t.push(b'-');
                    push_padded(t, tm.mday as u64, 2);
                    t.push(b' ');
                }
                push_padded(t, tm.hour as u64, 2);
                t.push(b':');
                push_padded(t, tm.min as u64, 2);
                t.push(b':');
                push_padded(t, tm.sec as u64, 2);
                t.push(b'.');
            }
            None => {
                cache.secs = None;
                out.extend_from_slice(b"Error");
                return;
            }
        }
        cache.secs = Some(secs);
    }
    out.extend_from_slice(&cache.text);
    push_padded(out, nsec as u64, 9);
}

/// A UUID in its canonical lowercase 8-4-4-4-12 form.
pub fn uuid(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_matches_c() {
        // Expected values from C's printf("%g").
        for (v, s) in [
            (0.1, "0.1"),
            (3.5, "3.5"),
            (-1e300, "-1e+300"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789.0, "1.23457e+08"),
            (1.0 / 3.0, "0.333333"),
            (2.5e-10, "2.5e-10"),
        ] {
            assert_eq!(format_g(v), s, "{v}");
        }
    }

    #[test]
    fn escaping() {
        let mut o = Vec::new();
        push_escaped(&mut o, b"a\"b\\c?\n\x01\xc3\xa9");
        assert_eq!(o, b"\"a\\\"b\\\\c\\?\\n\\x01\xc3\xa9\"");
    }

    #[test]
    fn padding() {
        let mut o = Vec::new();
        push_padded(&mut o, 7, 9);
        o.push(b' ');
        push_padded(&mut o, 123_456_789, 9);
        o.push(b' ');
        push_padded(&mut o, 12_345, 2);
        o.push(b' ');
        push_padded(&mut o, 0, 20);
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "000000007 123456789 12345 00000000000000000000"
        );
    }

    #[test]
    fn bases() {
        let mut o = Vec::new();
        integer(&mut o, Value::I(-1), 8, true, 16);
        o.push(b' ');
        integer(&mut o, Value::U(5), 4, false, 2);
        o.push(b' ');
        integer(&mut o, Value::U(8), 8, false, 8);
        assert_eq!(String::from_utf8(o).unwrap(), "0xFF 0b0101 010");
    }
}

#[cfg(test)]
mod escape_tests {
    use super::push_escaped;

    /// C-style escaping, byte by byte, as babeltrace2 writes strings.
    fn reference(s: &[u8]) -> Vec<u8> {
        let mut o = vec![b'"'];
        for &b in s {
            match b {
                b'\\' | b'\'' | b'"' | b'?' => o.extend_from_slice(&[b'\\', b]),
                0x07 => o.extend_from_slice(b"\\a"),
                0x08 => o.extend_from_slice(b"\\b"),
                0x1b => o.extend_from_slice(b"\\e"),
                0x0c => o.extend_from_slice(b"\\f"),
                b'\n' => o.extend_from_slice(b"\\n"),
                b'\r' => o.extend_from_slice(b"\\r"),
                b'\t' => o.extend_from_slice(b"\\t"),
                0x0b => o.extend_from_slice(b"\\v"),
                0..=0x1f | 0x7f => o.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                _ => o.push(b),
            }
        }
        o.push(b'"');
        o
    }

    #[test]
    fn every_byte_in_every_position() {
        for b in 0..=255u8 {
            for s in [
                vec![b],
                vec![b'a', b, b'z'],
                vec![b'x'; 3].into_iter().chain([b, b]).collect(),
            ] {
                let mut out = Vec::new();
                push_escaped(&mut out, &s);
                assert_eq!(out, reference(&s), "{s:?}");
            }
        }
        let mut out = Vec::new();
        push_escaped(&mut out, b"plain text");
        assert_eq!(out, b"\"plain text\"");
    }
}
