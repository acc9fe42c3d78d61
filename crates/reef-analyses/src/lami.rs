//! LAMI 1.0 ("Linux Analysis Machine Interface"), the JSON that Trace
//! Compass reads from external analyses: a metadata document describing the
//! analysis and its table classes, and a results document holding result
//! tables whose cells are typed objects (`{"class": "duration", "value":
//! 1200}`). Durations are in nanoseconds, timestamps in nanoseconds from
//! the Epoch, ratios in [0, 1].
//!
//! This module also renders result tables as text for people.

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
pub fn write_results(tables: &[Table], out: &mut impl std::io::Write) -> std::io::Result<()> {
    out.write_all(b"{\"results\":[")?;
    for (i, t) in tables.iter().filter(|t| !t.rows.is_empty()).enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"{\"class\":")?;
        serde_json::to_writer(&mut *out, &t.class_json())?;
        out.write_all(b",\"data\":")?;
        serde_json::to_writer(&mut *out, &t.rows)?;
        out.write_all(b",\"time-range\":")?;
        serde_json::to_writer(&mut *out, &time_range(t.begin, t.end))?;
        out.write_all(b"}")?;
    }
    out.write_all(b"]}")
}

/// A LAMI cell, held compactly (a log keeps millions of them: as JSON
/// objects they took ~600 bytes each); [`Cell::to_value`] gives its JSON
/// object, which is also how it serializes.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// An empty cell (JSON `null`).
    Null,
    /// `{"class": CLASS, "value": N}`: number, duration, size, timestamp.
    Int(&'static str, i64),
    /// `{"class": CLASS, "value": X}`: duration, ratio.
    Float(&'static str, f64),
    /// `{"class": CLASS, KEY: TEXT}`: string (`value`), path (`path`),
    /// disk, netif, syscall (`name`).
    Text(&'static str, &'static str, Box<str>),
    /// `{"class": CLASS, KEY: N}`: fd (`fd`), cpu (`id`).
    Id(&'static str, &'static str, i64),
    /// `{"class": "unknown"}`.
    Unknown,
    /// `{"class": "bool", "value": B}` (`null` when unknown).
    Bool(Option<bool>),
    /// `{"class": "time-range", "begin": TIMESTAMP, "end": TIMESTAMP}`.
    TimeRange(i64, i64),
    /// `{"class": "process"}` with `name`, `pid`, `tid` when known.
    Process(Option<Box<str>>, Option<i64>, Option<i64>),
    /// `{"class": "irq", "hard": B, "nr": N}` with `name` when known.
    Irq(bool, i64, Option<Box<str>>),
}

impl Cell {
    /// The cell as LAMI's JSON object.
    pub fn to_value(&self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Int(class, v) => json!({"class": class, "value": v}),
            Cell::Float(class, v) => json!({"class": class, "value": v}),
            Cell::Text(class, key, t) => {
                let mut o = Map::new();
                o.insert("class".into(), json!(class));
                o.insert((*key).into(), json!(t));
                Value::Object(o)
            }
            Cell::Id(class, key, v) => {
                let mut o = Map::new();
                o.insert("class".into(), json!(class));
                o.insert((*key).into(), json!(v));
                Value::Object(o)
            }
            Cell::Unknown => json!({"class": "unknown"}),
            Cell::Bool(v) => json!({"class": "bool", "value": v}),
            Cell::TimeRange(b, e) => json!({
                "class": "time-range",
                "begin": Cell::Int("timestamp", *b).to_value(),
                "end": Cell::Int("timestamp", *e).to_value(),
            }),
            Cell::Process(name, pid, tid) => {
                let mut o = json!({"class": "process"});
                if let Some(n) = name {
                    o["name"] = json!(n);
                }
                if let Some(p) = pid {
                    o["pid"] = json!(p);
                }
                if let Some(t) = tid {
                    o["tid"] = json!(t);
                }
                o
            }
            Cell::Irq(hard, nr, name) => {
                let mut o = json!({"class": "irq", "hard": hard, "nr": nr});
                if let Some(n) = name {
                    o["name"] = json!(n);
                }
                o
            }
        }
    }
}

impl serde::Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
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
    Cell::Text("string", "value", s.into())
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
    Cell::Process(name.map(Into::into), pid, tid)
}

pub fn size(bytes: i64) -> Cell {
    Cell::Int("size", bytes)
}

pub fn path(p: &str) -> Cell {
    Cell::Text("path", "path", p.into())
}

pub fn fd(fd: i64) -> Cell {
    Cell::Id("fd", "fd", fd)
}

pub fn disk(name: &str) -> Cell {
    Cell::Text("disk", "name", name.into())
}

pub fn netif(name: &str) -> Cell {
    Cell::Text("netif", "name", name.into())
}

pub fn cpu(id: i64) -> Cell {
    Cell::Id("cpu", "id", id)
}

pub fn syscall(name: &str) -> Cell {
    Cell::Text("syscall", "name", name.into())
}

pub fn irq(hard: bool, nr: i64, name: Option<&str>) -> Cell {
    Cell::Irq(hard, nr, name.map(Into::into))
}

/// ns from the Epoch as seconds: `1412670961.212721139`.
fn seconds(ns: i64) -> String {
    format!(
        "{}{}.{:09}",
        if ns < 0 { "-" } else { "" },
        (ns / 1_000_000_000).unsigned_abs(),
        (ns % 1_000_000_000).unsigned_abs()
    )
}

/// A cell as text: durations in microseconds, ratios in percent, times in
/// seconds from the Epoch, an empty cell as `-`.
pub fn cell_text(c: &Cell) -> String {
    value_text(&c.to_value())
}

/// [`cell_text`] of a cell's JSON object.
pub fn value_text(c: &Value) -> String {
    if c.is_null() {
        return "-".into();
    }
    let class = c["class"].as_str().unwrap_or("");
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    match class {
        "duration" => format!("{:.3}", num(&c["value"]) / 1000.0),
        "ratio" => format!("{:.2}", num(&c["value"]) * 100.0),
        "timestamp" => match c["value"].as_i64() {
            Some(ns) => seconds(ns),
            None => "?".into(),
        },
        "time-range" => match (c["begin"]["value"].as_i64(), c["end"]["value"].as_i64()) {
            (Some(b), Some(e)) => format!("[{}, {}]", seconds(b), seconds(e)),
            _ => "?".into(),
        },
        "number" | "size" => match &c["value"] {
            Value::Null => "?".into(),
            v => v.to_string(),
        },
        "string" => c["value"].as_str().unwrap_or("").to_string(),
        "syscall" | "disk" | "part" | "netif" => c["name"].as_str().unwrap_or("").to_string(),
        "cpu" => c["id"].to_string(),
        "path" => c["path"].as_str().unwrap_or("").to_string(),
        "fd" => c["fd"].to_string(),
        "bool" => match c["value"].as_bool() {
            Some(true) => "yes".into(),
            Some(false) => "no".into(),
            None => "-".into(),
        },
        "process" => {
            let name = c["name"].as_str().unwrap_or("");
            match (c.get("pid"), c.get("tid")) {
                (Some(p), Some(t)) => format!("{name} ({p}/{t})"),
                (None, Some(t)) => format!("{name} ({t})"),
                (Some(p), None) => format!("{name} ({p})"),
                (None, None) => name.to_string(),
            }
        }
        "irq" => {
            let nr = &c["nr"];
            match c["name"].as_str() {
                Some(n) => format!("{nr} <{n}>"),
                None => nr.to_string(),
            }
        }
        "unknown" => "?".into(),
        _ => c.to_string(),
    }
}

/// A column's header in text: its title, shortened, with the unit shown.
fn header(col: &Column) -> String {
    let mut t = col.title.to_string();
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
        t = t.replace(long, short);
    }
    if let Some(c) = t.get(..1) {
        t = c.to_uppercase() + &t[1..];
    }
    match col.class {
        "duration" => format!("{t} (µs)"),
        "ratio" => format!("{t} (%)"),
        _ => t,
    }
}

/// Renders a table as aligned text: its title, then a header line and one
/// line per row; text columns are left-aligned, numbers right-aligned.
pub fn table_text(t: &Table, out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(out, "{}", t.title());
    let cols = t.columns();
    let mut heads: Vec<String> = cols.iter().map(header).collect();
    if let Some(s) = &t.series {
        heads[2..].clone_from_slice(&s.names);
    }
    let mut cells: Vec<Vec<String>> = vec![heads];
    for r in &t.rows {
        cells.push(r.iter().map(cell_text).collect());
    }
    let mut width = vec![0usize; cols.len()];
    for row in &cells {
        for (i, c) in row.iter().enumerate().take(cols.len()) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    for row in &cells {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate().take(cols.len()) {
            let pad = width[i] - c.chars().count();
            let left = matches!(
                cols[i].class,
                "process" | "string" | "syscall" | "irq" | "path" | "disk" | "netif"
            );
            if i > 0 {
                line.push_str("  ");
            }
            if left {
                line.push_str(c);
                if i + 1 < cols.len() {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            } else {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(c);
            }
        }
        let _ = writeln!(out, "  {}", line.trim_end());
    }
    out.push('\n');
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
            let mut out = Vec::new();
            write_results(&tables, &mut out).unwrap();
            let want = serde_json::to_string(&results_json(&tables)).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}
