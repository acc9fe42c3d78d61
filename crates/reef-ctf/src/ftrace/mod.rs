//! ftrace traces: trace-cmd's `.dat` files (versions 6 and 7, zstd
//! compression included) read as CTF traces.
//!
//! A `.dat` file is recognised by its magic bytes, whatever its name. It
//! is converted once per opening: its event formats become CTF event
//! classes ([`convert::metadata`]), each CPU's ring-buffer pages a stream
//! of CTF packets in a temporary, already unlinked file (as a live
//! capture's streams are), so every reader of CTF reads it unchanged.
//! A damaged page stops its CPU's stream there: the events before it are
//! kept and the damage (file offset, what was expected) is reported once
//! they are read, as a cut capture's is.

pub mod convert;
pub mod dat;
pub mod format;
pub mod perf;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::capture::Cut;
use crate::source::{Converted, Format};
use crate::trace::StreamFile;
use crate::Error;

/// trace-cmd's `.dat` and perf.data, as [`crate::source`] formats (one
/// converter, which tells them apart by their first bytes).
pub(crate) fn formats() -> Vec<Arc<dyn Format>> {
    vec![
        Arc::new(Builtin {
            name: "ftrace",
            description: "trace-cmd .dat files (versions 6 and 7)",
            detect: dat::is_dat,
        }),
        Arc::new(Builtin {
            name: "perf",
            description: "perf.data files (perf record)",
            detect: perf::is_perf,
        }),
    ]
}

struct Builtin {
    name: &'static str,
    description: &'static str,
    detect: fn(&[u8]) -> bool,
}

impl Format for Builtin {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        self.description
    }
    fn detect(&self, _path: &Path, head: &[u8]) -> bool {
        (self.detect)(head)
    }
    fn convert(&self, path: &Path) -> Result<Converted, Error> {
        convert(path)
    }
}

fn stream_err(path: &Path, e: dat::DatError) -> Error {
    Error::Stream {
        path: path.to_path_buf(),
        offset: e.offset,
        msg: e.msg,
    }
}

fn convert(path: &Path) -> Result<Converted, Error> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: mapped read-only; a file truncated while it is converted is
    // turned into zeros and reported by the guard (crate::guard).
    let map = unsafe { Mmap::map(&f) }.map_err(|e| Error::io(path, e))?;
    let guard = crate::guard::Guard::of(&map);
    if perf::is_perf(&map) {
        return convert_perf(path, &map, &guard);
    }
    let d = dat::read(&map, path).map_err(|e| stream_err(path, e))?;
    let (common, classes) = convert::classes(&d).map_err(|m| Error::Stream {
        path: path.to_path_buf(),
        offset: 0,
        msg: m,
    })?;
    let w = convert::Writer {
        dat: &d,
        common: &common,
        classes: &classes,
    };
    let mut used = BTreeSet::new();
    let mut files = Vec::new();
    let mut cut: Option<Cut> = None;
    let mut cpus = d.cpus.clone();
    cpus.sort_by_key(|c| c.cpu);
    // CPUs are converted on as many threads as there are cores.
    type Done = Result<(StreamFile, Option<dat::DatError>, BTreeSet<u32>), Error>;
    let one = |cpu: dat::CpuData| -> Done {
        let pages = convert::Pages::new(&d, &map, cpu);
        let mut damage = None;
        let mut used = BTreeSet::new();
        let mut name = path.as_os_str().to_os_string();
        name.push(format!("#cpu{}", cpu.cpu));
        let sf = crate::capture::temp_stream_file(PathBuf::from(name), |out| {
            let (_counts, e) = w.cpu(&pages, out, &mut used)?;
            damage = e;
            Ok(())
        })?;
        Ok((sf, damage, used))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, cpus.len().max(1));
    let mut done: Vec<(u32, Done)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let mine: Vec<dat::CpuData> =
                    cpus.iter().skip(k).step_by(threads).copied().collect();
                let one = &one;
                s.spawn(move || {
                    mine.into_iter()
                        .map(|c| (c.cpu, one(c)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(cpu, _)| *cpu);
    for (cpu, r) in done {
        let (sf, damage, u) = r?;
        used.extend(u);
        if let Some(e) = damage {
            cut = cut.or(Some(Cut {
                path: path.to_path_buf(),
                offset: e.offset,
                msg: format!("CPU {cpu}: {} (its events before this were read)", e.msg),
            }));
        }
        if !sf.data().is_empty() {
            files.push(sf);
        }
    }
    if guard.faulted() {
        return Err(Error::Stream {
            path: path.to_path_buf(),
            offset: 0,
            msg: "the file was truncated while being read".into(),
        });
    }
    let used: BTreeMap<u32, &convert::Class> = used
        .iter()
        .filter_map(|id| classes.get(id).map(|c| (*id, c)))
        .collect();
    let text = convert::metadata(&d, &common, &used);
    let class = crate::capture::class_from_metadata(text.as_bytes(), path)?;
    Ok(Converted { class, files, cut })
}

/// [`convert`] of a perf.data file.
fn convert_perf(path: &Path, map: &Mmap, guard: &crate::guard::Guard) -> Result<Converted, Error> {
    let p = perf::read(map).map_err(|e| stream_err(path, e))?;
    let (common, classes) = convert::classes(&p.dat).map_err(|m| Error::Stream {
        path: path.to_path_buf(),
        offset: 0,
        msg: m,
    })?;
    let w = convert::Writer {
        dat: &p.dat,
        common: &common,
        classes: &classes,
    };
    let mut used = BTreeSet::new();
    let tmp_err = |e| Error::io(&std::env::temp_dir(), e);
    let release = |start: usize, end: usize| {
        // SAFETY: MADV_DONTNEED on a read-only file mapping only drops
        // pages, read again from the file when touched: no reference into
        // it becomes invalid.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    };
    let s = perf::streams(
        &p,
        map,
        &w,
        &mut used,
        &mut crate::capture::temp_file,
        &release,
    )
    .map_err(tmp_err)?;
    if guard.faulted() {
        return Err(Error::Stream {
            path: path.to_path_buf(),
            offset: 0,
            msg: "the file was truncated while being read".into(),
        });
    }
    let mut files = Vec::new();
    for (cpu, run, f) in s.files {
        // SAFETY: as in `capture::temp_stream_file`: private and unlinked.
        let m = unsafe { Mmap::map(&f) }.map_err(tmp_err)?;
        let mut name = path.as_os_str().to_os_string();
        match (s.cpus, run) {
            (true, 0) => name.push(format!("#cpu{cpu}")),
            (true, _) => name.push(format!("#cpu{cpu}.{run}")),
            (false, _) => name.push(format!("#run{run}")),
        }
        let sf = StreamFile::new(PathBuf::from(name), m);
        if !sf.data().is_empty() {
            files.push(sf);
        }
    }
    let used: BTreeMap<u32, &convert::Class> = used
        .iter()
        .filter_map(|id| classes.get(id).map(|c| (*id, c)))
        .collect();
    let mut text = convert::metadata(&p.dat, &common, &used);
    text = text.replace(
        "tracer_name = \"ftrace\";",
        "tracer_name = \"ftrace\";\n\tftrace_source = \"perf\";",
    );
    let class = crate::capture::class_from_metadata(text.as_bytes(), path)?;
    Ok(Converted {
        class,
        files,
        cut: s.damage.map(|e| Cut {
            path: path.to_path_buf(),
            offset: e.offset,
            msg: format!("{} (the samples before this were read)", e.msg),
        }),
    })
}
