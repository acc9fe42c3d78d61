//! Reading a profile from traces through `reef-read`: the objects of the
//! statedumps and of perf's `MMAP` records ([`read_objects`]), then the
//! samples (libreef's, perf's with a callchain), function entries and
//! exits, and events with an `ip` context of a reading ([`collect`]),
//! turned into [`Stacks`] ([`Collected::stacks`]). The same rules as
//! `reef profile` (its folded stacks are these stacks), for front ends
//! that profile a part of a trace (`reef view`'s flame chart).

use std::collections::HashMap;
use std::ops::ControlFlow;

use reef_ctf::access::{Field, Scopes};
use reef_ctf::decode::Value;
use reef_ctf::model::EnvValue;
use reef_read::{Msg, ReadOptions, Source};

use crate::{CallTree, Mapping, Node, Stacks, Symbolizer};

/// The statedump events: `reef:object` (libreef), `lttng_ust_statedump:*`,
/// and a perf.data file's mappings, forks and program executions.
pub const OBJECTS_FILTER: &str = r#"$evt.$name == "reef:object" || $evt.$name == "lttng_ust_statedump:*" || $evt.$name == "perf_mmap" || $evt.$name == "perf_fork" || $evt.$name == "perf_comm""#;

/// `PROT_EXEC`: a perf `MMAP` record of code.
const PROT_EXEC: u64 = 4;

/// The unsigned integers of an event's payload, in order.
fn payload_u64(m: &Msg) -> Vec<u64> {
    m.cursor
        .event
        .payload()
        .iter()
        .filter_map(|v| match v {
            Value::U(u) => Some(*u),
            Value::I(i) => Some(*i as u64),
            _ => None,
        })
        .collect()
}

/// The payload's first string (or byte run).
fn payload_str(m: &Msg) -> Option<String> {
    m.cursor.event.payload().iter().find_map(|v| match v {
        Value::Bytes { off, len } => m
            .cursor
            .data()
            .get(*off..off + len)
            .map(|b| String::from_utf8_lossy(b).into_owned()),
        _ => None,
    })
}

/// A sequence after `skip` leading integers: its elements (the length, when
/// decoded as an integer, is dropped).
fn sequence(vals: &[u64], skip: usize) -> &[u64] {
    let rest = vals.get(skip..).unwrap_or(&[]);
    match rest.first() {
        Some(&n) if n as usize == rest.len() - 1 => &rest[1..],
        _ => rest,
    }
}

/// Adds to `sym` the objects of every statedump in `opts`'s traces, read
/// whole: `opts`'s window and filter are ignored (they must not hide the
/// objects).
pub fn read_objects(opts: &ReadOptions, sym: &mut Symbolizer) -> Result<(), reef_read::Error> {
    let mut opts = opts.clone();
    opts.begin = None;
    opts.end = None;
    opts.filter = Some(OBJECTS_FILTER.into());
    opts.script = None;
    opts.keepers = Default::default();
    let mut src = Source::open(&opts)?;
    // LTTng gives the build id in its own event, keyed by base address.
    let mut lttng: HashMap<u64, Mapping> = HashMap::new();
    let mut path_f = Field::new("path");
    let mut filename_f = Field::new("filename");
    let stopped = src.for_each_event(|m, _| {
        let name = m.cursor.event_name();
        let v = payload_u64(m);
        if name == "reef:object" && v.len() >= 5 {
            let build_id: Vec<u8> = sequence(&v, 4).iter().map(|b| *b as u8).collect();
            sym.add(Mapping {
                start: v[2],
                end: v[2].saturating_add(v[3]),
                bias: v[1],
                path: payload_str(m).unwrap_or_default(),
                build_id,
            });
        } else if name == "lttng_ust_statedump:bin_info" && v.len() >= 2 {
            let path = path_f
                .get(m.cursor)
                .and_then(|p| p.as_str().map(|s| s.into_owned()))
                .unwrap_or_default();
            let e = lttng.entry(v[0]).or_insert_with(|| Mapping {
                start: v[0],
                end: v[0].saturating_add(v[1]),
                bias: v[0],
                path: String::new(),
                build_id: Vec::new(),
            });
            e.end = v[0].saturating_add(v[1]);
            e.path = path;
            // A position-dependent executable: addresses are the file's.
            if v.get(2) == Some(&0) {
                e.bias = 0;
            }
        } else if name == "perf_mmap" && v.len() >= 6 {
            // pid, tid, start, len, pgoff, prot; the file name.
            let path = filename_f
                .get(m.cursor)
                .and_then(|p| p.as_str().map(|s| s.into_owned()))
                .unwrap_or_default();
            // The kernel's (pid -1) is named from kallsyms; anonymous
            // code has no file; the vDSO is this machine's.
            if v[5] & PROT_EXEC != 0
                && v[0] as i32 >= 0
                && (path.starts_with('/') || path == "[vdso]")
            {
                let map = sym.mmap(&path, Vec::new(), v[2], v[3], v[4]);
                sym.add_in(v[0] as u32, map);
            }
        } else if name == "perf_fork" && v.len() >= 2 && v[0] != v[1] {
            sym.copy_space(v[1] as u32, v[0] as u32);
        } else if name == "perf_comm" && v.len() >= 3 && v[2] == 1 && v[0] == v[1] {
            sym.clear_space(v[0] as u32);
        } else if name == "lttng_ust_statedump:build_id" && !v.is_empty() {
            let id: Vec<u8> = sequence(&v, 1).iter().map(|b| *b as u8).collect();
            lttng
                .entry(v[0])
                .or_insert_with(|| Mapping {
                    start: v[0],
                    end: v[0],
                    bias: v[0],
                    path: String::new(),
                    build_id: Vec::new(),
                })
                .build_id = id;
        }
        Ok::<_, reef_read::Error>(ControlFlow::Continue(()))
    })?;
    if let Some(e) = stopped {
        return Err(e);
    }
    let mut lttng: Vec<Mapping> = lttng.into_values().filter(|m| !m.path.is_empty()).collect();
    lttng.sort_by_key(|m| m.start);
    for m in lttng {
        sym.add(m);
    }
    Ok(())
}

/// How samples are grouped (`reef profile --per-thread`, `--per-process`;
/// neither: one group, `""`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Grouping {
    pub per_thread: bool,
    pub per_process: bool,
}

struct Groups {
    tid: Field,
    vtid: Field,
    vpid: Field,
    pid: Field,
    procname: Field,
    g: Grouping,
    /// The names of threads, from a perf.data file's `COMM` records.
    comms: HashMap<i64, String>,
}

impl Groups {
    fn key(&mut self, m: &Msg, g: Grouping) -> String {
        if !g.per_thread && !g.per_process {
            return String::new();
        }
        let meta = &m.cursor.trace.class.meta;
        let env = |k: &str| match meta.env_get(k) {
            Some(EnvValue::Int(i)) => Some(i.to_string()),
            Some(EnvValue::Str(s)) => Some(s.clone()),
            None => None,
        };
        let tid = self
            .vtid
            .get(m.cursor)
            .or_else(|| self.tid.get(m.cursor))
            .and_then(|v| v.as_i64());
        let pid = self
            .vpid
            .get(m.cursor)
            .or_else(|| self.pid.get(m.cursor))
            .and_then(|v| v.as_i64());
        let named = if g.per_process { pid } else { tid };
        let proc_ = self
            .procname
            .get(m.cursor)
            .and_then(|v| v.as_str().map(|s| s.into_owned()))
            .or_else(|| named.and_then(|t| self.comms.get(&t).cloned()))
            .or_else(|| env("procname"))
            .unwrap_or_else(|| "?".into());
        if g.per_process {
            let pid = pid
                .map(|v| v.to_string())
                .or_else(|| env("vpid"))
                .unwrap_or_else(|| "?".into());
            return format!("{proc_}-{pid}");
        }
        format!("{proc_}-{}", tid.map_or("?".into(), |v| v.to_string()))
    }

    /// Function events pair per thread whatever the grouping: the thread,
    /// or the process and the thread.
    fn thread_key(&mut self, m: &Msg) -> String {
        let thread = self.key(
            m,
            Grouping {
                per_thread: true,
                per_process: false,
            },
        );
        if self.g.per_process {
            let p = self.key(m, self.g);
            return format!("{p}\u{1}{thread}");
        }
        thread
    }
}

/// What a reading holds for a profile: samples' stacks (addresses,
/// innermost first), function calls paired per thread, events by the
/// address that emitted them.
#[derive(Default)]
pub struct Collected {
    pub grouping: Grouping,
    /// (group, address space, stack) → samples: the space is a perf
    /// sample's process, 0 for libreef's samples.
    pub samples: HashMap<(String, u32, Vec<u64>), u64>,
    pub tree: CallTree,
    /// (group, ip, event name) → events.
    pub emitted: HashMap<(String, u64, String), u64>,
    pub nsamples: u64,
    /// Function entries and exits.
    pub nfunc: u64,
    /// The reading stopped at this error (what came before is counted).
    pub stopped: Option<reef_read::Error>,
}

/// What a profile's weights count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// `reef:sample` events.
    Samples,
    /// Self time of function calls, in ns (entry/exit events).
    Time,
    /// Events with an `ip` context, under the function that emitted them.
    Events,
}

impl Measure {
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Samples => "samples",
            Measure::Time => "ns",
            Measure::Events => "events",
        }
    }
}

/// Reads `opts` (its window and filter apply) and gathers what a profile
/// needs from the events `keep` accepts.
pub fn collect(
    opts: &ReadOptions,
    grouping: Grouping,
    keep: &mut dyn FnMut(&Msg) -> bool,
) -> Result<Collected, reef_read::Error> {
    let mut groups = Groups {
        tid: Field::new("tid"),
        vtid: Field::new("vtid"),
        vpid: Field::new("vpid"),
        pid: Field::new("pid"),
        procname: Field::new("procname"),
        g: grouping,
        comms: HashMap::new(),
    };
    // A perf sample: its period and its callchain's length.
    let mut period_f = Field::new("period");
    let mut chain_f = Field::new("callchain_len");
    let mut comm_f = Field::new("comm");
    let mut c = Collected {
        grouping,
        ..Collected::default()
    };
    let mut addr_f = Field::new("addr");
    let mut ip_f = Field::in_scopes("ip", Scopes::Context);
    let mut src = Source::open(opts)?;
    let stopped = src.for_each_event(|m, ns| {
        if !keep(m) {
            return Ok(ControlFlow::Continue(()));
        }
        let name = m.cursor.event_name();
        if !name.starts_with("lttng_ust_statedump:") && !name.starts_with("reef:") {
            if let Some(ip) = ip_f.get(m.cursor).and_then(|v| v.as_u64()) {
                *c.emitted
                    .entry((groups.key(m, grouping), ip, name.to_string()))
                    .or_default() += 1;
            }
        }
        if name == "reef:sample" {
            let v = payload_u64(m);
            let stack = sequence(&v, 1).to_vec();
            c.nsamples += 1;
            *c.samples
                .entry((groups.key(m, grouping), 0, stack))
                .or_default() += 1;
        } else if name == "perf_fork" {
            // pid, ppid, tid, ptid: a new thread has its parent's name.
            let v = payload_u64(m);
            if let (Some(&tid), Some(&ptid)) = (v.get(2), v.get(3)) {
                let (tid, ptid) = (tid as i32 as i64, ptid as i32 as i64);
                if let Some(n) = groups.comms.get(&ptid).cloned() {
                    groups.comms.insert(tid, n);
                }
            }
        } else if name == "perf_comm" {
            let v = payload_u64(m);
            if let (Some(&tid), Some(comm)) = (v.get(1), comm_f.get(m.cursor)) {
                if let Some(s) = comm.as_str() {
                    groups.comms.insert(tid as i32 as i64, s.into_owned());
                }
            }
        } else if period_f.get(m.cursor).is_some() && chain_f.get(m.cursor).is_some() {
            // pid, tid, ip, period, the callchain (innermost first).
            let v = payload_u64(m);
            let stack = sequence(&v, 4).to_vec();
            if !stack.is_empty() {
                c.nsamples += 1;
                *c.samples
                    .entry((groups.key(m, grouping), v[0] as u32, stack))
                    .or_default() += 1;
            }
        } else if name == "reef:func_entry"
            || (name.starts_with("lttng_ust_cyg_profile") && name.ends_with(":func_entry"))
        {
            if let Some(addr) = addr_f.get(m.cursor).and_then(|v| v.as_u64()) {
                c.nfunc += 1;
                c.tree.entry(&groups.thread_key(m), addr, ns);
            }
        } else if name == "reef:func_exit"
            || (name.starts_with("lttng_ust_cyg_profile") && name.ends_with(":func_exit"))
        {
            if let Some(addr) = addr_f.get(m.cursor).and_then(|v| v.as_u64()) {
                c.nfunc += 1;
                c.tree.exit(&groups.thread_key(m), addr, ns);
            }
        }
        Ok::<_, reef_read::Error>(ControlFlow::Continue(()))
    })?;
    c.tree.finish();
    c.stopped = stopped;
    Ok(c)
}

impl Collected {
    /// What `reef profile --folded` counts for this reading (`events`:
    /// `--events`): events with an `ip` when asked or when there is
    /// nothing else, else samples when there are some, else function
    /// time. `None`: nothing to count.
    pub fn measure(&self, events: bool) -> Option<Measure> {
        if events || (self.nsamples == 0 && self.nfunc == 0 && !self.emitted.is_empty()) {
            Some(Measure::Events)
        } else if self.nsamples == 0 && self.nfunc > 0 {
            Some(Measure::Time)
        } else if self.nsamples > 0 {
            Some(Measure::Samples)
        } else {
            None
        }
    }

    /// The symbolized stacks of `measure`, grouped as collected: `reef
    /// profile --folded`'s lines.
    pub fn stacks(&self, measure: Measure, sym: &mut Symbolizer) -> Stacks {
        let mut stacks = Stacks::default();
        let g = self.grouping;
        match measure {
            Measure::Events => {
                for ((grp, ip, name), n) in &self.emitted {
                    // `ip` is the return address of the probe's call.
                    let mut stack = sym.names(ip.saturating_sub(1));
                    stack.push(name.clone());
                    stacks.add(grp, stack, *n);
                }
            }
            Measure::Time => {
                for (grp, root) in &self.tree.roots {
                    let label = group_label(grp, g);
                    fold_tree(&mut stacks, &label, root, &mut Vec::new(), sym);
                }
            }
            Measure::Samples => {
                for ((grp, space, stack), n) in &self.samples {
                    stacks.add(grp, symbolize_stack_in(sym, *space, stack), *n);
                }
            }
        }
        stacks
    }
}

fn group_label(g: &str, grouping: Grouping) -> String {
    if !grouping.per_thread && !grouping.per_process {
        return String::new();
    }
    match g.split_once('\u{1}') {
        Some((p, t)) => {
            if grouping.per_process {
                p.to_string()
            } else {
                t.to_string()
            }
        }
        None => g.to_string(),
    }
}

/// Innermost-first addresses to outermost-first names; return addresses
/// (all but the first) are looked up one byte back, inside their call.
pub fn symbolize_stack(sym: &mut Symbolizer, stack: &[u64]) -> Vec<String> {
    symbolize_stack_in(sym, 0, stack)
}

/// [`symbolize_stack`] in address space `space`.
pub fn symbolize_stack_in(sym: &mut Symbolizer, space: u32, stack: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, &a) in stack.iter().enumerate().rev() {
        let probe = if i == 0 { a } else { a.saturating_sub(1) };
        out.extend(sym.names_in(space, probe));
    }
    out
}

fn fold_tree(stacks: &mut Stacks, g: &str, n: &Node, path: &mut Vec<String>, sym: &mut Symbolizer) {
    for (addr, c) in &n.children {
        path.push(sym.names(*addr).pop().unwrap_or_default());
        if c.own > 0 {
            stacks.add(g, path.clone(), c.own);
        }
        fold_tree(stacks, g, c, path, sym);
        path.pop();
    }
}

/// A call tree of names (a flame chart's frames): each node's `total`
/// weight (its own and its callees') and `own` (its own: the stacks that
/// end there); children by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    pub name: String,
    pub total: u64,
    pub own: u64,
    pub children: Vec<Frame>,
}

impl Stacks {
    /// The stacks of every group merged into one tree (the group, when not
    /// empty, as the outermost frame, as in the folded lines).
    pub fn frames(&self) -> Frame {
        #[derive(Default)]
        struct B {
            total: u64,
            own: u64,
            kids: std::collections::BTreeMap<String, B>,
        }
        fn done(name: String, b: B) -> Frame {
            Frame {
                name,
                total: b.total,
                own: b.own,
                children: b.kids.into_iter().map(|(n, k)| done(n, k)).collect(),
            }
        }
        let mut root = B::default();
        for (g, stacks) in &self.groups {
            for (s, &w) in stacks {
                root.total += w;
                let mut n = &mut root;
                let names = (!g.is_empty()).then_some(g).into_iter().chain(s.iter());
                for f in names {
                    // As the folded lines write them.
                    n = n.kids.entry(f.replace([';', '\n'], "_")).or_default();
                    n.total += w;
                }
                n.own += w;
            }
        }
        done(String::new(), root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split(';').map(str::to_string).collect()
    }

    #[test]
    fn frames_sum_the_stacks_by_path() {
        let mut st = Stacks::default();
        st.add("", names("main;f;g"), 3);
        st.add("", names("main;f"), 2);
        st.add("", names("main;h"), 1);
        st.add("", names("main;f;g"), 4);
        st.add("", names("other"), 5);
        let root = st.frames();
        assert_eq!((root.total, root.own), (15, 0));
        let kids: Vec<(&str, u64, u64)> = root
            .children
            .iter()
            .map(|c| (c.name.as_str(), c.total, c.own))
            .collect();
        assert_eq!(kids, [("main", 10, 0), ("other", 5, 5)]);
        let main = &root.children[0];
        let f = &main.children[0];
        assert_eq!((f.name.as_str(), f.total, f.own), ("f", 9, 2));
        assert_eq!((f.children[0].name.as_str(), f.children[0].total), ("g", 7));
        assert_eq!(
            (main.children[1].name.as_str(), main.children[1].own),
            ("h", 1)
        );
    }

    #[test]
    fn frames_put_a_group_first_and_write_names_as_folded_lines() {
        let mut st = Stacks::default();
        st.add("t-1", names("a"), 2);
        st.add("t-2", vec!["x;y".to_string()], 1);
        let root = st.frames();
        let kids: Vec<&str> = root.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(kids, ["t-1", "t-2"]);
        assert_eq!(root.children[1].children[0].name, "x_y");
        let mut folded = Vec::new();
        st.write_folded(&mut folded).unwrap();
        assert_eq!(String::from_utf8(folded).unwrap(), "t-1;a 2\nt-2;x_y 1\n");
    }
}
