//! LAMI 1.0 documents from plugins: checked before anything shows them
//! (a plugin's output is input like a trace), and rendered as text tables.

use serde_json::Value;

/// A metadata document: `mi-version` 1.x, a `title`, and `table-classes`
/// whose columns have titles.
pub fn check_metadata(v: &Value) -> Result<(), String> {
    let major = v
        .pointer("/mi-version/major")
        .and_then(Value::as_u64)
        .ok_or("no mi-version.major (expected a LAMI 1.0 metadata document)")?;
    if major != 1 {
        return Err(format!("mi-version {major}: expected LAMI 1"));
    }
    v.get("title")
        .and_then(Value::as_str)
        .ok_or("no title (a string)")?;
    let classes = v
        .get("table-classes")
        .and_then(Value::as_object)
        .ok_or("no table-classes (an object)")?;
    for (name, c) in classes {
        columns(c).map_err(|m| format!("table class {name:?}: {m}"))?;
    }
    Ok(())
}

/// A table class's column titles.
fn columns(class: &Value) -> Result<Vec<String>, String> {
    let cols = class
        .get("column-descriptions")
        .and_then(Value::as_array)
        .ok_or("no column-descriptions (an array)")?;
    cols.iter()
        .enumerate()
        .map(|(i, c)| {
            c.get("title")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("column {i} has no title"))
        })
        .collect()
}

/// The class of a result table: a name in the metadata's `table-classes`,
/// or an object (with `inherit` or `column-descriptions`).
fn class_of<'a>(t: &'a Value, meta: &'a Value) -> Result<&'a Value, String> {
    match t.get("class") {
        Some(Value::String(n)) => meta
            .pointer(&format!(
                "/table-classes/{}",
                n.replace('~', "~0").replace('/', "~1")
            ))
            .ok_or_else(|| format!("class {n:?} is not among the metadata's table-classes")),
        Some(c @ Value::Object(o)) => {
            if o.contains_key("column-descriptions") {
                Ok(c)
            } else if let Some(Value::String(n)) = o.get("inherit") {
                meta.pointer(&format!("/table-classes/{n}"))
                    .ok_or_else(|| format!("inherited class {n:?} is not in the metadata"))
            } else {
                Err("a class object without column-descriptions or inherit".into())
            }
        }
        _ => Err("no class (a name or an object)".into()),
    }
}

/// A results document: `results`, tables whose rows have as many cells as
/// their class has columns.
pub fn check_results(v: &Value, meta: &Value) -> Result<(), String> {
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or("no results (an array)")?;
    for (i, t) in results.iter().enumerate() {
        let at = |m: String| format!("table {i}: {m}");
        let class = class_of(t, meta).map_err(at)?;
        let n = columns(class).map_err(at)?.len();
        let data = t
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| at("no data (an array of rows)".into()))?;
        for (r, row) in data.iter().enumerate() {
            let cells = row
                .as_array()
                .ok_or_else(|| at(format!("row {r} is not an array")))?;
            if cells.len() != n {
                return Err(at(format!(
                    "row {r} has {} cells, its class {n} columns",
                    cells.len()
                )));
            }
        }
    }
    Ok(())
}

/// One result table ready to print.
pub struct LamiTable {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A cell as text: numbers and strings as they are; LAMI's objects by
/// their value, name or id.
fn cell(c: &Value) -> String {
    match c {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Object(o) => {
            let get = |k: &str| o.get(k).filter(|v| !v.is_null()).map(cell);
            match o.get("class").and_then(Value::as_str) {
                Some("time-range") => format!(
                    "[{}, {}]",
                    get("begin").unwrap_or_default(),
                    get("end").unwrap_or_default()
                ),
                Some("process") | Some("thread") => {
                    let id = get("tid").or_else(|| get("pid")).unwrap_or_default();
                    match get("name") {
                        Some(n) => format!("{n} ({id})"),
                        None => id,
                    }
                }
                Some("empty") => String::new(),
                _ => get("value")
                    .or_else(|| get("name"))
                    .or_else(|| get("id"))
                    .unwrap_or_default(),
            }
        }
        Value::Array(a) => a.iter().map(cell).collect::<Vec<_>>().join(", "),
    }
}

/// The tables of a checked results document.
pub fn tables(results: &Value, meta: &Value) -> Vec<LamiTable> {
    let empty = Vec::new();
    let list = results
        .get("results")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    list.iter()
        .filter_map(|t| {
            let class = class_of(t, meta).ok()?;
            let title = t
                .get("title")
                .or_else(|| class.get("title"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            Some(LamiTable {
                title,
                columns: columns(class).ok()?,
                rows: t
                    .get("data")?
                    .as_array()?
                    .iter()
                    .filter_map(|r| Some(r.as_array()?.iter().map(cell).collect()))
                    .collect(),
            })
        })
        .collect()
}

impl LamiTable {
    /// The table as aligned text: a title line, a header, a rule, rows.
    pub fn text(&self) -> String {
        let mut w: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = w[i] - c.chars().count();
                s.push_str(c);
                if i + 1 < cells.len() {
                    s.extend(std::iter::repeat_n(' ', pad));
                }
            }
            s.push('\n');
            s
        };
        let mut out = format!("{}\n", self.title);
        out.push_str(&line(&self.columns));
        let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
        out.push_str(&line(&rule));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// The `check_*` functions in one call, for callers outside this crate.
pub fn check_lami(results: &Value, meta: &Value) -> Result<(), String> {
    check_metadata(meta)?;
    check_results(results, meta)
}
