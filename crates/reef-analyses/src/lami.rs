//! LAMI 1.0 ("Linux Analysis Machine Interface"), the JSON that Trace
//! Compass reads from external analyses: a metadata document describing the
//! analysis and its table classes, and a results document holding result
//! tables whose cells are typed objects (`{"class": "duration", "value":
//! 1200}`). Durations are in nanoseconds, timestamps in nanoseconds from
//! the Epoch, ratios in [0, 1].
//!
//! This module also renders result tables as text for people.

use std::sync::Arc;

use serde_json::{json, Map, Value};

/// One column of a table class.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub title: &'static str,
    /// The LAMI class of the column's cells (`number`, `duration`, ...).
    pub class: &'static str,
    pub unit: Option<&'static str>,
}

pub const fn col(title: &'static str, class: &'static str) -> Column {
    Column {
        title,
        class,
        unit: None,
    }
}

pub const fn col_unit(title: &'static str, class: &'static str, unit: &'static str) -> Column {
    Column {
        title,
        class,
        unit: Some(unit),
    }
}

/// A table class: a name that result tables refer to, a title, columns.
#[derive(Debug, Clone, Copy)]
pub struct TableClass {
    pub name: &'static str,
    pub title: &'static str,
    pub columns: &'static [Column],
}

/// What an analysis says about itself in `--metadata`.
#[derive(Debug, Clone, Copy)]
pub struct Metadata {
    pub title: &'static str,
    pub description: &'static str,
    pub tags: &'static [&'static str],
    pub tables: &'static [TableClass],
}

impl Metadata {
    /// The LAMI metadata document.
    pub fn to_json(&self) -> Value {
        let mut classes = Map::new();
        for t in self.tables {
            let cols: Vec<Value> = t
                .columns
                .iter()
                .map(|c| {
                    let mut o = json!({"title": c.title, "class": c.class});
                    if let Some(u) = c.unit {
                        o["unit"] = json!(u);
                    }
                    o
                })
                .collect();
            classes.insert(
                t.name.to_string(),
                json!({"title": t.title, "column-descriptions": cols}),
            );
        }
        let mut tags = vec!["linux-kernel", "reef"];
        tags.extend_from_slice(self.tags);
        let v = |s: &str| s.parse::<u64>().unwrap_or(0);
        json!({
            "mi-version": {"major": 1, "minor": 0},
            "version": {
                "major": v(env!("CARGO_PKG_VERSION_MAJOR")),
                "minor": v(env!("CARGO_PKG_VERSION_MINOR")),
                "patch": v(env!("CARGO_PKG_VERSION_PATCH")),
                "extra": "",
            },
            "title": self.title,
            "description": self.description,
            "authors": ["the reef authors"],
            "url": "",
            "tags": tags,
            "table-classes": Value::Object(classes),
        })
    }

    pub fn table(&self, name: &str) -> Option<&'static TableClass> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// A result table: rows of LAMI cells over a time range.
#[derive(Debug, Clone)]
pub struct Table {
    pub class: &'static TableClass,
    /// Shown after the title in brackets; in LAMI the table then gets an
    /// inline class inheriting from `class` with that full title.
    pub subtitle: Option<String>,
    pub begin: i64,
    pub end: i64,
    pub rows: Vec<Vec<Cell>>,
    /// A table of frequency distributions side by side (lttng-analyses'
    /// `--freq-series`): its class is inline, `class`'s first two columns
    /// then one count column per distribution.
    pub series: Option<Series>,
}

/// The inline class of a [`Table`] of distributions side by side.
#[derive(Debug, Clone)]
pub struct Series {
    pub title: &'static str,
    /// Each distribution's column title.
    pub names: Vec<String>,
    pub unit: &'static str,
}

impl Table {
    pub fn new(class: &'static TableClass, begin: i64, end: i64) -> Table {
        Table {
            class,
            subtitle: None,
            begin,
            end,
            rows: Vec::new(),
            series: None,
        }
    }

    /// Frequency distributions of one range (tables of `class`, with the
    /// same bounds) as one table: bounds, then each one's count.
    pub fn series(
        class: &'static TableClass,
        title: &'static str,
        unit: &'static str,
        tables: &[Table],
    ) -> Option<Table> {
        let first = tables.first()?;
        let mut t = Table::new(class, first.begin, first.end);
        t.rows = first
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut row = r[..2].to_vec();
                row.extend(
                    tables
                        .iter()
                        .map(|t| t.rows.get(i).map_or(Cell::Null, |r| r[2].clone())),
                );
                row
            })
            .collect();
        t.series = Some(Series {
            title,
            names: tables
                .iter()
                .map(|t| t.subtitle.clone().unwrap_or_default())
                .collect(),
            unit,
        });
        Some(t)
    }

    /// The columns: the class's, or a series' own.
    pub fn columns(&self) -> Vec<Column> {
        match &self.series {
            None => self.class.columns.to_vec(),
            Some(s) => {
                let mut c = self.class.columns[..2].to_vec();
                c.extend(s.names.iter().map(|_| Column {
                    title: "",
                    class: "number",
                    unit: Some(s.unit),
                }));
                c
            }
        }
    }

    pub fn title(&self) -> String {
        match (&self.series, &self.subtitle) {
            (Some(s), _) => s.title.to_string(),
            (None, Some(s)) => format!("{} [{}]", self.class.title, s),
            (None, None) => self.class.title.to_string(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "class": self.class_json(),
            "time-range": time_range(self.begin, self.end),
            "data": self.rows,
        })
    }

    /// The table's `class` member in LAMI.
    fn class_json(&self) -> Value {
        match (&self.series, &self.subtitle) {
            (Some(s), _) => {
                let mut cols: Vec<Value> = self.class.columns[..2]
                    .iter()
                    .map(|c| json!({"title": c.title, "class": c.class}))
                    .collect();
                cols.extend(
                    s.names
                        .iter()
                        .map(|n| json!({"title": n, "class": "number", "unit": s.unit})),
                );
                json!({"title": s.title, "column-descriptions": cols})
            }
            (None, Some(_)) => json!({"inherit": self.class.name, "title": self.title()}),
            (None, None) => json!(self.class.name),
        }
    }
}

/// Makes a table's rows on demand: hands each to the callback, in order,
/// each time it is called.
pub type MakeRows<'a> = Box<dyn Fn(&mut dyn FnMut(&[Cell])) + 'a>;

/// A table as the writers read it: with its rows held ([`Table::rows`]),
/// or made on demand where they are written (a log's millions of rows,
/// made from the analysis' own records rather than held as cells: they
/// took five times the memory of those records).
pub struct Emitted<'a> {
    /// The table; with rows made on demand, its `rows` are unused.
    pub table: Table,
    made: Option<(usize, MakeRows<'a>)>,
    /// The made rows' text, written without making their cells.
    text: Option<Arc<dyn TextRows + 'a>>,
}

/// A log's rows as [`table_text`] writes them, from the analysis' own
/// records and without making their cells (no shared names counted up
/// and down), so that several threads can write them: each row's cells'
/// texts must be those of the cells [`Emitted::for_each_row`] gives
/// (tests/emit.rs compares the two on the shared traces).
pub trait TextRows: Sync {
    /// The widths of the text of each column's cells, over every row:
    /// found as the rows were prepared (on as many threads as they were).
    fn widths(&self) -> &[usize];

    /// Writes the text of each cell of row `k` to `row`, in the columns'
    /// order.
    fn row_text(&self, k: usize, row: &mut RowText);
}

/// Where [`TextRows::row_text`] writes a row: each cell's text goes
/// straight into the line, padded to its column's width (no copy of it
/// is made; a number's width is counted before it is written).
pub struct RowText<'l> {
    lines: &'l Lines,
    line: &'l mut String,
    /// The next cell's column.
    i: usize,
}

impl RowText<'_> {
    /// A cell of text `s`.
    #[inline]
    pub fn text(&mut self, s: &str) {
        self.put(None, |l| l.push_str(s));
    }

    /// A cell: the text [`push_cell_text`] writes.
    #[inline]
    pub fn cell(&mut self, c: &Cell) {
        self.put(cell_width(c), |l| push_cell_text(c, l));
    }

    /// The cell of [`time_range_cell`]`(b, e)`.
    #[inline]
    pub fn time_range(&mut self, b: i64, e: i64) {
        let w = seconds_width(b) + seconds_width(e) + 4;
        self.put(Some(w), |l| push_time_range(l, b, e));
    }

    /// The cell of [`duration`]`(ns)`.
    #[inline]
    pub fn duration(&mut self, ns: i64) {
        self.put(micros_width(ns), |l| push_micros(l, ns));
    }

    /// The cell of a number, a size or an ID ([`size`], [`fd`]) `v`;
    /// [`Cell::Null`]'s for `None`.
    #[inline]
    pub fn int_or_none(&mut self, v: Option<i64>) {
        match v {
            Some(v) => self.put(Some(int_width(v)), |l| push_int(l, v)),
            None => self.cell(&Cell::Null),
        }
    }

    /// A cell of `width` characters (`None`: counted once written) that
    /// `write` appends.
    #[inline(always)]
    fn put(&mut self, width: Option<usize>, write: impl FnOnce(&mut String)) {
        let (i, lines, line) = (self.i, self.lines, &mut *self.line);
        self.i += 1;
        let Some(&room) = lines.width.get(i) else {
            return;
        };
        if i > 0 {
            line.push_str("  ");
        }
        let left = lines.left[i];
        if let (false, Some(w)) = (left, width) {
            push_spaces(line, room.saturating_sub(w));
            write(line);
            return;
        }
        let at = line.len();
        write(line);
        let pad = room.saturating_sub(width.unwrap_or_else(|| chars(&line[at..])));
        if left {
            if i + 1 < lines.width.len() {
                push_spaces(line, pad);
            }
        } else if pad > 0 {
            line.insert_str(at, &" ".repeat(pad));
        }
    }
}

impl<'a> Emitted<'a> {
    /// `table` with its rows.
    pub fn held(table: Table) -> Emitted<'a> {
        Emitted {
            table,
            made: None,
            text: None,
        }
    }

    /// `table` with the `n` rows `make` makes.
    pub fn made(table: Table, n: usize, make: MakeRows<'a>) -> Emitted<'a> {
        Emitted {
            table,
            made: Some((n, make)),
            text: None,
        }
    }

    /// [`Emitted::made`], with the rows' text written by `text`.
    pub fn made_with_text(
        table: Table,
        n: usize,
        make: MakeRows<'a>,
        text: Arc<dyn TextRows + 'a>,
    ) -> Emitted<'a> {
        Emitted {
            text: Some(text),
            ..Emitted::made(table, n, make)
        }
    }

    /// Whether the rows are made on demand (not held in `table`).
    pub fn is_made(&self) -> bool {
        self.made.is_some()
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        match &self.made {
            Some((n, _)) => *n,
            None => self.table.rows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands each row to `f`, in order.
    pub fn for_each_row(&self, f: &mut dyn FnMut(&[Cell])) {
        match &self.made {
            Some((_, make)) => make(f),
            None => self.table.rows.iter().for_each(|r| f(r)),
        }
    }

    /// The table with its rows held.
    pub fn into_table(self) -> Table {
        let mut t = self.table;
        if let Some((n, make)) = self.made {
            t.rows = Vec::with_capacity(n);
            make(&mut |r| t.rows.push(r.to_vec()));
        }
        t
    }
}

/// The LAMI results document; tables without rows are left out.
pub fn results_json(tables: &[Table]) -> Value {
    let results: Vec<Value> = tables
        .iter()
        .filter(|t| !t.rows.is_empty())
        .map(Table::to_json)
        .collect();
    json!({ "results": results })
}

/// Writes the LAMI results document to `out` as `results_json` followed
/// by `serde_json::to_writer` would (the members in the same, sorted,
/// order), without building it: the rows are written where they are, not
/// copied into a document first (a log's rows are most of its run).
pub fn write_results(tables: &[Emitted], out: &mut impl std::io::Write) -> std::io::Result<()> {
    out.write_all(b"{\"results\":[")?;
    for (i, e) in tables.iter().filter(|e| !e.is_empty()).enumerate() {
        let t = &e.table;
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"{\"class\":")?;
        serde_json::to_writer(&mut *out, &t.class_json())?;
        // (the rows as serializing them held writes them)
        out.write_all(b",\"data\":[")?;
        let mut first = true;
        let mut failed = None;
        e.for_each_row(&mut |r| {
            if failed.is_some() {
                return;
            }
            let sep = if first { Ok(()) } else { out.write_all(b",") };
            first = false;
            failed = sep
                .and_then(|()| serde_json::to_writer(&mut *out, r).map_err(Into::into))
                .err();
        });
        if let Some(e) = failed {
            return Err(e);
        }
        out.write_all(b"],\"time-range\":")?;
        serde_json::to_writer(&mut *out, &time_range(t.begin, t.end))?;
        out.write_all(b"}")?;
    }
    out.write_all(b"]}")
}

/// A LAMI cell, held compactly in 32 bytes (a log keeps millions of
/// them: as JSON objects they took ~600 bytes each); [`Cell::to_value`]
/// gives its JSON object, which is also how it serializes.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// An empty cell (JSON `null`).
    Null,
    /// `{"class": CLASS, "value": N}`: number, duration, size, timestamp.
    Int(&'static str, i64),
    /// `{"class": CLASS, "value": X}`: duration, ratio.
    Float(&'static str, f64),
    /// `{"class": CLASS, KEY: TEXT}` with (CLASS, KEY): string (`value`),
    /// path (`path`), disk, netif, syscall (`name`).
    Text(&'static (&'static str, &'static str), Arc<str>),
    /// `{"class": CLASS, KEY: N}` with (CLASS, KEY): fd (`fd`), cpu (`id`).
    Id(&'static (&'static str, &'static str), i64),
    /// `{"class": "unknown"}`.
    Unknown,
    /// `{"class": "bool", "value": B}` (`null` when unknown).
    Bool(Option<bool>),
    /// `{"class": "time-range", "begin": TIMESTAMP, "end": TIMESTAMP}`.
    TimeRange(i64, i64),
    /// `{"class": "process"}` with `name`, `pid`, `tid` when known
    /// (shared: a log's rows name the same threads again and again).
    Process(Arc<ProcessCell>),
    /// `{"class": "irq", "hard": B, "nr": N}` with `name` when known.
    Irq(bool, i64, Option<Arc<str>>),
}

/// A [`Cell::Process`]'s members.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessCell {
    pub name: Option<Arc<str>>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
}

impl Cell {
    /// The cell as LAMI's JSON object (as it serializes).
    pub fn to_value(&self) -> Value {
        // (a map with string keys and numbers, strings and booleans: it
        // cannot fail)
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A cell's LAMI JSON object, its members in serde_json's order (sorted
/// by name), written without building it.
impl serde::Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let class = match self {
            Cell::Null => return s.serialize_unit(),
            Cell::Int(c, _) | Cell::Float(c, _) => *c,
            Cell::Text((c, _), _) | Cell::Id((c, _), _) => *c,
            Cell::Unknown => "unknown",
            Cell::Bool(_) => "bool",
            Cell::TimeRange(..) => "time-range",
            Cell::Process(..) => "process",
            Cell::Irq(..) => "irq",
        };
        let mut m = s.serialize_map(None)?;
        if let Cell::TimeRange(b, _) = self {
            m.serialize_entry("begin", &Cell::Int("timestamp", *b))?;
        }
        m.serialize_entry("class", class)?;
        match self {
            Cell::Null | Cell::Unknown => {}
            Cell::Int(_, v) => m.serialize_entry("value", v)?,
            Cell::Float(_, x) => m.serialize_entry("value", x)?,
            Cell::Text((_, key), t) => m.serialize_entry(key, &**t)?,
            Cell::Id((_, key), v) => m.serialize_entry(key, v)?,
            Cell::Bool(v) => m.serialize_entry("value", v)?,
            Cell::TimeRange(_, e) => m.serialize_entry("end", &Cell::Int("timestamp", *e))?,
            Cell::Process(p) => {
                let ProcessCell { name, pid, tid } = &**p;
                if let Some(n) = name {
                    m.serialize_entry("name", &**n)?;
                }
                if let Some(p) = pid {
                    m.serialize_entry("pid", p)?;
                }
                if let Some(t) = tid {
                    m.serialize_entry("tid", t)?;
                }
            }
            Cell::Irq(hard, nr, name) => {
                m.serialize_entry("hard", hard)?;
                if let Some(n) = name {
                    m.serialize_entry("name", &**n)?;
                }
                m.serialize_entry("nr", nr)?;
            }
        }
        m.end()
    }
}

// Cell constructors.

pub fn number(v: i64) -> Cell {
    Cell::Int("number", v)
}

pub fn duration(ns: i64) -> Cell {
    Cell::Int("duration", ns)
}

/// A duration that is not a whole number of nanoseconds (an average, a
/// standard deviation).
pub fn duration_f(ns: f64) -> Cell {
    Cell::Float("duration", ns)
}

/// `None` (e.g. a standard deviation of fewer than 2 values) is `unknown`.
pub fn duration_opt(ns: Option<f64>) -> Cell {
    ns.map_or_else(unknown, duration_f)
}

pub fn ratio(r: f64) -> Cell {
    Cell::Float("ratio", r)
}

pub fn string(s: &str) -> Cell {
    Cell::Text(&("string", "value"), s.into())
}

pub fn unknown() -> Cell {
    Cell::Unknown
}

pub fn timestamp(ns: i64) -> Cell {
    Cell::Int("timestamp", ns)
}

/// A time range, as a cell.
pub fn time_range_cell(begin: i64, end: i64) -> Cell {
    Cell::TimeRange(begin, end)
}

/// A time range, as a table's `time-range` member.
pub fn time_range(begin: i64, end: i64) -> Value {
    Cell::TimeRange(begin, end).to_value()
}

pub fn process(name: Option<&str>, pid: Option<i64>, tid: Option<i64>) -> Cell {
    let name = name.map(Into::into);
    Cell::Process(Arc::new(ProcessCell { name, pid, tid }))
}

pub fn size(bytes: i64) -> Cell {
    Cell::Int("size", bytes)
}

pub fn path(p: &str) -> Cell {
    Cell::Text(&("path", "path"), p.into())
}

/// [`path`] with a shared name.
pub fn path_shared(p: &Arc<str>) -> Cell {
    Cell::Text(&("path", "path"), Arc::clone(p))
}

pub fn fd(fd: i64) -> Cell {
    Cell::Id(&("fd", "fd"), fd)
}

pub fn disk(name: &str) -> Cell {
    Cell::Text(&("disk", "name"), name.into())
}

pub fn netif(name: &str) -> Cell {
    Cell::Text(&("netif", "name"), name.into())
}

pub fn cpu(id: i64) -> Cell {
    Cell::Id(&("cpu", "id"), id)
}

pub fn syscall(name: &str) -> Cell {
    Cell::Text(&("syscall", "name"), name.into())
}

/// [`syscall`] with a shared name.
pub fn syscall_shared(name: &Arc<str>) -> Cell {
    Cell::Text(&("syscall", "name"), Arc::clone(name))
}

pub fn irq(hard: bool, nr: i64, name: Option<&str>) -> Cell {
    Cell::Irq(hard, nr, name.map(Into::into))
}

/// [`irq`] with a shared name.
pub fn irq_shared(hard: bool, nr: i64, name: Option<&Arc<str>>) -> Cell {
    Cell::Irq(hard, nr, name.cloned())
}

/// A cell as text: durations in microseconds, ratios in percent, times in
/// seconds from the Epoch, an empty cell as `-`.
pub fn cell_text(c: &Cell) -> String {
    let mut s = String::new();
    push_cell_text(c, &mut s);
    s
}

/// [`cell_text`], appended to `out`. The cells of a log (times,
/// durations, numbers, processes) are written digit by digit, without
/// the formatting machinery: a log has millions.
pub fn push_cell_text(c: &Cell, out: &mut String) {
    use std::fmt::Write;
    // (as JSON holds them: a number that is not finite is null, read as NaN)
    let finite = |x: f64| if x.is_finite() { x } else { f64::NAN };
    // (writing to a String cannot fail)
    match c {
        Cell::Null => out.push('-'),
        Cell::Int("duration", v) => push_micros(out, *v),
        Cell::Int("timestamp", v) => push_seconds(out, *v),
        Cell::Int("number" | "size", v) => push_int(out, *v),
        Cell::Float("duration", x) => {
            let _ = write!(out, "{:.3}", finite(*x) / 1000.0);
        }
        Cell::Float("ratio", x) => {
            let _ = write!(out, "{:.2}", finite(*x) * 100.0);
        }
        Cell::Float("number" | "size", x) => match serde_json::Number::from_f64(*x) {
            Some(n) => {
                let _ = write!(out, "{n}");
            }
            None => out.push('?'),
        },
        Cell::Text(_, t) => out.push_str(t),
        Cell::Id(("cpu" | "fd", _), v) => push_int(out, *v),
        Cell::Unknown => out.push('?'),
        Cell::Bool(Some(true)) => out.push_str("yes"),
        Cell::Bool(Some(false)) => out.push_str("no"),
        Cell::Bool(None) => out.push('-'),
        Cell::TimeRange(b, e) => push_time_range(out, *b, *e),
        Cell::Process(p) => {
            let ProcessCell { name, pid, tid } = &**p;
            out.push_str(name.as_deref().unwrap_or(""));
            match (pid, tid) {
                (Some(p), Some(t)) => {
                    out.push_str(" (");
                    push_int(out, *p);
                    out.push('/');
                    push_int(out, *t);
                    out.push(')');
                }
                (Some(n), None) | (None, Some(n)) => {
                    out.push_str(" (");
                    push_int(out, *n);
                    out.push(')');
                }
                (None, None) => {}
            }
        }
        Cell::Irq(_, nr, name) => {
            push_int(out, *nr);
            if let Some(n) = name {
                out.push_str(" <");
                out.push_str(n);
                out.push('>');
            }
        }
        // (classes no constructor makes: their JSON)
        _ => {
            let _ = write!(out, "{}", c.to_value());
        }
    }
}

/// The width in characters of [`push_cell_text`]'s text of `c`, counted
/// without writing it, for the cells a log holds by the million (times
/// and time ranges, durations, numbers, booleans, processes, IRQs,
/// names); `None` for the others.
fn cell_width(c: &Cell) -> Option<usize> {
    Some(match c {
        Cell::Null => 1,
        Cell::Int("duration", v) => micros_width(*v)?,
        Cell::Int("timestamp", v) => seconds_width(*v),
        Cell::TimeRange(b, e) => seconds_width(*b) + seconds_width(*e) + 4,
        Cell::Bool(b) => match b {
            Some(true) => 3,
            Some(false) => 2,
            None => 1,
        },
        Cell::Int("number" | "size", v) | Cell::Id(("cpu" | "fd", _), v) => int_width(*v),
        Cell::Text(_, t) => chars(t),
        Cell::Process(p) => {
            let name = p.name.as_deref().map_or(0, chars);
            name + match (p.pid, p.tid) {
                (Some(p), Some(t)) => 4 + int_width(p) + int_width(t),
                (Some(n), None) | (None, Some(n)) => 3 + int_width(n),
                (None, None) => 0,
            }
        }
        Cell::Irq(_, nr, name) => int_width(*nr) + name.as_deref().map_or(0, |n| 3 + chars(n)),
        _ => return None,
    })
}

fn digits(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The width of `v` as [`push_int`] writes it.
#[inline]
pub(crate) fn int_width(v: i64) -> usize {
    usize::from(v < 0) + digits(v.unsigned_abs())
}

/// The width of `ns` as [`push_seconds`] writes it.
#[inline]
pub(crate) fn seconds_width(ns: i64) -> usize {
    usize::from(ns < 0) + digits((ns / 1_000_000_000).unsigned_abs()) + 10
}

/// The width of `ns` as [`push_micros`] writes it (`None` from 2^50 ns:
/// written as a double).
#[inline]
pub(crate) fn micros_width(ns: i64) -> Option<usize> {
    let a = ns.unsigned_abs();
    (a < 1 << 50).then(|| usize::from(ns < 0) + digits(a / 1000) + 4)
}

/// Appends a time range as `[begin, end]`, in seconds.
fn push_time_range(out: &mut String, b: i64, e: i64) {
    out.push('[');
    push_seconds(out, b);
    out.push_str(", ");
    push_seconds(out, e);
    out.push(']');
}

/// Appends the decimal digits of `v`, at least `width` of them (zeros
/// ahead).
fn push_digits(out: &mut String, v: u64, width: usize) {
    const ZEROS: &str = "00000000000000000000000000000000";
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(v);
    push_run(out, ZEROS, width.saturating_sub(digits.len()));
    out.push_str(digits);
}

/// Appends `v` as `{v}` writes it.
fn push_int(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_digits(out, v.unsigned_abs(), 1);
}

/// Appends ns from the Epoch as seconds: `1412670961.212721139`.
fn push_seconds(out: &mut String, ns: i64) {
    if ns < 0 {
        out.push('-');
    }
    push_digits(out, (ns / 1_000_000_000).unsigned_abs(), 1);
    out.push('.');
    push_digits(out, (ns % 1_000_000_000).unsigned_abs(), 9);
}

/// Appends a duration of `ns` in microseconds with three decimals, as
/// `{:.3}` writes `ns as f64 / 1000.0`. Below 2^50 ns that is the exact
/// quotient (the double is within 2^-3 ns of it, closer than the half
/// nanosecond that would round otherwise); beyond, the double is written.
fn push_micros(out: &mut String, ns: i64) {
    let a = ns.unsigned_abs();
    if a >= 1 << 50 {
        use std::fmt::Write;
        let _ = write!(out, "{:.3}", ns as f64 / 1000.0);
        return;
    }
    if ns < 0 {
        out.push('-');
    }
    push_digits(out, a / 1000, 1);
    out.push('.');
    push_digits(out, a % 1000, 3);
}

/// A column's header in text: its title, shortened, with the unit shown.
fn header(col: &Column) -> String {
    // (written for every table: a per-thread statistics has hundreds;
    // most titles need no replacement)
    let mut t = std::borrow::Cow::Borrowed(col.title);
    for (long, short) in [
        ("Minimum ", "Min "),
        ("Maximum ", "Max "),
        ("Average ", "Avg "),
        ("standard deviation", "stdev"),
        ("Interrupt ", ""),
        ("System call latency ", ""),
        ("Scheduling latency ", ""),
        ("Call duration ", ""),
    ] {
        if t.contains(long) {
            t = t.replace(long, short).into();
        }
    }
    let mut t = match t.get(..1) {
        Some(c) if c.as_bytes()[0].is_ascii_lowercase() => c.to_uppercase() + &t[1..],
        _ => t.into_owned(),
    };
    match col.class {
        "duration" => t.push_str(" (µs)"),
        "ratio" => t.push_str(" (%)"),
        _ => {}
    }
    t
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, n: usize) {
    const SPACES: &str = "                                                                ";
    push_run(out, SPACES, n);
}

/// Appends `n` times the character `run` is made of (ASCII).
fn push_run(out: &mut String, run: &str, mut n: usize) {
    while n > 0 {
        let k = n.min(run.len());
        out.push_str(&run[..k]);
        n -= k;
    }
}

/// The width of `c`'s text: [`cell_width`], or that of the text written
/// into `scratch`.
pub(crate) fn text_width(c: &Cell, scratch: &mut String) -> usize {
    cell_width(c).unwrap_or_else(|| {
        scratch.clear();
        push_cell_text(c, scratch);
        chars(scratch)
    })
}

/// The width of `s` in characters (its bytes when ASCII, as most cells).
pub(crate) fn chars(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// Writes a table as aligned text to `out`: its title, then a header line
/// and one line per row; text columns are left-aligned, numbers
/// right-aligned. The lines go out as they are made, and nothing but the
/// columns' widths is held: a first pass finds them (counting the widths
/// of most cells without writing them, `cell_width`; a [`TextRows`]
/// knows them), a second writes
/// the cells into their lines (a log has millions of rows: their text
/// took 110-130 MB on 10 M events). More than [`SHARED_ROWS`] rows with
/// a [`TextRows`] are written by as many threads as the machine has (up
/// to [`TEXT_THREADS`]), in chunks, and go out in order.
pub fn table_text(e: &Emitted, out: &mut impl std::io::Write) -> std::io::Result<()> {
    table_text_on(e, out, None)
}

/// [`table_text`] on at most `workers` threads (`None`: as many as the
/// machine has).
pub fn table_text_on(
    e: &Emitted,
    out: &mut impl std::io::Write,
    workers: Option<usize>,
) -> std::io::Result<()> {
    let threads = match e.text {
        Some(_) => shared_threads(e.len(), workers),
        None => 1,
    };
    table_text_in(e, out, threads, CHUNK_ROWS)
}

/// On how many threads [`table_text_on`] writes the text of `rows` rows
/// of a [`TextRows`] with `workers` (an analysis may prepare such rows on
/// as many).
pub fn shared_threads(rows: usize, workers: Option<usize>) -> usize {
    if rows <= SHARED_ROWS {
        return 1;
    }
    workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, TEXT_THREADS)
}

/// Beyond how many rows [`table_text`] shares a [`TextRows`]' text among
/// threads.
pub const SHARED_ROWS: usize = 1 << 16;

/// How many threads at most write a [`TextRows`]' text.
pub const TEXT_THREADS: usize = 4;

/// How many rows a thread writes at a time.
const CHUNK_ROWS: usize = 2048;

/// [`table_text`] with `threads` threads writing the text of a
/// [`TextRows`], `chunk` rows at a time (one thread: in this one; the
/// rows of tables without one are always written in this thread).
pub fn table_text_in(
    e: &Emitted,
    out: &mut impl std::io::Write,
    threads: usize,
    chunk: usize,
) -> std::io::Result<()> {
    let t = &e.table;
    writeln!(out, "{}", t.title())?;
    let cols = t.columns();
    let mut heads: Vec<String> = cols.iter().map(header).collect();
    if let Some(s) = &t.series {
        heads[2..].clone_from_slice(&s.names);
    }
    let n = e.len();
    // (only made rows have a text of their own: `made_with_text`)
    let text = e.text.as_deref();
    let threads = if text.is_some() { threads.max(1) } else { 1 };
    let chunk = chunk.max(1);
    let mut width: Vec<usize> = heads.iter().map(|h| chars(h)).collect();
    match text {
        Some(text) => {
            for (w, &k) in width.iter_mut().zip(text.widths()) {
                *w = (*w).max(k);
            }
        }
        None => {
            let mut cell = String::new();
            e.for_each_row(&mut |r| {
                for (w, c) in width.iter_mut().zip(r) {
                    *w = (*w).max(text_width(c, &mut cell));
                }
            });
        }
    }
    let lines = Lines {
        left: cols
            .iter()
            .map(|c| {
                matches!(
                    c.class,
                    "process" | "string" | "syscall" | "irq" | "path" | "disk" | "netif"
                )
            })
            .collect(),
        width,
    };
    let (mut buf, mut cell) = (String::new(), String::new());
    lines.line(&mut buf, &mut cell, |i, c| c.push_str(&heads[i]));
    out.write_all(buf.as_bytes())?;
    buf.clear();
    match text {
        Some(text) if threads > 1 => lines.shared(text, n, threads, chunk, out)?,
        Some(text) => {
            for k in 0..n {
                lines.text_row(text, k, &mut buf);
                if buf.len() >= 1 << 16 {
                    out.write_all(buf.as_bytes())?;
                    buf.clear();
                }
            }
        }
        None => {
            let mut failed = None;
            e.for_each_row(&mut |r| {
                if failed.is_some() {
                    return;
                }
                lines.line(&mut buf, &mut cell, |i, text| {
                    if let Some(c) = r.get(i) {
                        push_cell_text(c, text);
                    }
                });
                if buf.len() >= 1 << 16 {
                    failed = out.write_all(buf.as_bytes()).err();
                    buf.clear();
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
    }
    out.write_all(buf.as_bytes())?;
    out.write_all(b"\n")
}

/// A scoped thread's result (its panic goes on in this thread).
pub(crate) fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The columns' widths and alignment: how [`table_text`] lays out a line.
struct Lines {
    width: Vec<usize>,
    left: Vec<bool>,
}

impl Lines {
    /// Appends cell `i`'s text `c`, padded to its column's width, to the
    /// line being written.
    fn put(&self, line: &mut String, i: usize, c: &str) {
        let pad = self.width[i].saturating_sub(chars(c));
        if i > 0 {
            line.push_str("  ");
        }
        if self.left[i] {
            line.push_str(c);
            if i + 1 < self.width.len() {
                push_spaces(line, pad);
            }
        } else {
            push_spaces(line, pad);
            line.push_str(c);
        }
    }

    /// Ends the line begun at `start` of `out`: without its trailing
    /// blanks, then a newline.
    fn end(out: &mut String, start: usize) {
        // (the indent stays, even on an empty line)
        let kept = out[start..].trim_end().len().max(2);
        out.truncate(start + kept);
        out.push('\n');
    }

    /// Appends a line to `out`: the text of each column `i`, as
    /// `text_of(i, cell)` writes it into `cell`.
    fn line(
        &self,
        out: &mut String,
        cell: &mut String,
        mut text_of: impl FnMut(usize, &mut String),
    ) {
        let start = out.len();
        out.push_str("  ");
        for i in 0..self.width.len() {
            cell.clear();
            text_of(i, cell);
            self.put(out, i, cell);
        }
        Lines::end(out, start);
    }

    /// Appends row `k` of `text` to `out`.
    fn text_row(&self, text: &dyn TextRows, k: usize, out: &mut String) {
        let start = out.len();
        out.push_str("  ");
        text.row_text(
            k,
            &mut RowText {
                lines: self,
                line: out,
                i: 0,
            },
        );
        Lines::end(out, start);
    }

    /// Writes the `n` rows of `text` to `out`, `chunk` at a time: chunk
    /// `c` by thread `c % threads`, this one writing its chunks and the
    /// others' in order. Each other thread hands its chunks' text over
    /// (two at most waiting), and gets the spent buffers back.
    fn shared(
        &self,
        text: &dyn TextRows,
        n: usize,
        threads: usize,
        chunk: usize,
        out: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        use std::sync::mpsc::{channel, sync_channel};
        let chunks = n.div_ceil(chunk);
        let write = |c: usize, buf: &mut String| {
            for k in c * chunk..((c + 1) * chunk).min(n) {
                self.text_row(text, k, buf);
            }
        };
        std::thread::scope(|s| {
            let mut helpers = Vec::new();
            for t in 1..threads {
                let (give, made) = sync_channel::<String>(2);
                let (back, spent) = channel::<String>();
                s.spawn(move || {
                    for c in (t..chunks).step_by(threads) {
                        let mut buf = spent.try_recv().unwrap_or_default();
                        buf.clear();
                        write(c, &mut buf);
                        if give.send(buf).is_err() {
                            // (the writer stopped: an error, handed on there)
                            return;
                        }
                    }
                });
                helpers.push((made, back));
            }
            let mut own = String::new();
            for c in 0..chunks {
                match c % threads {
                    0 => {
                        own.clear();
                        write(c, &mut own);
                        out.write_all(own.as_bytes())?;
                    }
                    t => {
                        let (made, back) = &helpers[t - 1];
                        // (a helper ends only when its chunks are sent, or
                        // by a panic, which the scope hands on)
                        let Ok(buf) = made.recv() else { break };
                        out.write_all(buf.as_bytes())?;
                        let _ = back.send(buf);
                    }
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static CLASS: TableClass = TableClass {
        name: "t",
        title: "T",
        columns: &[
            col("Low", "duration"),
            col("High", "duration"),
            col("Count", "number"),
        ],
    };

    /// Appends `n` values of every magnitude and sign (xorshift from
    /// `seed`, shifted right by a varying amount).
    fn spread(values: &mut Vec<i64>, seed: u64, n: usize) {
        let mut x = seed;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x >> (x % 64)) as i64 * if x & 1 == 0 { 1 } else { -1 });
        }
    }

    /// A cell stays 32 bytes: a log holds millions (8 per row).
    #[test]
    fn cells_are_32_bytes() {
        assert_eq!(std::mem::size_of::<Cell>(), 32);
    }

    /// The cells written digit by digit read as the formatting machinery
    /// writes them (`format!` of the value as it was written before).
    #[test]
    fn cell_text_is_what_format_writes() {
        let secs = |ns: i64| {
            format!(
                "{}{}.{:09}",
                if ns < 0 { "-" } else { "" },
                (ns / 1_000_000_000).unsigned_abs(),
                (ns % 1_000_000_000).unsigned_abs()
            )
        };
        let mut values = vec![
            0,
            1,
            -1,
            9,
            10,
            499,
            500,
            501,
            999,
            1000,
            -999,
            -1000,
            -1001,
            999_999_999,
            1_000_000_000,
            -1_000_000_000,
            1_412_670_961_212_721_139,
            (1 << 50) - 1,
            1 << 50,
            -(1 << 50),
            (1 << 53) + 1,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        // (and a spread of magnitudes, odd digits)
        spread(&mut values, 0x9e37_79b9_7f4a_7c15, 2000);
        for v in values {
            assert_eq!(
                cell_text(&duration(v)),
                format!("{:.3}", v as f64 / 1000.0),
                "{v}"
            );
            assert_eq!(cell_text(&timestamp(v)), secs(v), "{v}");
            assert_eq!(cell_text(&number(v)), format!("{v}"));
            assert_eq!(cell_text(&size(v)), format!("{v}"));
            assert_eq!(cell_text(&cpu(v)), format!("{v}"));
            assert_eq!(cell_text(&fd(v)), format!("{v}"));
            assert_eq!(
                cell_text(&time_range_cell(v, v / 3)),
                format!("[{}, {}]", secs(v), secs(v / 3))
            );
            assert_eq!(
                cell_text(&process(Some("a b"), Some(v), Some(7))),
                format!("a b ({v}/7)")
            );
            assert_eq!(
                cell_text(&process(Some("x"), None, Some(v))),
                format!("x ({v})")
            );
            assert_eq!(cell_text(&process(None, Some(v), None)), format!(" ({v})"));
            assert_eq!(
                cell_text(&irq(true, v, Some("eth0"))),
                format!("{v} <eth0>")
            );
            assert_eq!(cell_text(&irq(false, v, None)), format!("{v}"));
        }
    }

    /// [`cell_width`] counts the characters [`push_cell_text`] writes, for
    /// every kind of cell it counts (and says so for them).
    #[test]
    fn cell_width_is_the_text_width() {
        let mut values = vec![0, 1, -1, 9, 10, 999, 1000, 1001, -999, -1000, -1001];
        values.extend([999_999_999, 1_000_000_000, -999_999_999, -1_000_000_000]);
        values.extend([(1 << 50) - 1, 1 << 50, -(1 << 50) + 1, i64::MAX, i64::MIN]);
        spread(&mut values, 0x2545_f491_4f6c_dd1d, 3000);
        let (mut counted, mut written) = (0, 0);
        for v in values {
            let cells = [
                duration(v),
                timestamp(v),
                number(v),
                size(v),
                cpu(v),
                fd(v),
                process(Some("a b"), Some(v), Some(7)),
                process(Some("é ü"), None, Some(v)),
                process(None, Some(v), None),
                process(Some("p"), None, None),
                irq(true, v, Some("eth0")),
                irq(false, v, Some("ñ")),
                irq(false, v, None),
                string("mot"),
                path("/a/é"),
                Cell::Null,
                duration_f(v as f64),
                ratio(v as f64 / 7.0),
                time_range_cell(v, v / 3),
                unknown(),
                Cell::Bool(Some(v < 0)),
                Cell::Bool(None),
            ];
            for c in &cells {
                let text = cell_text(c);
                match cell_width(c) {
                    Some(w) => {
                        assert_eq!(w, text.chars().count(), "{c:?}: {text:?}");
                        counted += 1;
                    }
                    None => written += 1,
                }
            }
            // (all but a duration beyond 2^50 ns are counted)
            let skipped = usize::from(v.unsigned_abs() >= 1 << 50);
            assert_eq!(
                cells[..16]
                    .iter()
                    .filter(|c| cell_width(c).is_none())
                    .count(),
                skipped
            );
        }
        assert!(
            counted > 50_000 && written > 9_000,
            "{counted} counted, {written} written"
        );
    }

    /// Rows made on demand write as the same rows held, in LAMI and in
    /// text, and are held as they were made.
    #[test]
    fn made_rows_are_held_rows() {
        let rows: Vec<Vec<Cell>> = (0..50i64)
            .map(|i| vec![duration(i * 999), duration_f(i as f64 / 3.0), number(-i)])
            .collect();
        let mut held = Table::new(&CLASS, 5, 9);
        held.rows = rows.clone();
        let made = |n: usize| {
            let r = rows.clone();
            let make = move |f: &mut dyn FnMut(&[Cell])| r.iter().take(n).for_each(|r| f(r));
            Emitted::made(Table::new(&CLASS, 5, 9), n, Box::new(make))
        };
        let write = |e: &[Emitted]| {
            let (mut lami, mut text) = (Vec::new(), Vec::new());
            write_results(e, &mut lami).unwrap();
            e.iter().for_each(|t| table_text(t, &mut text).unwrap());
            (lami, text)
        };
        let empty = Emitted::held(Table::new(&CLASS, 5, 9));
        let want = write(&[Emitted::held(held.clone()), empty]);
        let got = write(&[made(50), made(0)]);
        assert_eq!(got, want);
        assert!(
            want.1.len() > 50 * 20,
            "{}",
            String::from_utf8_lossy(&want.1)
        );
        let m = made(50);
        assert!(m.is_made() && m.len() == 50 && made(0).is_empty());
        assert_eq!(m.into_table().rows, held.rows);
    }

    /// The text of a table: columns as wide as their widest cell (counted
    /// or written), text left-aligned and numbers right-aligned.
    #[test]
    fn table_text_aligns_columns() {
        static LOG: TableClass = TableClass {
            name: "log",
            title: "Log",
            columns: &[
                col("Begin", "timestamp"),
                col("Duration", "duration"),
                col("Process", "process"),
                col("Ratio", "ratio"),
            ],
        };
        let mut t = Table::new(&LOG, 0, 1);
        t.rows = vec![
            vec![
                timestamp(1_500_000_000),
                duration(12_345),
                process(Some("é"), Some(1), Some(2)),
                ratio(0.5),
            ],
            vec![
                timestamp(-3),
                duration(7),
                process(Some("long name"), None, Some(10)),
                ratio(0.123),
            ],
            vec![timestamp(2)],
        ];
        let mut out = Vec::new();
        table_text(&Emitted::held(t), &mut out).unwrap();
        // (widths: 12, 13, 14 and 9 characters; "é" is one)
        let want = concat!(
            "Log\n",
            "         Begin  Duration (µs)  Process         Ratio (%)\n",
            "   1.500000000         12.345  é (1/2)             50.00\n",
            "  -0.000000003          0.007  long name (10)      12.30\n",
            "   0.000000002\n",
            "\n",
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert_eq!(cell_text(&process(Some("p"), None, None)), "p");
        assert_eq!(cell_text(&Cell::Null), "-");
        assert_eq!(cell_text(&Cell::Bool(None)), "-");
        assert_eq!(cell_text(&Cell::Bool(Some(true))), "yes");
        assert_eq!(cell_text(&path("/a")), "/a");
    }

    /// `write_results` writes the bytes of `results_json` serialized, for
    /// plain, subtitled, series and empty tables (and none at all).
    #[test]
    fn write_results_is_results_json() {
        let mut plain = Table::new(&CLASS, 1, 2);
        plain.rows = vec![
            vec![duration(1), duration(2), number(3)],
            vec![duration_f(1.5), unknown(), Cell::Null],
        ];
        let mut sub = plain.clone();
        sub.subtitle = Some("x \"y\"".into());
        let series = Table::series(&CLASS, "S", "ns", &[sub.clone(), plain.clone()]).unwrap();
        let empty = Table::new(&CLASS, 3, 4);
        for tables in [vec![], vec![empty.clone()], vec![plain, empty, sub, series]] {
            let want = serde_json::to_string(&results_json(&tables)).unwrap();
            let mut out = Vec::new();
            let held: Vec<Emitted> = tables.into_iter().map(Emitted::held).collect();
            write_results(&held, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}
