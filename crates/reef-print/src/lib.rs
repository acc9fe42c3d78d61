//! `reef-print`: babeltrace2's pretty text format (sink.text.pretty), byte
//! for byte.
//!
//! [`Pretty`] formats one message at a time into a byte buffer that the
//! caller writes out; it keeps only the previous timestamp (for deltas).
//!
//! Printing a trace of the shared conformance material as `babeltrace2
//! --clock-seconds --no-delta` does, and comparing with what babeltrace2
//! printed (`golden/`):
//!
//! ```
//! use reef_print::{ClockOptions, Options, Pretty};
//! use reef_read::{Item, ReadOptions, Source};
//!
//! let base = "../../../shared/conformance";
//! let opts = Options {
//!     clock: ClockOptions { seconds: true, delta: false, ..Default::default() },
//!     ..Default::default()
//! };
//! let mut pretty = Pretty::new(opts);
//! let read = ReadOptions::new([format!("{base}/babeltrace-traces/succeed/wk-heartbeat-u")]);
//! let mut src = Source::open(&read)?;
//! let mut out = Vec::new();
//! while let Some(m) = src.next()? {
//!     if m.item == Item::Event {
//!         pretty.event(&mut out, m.label, m.cursor, m.ns);
//!     }
//! }
//! let golden = std::fs::read(format!("{base}/golden/succeed/wk-heartbeat-u.1.txt")).unwrap();
//! assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&golden));
//! # Ok::<(), reef_read::Error>(())
//! ```

mod fmt;
mod line;

use reef_ctf::plan::{Node, Plan, NONE};
use reef_ctf::{EnvValue, Item, StreamCursor, Value};

pub use fmt::{big_int_hex, format_g, push_escaped};

/// Which `--names` babeltrace2 shows.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    pub payload: bool,
    pub context: bool,
    pub scope: bool,
    pub header: bool,
}

impl Default for Names {
    fn default() -> Self {
        Names {
            payload: true,
            context: true,
            scope: false,
            header: false,
        }
    }
}

impl Names {
    /// babeltrace2's `--names` list (`payload`/`arg`/`args`, `context`/
    /// `ctx`, `scope`, `header`, `all`, `none`); an unknown kind is an
    /// error naming it.
    pub fn parse<S: AsRef<str>>(list: &[S]) -> Result<Names, String> {
        let mut n = Names {
            payload: false,
            context: false,
            scope: false,
            header: false,
        };
        for kind in list {
            match kind.as_ref() {
                "payload" | "arg" | "args" => n.payload = true,
                "context" | "ctx" => n.context = true,
                "scope" => n.scope = true,
                "header" => n.header = true,
                "all" => {
                    n = Names {
                        payload: true,
                        context: true,
                        scope: true,
                        header: true,
                    }
                }
                "none" => {}
                other => return Err(format!("unknown field name kind `{other}` in --names (expected payload, context, scope, header, all or none)")),
            }
        }
        Ok(n)
    }
}

/// Which `--fields` babeltrace2 shows.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub trace: bool,
    pub hostname: bool,
    pub domain: bool,
    pub procname: bool,
    pub vpid: bool,
    pub loglevel: bool,
    pub emf: bool,
    pub callsite: bool,
}

impl Fields {
    /// babeltrace2's `--fields` list (`trace`, `trace:hostname`,
    /// `trace:domain`, `trace:procname`, `trace:vpid`, `loglevel`, `emf`,
    /// `callsite`, `all`); an unknown field is an error naming it.
    pub fn parse<S: AsRef<str>>(list: &[S]) -> Result<Fields, String> {
        let all = |on| Fields {
            trace: on,
            hostname: on,
            domain: on,
            procname: on,
            vpid: on,
            loglevel: on,
            emf: on,
            callsite: on,
        };
        let mut f = all(false);
        for field in list {
            match field.as_ref() {
                "trace" => f.trace = true,
                "trace:hostname" => f.hostname = true,
                "trace:domain" => f.domain = true,
                "trace:procname" => f.procname = true,
                "trace:vpid" => f.vpid = true,
                "loglevel" => f.loglevel = true,
                "emf" => f.emf = true,
                "callsite" => f.callsite = true,
                "all" => f = all(true),
                other => return Err(format!("unknown field `{other}` in --fields (expected trace, trace:hostname, trace:domain, trace:procname, trace:vpid, loglevel, emf, callsite or all)")),
            }
        }
        Ok(f)
    }
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            trace: false,
            hostname: true,
            domain: false,
            procname: true,
            vpid: true,
            loglevel: false,
            emf: false,
            callsite: false,
        }
    }
}

/// How timestamps are shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClockOptions {
    /// `--clock-seconds`
    pub seconds: bool,
    /// `--clock-date`
    pub date: bool,
    /// `--clock-gmt`
    pub gmt: bool,
    /// `--clock-cycles`
    pub cycles: bool,
    /// `--no-delta` turns this off.
    pub delta: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub names: Names,
    pub fields: Fields,
    pub clock: ClockOptions,
    pub color: bool,
}

/// What the printer needs to know about a trace beyond its metadata
/// (defined with the muxer, which orders streams by it).
pub use reef_iter::TraceLabel;

/// babeltrace2 2.0.4's colour codes ("bright" is rendered as bold).
mod color {
    pub const RESET: &str = "\x1b[0m";
    pub const BOLD: &str = "\x1b[1m";
    pub const TIMESTAMP: &str = "\x1b[1m\x1b[1m\x1b[33m";
    pub const EVENT_NAME: &str = "\x1b[1m\x1b[1m\x1b[35m";
    pub const FIELD_NAME: &str = "\x1b[36m";
    pub const UNKNOWN: &str = "\x1b[1m\x1b[1m\x1b[31m";
    pub const WARNING_LINE: &str = "\x1b[33m";
}

/// The pretty printer's state across messages.
pub struct Pretty {
    pub opts: Options,
    last_ns: Option<i64>,
    last_cycles: Option<u64>,
    start_line: bool,
    tcache: fmt::TimeCache,
    /// The env entries shown per event, per trace (keyed by the trace's
    /// address), looked up once.
    envs: Vec<(usize, TraceEnv)>,
    /// The packet context's text for the packet (trace, stream, packet
    /// count, offset) it was formatted for.
    pctx_key: Option<line::PacketKey>,
    pctx_text: Vec<u8>,
    /// Compiled lines, per event class.
    lines: line::Lines,
    packet_text: line::PacketText,
}

/// A trace's `hostname`, `domain`, `procname` (as text) and `vpid`.
struct TraceEnv {
    hostname: Option<String>,
    domain: Option<String>,
    procname: Option<String>,
    vpid: Option<i64>,
}

impl TraceEnv {
    fn new(meta: &reef_ctf::Metadata) -> TraceEnv {
        let text = |k: &str| match meta.env_get(k) {
            Some(EnvValue::Str(s)) => Some(s.clone()),
            Some(EnvValue::Int(i)) => Some(i.to_string()),
            None => None,
        };
        TraceEnv {
            hostname: text("hostname"),
            domain: text("domain"),
            procname: text("procname"),
            vpid: match meta.env_get("vpid") {
                Some(EnvValue::Int(v)) => Some(*v),
                _ => None,
            },
        }
    }
}

const LOG_LEVELS: [&str; 15] = [
    "TRACE_EMERG",
    "TRACE_ALERT",
    "TRACE_CRIT",
    "TRACE_ERR",
    "TRACE_WARNING",
    "TRACE_NOTICE",
    "TRACE_INFO",
    "TRACE_DEBUG_SYSTEM",
    "TRACE_DEBUG_PROGRAM",
    "TRACE_DEBUG_PROCESS",
    "TRACE_DEBUG_MODULE",
    "TRACE_DEBUG_UNIT",
    "TRACE_DEBUG_FUNCTION",
    "TRACE_DEBUG_LINE",
    "TRACE_DEBUG",
];

impl Pretty {
    pub fn new(opts: Options) -> Pretty {
        Pretty {
            opts,
            last_ns: None,
            last_cycles: None,
            start_line: true,
            tcache: fmt::TimeCache::default(),
            envs: Vec::new(),
            pctx_key: None,
            pctx_text: Vec::new(),
            lines: line::Lines::default(),
            packet_text: line::PacketText::default(),
        }
    }

    fn name_equal(&self, out: &mut Vec<u8>, name: &str) {
        if self.opts.color {
            out.extend_from_slice(color::BOLD.as_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(color::RESET.as_bytes());
        } else {
            out.extend_from_slice(name.as_bytes());
        }
        out.extend_from_slice(b" = ");
    }

    /// Separator before a header field: `, ` mid-line, `:` after a
    /// trace/domain-like field at the start of the line.
    fn dom_sep(&self, out: &mut Vec<u8>, dom_print: bool) {
        if !self.start_line {
            out.extend_from_slice(b", ");
        } else if dom_print {
            out.push(b':');
        }
    }

    fn sep(&mut self, out: &mut Vec<u8>) {
        if !self.start_line {
            out.extend_from_slice(b", ");
        }
    }

    /// Sets the previous event's time, from which the next event's delta
    /// is counted (printing from the middle of a trace).
    pub fn set_previous(&mut self, ns: Option<i64>, cycles: Option<u64>) {
        self.last_ns = ns;
        self.last_cycles = cycles;
    }

    /// Formats the event that `cursor` currently holds, whose time is
    /// `ns` nanoseconds from the origin (if its stream has a clock).
    pub fn event(
        &mut self,
        out: &mut Vec<u8>,
        label: &TraceLabel,
        c: &StreamCursor,
        ns: Option<i64>,
    ) {
        let stamped = self.event_head(out, c.event.ts, ns);
        self.event_body(out, label, c, stamped);
    }

    /// The part of an event's line that depends on the previous event:
    /// the timestamp and the delta. Returns whether a timestamp was shown
    /// (to pass to [`Pretty::event_body`]).
    pub fn event_head(&mut self, out: &mut Vec<u8>, ts: Option<u64>, ns: Option<i64>) -> bool {
        self.start_line = true;
        match (ts, ns) {
            (Some(cycles), Some(ns)) => {
                self.timestamp(out, cycles, ns);
                true
            }
            _ => false,
        }
    }

    /// The rest of the event's line, which depends on the event alone (so
    /// worker threads can format it ahead): `stamped` is what
    /// [`Pretty::event_head`] returned.
    pub fn event_body(
        &mut self,
        out: &mut Vec<u8>,
        label: &TraceLabel,
        c: &StreamCursor,
        stamped: bool,
    ) {
        // Colours change the text around every value: those lines are
        // walked field by field; all others run their class's program.
        if self.opts.color {
            self.event_body_walk(out, label, c, stamped);
        } else {
            self.event_body_compiled(out, label, c, stamped);
        }
    }

    /// [`Pretty::event_body`] through the event class's [`line::LineProg`]
    /// (compiled on first use).
    fn event_body_compiled(
        &mut self,
        out: &mut Vec<u8>,
        label: &TraceLabel,
        c: &StreamCursor,
        stamped: bool,
    ) {
        // A trace's label does not change: the line is the class's.
        if let Some(prog) = self.lines.slot(c, stamped) {
            prog.run(out, c, &mut self.packet_text);
            return;
        }
        let prog = Box::new(self.compile_line(label, c, stamped));
        prog.run(out, c, &mut self.packet_text);
        *self.lines.slot(c, stamped) = Some(prog);
    }

    /// Compiles the line of `c`'s current event class: the prefix (trace
    /// fields and event name) is formatted once, the scopes become ops.
    fn compile_line(
        &mut self,
        label: &TraceLabel,
        c: &StreamCursor,
        stamped: bool,
    ) -> line::LineProg {
        let trace = &c.trace;
        let meta = &trace.class.meta;
        let sp = &trace.class.streams[c.stream];
        let ep = sp.event(c.event.event);
        let ec = &meta.streams[sp.class].events[ep.class];
        let mut b = line::Builder::default();
        self.prefix(&mut b.lits, label, trace, ec, stamped);
        let ctx_names = self.opts.names.context;
        let scopes: [(&str, &Plan, bool); 4] = [
            ("stream.packet.context", &sp.packet_context, ctx_names),
            ("stream.event.context", &sp.event_common_context, ctx_names),
            ("event.context", &ep.context, ctx_names),
            ("event.fields", &ep.payload, self.opts.names.payload),
        ];
        for (k, (name, plan, names)) in scopes.into_iter().enumerate() {
            let Some(root) = plan.root else { continue };
            if !plan.visible() {
                continue;
            }
            self.sep(&mut b.lits);
            self.start_line = false;
            if self.opts.names.scope {
                self.name_equal(&mut b.lits, name);
            }
            b.scope(k as u8, names);
            b.field(plan, root, names);
            if k == 0 {
                b.packet_end();
            }
        }
        b.lits.push(b'\n');
        b.finish()
    }

    /// What a line shows before its scopes: the trace fields asked for and
    /// the event's name.
    fn prefix(
        &mut self,
        out: &mut Vec<u8>,
        label: &TraceLabel,
        trace: &std::sync::Arc<reef_ctf::Trace>,
        ec: &reef_ctf::EventClass,
        stamped: bool,
    ) {
        let meta = &trace.class.meta;
        let hn = self.opts.names.header;
        self.start_line = !(stamped && hn);
        let mut dom_print = false;
        if self.opts.fields.trace {
            self.sep(out);
            if hn {
                self.name_equal(out, "trace");
            }
            out.extend_from_slice(label.name.as_bytes());
            if hn {
                out.extend_from_slice(b", ");
            }
        }
        let key = std::sync::Arc::as_ptr(trace) as usize;
        let ei = match self.envs.iter().position(|e| e.0 == key) {
            Some(i) => i,
            None => {
                self.envs.push((key, TraceEnv::new(meta)));
                self.envs.len() - 1
            }
        };
        // Taken out for the calls below, which borrow `self` mutably.
        let env = std::mem::replace(
            &mut self.envs[ei].1,
            TraceEnv {
                hostname: None,
                domain: None,
                procname: None,
                vpid: None,
            },
        );
        if self.opts.fields.hostname {
            if let Some(h) = &env.hostname {
                self.sep(out);
                if hn {
                    self.name_equal(out, "trace:hostname");
                }
                out.extend_from_slice(h.as_bytes());
                dom_print = true;
            }
        }
        if self.opts.fields.domain {
            if let Some(d) = &env.domain {
                self.dom_sep(out, dom_print);
                if hn {
                    self.name_equal(out, "trace:domain");
                }
                out.extend_from_slice(d.as_bytes());
                dom_print = true;
            }
        }
        if self.opts.fields.procname {
            if let Some(p) = &env.procname {
                self.dom_sep(out, dom_print);
                if hn {
                    self.name_equal(out, "trace:procname");
                }
                out.extend_from_slice(p.as_bytes());
                dom_print = true;
            }
        }
        if self.opts.fields.vpid {
            if let Some(v) = env.vpid {
                self.dom_sep(out, dom_print);
                if hn {
                    self.name_equal(out, "trace:vpid");
                }
                out.push(b'(');
                fmt::push_i64(out, v);
                out.push(b')');
                dom_print = true;
            }
        }
        self.envs[ei].1 = env;
        if self.opts.fields.loglevel {
            if let Some(l) = ec.loglevel {
                if (0..15).contains(&l) {
                    self.dom_sep(out, dom_print);
                    if hn {
                        self.name_equal(out, "loglevel");
                    }
                    out.extend_from_slice(LOG_LEVELS[l as usize].as_bytes());
                    out.extend_from_slice(format!(" ({l})").as_bytes());
                    dom_print = true;
                }
            }
        }
        if self.opts.fields.emf {
            if let Some(u) = &ec.model_emf_uri {
                self.dom_sep(out, dom_print);
                if hn {
                    self.name_equal(out, "model.emf.uri");
                }
                out.extend_from_slice(u.as_bytes());
                dom_print = true;
            }
        }
        if dom_print && !hn {
            out.push(b' ');
        }
        self.sep(out);
        self.start_line = true;
        if hn {
            self.name_equal(out, "name");
        }
        if self.opts.color {
            out.extend_from_slice(color::EVENT_NAME.as_bytes());
        }
        out.extend_from_slice(ec.name.as_bytes());
        if self.opts.color {
            out.extend_from_slice(color::RESET.as_bytes());
        }
        if !hn {
            out.extend_from_slice(b": ");
        } else {
            out.extend_from_slice(b", ");
        }
    }

    /// [`Pretty::event_body`] walking the plans field by field.
    fn event_body_walk(
        &mut self,
        out: &mut Vec<u8>,
        label: &TraceLabel,
        c: &StreamCursor,
        stamped: bool,
    ) {
        let trace = &c.trace;
        let meta = &trace.class.meta;
        let sp = &trace.class.streams[c.stream];
        let ev = &c.event;
        let ep = sp.event(ev.event);
        let ec = &meta.streams[sp.class].events[ep.class];
        self.prefix(out, label, trace, ec, stamped);

        let data = c.data();
        let ctx_names = self.opts.names.context;
        // The packet context reads the same for every event of a packet:
        // formatted once per packet. (It is the first scope of the line,
        // so its text does not depend on what precedes it.)
        if self.pctx_key.as_ref().is_some_and(|k| k.matches(c)) && self.start_line {
            out.extend_from_slice(&self.pctx_text);
            if !self.pctx_text.is_empty() {
                self.start_line = false;
            }
        } else {
            let start = out.len();
            self.scope(
                out,
                "stream.packet.context",
                &sp.packet_context,
                &c.packet_context,
                data,
                ctx_names,
            );
            self.pctx_text.clear();
            self.pctx_text.extend_from_slice(&out[start..]);
            self.pctx_key = Some(line::PacketKey::of(c));
        }
        self.scope(
            out,
            "stream.event.context",
            &sp.event_common_context,
            ev.common_context(),
            data,
            ctx_names,
        );
        self.scope(
            out,
            "event.context",
            &ep.context,
            ev.specific_context(),
            data,
            ctx_names,
        );
        self.scope(
            out,
            "event.fields",
            &ep.payload,
            ev.payload(),
            data,
            self.opts.names.payload,
        );
        out.push(b'\n');
    }

    fn scope(
        &mut self,
        out: &mut Vec<u8>,
        scope_name: &str,
        plan: &Plan,
        values: &[Value],
        data: &[u8],
        names: bool,
    ) {
        if !plan.visible() {
            return;
        }
        let Some(root) = plan.root else { return };
        self.sep(out);
        self.start_line = false;
        if self.opts.names.scope {
            self.name_equal(out, scope_name);
        }
        let mut vi = 0;
        FieldPrinter {
            plan,
            values,
            data,
            names,
            color: self.opts.color,
        }
        .field(out, root, &mut vi);
    }

    fn timestamp(&mut self, out: &mut Vec<u8>, cycles: u64, ns: i64) {
        let hn = self.opts.names.header;
        if hn {
            self.name_equal(out, "timestamp");
        } else {
            out.push(b'[');
        }
        if self.opts.color {
            out.extend_from_slice(color::TIMESTAMP.as_bytes());
        }
        if self.opts.clock.cycles {
            fmt::push_padded(out, cycles, 20);
        } else {
            fmt::wall_time_cached(out, ns, &self.opts.clock, &mut self.tcache);
        }
        if self.opts.color {
            out.extend_from_slice(color::RESET.as_bytes());
        }
        if !hn {
            out.extend_from_slice(b"] ");
        }
        self.start_line = !hn;
        if !self.opts.clock.delta {
            return;
        }
        if hn {
            out.extend_from_slice(b", ");
            self.name_equal(out, "delta");
        } else {
            out.push(b'(');
        }
        if self.opts.clock.cycles {
            match self.last_cycles {
                Some(last) => {
                    out.push(b'+');
                    fmt::push_padded(out, cycles.wrapping_sub(last), 12);
                }
                None => out.extend_from_slice(b"+????????????"),
            }
            self.last_cycles = Some(cycles);
        } else {
            match self.last_ns {
                Some(last) => {
                    let d = ns.wrapping_sub(last);
                    let (s, n) = (d / 1_000_000_000, d % 1_000_000_000);
                    out.push(b'+');
                    fmt::push_u64(out, s as u64);
                    out.push(b'.');
                    fmt::push_padded(out, n as u64, 9);
                }
                None => out.extend_from_slice(b"+?.?????????"),
            }
            self.last_ns = Some(ns);
        }
        if !hn {
            out.extend_from_slice(b") ");
        }
    }

    /// The warning babeltrace2 prints (on stderr) for a discarded-events or
    /// discarded-packets notice; `color` is the terminal's colour support
    /// (independent of `--color`, as in babeltrace2).
    pub fn discarded(
        &self,
        out: &mut Vec<u8>,
        label: &TraceLabel,
        c: &StreamCursor,
        item: Item,
        color: bool,
    ) {
        let (what, count, begin, end) = match item {
            Item::DiscardedEvents { count, begin, end } => ("event", count, begin, end),
            Item::DiscardedPackets { count, begin, end } => ("packet", Some(count), begin, end),
            Item::Event => return,
        };
        let trace = &c.trace;
        let meta = &trace.class.meta;
        let sp = &trace.class.streams[c.stream];
        let clock = sp.clock.map(|i| &meta.clocks[i]);
        let sc = &meta.streams[sp.class];
        let c_off = if color { color::RESET } else { "" };
        let mut m = String::new();
        if color {
            m.push_str(color::WARNING_LINE);
            m.push_str(color::BOLD);
            m.push_str("WARNING");
            m.push_str(color::RESET);
            m.push_str(color::WARNING_LINE);
        } else {
            m.push_str("WARNING");
        }
        match count {
            Some(n) => m.push_str(&format!(
                ": Tracer discarded {n} {what}{} ",
                if n == 1 { "" } else { "s" }
            )),
            None => m.push_str(&format!(": Tracer may have discarded {what}s ")),
        }
        let times = match (clock, begin, end) {
            (Some(clk), Some(b), Some(e)) => clk.ns_from_origin(b).zip(clk.ns_from_origin(e)),
            _ => None,
        };
        match times {
            Some((bn, en)) => {
                let o = ClockOptions {
                    cycles: false,
                    ..self.opts.clock
                };
                let mut tb = Vec::new();
                let mut te = Vec::new();
                fmt::wall_time(&mut tb, bn, &o);
                fmt::wall_time(&mut te, en, &o);
                m.push_str(&format!(
                    "between [{}] and [{}]",
                    String::from_utf8_lossy(&tb),
                    String::from_utf8_lossy(&te)
                ));
            }
            None => m.push_str("(unknown time range)"),
        }
        m.push_str(&format!(" in trace \"{}\" ", label.name));
        match (meta.major, &meta.uid, meta.uuid) {
            (2.., Some(uid), _) => m.push_str(&format!("(UID: {uid})")),
            (2.., None, _) => m.push_str("(no UID)"),
            (_, _, Some(u)) => m.push_str(&format!("(UUID: {})", fmt::uuid(&u))),
            (_, _, None) => m.push_str("(no UUID)"),
        }
        let first_file = trace.sources[c.source]
            .files
            .first()
            .map(|f| {
                std::path::absolute(&f.path)
                    .unwrap_or_else(|_| f.path.clone())
                    .display()
                    .to_string()
            })
            .unwrap_or_default();
        let stream_id = c
            .packet
            .stream_instance_id
            .unwrap_or(trace.stream_ordinal(c.source) as u64);
        m.push_str(&format!(
            " within stream \"{first_file}\" (stream class ID: {}, stream ID: {stream_id}).{c_off}\n",
            sc.id
        ));
        out.extend_from_slice(m.as_bytes());
    }
}

/// Walks a plan and its flattened values together.
struct FieldPrinter<'a> {
    plan: &'a Plan,
    values: &'a [Value],
    data: &'a [u8],
    names: bool,
    color: bool,
}

impl FieldPrinter<'_> {
    fn take(&self, vi: &mut usize) -> Value {
        let v = self.values.get(*vi).copied().unwrap_or(Value::U(0));
        *vi += 1;
        v
    }

    /// Skips the values of node `n` without printing.
    fn skip(&self, n: u32, vi: &mut usize) {
        let plan = self.plan;
        match plan.nodes[n as usize] {
            Node::Int { .. }
            | Node::BigInt { .. }
            | Node::Float { .. }
            | Node::String
            | Node::VarInt { .. }
            | Node::Bytes { .. } => *vi += 1,
            Node::Optional { child, .. } => {
                if let Value::Opt(1) = self.take(vi) {
                    self.skip(child, vi);
                }
            }
            Node::Struct { first, count, .. } => {
                for i in first..first + count {
                    self.skip(plan.children[i as usize], vi);
                }
            }
            Node::Variant { first, .. } => {
                if let Value::Opt(o) = self.take(vi) {
                    self.skip(plan.children[(first + o) as usize], vi);
                }
            }
            Node::Array {
                length, elem, text, ..
            } => {
                if text {
                    *vi += (length > 0) as usize;
                } else {
                    for _ in 0..length {
                        self.skip(elem, vi);
                    }
                }
            }
            Node::Sequence { elem, text, .. } => {
                if let Value::Len(len) = self.take(vi) {
                    if text {
                        *vi += (len > 0) as usize;
                    } else {
                        for _ in 0..len {
                            self.skip(elem, vi);
                        }
                    }
                }
            }
        }
    }

    fn field(&self, out: &mut Vec<u8>, n: u32, vi: &mut usize) {
        let plan = self.plan;
        match plan.nodes[n as usize] {
            Node::Int {
                size,
                signed,
                base,
                enum_idx,
                ..
            } => {
                let v = self.take(vi);
                self.int_field(out, v, size, signed, base, enum_idx);
            }
            Node::VarInt {
                signed,
                base,
                enum_idx,
                ..
            } => {
                // babeltrace2 gives a variable-length integer a 64-bit range.
                let v = self.take(vi);
                self.int_field(out, v, 64, signed, base, enum_idx);
            }
            Node::Bytes { text, .. } => {
                if let Value::Bytes { off, len } = self.take(vi) {
                    let bytes = &self.data[off..off + len];
                    match text {
                        None => {
                            // A BLOB: its bytes in hexadecimal, as babeltrace2.
                            out.extend_from_slice(b"{ ");
                            for b in bytes {
                                out.extend_from_slice(format!("{b:02x} ").as_bytes());
                            }
                            out.push(b'}');
                        }
                        Some(enc) => self.string(out, decode_text(bytes, enc).as_bytes()),
                    }
                }
            }
            Node::Optional { child, .. } => {
                if let Value::Opt(1) = self.take(vi) {
                    out.extend_from_slice(b"{ ");
                    self.field(out, child, vi);
                    out.extend_from_slice(b" }");
                } else {
                    out.extend_from_slice(b"<none>");
                }
            }
            Node::BigInt { size, le, .. } => {
                let v = self.take(vi);
                if let Value::Big { bit_off } = v {
                    fmt::big_int_hex(out, self.data, bit_off, size, le);
                }
            }
            Node::Float { .. } => {
                if let Value::F(f) = self.take(vi) {
                    self.colored(out, color::BOLD, |out| {
                        out.extend_from_slice(format_g(f).as_bytes())
                    });
                }
            }
            Node::String => {
                if let Value::Bytes { off, len } = self.take(vi) {
                    self.string(out, &self.data[off..off + len]);
                }
            }
            Node::Struct { first, count, .. } => {
                out.push(b'{');
                let mut printed = 0;
                for i in first..first + count {
                    let child = plan.children[i as usize];
                    if !plan.nodes[child as usize].visible() {
                        self.skip(child, vi);
                        continue;
                    }
                    if printed > 0 {
                        out.push(b',');
                    }
                    out.push(b' ');
                    if self.names {
                        let name = &plan.names[i as usize];
                        let name = name.strip_prefix('_').unwrap_or(name);
                        self.field_name(out, name);
                    }
                    // Plain integers inline: no call, no dispatch on the node.
                    match plan.nodes[child as usize] {
                        Node::Int {
                            size,
                            signed,
                            base,
                            enum_idx: NONE,
                            ..
                        } => {
                            let v = self.take(vi);
                            self.int(out, v, size, signed, base);
                        }
                        _ => self.field(out, child, vi),
                    }
                    printed += 1;
                }
                out.extend_from_slice(b" }");
            }
            Node::Variant { first, .. } => {
                if let Value::Opt(o) = self.take(vi) {
                    out.extend_from_slice(b"{ ");
                    self.field(out, plan.children[(first + o) as usize], vi);
                    out.extend_from_slice(b" }");
                }
            }
            Node::Array {
                length, elem, text, ..
            } => {
                if text {
                    self.text(out, length, vi);
                } else {
                    self.elements(out, elem, length, vi);
                }
            }
            Node::Sequence { elem, text, .. } => {
                if let Value::Len(len) = self.take(vi) {
                    if text {
                        self.text(out, len, vi);
                    } else {
                        self.elements(out, elem, len, vi);
                    }
                }
            }
        }
    }

    /// An integer (of a [`Node::Int`] or [`Node::VarInt`]) with its
    /// enumeration labels or bit map flags, if any.
    fn int_field(
        &self,
        out: &mut Vec<u8>,
        v: Value,
        size: u32,
        signed: bool,
        base: u32,
        enum_idx: u32,
    ) {
        let plan = self.plan;
        if enum_idx != NONE && base == reef_ctf::plan::BASE_BITMAP {
            // babeltrace2: the value, then the flags with a set bit in
            // their ranges, sorted.
            self.int(out, v, size, signed, base);
            let bits = match v {
                Value::U(u) => u,
                Value::I(i) => i as u64,
                _ => 0,
            };
            let e = &plan.enums[enum_idx as usize];
            let mut on: Vec<&str> = e
                .mappings
                .iter()
                .filter(|m| {
                    m.ranges
                        .iter()
                        .any(|&(lo, hi)| (lo.max(0)..=hi.min(63)).any(|b| bits >> b & 1 == 1))
                })
                .map(|m| m.label.as_str())
                .collect();
            if !on.is_empty() {
                on.sort_unstable();
                out.extend_from_slice(b" { ");
                for (i, l) in on.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    self.string(out, l.as_bytes());
                }
                out.extend_from_slice(b" }");
            }
            return;
        }
        if enum_idx != NONE {
            let e = &plan.enums[enum_idx as usize];
            let key = match v {
                Value::I(i) => i as i128,
                Value::U(u) => u as i128,
                _ => 0,
            };
            out.extend_from_slice(b"( ");
            let mut count = 0;
            for l in e.labels_for(key) {
                if count > 0 {
                    out.extend_from_slice(b", ");
                }
                self.string(out, l.as_bytes());
                count += 1;
            }
            if count == 0 {
                if self.color {
                    out.extend_from_slice(color::UNKNOWN.as_bytes());
                }
                out.extend_from_slice(b"<unknown>");
                if self.color {
                    out.extend_from_slice(color::RESET.as_bytes());
                }
            }
            out.extend_from_slice(b" : container = ");
            self.int(out, v, size, signed, base);
            out.extend_from_slice(b" )");
        } else {
            self.int(out, v, size, signed, base);
        }
    }

    fn text(&self, out: &mut Vec<u8>, len: u64, vi: &mut usize) {
        if len == 0 {
            self.string(out, b"");
            return;
        }
        if let Value::Bytes { off, len } = self.take(vi) {
            let bytes = &self.data[off..off + len];
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            self.string(out, &bytes[..end]);
        }
    }

    fn elements(&self, out: &mut Vec<u8>, elem: u32, len: u64, vi: &mut usize) {
        out.push(b'[');
        for i in 0..len {
            if i > 0 {
                out.push(b',');
            }
            out.push(b' ');
            if self.names {
                out.push(b'[');
                fmt::push_u64(out, i);
                out.extend_from_slice(b"] = ");
            }
            self.field(out, elem, vi);
        }
        out.extend_from_slice(b" ]");
    }

    fn field_name(&self, out: &mut Vec<u8>, name: &str) {
        if self.color {
            out.extend_from_slice(color::FIELD_NAME.as_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(color::RESET.as_bytes());
        } else {
            out.extend_from_slice(name.as_bytes());
        }
        out.extend_from_slice(b" = ");
    }

    fn colored(&self, out: &mut Vec<u8>, code: &str, f: impl FnOnce(&mut Vec<u8>)) {
        if self.color {
            out.extend_from_slice(code.as_bytes());
            f(out);
            out.extend_from_slice(color::RESET.as_bytes());
        } else {
            f(out);
        }
    }

    fn string(&self, out: &mut Vec<u8>, s: &[u8]) {
        self.colored(out, color::BOLD, |out| push_escaped(out, s));
    }

    fn int(&self, out: &mut Vec<u8>, v: Value, size: u32, signed: bool, base: u32) {
        self.colored(out, color::BOLD, |out| {
            fmt::integer(out, v, size, signed, base)
        });
    }
}

/// A CTF 2 UTF-16/32 string's bytes as UTF-8, up to its first NUL code
/// point (babeltrace2 shows the string converted to UTF-8); invalid code
/// units become U+FFFD.
fn decode_text(bytes: &[u8], enc: reef_ctf::TextEncoding) -> String {
    use reef_ctf::TextEncoding as E;
    let s: String = match enc {
        E::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
        E::Utf16Be | E::Utf16Le => {
            let units = bytes.chunks_exact(2).map(|c| {
                if enc == E::Utf16Be {
                    u16::from_be_bytes([c[0], c[1]])
                } else {
                    u16::from_le_bytes([c[0], c[1]])
                }
            });
            char::decode_utf16(units)
                .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect()
        }
        E::Utf32Be | E::Utf32Le => bytes
            .chunks_exact(4)
            .map(|c| {
                let u = if enc == E::Utf32Be {
                    u32::from_be_bytes([c[0], c[1], c[2], c[3]])
                } else {
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]])
                };
                char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER)
            })
            .collect(),
    };
    match s.find('\0') {
        Some(p) => s[..p].to_string(),
        None => s,
    }
}
