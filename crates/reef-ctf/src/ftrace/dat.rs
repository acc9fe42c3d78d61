//! The layout of a trace-cmd `.dat` file, versions 6 and 7 (see
//! `trace-cmd.dat.v6(5)` and `trace-cmd.dat.v7(5)`): everything but the
//! ring-buffer pages, which [`super::convert`] reads.

use std::path::Path;

use super::format::{self, Format};

/// The magic bytes every `.dat` file starts with.
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// Where a `.dat` file is not what it should be: the file offset and what
/// was expected.
#[derive(Debug, Clone)]
pub struct DatError {
    pub offset: u64,
    pub msg: String,
}

type Res<T> = Result<T, DatError>;

fn err<T>(offset: u64, msg: impl Into<String>) -> Res<T> {
    Err(DatError {
        offset,
        msg: msg.into(),
    })
}

/// One CPU's ring-buffer pages in the file.
#[derive(Debug, Clone, Copy)]
pub struct CpuData {
    pub cpu: u32,
    pub offset: u64,
    pub size: u64,
}

/// What a `.dat` file says of its trace.
#[derive(Debug, Clone)]
pub struct Dat {
    pub version: u32,
    pub big_endian: bool,
    /// The page size (of the ring buffer's sub-buffers).
    pub page_size: usize,
    /// `zstd` (7 only); `None`: not compressed.
    pub compression: Option<String>,
    /// The byte size of the kernel's `long` (the page header's `commit`).
    pub kernel_long: usize,
    /// Where the data of a page starts (the page header's `data`).
    pub data_offset: usize,
    pub formats: Vec<Format>,
    /// The saved command lines: pid and name.
    pub cmdlines: Vec<(i64, String)>,
    /// The trace clock (`local`, `global`, `mono`, ...).
    pub clock: String,
    /// `uname` of the recording machine (`Linux HOST RELEASE MACHINE`).
    pub uname: Option<String>,
    /// The trace-cmd version that wrote the file.
    pub tool_version: Option<String>,
    /// Nanoseconds trace-cmd adds to every timestamp (`OFFSET`, `DATE`).
    pub offset_ns: i64,
    pub cpus: Vec<CpuData>,
    /// The CPU data is compressed in chunks.
    pub buffer_compressed: bool,
}

impl Dat {
    /// What a perf.data file's tracing data starts from: no format yet,
    /// no CPU data of its own, perf's clock.
    pub fn of_perf(big_endian: bool, page_size: usize) -> Dat {
        Dat {
            version: 6,
            big_endian,
            page_size,
            compression: None,
            kernel_long: 8,
            data_offset: 16,
            formats: Vec::new(),
            cmdlines: Vec::new(),
            clock: "perf".into(),
            uname: None,
            tool_version: None,
            offset_ns: 0,
            cpus: Vec::new(),
            buffer_compressed: false,
        }
    }
}

/// A cursor over the file's bytes, numbers in its byte order.
struct R<'a> {
    b: &'a [u8],
    pos: usize,
    /// The file offset of `b[0]` (for errors; a decompressed section's
    /// errors name the section's offset).
    base: u64,
    /// Errors inside `b` name `base` alone (a decompressed section).
    flat: bool,
    be: bool,
}

impl<'a> R<'a> {
    fn at(&self) -> u64 {
        if self.flat {
            self.base
        } else {
            self.base + self.pos as u64
        }
    }
    fn take(&mut self, n: usize, what: &str) -> Res<&'a [u8]> {
        if self.b.len() - self.pos < n {
            return err(
                self.at(),
                format!(
                    "the file ends inside {what} ({n} bytes expected, {} left)",
                    self.b.len() - self.pos
                ),
            );
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Res<u16> {
        let s: [u8; 2] = self.take(2, what)?.try_into().unwrap_or_default();
        Ok(if self.be {
            u16::from_be_bytes(s)
        } else {
            u16::from_le_bytes(s)
        })
    }
    fn u32(&mut self, what: &str) -> Res<u32> {
        let s: [u8; 4] = self.take(4, what)?.try_into().unwrap_or_default();
        Ok(if self.be {
            u32::from_be_bytes(s)
        } else {
            u32::from_le_bytes(s)
        })
    }
    fn u64(&mut self, what: &str) -> Res<u64> {
        let s: [u8; 8] = self.take(8, what)?.try_into().unwrap_or_default();
        Ok(if self.be {
            u64::from_be_bytes(s)
        } else {
            u64::from_le_bytes(s)
        })
    }
    fn cstr(&mut self, what: &str) -> Res<&'a str> {
        let at = self.at();
        let rest = &self.b[self.pos..];
        let n = memchr::memchr(0, rest).ok_or(DatError {
            offset: at,
            msg: format!("the file ends inside {what} (a string with no terminating NUL)"),
        })?;
        self.pos += n + 1;
        std::str::from_utf8(&rest[..n]).or(err(at, format!("{what} is not UTF-8")))
    }
    fn expect(&mut self, lit: &[u8], what: &str) -> Res<()> {
        let at = self.at();
        if self.take(lit.len(), what)? != lit {
            return err(
                at,
                format!("{what} expected ({:?})", String::from_utf8_lossy(lit)),
            );
        }
        Ok(())
    }
    /// A count-prefixed block (`u32` or `u64` size), as text.
    fn sized_text(&mut self, wide: bool, what: &str) -> Res<&'a str> {
        let at = self.at();
        let n = if wide {
            self.u64(what)?
        } else {
            u64::from(self.u32(what)?)
        };
        let n = usize::try_from(n).or(err(at, format!("{what}: size {n} too large")))?;
        let b = self.take(n, what)?;
        Ok(std::str::from_utf8(b).unwrap_or(""))
    }
}

/// Whether `bytes` start like a `.dat` file.
pub fn is_dat(bytes: &[u8]) -> bool {
    bytes.len() >= MAGIC.len() && &bytes[..MAGIC.len()] == MAGIC
}

/// Reads the tracing data perf keeps in a perf.data file (its
/// `HEADER_TRACING_DATA` feature, at file offset `base`): trace-cmd's
/// version 6 header (version `0.5` or `0.6`) up to the command lines,
/// with no CPU data.
pub fn read_tracing_data(b: &[u8], base: u64) -> Res<Dat> {
    let mut r = R {
        b,
        pos: 0,
        base,
        flat: false,
        be: false,
    };
    r.expect(MAGIC, "the tracing data's magic")?;
    let vat = r.at();
    let v = r.cstr("the tracing data's version")?;
    if v != "0.5" && v != "0.6" {
        return err(
            vat,
            format!("tracing data version {v:?} is not supported (0.5 and 0.6 are)"),
        );
    }
    let e = r.take(1, "the byte order")?[0];
    r.be = e == 1;
    let _long = r.take(1, "the long size")?[0];
    let page_size = r.u32("the page size")? as usize;
    let mut dat = Dat::of_perf(r.be, page_size);
    header_info(&mut r, &mut dat)?;
    event_formats(&mut r, "ftrace", &mut dat.formats)?;
    systems(&mut r, &mut dat.formats)?;
    let _kallsyms = r.sized_text(false, "the kallsyms section")?;
    let _printk = r.sized_text(false, "the printk formats")?;
    if v == "0.6" && r.pos < r.b.len() {
        let c = r.sized_text(true, "the saved command lines")?;
        cmdlines(c, &mut dat.cmdlines);
    }
    Ok(dat)
}

/// Reads the layout of the `.dat` file whose bytes are `b`.
pub fn read(b: &[u8], path: &Path) -> Res<Dat> {
    let _ = path;
    let mut r = R {
        b,
        pos: 0,
        base: 0,
        flat: false,
        be: false,
    };
    r.expect(MAGIC, "the trace-cmd magic")?;
    let vat = r.at();
    let v = r.cstr("the file version")?;
    let version: u32 = v
        .parse()
        .or(err(vat, format!("file version {v:?} is not a number")))?;
    if !(6..=7).contains(&version) {
        return err(
            vat,
            format!("trace-cmd file version {version} is not supported (6 and 7 are)"),
        );
    }
    let e = r.take(1, "the byte order")?[0];
    r.be = match e {
        0 => false,
        1 => true,
        _ => return err(r.at() - 1, format!("byte order {e} (0 or 1 expected)")),
    };
    let _user_long = r.take(1, "the long size")?[0];
    let pat = r.at();
    let page_size = r.u32("the page size")? as usize;
    if !(64..=(1 << 24)).contains(&page_size) {
        return err(pat, format!("page size {page_size} is not plausible"));
    }
    let mut dat = Dat {
        version,
        big_endian: r.be,
        page_size,
        compression: None,
        kernel_long: 8,
        data_offset: 16,
        formats: Vec::new(),
        cmdlines: Vec::new(),
        clock: "local".into(),
        uname: None,
        tool_version: None,
        offset_ns: 0,
        cpus: Vec::new(),
        buffer_compressed: false,
    };
    if version == 6 {
        read_v6(&mut r, &mut dat)?;
    } else {
        read_v7(&mut r, &mut dat)?;
    }
    Ok(dat)
}

fn header_info(r: &mut R, dat: &mut Dat) -> Res<()> {
    r.expect(b"header_page\0", "the header_page section")?;
    let page = r.sized_text(true, "the header_page format")?;
    for l in page.lines() {
        let l = l.trim();
        if !l.starts_with("field:") {
            continue;
        }
        if let Ok(f) = format::parse("header_page", &format!("name: header_page\nID: 0\n{l}\n")) {
            for f in f.fields.iter().chain(&f.common) {
                match f.name.as_str() {
                    "commit" if matches!(f.size, 4 | 8) => dat.kernel_long = f.size,
                    "data" => dat.data_offset = f.offset,
                    _ => {}
                }
            }
        }
    }
    r.expect(b"header_event\0", "the header_event section")?;
    let _ = r.sized_text(true, "the header_event format")?;
    Ok(())
}

fn event_formats(r: &mut R, system: &str, out: &mut Vec<Format>) -> Res<()> {
    let n = r.u32("the number of formats")?;
    for _ in 0..n {
        let at = r.at();
        let text = r.sized_text(true, "an event format")?;
        let f = format::parse(system, text).map_err(|m| DatError {
            offset: at,
            msg: format!("event format of system {system}: {m}"),
        })?;
        out.push(f);
    }
    Ok(())
}

fn systems(r: &mut R, out: &mut Vec<Format>) -> Res<()> {
    let n = r.u32("the number of event systems")?;
    for _ in 0..n {
        let sys = r.cstr("an event system's name")?.to_string();
        event_formats(r, &sys, out)?;
    }
    Ok(())
}

fn cmdlines(text: &str, out: &mut Vec<(i64, String)>) {
    for l in text.lines() {
        if let Some((pid, comm)) = l.trim_start().split_once(' ') {
            if let Ok(pid) = pid.parse() {
                out.push((pid, comm.to_string()));
            }
        }
    }
}

/// The selected clock of a `trace_clock` file's text (`[local] global`).
fn selected_clock(text: &str) -> Option<String> {
    let a = text.find('[')?;
    let b = text[a..].find(']')?;
    Some(text[a + 1..a + b].to_string())
}

fn text_of(b: &[u8]) -> String {
    let end = memchr::memchr(0, b).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim().to_string()
}

fn parse_i64(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse::<i64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// An option every version shares; `false`: not one of them.
fn common_option(id: u16, data: &[u8], dat: &mut Dat) -> bool {
    match id {
        // DATE and OFFSET: added to every timestamp by trace-cmd report.
        1 | 7 => {
            if let Some(v) = parse_i64(&text_of(data)) {
                dat.offset_ns = dat.offset_ns.saturating_add(v);
            }
        }
        4 => {
            if let Some(c) = selected_clock(&text_of(data)) {
                dat.clock = c;
            }
        }
        5 => dat.uname = Some(text_of(data)),
        9 => dat.tool_version = Some(text_of(data)),
        _ => return false,
    }
    true
}

fn read_v6(r: &mut R, dat: &mut Dat) -> Res<()> {
    header_info(r, dat)?;
    event_formats(r, "ftrace", &mut dat.formats)?;
    systems(r, &mut dat.formats)?;
    let _kallsyms = r.sized_text(false, "the kallsyms section")?;
    let _printk = r.sized_text(false, "the printk formats")?;
    let c = r.sized_text(true, "the saved command lines")?;
    cmdlines(c, &mut dat.cmdlines);
    let ncpu = r.u32("the number of CPUs")?;
    let mut kind = r.take(10, "the data kind")?;
    if kind == b"options  \0" {
        loop {
            let id = r.u16("an option's id")?;
            if id == 0 {
                break;
            }
            let n = r.u32("an option's size")? as usize;
            let data = r.take(n, "an option")?;
            common_option(id, data, dat);
        }
        kind = r.take(10, "the data kind")?;
    }
    match kind {
        b"flyrecord\0" => {}
        b"latency  \0" => {
            return err(
                r.at() - 10,
                "a latency trace (text) holds no events to read; record with the event tracer",
            )
        }
        _ => return err(r.at() - 10, "\"flyrecord\" expected"),
    }
    for cpu in 0..ncpu {
        let offset = r.u64("a CPU's data offset")?;
        let size = r.u64("a CPU's data size")?;
        dat.cpus.push(CpuData { cpu, offset, size });
    }
    Ok(())
}

/// The data of the section at `offset`, decompressed.
fn section(
    b: &[u8],
    offset: u64,
    want: u16,
    be: bool,
    compression: Option<&str>,
) -> Res<(Vec<u8>, bool)> {
    let mut r = R {
        b,
        pos: 0,
        base: 0,
        flat: false,
        be,
    };
    if offset >= b.len() as u64 {
        return err(
            offset,
            format!("section {want} lies beyond the end of the file"),
        );
    }
    r.pos = offset as usize;
    let id = r.u16("a section header")?;
    if id != want {
        return err(
            offset,
            format!("section {want} expected here, section {id} found"),
        );
    }
    let flags = r.u16("a section header")?;
    let _desc = r.u32("a section header")?;
    let at = r.at();
    let size = r.u64("a section header")?;
    let size = usize::try_from(size).or(err(at, "section size too large"))?;
    let data_at = r.at();
    let data = r.take(size, "a section")?;
    if flags & 1 == 0 {
        return Ok((data.to_vec(), false));
    }
    let mut c = R {
        b: data,
        pos: 0,
        base: data_at,
        flat: false,
        be,
    };
    let csize = c.u32("a compressed section's header")? as usize;
    let usize_ = c.u32("a compressed section's header")? as usize;
    let comp = c.take(csize, "a compressed section")?;
    Ok((decompress(compression, comp, usize_, data_at)?, true))
}

/// `data` decompressed (`size` bytes expected).
pub fn decompress(alg: Option<&str>, data: &[u8], size: usize, at: u64) -> Res<Vec<u8>> {
    match alg {
        Some("zstd") => {
            let out = zstd::bulk::decompress(data, size)
                .map_err(|e| DatError {
                    offset: at,
                    msg: format!("zstd data that does not decompress: {e}"),
                })?;
            if out.len() != size {
                return err(
                    at,
                    format!("zstd data of {} bytes where {size} were announced", out.len()),
                );
            }
            Ok(out)
        }
        Some(other) => err(
            at,
            format!("compression {other:?} is not supported (zstd is; `trace-cmd convert --compression none` writes an uncompressed copy)"),
        ),
        None => err(at, "a compressed section in a file that names no compression"),
    }
}

fn read_v7(r: &mut R, dat: &mut Dat) -> Res<()> {
    let alg = r.cstr("the compression algorithm")?.to_string();
    let _alg_version = r.cstr("the compression version")?;
    if alg != "none" {
        dat.compression = Some(alg);
    }
    let mut next = r.u64("the offset of the options")?;
    let b = r.b;
    let be = r.be;
    let comp = dat.compression.clone();
    let mut seen = 0;
    let mut have_headers = false;
    while next != 0 {
        seen += 1;
        if seen > 1000 {
            return err(next, "options sections form a loop");
        }
        let at = next;
        let (data, compressed) = section(b, next, 0, be, comp.as_deref())?;
        let mut o = R {
            b: &data,
            pos: 0,
            base: at,
            flat: compressed,
            be,
        };
        if !compressed {
            o.base = at + 16;
        }
        loop {
            let id = o.u16("an option's id")?;
            let n = o.u32("an option's size")? as usize;
            let d = o.take(n, "an option")?;
            let mut od = R {
                b: d,
                pos: 0,
                base: o.at() - n as u64,
                flat: compressed,
                be,
            };
            if common_option(id, d, dat) {
                continue;
            }
            match id {
                0 => {
                    next = od.u64("the next options' offset")?;
                    break;
                }
                3 => {
                    let _section = od.u64("a buffer's section")?;
                    let name = od.cstr("a buffer's name")?.to_string();
                    let clock = od.cstr("a buffer's clock")?.to_string();
                    let page = od.u32("a buffer's page size")? as usize;
                    let ncpu = od.u32("a buffer's CPU count")?;
                    let mut cpus = Vec::new();
                    for _ in 0..ncpu {
                        let cpu = od.u32("a CPU's id")?;
                        let offset = od.u64("a CPU's data offset")?;
                        let size = od.u64("a CPU's data size")?;
                        cpus.push(CpuData { cpu, offset, size });
                    }
                    // The top instance; other instances are left out.
                    if name.is_empty() {
                        dat.clock = clock;
                        if (64..=(1 << 24)).contains(&page) {
                            dat.page_size = page;
                        }
                        dat.cpus = cpus;
                        let (_, _, flags) = section_flags(b, _section, be)?;
                        dat.buffer_compressed = flags & 1 != 0;
                    }
                }
                16 => {
                    let off = od.u64("the header section's offset")?;
                    let (s, c) = section(b, off, 16, be, comp.as_deref())?;
                    let mut sr = sub(&s, off, c, be);
                    header_info(&mut sr, dat)?;
                    have_headers = true;
                }
                17 => {
                    let off = od.u64("the ftrace formats' offset")?;
                    let (s, c) = section(b, off, 17, be, comp.as_deref())?;
                    event_formats(&mut sub(&s, off, c, be), "ftrace", &mut dat.formats)?;
                }
                18 => {
                    let off = od.u64("the event formats' offset")?;
                    let (s, c) = section(b, off, 18, be, comp.as_deref())?;
                    systems(&mut sub(&s, off, c, be), &mut dat.formats)?;
                }
                21 => {
                    let off = od.u64("the command lines' offset")?;
                    let (s, c) = section(b, off, 21, be, comp.as_deref())?;
                    let text = sub(&s, off, c, be).sized_text(true, "the saved command lines")?;
                    cmdlines(text, &mut dat.cmdlines);
                }
                _ => {}
            }
        }
    }
    if !have_headers {
        return err(0, "no header section (the page and event header formats)");
    }
    Ok(())
}

fn sub(s: &[u8], off: u64, compressed: bool, be: bool) -> R<'_> {
    R {
        b: s,
        pos: 0,
        base: off + 16,
        flat: compressed,
        be,
    }
}

/// A section header's id, description and flags.
fn section_flags(b: &[u8], offset: u64, be: bool) -> Res<(u16, u32, u16)> {
    let mut r = R {
        b,
        pos: 0,
        base: 0,
        flat: false,
        be,
    };
    if offset >= b.len() as u64 {
        return err(offset, "a buffer section beyond the end of the file");
    }
    r.pos = offset as usize;
    let id = r.u16("a section header")?;
    let flags = r.u16("a section header")?;
    let desc = r.u32("a section header")?;
    Ok((id, desc, flags))
}
