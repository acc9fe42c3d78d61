//! ftrace's ring-buffer pages turned into CTF 1.8: one stream per CPU, one
//! packet per page, one event class per ftrace event format.
//!
//! Each record's fields are copied as the format describes them: integers
//! and fixed arrays byte for byte (char arrays as text), `__data_loc` and
//! `__rel_loc` text as CTF strings, other dynamic arrays as sequences. The
//! common fields but `common_type` (the event id) form the event context;
//! the packet context holds the page's time, its CPU (`cpu_id`, as LTTng
//! names it) and the events the kernel reported lost before it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write;

use super::dat::{decompress, CpuData, Dat, DatError};
use super::format::{FieldFmt, FieldKind, Format};

/// The kernel's flags in a page's `commit` word.
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 30) - 1;

/// Event header type lengths with a meaning of their own.
const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;

/// What one field of a record becomes.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// The bytes at `off..off + len`, as they are.
    Copy { off: usize, len: usize },
    /// A `__data_loc` (`rel`: `__rel_loc`) field: text as a string, or
    /// elements of `elem` bytes as a sequence.
    Loc {
        off: usize,
        rel: bool,
        text: bool,
        elem: usize,
    },
    /// The rest of the record from `off`, as a string or a sequence.
    Rest { off: usize, text: bool, elem: usize },
}

/// How one event class's records become CTF events.
#[derive(Debug, Clone)]
pub struct Class {
    pub name: String,
    /// The TSDL of its payload's fields.
    tsdl: String,
    ops: Vec<Op>,
    /// The record length its fixed fields need.
    min_len: usize,
}

/// The CTF event context: the common fields but `common_type`.
#[derive(Debug, Clone)]
pub struct Common {
    tsdl: String,
    ops: Vec<Op>,
    min_len: usize,
    /// `common_type`'s place and size.
    type_off: usize,
    type_len: usize,
}

/// A field's name in TSDL: CTF readers drop one leading underscore, so a
/// name that has one (or that is a TSDL keyword) gets one more.
fn ident(name: &str) -> String {
    if name.starts_with('_') || crate::metadata::write::KEYWORDS.contains(&name) {
        format!("_{name}")
    } else {
        name.to_string()
    }
}

fn int_decl(bytes: usize, signed: bool, hex: bool) -> String {
    format!(
        "integer {{ size = {}; align = 8; signed = {}; base = {}; }}",
        bytes * 8,
        signed,
        if hex { 16 } else { 10 }
    )
}

const TEXT_DECL: &str = "integer { size = 8; align = 8; signed = false; encoding = UTF8; }";

/// The TSDL and op of one field (`None`: a field of no bytes, left out).
fn field(f: &FieldFmt, long: usize, tsdl: &mut String) -> Option<Op> {
    let id = ident(&f.name);
    let elem = || {
        f.elem_size(long)
            .filter(|e| matches!(e, 1 | 2 | 4 | 8))
            .unwrap_or(1)
    };
    let seq = |tsdl: &mut String, e: usize| {
        let len = ident(&format!("{}_len", f.name));
        let _ = write!(
            tsdl,
            "\t\tinteger {{ size = 32; align = 8; signed = false; }} {len};\n\t\t{} {id}[{len}];\n",
            int_decl(e, f.signed, f.is_pointer())
        );
    };
    match f.kind {
        FieldKind::Scalar => {
            if f.size == 0 {
                return None;
            }
            if matches!(f.size, 1 | 2 | 4 | 8) {
                let _ = writeln!(
                    tsdl,
                    "\t\t{} {id};",
                    int_decl(f.size, f.signed, f.is_pointer())
                );
            } else {
                let _ = writeln!(tsdl, "\t\t{} {id}[{}];", int_decl(1, false, true), f.size);
            }
            Some(Op::Copy {
                off: f.offset,
                len: f.size,
            })
        }
        FieldKind::Array(_) => {
            if f.size == 0 {
                return None;
            }
            if f.is_text() {
                let _ = writeln!(tsdl, "\t\t{TEXT_DECL} {id}[{}];", f.size);
            } else {
                let e = elem();
                let e = if f.size.is_multiple_of(e) { e } else { 1 };
                let _ = writeln!(
                    tsdl,
                    "\t\t{} {id}[{}];",
                    int_decl(e, f.signed, f.is_pointer()),
                    f.size / e
                );
            }
            Some(Op::Copy {
                off: f.offset,
                len: f.size,
            })
        }
        FieldKind::DataLoc | FieldKind::RelLoc => {
            let text = f.is_text();
            let e = elem();
            if text {
                let _ = writeln!(tsdl, "\t\tstring {id};");
            } else {
                seq(tsdl, e);
            }
            Some(Op::Loc {
                off: f.offset,
                rel: f.kind == FieldKind::RelLoc,
                text,
                elem: e,
            })
        }
        FieldKind::Flexible => {
            let text = f.is_text();
            let e = elem();
            if text {
                let _ = writeln!(tsdl, "\t\tstring {id};");
            } else {
                seq(tsdl, e);
            }
            Some(Op::Rest {
                off: f.offset,
                text,
                elem: e,
            })
        }
    }
}

fn min_len(ops: &[Op], extra: usize) -> usize {
    ops.iter()
        .map(|o| match *o {
            Op::Copy { off, len } => off + len,
            Op::Loc { off, .. } => off + 4,
            Op::Rest { off, .. } => off,
        })
        .max()
        .unwrap_or(0)
        .max(extra)
}

impl Common {
    /// From the formats' common fields (which every event shares).
    pub fn of(formats: &[Format], long: usize) -> Result<Common, String> {
        let first = formats
            .iter()
            .find(|f| !f.common.is_empty())
            .ok_or("no event format has common fields")?;
        let ty = first
            .common
            .iter()
            .find(|c| c.name == "common_type")
            .ok_or("the common fields have no common_type")?;
        let mut tsdl = String::new();
        let mut ops = Vec::new();
        for c in first.common.iter().filter(|c| c.name != "common_type") {
            if let Some(op) = field(c, long, &mut tsdl) {
                ops.push(op);
            }
        }
        Ok(Common {
            min_len: min_len(&ops, ty.offset + ty.size),
            type_off: ty.offset,
            type_len: ty.size,
            tsdl,
            ops,
        })
    }

    fn matches(&self, f: &Format, first: &[FieldFmt]) -> bool {
        f.common.is_empty() || f.common == first
    }
}

impl Class {
    fn of(f: &Format, name: String, long: usize) -> Class {
        let mut tsdl = String::new();
        let mut ops = Vec::new();
        for fl in &f.fields {
            if let Some(op) = field(fl, long, &mut tsdl) {
                ops.push(op);
            }
        }
        Class {
            name,
            min_len: min_len(&ops, 0),
            tsdl,
            ops,
        }
    }
}

/// The event classes by ftrace id, named: the bare event name, or
/// `system:name` for a name two systems share.
pub fn classes(dat: &Dat) -> Result<(Common, HashMap<u32, Class>), String> {
    let common = Common::of(&dat.formats, dat.kernel_long)?;
    let first_common = dat
        .formats
        .iter()
        .find(|f| !f.common.is_empty())
        .map(|f| f.common.clone())
        .unwrap_or_default();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for f in &dat.formats {
        *count.entry(f.name.as_str()).or_default() += 1;
    }
    let mut out = HashMap::new();
    for f in &dat.formats {
        if !common.matches(f, &first_common) {
            return Err(format!(
                "event {}:{} has common fields unlike the others'",
                f.system, f.name
            ));
        }
        let name = if count[f.name.as_str()] > 1 {
            format!("{}:{}", f.system, f.name)
        } else {
            f.name.clone()
        };
        out.insert(f.id, Class::of(f, name, dat.kernel_long));
    }
    Ok((common, out))
}

/// The TSDL of the converted trace, with the classes `used`.
pub fn metadata(dat: &Dat, common: &Common, classes: &BTreeMap<u32, &Class>) -> String {
    let bo = if dat.big_endian { "be" } else { "le" };
    let clock: String = dat
        .clock
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let clock = if clock.is_empty() || clock.starts_with(|c: char| c.is_ascii_digit()) {
        format!("c_{clock}")
    } else {
        clock
    };
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut m = String::new();
    m.push_str("/* CTF 1.8 */\n\n");
    let _ = write!(
        m,
        "trace {{\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = {bo};\n\
\tpacket.header := struct {{\n\t\tinteger {{ size = 32; align = 8; signed = false; base = 16; }} magic;\n\
\t\tinteger {{ size = 32; align = 8; signed = false; }} stream_id;\n\t}};\n}};\n\n"
    );
    m.push_str("env {\n\tdomain = \"kernel\";\n\ttracer_name = \"ftrace\";\n");
    if dat.version >= 6 {
        let _ = writeln!(m, "\ttrace_cmd_file_version = {};", dat.version);
    }
    let _ = writeln!(m, "\tftrace_clock = \"{}\";", esc(&dat.clock));
    if let Some(v) = &dat.tool_version {
        let key = if dat.version >= 6 {
            "trace_cmd_version"
        } else {
            "recorder"
        };
        let _ = writeln!(m, "\t{key} = \"{}\";", esc(v));
    }
    if let Some(u) = &dat.uname {
        let w: Vec<&str> = u.split_whitespace().collect();
        if let Some(s) = w.first() {
            let _ = writeln!(m, "\tsysname = \"{}\";", esc(s));
        }
        if let Some(h) = w.get(1) {
            let _ = writeln!(m, "\thostname = \"{}\";", esc(h));
        }
        if let Some(r) = w.get(2) {
            let _ = writeln!(m, "\tkernel_release = \"{}\";", esc(r));
        }
    }
    m.push_str("};\n\n");
    let _ = write!(
        m,
        "clock {{\n\tname = \"{clock}\";\n\tdescription = \"ftrace trace clock {}\";\n\
\tfreq = 1000000000;\n\tprecision = 1;\n\toffset_s = {};\n\toffset = {};\n\tabsolute = FALSE;\n}};\n\n",
        esc(&dat.clock),
        dat.offset_ns.div_euclid(1_000_000_000),
        dat.offset_ns.rem_euclid(1_000_000_000)
    );
    let ts =
        format!("integer {{ size = 64; align = 8; signed = false; map = clock.{clock}.value; }}");
    let u64d = "integer { size = 64; align = 8; signed = false; }";
    let _ = write!(
        m,
        "stream {{\n\tid = 0;\n\tevent.header := struct {{\n\t\tinteger {{ size = 32; align = 8; signed = false; }} id;\n\
\t\t{ts} timestamp;\n\t}};\n\tpacket.context := struct {{\n\t\t{ts} timestamp_begin;\n\t\t{ts} timestamp_end;\n\
\t\t{u64d} content_size;\n\t\t{u64d} packet_size;\n\t\t{u64d} events_discarded;\n\
\t\tinteger {{ size = 32; align = 8; signed = false; }} cpu_id;\n\t}};\n"
    );
    if !common.tsdl.is_empty() {
        let _ = write!(m, "\tevent.context := struct {{\n{}\t}};\n", common.tsdl);
    }
    m.push_str("};\n\n");
    for (id, c) in classes {
        let _ = write!(
            m,
            "event {{\n\tname = \"{}\";\n\tid = {id};\n\tstream_id = 0;\n\tfields := struct {{\n{}\t}};\n}};\n\n",
            esc(&c.name),
            c.tsdl
        );
    }
    m
}

/// Where the pages of one CPU come from: the file's bytes, or the
/// decompressed chunks.
pub struct Pages<'a> {
    b: &'a [u8],
    page: usize,
    cpu: CpuData,
    compression: Option<&'a str>,
    compressed: bool,
    be: bool,
}

/// A run of whole pages and where it lies in the file (for errors).
struct Run<'b> {
    bytes: &'b [u8],
    /// `Some(offset)` of a decompressed chunk; `None`: `file_at` is the
    /// file offset of byte 0.
    chunk: Option<u64>,
    file_at: u64,
}

impl<'a> Pages<'a> {
    pub fn new(dat: &'a Dat, b: &'a [u8], cpu: CpuData) -> Pages<'a> {
        Pages {
            b,
            page: dat.page_size,
            cpu,
            compression: dat.compression.as_deref(),
            compressed: dat.buffer_compressed,
            be: dat.big_endian,
        }
    }

    fn u32_at(&self, at: u64) -> Result<u32, DatError> {
        let a = at as usize;
        match self.b.get(a..a + 4) {
            Some(s) => {
                let s: [u8; 4] = s.try_into().unwrap_or_default();
                Ok(if self.be {
                    u32::from_be_bytes(s)
                } else {
                    u32::from_le_bytes(s)
                })
            }
            None => Err(DatError {
                offset: at,
                msg: "the file ends inside a compressed chunk's header".into(),
            }),
        }
    }

    /// Calls `f` on each run of pages, in order.
    fn each(&self, mut f: impl FnMut(&Run<'_>) -> Result<(), DatError>) -> Result<(), DatError> {
        let len = self.b.len() as u64;
        let past = self
            .cpu
            .offset
            .checked_add(self.cpu.size)
            .is_none_or(|e| e > len);
        let past_err = || DatError {
            offset: self.cpu.offset.min(len),
            msg: format!(
                "its data ({} bytes at byte {}) runs past the end of the file ({len} bytes)",
                self.cpu.size, self.cpu.offset
            ),
        };
        if !self.compressed {
            // The whole pages the file holds are read, then a cut is
            // reported.
            let start = self.cpu.offset.min(len) as usize;
            let end = self.cpu.offset.saturating_add(self.cpu.size).min(len) as usize;
            let whole = if past {
                start + (end - start) / self.page * self.page
            } else {
                end
            };
            f(&Run {
                bytes: &self.b[start..whole],
                chunk: None,
                file_at: start as u64,
            })?;
            return if past { Err(past_err()) } else { Ok(()) };
        }
        let mut at = self.cpu.offset;
        let count = self.u32_at(at)?;
        at += 4;
        for _ in 0..count {
            let csize = u64::from(self.u32_at(at)?);
            let usize_ = self.u32_at(at + 4)? as usize;
            let data_at = at + 8;
            let data = self
                .b
                .get(data_at as usize..data_at.saturating_add(csize).min(u64::MAX >> 1) as usize)
                .ok_or(DatError {
                    offset: at,
                    msg: format!("the file ends inside a compressed chunk of {csize} bytes"),
                })?;
            let bytes = decompress(self.compression, data, usize_, at)?;
            f(&Run {
                bytes: &bytes,
                chunk: Some(at),
                file_at: at,
            })?;
            at = data_at + csize;
        }
        Ok(())
    }
}

/// Counts of what a CPU's conversion met.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub events: u64,
    pub lost: u64,
    pub pages: u64,
}

/// Writes CPU `cpu`'s events as CTF packets to `out`; records `used` ids.
/// On a damaged page, what came before it is written and the damage is
/// returned beside the counts.
pub struct Writer<'a> {
    pub dat: &'a Dat,
    pub common: &'a Common,
    pub classes: &'a HashMap<u32, Class>,
}

impl Writer<'_> {
    pub fn cpu(
        &self,
        pages: &Pages,
        out: &mut dyn Write,
        used: &mut std::collections::BTreeSet<u32>,
    ) -> std::io::Result<(Counts, Option<DatError>)> {
        let mut counts = Counts::default();
        let mut st = PageState {
            pkt: Vec::with_capacity(self.dat.page_size * 2),
            discarded: 0,
            last_ts: 0,
            open: false,
            start: 0,
            any: false,
        };
        let mut io_err = None;
        let page = self.dat.page_size;
        let res = pages.each(|run| {
            let bytes = run.bytes;
            let base = run.file_at;
            let mut at = 0;
            while bytes.len() - at >= page {
                let where_ = Where {
                    chunk: run.chunk,
                    at: if run.chunk.is_some() {
                        at as u64
                    } else {
                        base + at as u64
                    },
                };
                let r = self.page_out(
                    &bytes[at..at + page],
                    where_,
                    pages.cpu.cpu,
                    &mut st,
                    &mut counts,
                    used,
                    out,
                );
                if let Err(e) = r.1 {
                    io_err = Some(e);
                    return Err(DatError {
                        offset: 0,
                        msg: String::new(),
                    });
                }
                let r = r.0;
                r?;
                at += page;
            }
            if at < bytes.len() {
                let w = Where {
                    chunk: run.chunk,
                    at: if run.chunk.is_some() {
                        at as u64
                    } else {
                        base + at as u64
                    },
                };
                return Err(w.err(
                    0,
                    format!(
                        "a partial page of {} bytes ({page}-byte pages expected)",
                        bytes.len() - at
                    ),
                ));
            }
            Ok(())
        });
        if let Some(e) = io_err {
            return Err(e);
        }
        Ok((counts, res.err()))
    }

    /// [`Writer::page`], then the page's packet written to `out` (the
    /// events before a damage included): the page's result and the write's.
    #[allow(clippy::too_many_arguments)]
    fn page_out(
        &self,
        p: &[u8],
        w: Where,
        cpu: u32,
        st: &mut PageState,
        counts: &mut Counts,
        used: &mut std::collections::BTreeSet<u32>,
        out: &mut dyn Write,
    ) -> (Result<(), DatError>, std::io::Result<()>) {
        let r = self.page(p, w, cpu, st, counts, used);
        if st.open {
            let at = st.start;
            finish_packet(&mut st.pkt[at..], self.dat.big_endian, st.last_ts);
            st.open = false;
        }
        let mut io = Ok(());
        if !st.pkt.is_empty() {
            io = out.write_all(&st.pkt);
            st.pkt.clear();
        }
        (r, io)
    }

    fn page(
        &self,
        p: &[u8],
        w: Where,
        cpu: u32,
        st: &mut PageState,
        counts: &mut Counts,
        used: &mut std::collections::BTreeSet<u32>,
    ) -> Result<(), DatError> {
        let be = self.dat.big_endian;
        let rd = |b: &[u8]| -> u64 {
            let mut v = 0u64;
            if be {
                for &x in b {
                    v = v << 8 | u64::from(x);
                }
            } else {
                for &x in b.iter().rev() {
                    v = v << 8 | u64::from(x);
                }
            }
            v
        };
        let long = self.dat.kernel_long;
        let doff = self.dat.data_offset;
        if p.len() < doff.max(8 + long) {
            return Err(w.err(0, "a page shorter than its header"));
        }
        let page_ts = rd(&p[0..8]);
        let commit = rd(&p[8..8 + long]);
        let len = (commit & COMMIT_MASK) as usize;
        counts.pages += 1;
        if len > p.len() - doff {
            return Err(w.err(
                8,
                format!(
                    "a page whose commit length {len} exceeds its {} data bytes",
                    p.len() - doff
                ),
            ));
        }
        if commit & MISSED_EVENTS != 0 {
            let n = if commit & MISSED_STORED != 0 && doff + len + long <= p.len() {
                rd(&p[doff + len..doff + len + long])
            } else {
                1 // lost, how many unknown: counted as one
            };
            st.discarded += n;
            counts.lost += n;
        }
        let data = &p[doff..doff + len];
        let mut ts = page_ts;
        let mut pos = 0;
        while pos + 4 <= len {
            let hdr = rd(&data[pos..pos + 4]) as u32;
            let (type_len, delta) = if be {
                (hdr >> 27, u64::from(hdr & ((1 << 27) - 1)))
            } else {
                (hdr & 0x1f, u64::from(hdr >> 5))
            };
            let word = |i: usize| -> Result<u64, DatError> {
                data.get(i..i + 4).map(rd).ok_or_else(|| {
                    w.err((doff + pos) as u64, "an event header cut by the page's end")
                })
            };
            match type_len {
                PADDING => {
                    if delta == 0 {
                        break; // the rest of the page is empty
                    }
                    pos += 4 + word(pos + 4)? as usize;
                }
                TIME_EXTEND => {
                    ts = ts.wrapping_add((word(pos + 4)? << 27) + delta);
                    pos += 8;
                }
                TIME_STAMP => {
                    let abs = (word(pos + 4)? << 27) | delta;
                    ts = (ts & !((1u64 << 59) - 1)) | abs;
                    pos += 8;
                }
                _ => {
                    let (body, next) = if type_len == 0 {
                        let n = word(pos + 4)? as usize;
                        if n < 4 {
                            return Err(
                                w.err((doff + pos) as u64, format!("an event of length {n}"))
                            );
                        }
                        (pos + 8..pos + 4 + n, pos + 4 + n)
                    } else {
                        let n = type_len as usize * 4;
                        (pos + 4..pos + 4 + n, pos + 4 + n)
                    };
                    if next > len {
                        return Err(w.err(
                            (doff + pos) as u64,
                            "an event that runs past the page's commit length",
                        ));
                    }
                    ts = ts.wrapping_add(delta);
                    if !st.open {
                        let begin = page_ts.min(ts);
                        st.pkt.clear();
                        if !st.any && st.discarded > 0 {
                            // Events lost before the first page: an empty
                            // packet before it lets readers count them
                            // (a first packet's count is no difference).
                            start_packet(&mut st.pkt, be, begin, 0, cpu);
                            finish_packet(&mut st.pkt, be, begin);
                        }
                        st.start = st.pkt.len();
                        start_packet(&mut st.pkt, be, begin, st.discarded, cpu);
                        st.open = true;
                        st.any = true;
                    }
                    self.event(&data[body], ts, be, &mut st.pkt, used)
                        .map_err(|m| w.err((doff + pos) as u64, m))?;
                    counts.events += 1;
                    st.last_ts = ts;
                    pos = next;
                }
            }
        }
        Ok(())
    }

    pub fn event(
        &self,
        rec: &[u8],
        ts: u64,
        be: bool,
        out: &mut Vec<u8>,
        used: &mut std::collections::BTreeSet<u32>,
    ) -> Result<(), String> {
        let c = self.common;
        if rec.len() < c.min_len {
            return Err(format!(
                "an event record of {} bytes, too short for its common fields",
                rec.len()
            ));
        }
        let id = {
            let b = &rec[c.type_off..c.type_off + c.type_len];
            let mut v = 0u32;
            if be {
                for &x in b {
                    v = v << 8 | u32::from(x);
                }
            } else {
                for &x in b.iter().rev() {
                    v = v << 8 | u32::from(x);
                }
            }
            v
        };
        let class = self.classes.get(&id).ok_or_else(|| {
            format!("an event of type {id}, which no format of the file describes")
        })?;
        if rec.len() < class.min_len {
            return Err(format!(
                "a {} record of {} bytes where its format needs {}",
                class.name,
                rec.len(),
                class.min_len
            ));
        }
        used.insert(id);
        put(out, be, u64::from(id), 4);
        put(out, be, ts, 8);
        run_ops(&c.ops, rec, be, out)?;
        run_ops(&class.ops, rec, be, out)
    }
}

/// One CPU's pages fed one at a time, as a live recording reads them
/// (tracefs' `trace_pipe_raw`).
pub struct CpuFeed {
    st: PageState,
    counts: Counts,
    cpu: u32,
    pages: u64,
}

impl CpuFeed {
    pub fn new(cpu: u32) -> CpuFeed {
        CpuFeed {
            st: PageState {
                pkt: Vec::new(),
                discarded: 0,
                last_ts: 0,
                open: false,
                start: 0,
                any: false,
            },
            counts: Counts::default(),
            cpu,
            pages: 0,
        }
    }

    /// Converts one page to a packet written to `out`; a damaged page is
    /// returned as the error (its events before the damage are written).
    pub fn page(
        &mut self,
        w: &Writer,
        page: &[u8],
        out: &mut dyn Write,
        used: &mut std::collections::BTreeSet<u32>,
    ) -> std::io::Result<Option<DatError>> {
        let at = self.pages * page.len() as u64;
        self.pages += 1;
        let (r, io) = w.page_out(
            page,
            Where { chunk: None, at },
            self.cpu,
            &mut self.st,
            &mut self.counts,
            used,
            out,
        );
        io?;
        Ok(r.err())
    }

    /// What was read so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }
}

struct PageState {
    pkt: Vec<u8>,
    discarded: u64,
    last_ts: u64,
    /// A packet is started in `pkt`.
    open: bool,
    /// Where in `pkt` the open packet starts.
    start: usize,
    /// A packet was written.
    any: bool,
}

#[derive(Clone, Copy)]
struct Where {
    chunk: Option<u64>,
    at: u64,
}

impl Where {
    fn err(&self, within: u64, msg: impl Into<String>) -> DatError {
        let msg = msg.into();
        match self.chunk {
            Some(c) => DatError {
                offset: c,
                msg: format!(
                    "{msg} (at byte {} of the data of the compressed chunk here)",
                    self.at + within
                ),
            },
            None => DatError {
                offset: self.at + within,
                msg,
            },
        }
    }
}

fn put(out: &mut Vec<u8>, be: bool, v: u64, n: usize) {
    let b = if be { v.to_be_bytes() } else { v.to_le_bytes() };
    if be {
        out.extend_from_slice(&b[8 - n..]);
    } else {
        out.extend_from_slice(&b[..n]);
    }
}

const MAGIC: u64 = 0xC1FC_1FC1;
/// Byte offsets in a packet of its context's fields.
const TS_END_AT: usize = 16;
const CONTENT_AT: usize = 24;
const SIZE_AT: usize = 32;

pub fn start_packet(pkt: &mut Vec<u8>, be: bool, ts: u64, discarded: u64, cpu: u32) {
    put(pkt, be, MAGIC, 4);
    put(pkt, be, 0, 4); // stream id
    put(pkt, be, ts, 8);
    put(pkt, be, 0, 8); // timestamp_end
    put(pkt, be, 0, 8); // content_size
    put(pkt, be, 0, 8); // packet_size
    put(pkt, be, discarded, 8);
    put(pkt, be, u64::from(cpu), 4);
}

pub fn finish_packet(pkt: &mut [u8], be: bool, ts_end: u64) {
    let bits = (pkt.len() as u64) * 8;
    let set = |pkt: &mut [u8], at: usize, v: u64| {
        let b = if be { v.to_be_bytes() } else { v.to_le_bytes() };
        pkt[at..at + 8].copy_from_slice(&b);
    };
    set(pkt, TS_END_AT, ts_end);
    set(pkt, CONTENT_AT, bits);
    set(pkt, SIZE_AT, bits);
}

fn run_ops(ops: &[Op], rec: &[u8], be: bool, out: &mut Vec<u8>) -> Result<(), String> {
    for op in ops {
        match *op {
            Op::Copy { off, len } => out.extend_from_slice(&rec[off..off + len]),
            Op::Loc {
                off,
                rel,
                text,
                elem,
            } => {
                let b = &rec[off..off + 4];
                let w = if be {
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
                } else {
                    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
                };
                let mut start = (w & 0xffff) as usize;
                let n = (w >> 16) as usize;
                if rel {
                    start += off + 4;
                }
                let bytes = rec.get(start..start + n).ok_or_else(|| {
                    format!(
                        "a dynamic field of {n} bytes at byte {start} of a {}-byte record",
                        rec.len()
                    )
                })?;
                dynamic(bytes, text, elem, be, out);
            }
            Op::Rest { off, text, elem } => {
                dynamic(rec.get(off..).unwrap_or(&[]), text, elem, be, out);
            }
        }
    }
    Ok(())
}

fn dynamic(bytes: &[u8], text: bool, elem: usize, be: bool, out: &mut Vec<u8>) {
    if text {
        let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
        out.extend_from_slice(&bytes[..end]);
        out.push(0);
    } else {
        let n = bytes.len() / elem;
        put(out, be, n as u64, 4);
        out.extend_from_slice(&bytes[..n * elem]);
    }
}
