//! `reef-profile`: where the time went, from a trace's sampled call stacks
//! (`reef:sample`) or function entry/exit events (`reef:func_entry/exit`,
//! LTTng-UST's `lttng_ust_cyg_profile*:func_entry/func_exit`).
//!
//! [`Symbolizer`] turns addresses into names; [`Stacks`] sums weights per
//! stack (folded stacks, speedscope, [`pprof`], an [`svg`] flame graph); [`CallTree`] pairs entries and exits
//! per thread into calls with total and self time. [`collect`] reads them
//! from traces (`reef-read`) for any front end.

mod symbols;

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

pub use symbols::{Mapping, Symbolizer};

pub mod collect;
pub mod pprof;
pub mod svg;

/// Weights summed per stack of names (outermost frame first), per group
/// (a thread, a process, or one group for all).
#[derive(Default)]
pub struct Stacks {
    pub groups: BTreeMap<String, HashMap<Vec<String>, u64>>,
}

impl Stacks {
    pub fn add(&mut self, group: &str, stack: Vec<String>, weight: u64) {
        *self
            .groups
            .entry(group.to_string())
            .or_default()
            .entry(stack)
            .or_default() += weight;
    }

    /// Brendan Gregg's folded format: `a;b;c N`, the group (if not empty)
    /// as the first frame; lines sorted.
    pub fn write_folded(&self, out: &mut impl Write) -> io::Result<()> {
        for (g, stacks) in &self.groups {
            let mut lines: Vec<String> = stacks
                .iter()
                .map(|(s, w)| {
                    let mut f: Vec<&str> = Vec::with_capacity(s.len() + 1);
                    if !g.is_empty() {
                        f.push(g);
                    }
                    f.extend(s.iter().map(|x| x.as_str()));
                    let names: Vec<String> =
                        f.iter().map(|x| x.replace([';', '\n'], "_")).collect();
                    format!("{} {w}", names.join(";"))
                })
                .collect();
            lines.sort();
            for l in lines {
                writeln!(out, "{l}")?;
            }
        }
        Ok(())
    }

    /// speedscope's file format (<https://www.speedscope.app/file-format-schema.json>):
    /// one "sampled" profile per group, `unit` as given.
    pub fn write_speedscope(&self, out: &mut impl Write, name: &str, unit: &str) -> io::Result<()> {
        let mut frames: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut profiles = Vec::new();
        for (g, stacks) in &self.groups {
            let mut keys: Vec<_> = stacks.iter().collect();
            keys.sort();
            let mut samples = Vec::new();
            let mut weights = Vec::new();
            let mut total = 0u64;
            for (s, w) in keys {
                let ids: Vec<usize> = s
                    .iter()
                    .map(|f| {
                        *index.entry(f.clone()).or_insert_with(|| {
                            frames.push(f.clone());
                            frames.len() - 1
                        })
                    })
                    .collect();
                samples.push(ids);
                weights.push(*w);
                total += w;
            }
            profiles.push(serde_json::json!({
                "type": "sampled",
                "name": if g.is_empty() { name } else { g.as_str() },
                "unit": unit,
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }));
        }
        let doc = serde_json::json!({
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "name": name,
            "exporter": "reef profile",
            "shared": { "frames": frames.iter().map(|f| serde_json::json!({"name": f})).collect::<Vec<_>>() },
            "profiles": profiles,
        });
        serde_json::to_writer(&mut *out, &doc)?;
        writeln!(out)
    }
}

/// A node of a call tree: calls, total and self time (ns) of one path.
#[derive(Default, Debug, Clone)]
pub struct Node {
    pub calls: u64,
    pub total: u64,
    pub own: u64,
    pub children: BTreeMap<u64, Node>,
}

struct Open {
    addr: u64,
    start: i64,
    children: u64,
}

/// Entries and exits per thread, paired into calls (by address, last in
/// first out); an exit that matches no open entry is counted, entries
/// still open at the end are closed at the thread's last event.
#[derive(Default)]
pub struct CallTree {
    pub roots: BTreeMap<String, Node>,
    open: HashMap<String, (Vec<Open>, i64)>,
    pub unmatched_exits: u64,
    pub unfinished: u64,
}

impl CallTree {
    pub fn entry(&mut self, group: &str, addr: u64, ns: i64) {
        let (st, last) = self.open.entry(group.to_string()).or_default();
        *last = ns;
        st.push(Open {
            addr,
            start: ns,
            children: 0,
        });
    }

    pub fn exit(&mut self, group: &str, addr: u64, ns: i64) {
        let Some((st, last)) = self.open.get_mut(group) else {
            self.unmatched_exits += 1;
            return;
        };
        *last = ns;
        let Some(pos) = st.iter().rposition(|o| o.addr == addr) else {
            self.unmatched_exits += 1;
            return;
        };
        // Frames above it never exited (longjmp, an exception): closed here.
        while st.len() > pos {
            let path: Vec<u64> = st.iter().map(|o| o.addr).collect();
            let o = st.pop().unwrap();
            let total = (ns - o.start).max(0) as u64;
            if let Some(parent) = st.last_mut() {
                parent.children += total;
            }
            let root = self.roots.entry(group.to_string()).or_default();
            let mut n = root;
            for a in &path {
                n = n.children.entry(*a).or_default();
            }
            n.calls += 1;
            n.total += total;
            n.own += total.saturating_sub(o.children);
        }
    }

    /// Closes what is still open at each thread's last event.
    pub fn finish(&mut self) {
        let groups: Vec<(String, u64, i64)> = self
            .open
            .iter()
            .filter_map(|(g, (st, last))| st.first().map(|o| (g.clone(), o.addr, *last)))
            .collect();
        for (g, addr, last) in groups {
            let n = self.open[&g].0.len() as u64;
            self.unfinished += n;
            self.exit(&g, addr, last);
        }
    }
}
