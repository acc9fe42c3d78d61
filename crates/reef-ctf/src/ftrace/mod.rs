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
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;

use crate::capture::Cut;
use crate::trace::StreamFile;
use crate::{Error, TraceClass};

/// Whether `path` is a file that starts like a `.dat` file or a
/// perf.data file.
pub fn is_dat(path: &Path) -> bool {
    let mut h = [0u8; 10];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut h))
        .is_ok()
        && (dat::is_dat(&h) || perf::is_perf(&h))
}

/// A converted `.dat` file.
struct Converted {
    key: Key,
    class: Option<TraceClass>,
    files: Vec<StreamFile>,
    cut: Option<Cut>,
}

/// What tells a file from the one converted before.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    path: PathBuf,
    len: u64,
    modified: Option<std::time::SystemTime>,
    ino: u64,
}

fn key(path: &Path) -> Result<Key, Error> {
    let md = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    use std::os::unix::fs::MetadataExt;
    Ok(Key {
        path: path.to_path_buf(),
        len: md.len(),
        modified: md.modified().ok(),
        ino: md.ino(),
    })
}

/// Conversions whose stream files were not taken yet: opening a trace
/// loads its class, then its streams (`Trace::from_class`).
static PENDING: Mutex<Vec<Converted>> = Mutex::new(Vec::new());

fn stream_err(path: &Path, e: dat::DatError) -> Error {
    Error::Stream {
        path: path.to_path_buf(),
        offset: e.offset,
        msg: e.msg,
    }
}

fn convert(path: &Path) -> Result<Converted, Error> {
    let key = key(path)?;
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: mapped read-only; a file truncated while it is converted is
    // turned into zeros and reported by the guard (crate::guard).
    let map = unsafe { Mmap::map(&f) }.map_err(|e| Error::io(path, e))?;
    let guard = crate::guard::Guard::of(&map);
    if perf::is_perf(&map) {
        return convert_perf(path, key, &map, &guard);
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
    Ok(Converted {
        key,
        class: Some(class),
        files,
        cut,
    })
}

/// [`convert`] of a perf.data file.
fn convert_perf(
    path: &Path,
    key: Key,
    map: &Mmap,
    guard: &crate::guard::Guard,
) -> Result<Converted, Error> {
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
        key,
        class: Some(class),
        files,
        cut: s.damage.map(|e| Cut {
            path: path.to_path_buf(),
            offset: e.offset,
            msg: format!("{} (the samples before this were read)", e.msg),
        }),
    })
}

/// The compiled metadata of the `.dat` file `path` (its streams are kept
/// for [`stream_files`]).
pub fn load_class(path: &Path) -> Result<TraceClass, Error> {
    let mut c = convert(path)?;
    let class = c.class.take().ok_or_else(|| Error::Stream {
        path: path.to_path_buf(),
        offset: 0,
        msg: "no metadata".into(),
    })?;
    if let Ok(mut p) = PENDING.lock() {
        p.retain(|o| o.key.path != path);
        p.push(c);
    }
    Ok(class)
}

/// The CPU streams of the `.dat` file `path`, each in a temporary file
/// named `PATH#cpuN`, and where a damaged page cut one.
pub fn stream_files(path: &Path) -> Result<(Vec<StreamFile>, Option<Cut>), Error> {
    let k = key(path)?;
    let pending = PENDING.lock().ok().and_then(|mut p| {
        let i = p.iter().position(|o| o.key == k)?;
        Some(p.swap_remove(i))
    });
    let c = match pending {
        Some(c) => c,
        None => convert(path)?,
    };
    Ok((c.files, c.cut))
}
