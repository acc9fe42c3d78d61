//! Addresses to function names: the objects a trace recorded as loaded
//! (path, load bias, address range, build id), their files found on this
//! machine (the build id first, then the path; `.gnu_debuglink` and
//! `.build-id/xx/yyyy.debug` files under the debug directories), DWARF
//! through `addr2line` (inlined functions too) and the symbol tables
//! through `object`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use addr2line::gimli;
use object::{Object, ObjectSection, ObjectSymbol};

type R = gimli::EndianSlice<'static, gimli::RunTimeEndian>;

/// One loaded object, as a statedump (`reef:object`, LTTng's
/// `lttng_ust_statedump:bin_info`) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Lowest and one past the highest address of its loaded segments.
    pub start: u64,
    pub end: u64,
    /// Subtracted from a run-time address to get the file's address.
    pub bias: u64,
    pub path: String,
    pub build_id: Vec<u8>,
}

/// The symbols of one file.
struct Loaded {
    dwarf: Option<addr2line::Context<R>>,
    /// (address, name), sorted; from the debug file's and the file's
    /// symbol tables.
    syms: Vec<(u64, u64, String)>,
}

/// Resolves addresses of a process's objects to names; caches files and
/// answers.
pub struct Symbolizer {
    maps: Vec<Mapping>,
    debug_dirs: Vec<PathBuf>,
    /// Index in `loaded` per file (None: not found or not readable).
    files: HashMap<(String, Vec<u8>), Option<usize>>,
    /// The files read (the symbolizer may move to another thread).
    loaded: Vec<Loaded>,
    cache: HashMap<u64, Vec<String>>,
    /// Objects whose file could not be found or read (reported once).
    pub missing: Vec<String>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn build_id_of(file: &object::File) -> Option<Vec<u8>> {
    file.build_id().ok().flatten().map(|b| b.to_vec())
}

fn read(path: &Path) -> Option<&'static [u8]> {
    let f = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only private mapping; the file may change under us, as
    // with any reader of object files (addr2line, perf report).
    let m = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    // Kept for the life of the process: names borrow nothing from it, but
    // several lookups read it.
    Some(Box::leak(Box::new(m)))
}

fn has_dwarf(file: &object::File) -> bool {
    file.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0)
}

fn dwarf_context(file: &object::File<'static>) -> Option<addr2line::Context<R>> {
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<R, gimli::Error> {
        let data: &'static [u8] = match file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
        {
            Some(Cow::Borrowed(b)) => b,
            // A compressed section: its uncompressed copy lives as long
            // as the mapped file does.
            Some(Cow::Owned(v)) => Box::leak(v.into_boxed_slice()),
            None => &[],
        };
        Ok(gimli::EndianSlice::new(data, endian))
    };
    let dwarf = gimli::Dwarf::load(load).ok()?;
    addr2line::Context::from_dwarf(dwarf).ok()
}

fn symbols(file: &object::File, out: &mut Vec<(u64, u64, String)>) {
    for s in file.symbols().chain(file.dynamic_symbols()) {
        if s.kind() != object::SymbolKind::Text || s.address() == 0 {
            continue;
        }
        if let Ok(n) = s.name() {
            if !n.is_empty() {
                out.push((s.address(), s.size(), n.to_string()));
            }
        }
    }
}

impl Symbolizer {
    /// `debug_dirs` are searched before `/usr/lib/debug`.
    pub fn new(debug_dirs: &[PathBuf]) -> Symbolizer {
        let mut d = debug_dirs.to_vec();
        d.push(PathBuf::from("/usr/lib/debug"));
        Symbolizer {
            maps: Vec::new(),
            debug_dirs: d,
            files: HashMap::new(),
            loaded: Vec::new(),
            cache: HashMap::new(),
            missing: Vec::new(),
        }
    }

    /// A newer statedump: an object at the same start replaces the older
    /// one (a library unloaded and another loaded there).
    pub fn add(&mut self, m: Mapping) {
        if let Some(old) = self.maps.iter_mut().find(|o| o.start == m.start) {
            if *old != m {
                *old = m;
                self.cache.clear();
            }
        } else {
            self.maps.push(m);
            self.cache.clear();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    fn find_debug_file(
        &self,
        path: &Path,
        build_id: &[u8],
        link: Option<&[u8]>,
    ) -> Option<PathBuf> {
        if build_id.len() > 1 {
            let h = hex(build_id);
            for d in &self.debug_dirs {
                let p = d
                    .join(".build-id")
                    .join(&h[..2])
                    .join(format!("{}.debug", &h[2..]));
                if p.is_file() {
                    return Some(p);
                }
            }
        }
        let link = std::str::from_utf8(link?).ok()?;
        let dir = path.parent().unwrap_or(Path::new("/"));
        let mut cands = vec![dir.join(link), dir.join(".debug").join(link)];
        for d in &self.debug_dirs {
            cands.push(d.join(dir.strip_prefix("/").unwrap_or(dir)).join(link));
            cands.push(d.join(link));
        }
        cands.into_iter().find(|p| p.is_file() && p != path)
    }

    fn load(&mut self, m: &Mapping) -> Option<usize> {
        let key = (m.path.clone(), m.build_id.clone());
        if let Some(l) = self.files.get(&key) {
            return *l;
        }
        let l = self.load_uncached(m).map(|l| {
            self.loaded.push(l);
            self.loaded.len() - 1
        });
        if l.is_none() {
            self.missing.push(m.path.clone());
        }
        self.files.insert(key, l);
        l
    }

    fn load_uncached(&self, m: &Mapping) -> Option<Loaded> {
        let path = Path::new(&m.path);
        // The file at the recorded path, if it is the same build.
        let mut main = read(path).and_then(|d| object::File::parse(d).ok());
        if let (Some(f), false) = (&main, m.build_id.is_empty()) {
            if build_id_of(f).is_some_and(|b| b != m.build_id) {
                main = None; // another build: only its debug file by id
            }
        }
        let link = main
            .as_ref()
            .and_then(|f| f.gnu_debuglink().ok().flatten().map(|(n, _crc)| n.to_vec()));
        let debug = self
            .find_debug_file(path, &m.build_id, link.as_deref())
            .and_then(|p| read(&p))
            .and_then(|d| object::File::parse(d).ok());
        if main.is_none() && debug.is_none() {
            return None;
        }
        let dwarf = match (&debug, &main) {
            (Some(d), _) if has_dwarf(d) => dwarf_context(d),
            (_, Some(f)) if has_dwarf(f) => dwarf_context(f),
            _ => None,
        };
        let mut syms = Vec::new();
        for f in debug.iter().chain(main.iter()) {
            symbols(f, &mut syms);
        }
        syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        syms.dedup_by_key(|s| s.0);
        Some(Loaded { dwarf, syms })
    }

    /// The names at `addr` (outermost inlined caller first, the function
    /// holding the address last); `addr` is already adjusted for a return
    /// address. `[path]+0xOFF` when no name is known, `[unknown]` outside
    /// every object.
    pub fn names(&mut self, addr: u64) -> Vec<String> {
        if let Some(n) = self.cache.get(&addr) {
            return n.clone();
        }
        let n = self.names_uncached(addr);
        self.cache.insert(addr, n.clone());
        n
    }

    fn names_uncached(&mut self, addr: u64) -> Vec<String> {
        let Some(m) = self
            .maps
            .iter()
            .find(|m| addr >= m.start && addr < m.end)
            .cloned()
        else {
            return vec![format!("[unknown 0x{addr:x}]")];
        };
        let off = addr.wrapping_sub(m.bias);
        let short = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
        let Some(li) = self.load(&m) else {
            return vec![format!("[{short}]+0x{off:x}")];
        };
        let l = &self.loaded[li];
        let mut out = Vec::new();
        if let Some(ctx) = &l.dwarf {
            if let Ok(mut frames) = ctx.find_frames(off).skip_all_loads() {
                while let Ok(Some(f)) = frames.next() {
                    if let Some(func) = f.function {
                        if let Ok(name) = func.demangle() {
                            out.push(name.into_owned());
                        }
                    }
                }
            }
        }
        if out.is_empty() {
            let i = l.syms.partition_point(|s| s.0 <= off);
            if i > 0 {
                let (a, size, name) = &l.syms[i - 1];
                if *size == 0 || off < a + size {
                    out.push(addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned());
                }
            }
        }
        if out.is_empty() {
            out.push(format!("[{short}]+0x{off:x}"));
        }
        out.reverse(); // find_frames gives the innermost first
        out
    }
}
