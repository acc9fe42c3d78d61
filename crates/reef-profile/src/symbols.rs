//! Addresses to function names: the objects a trace recorded as loaded
//! (path, load bias, address range, build id), their files found on this
//! machine (the build id first, then the path; `.gnu_debuglink` and
//! `.build-id/xx/yyyy.debug` files under the debug directories), DWARF
//! through `addr2line` (inlined functions too) and the symbol tables
//! through `object`. Objects belong to an address space: one process of
//! a perf.data file (its pid), or space 0 (a libreef or LTTng-UST
//! statedump); kernel addresses are named from this machine's
//! `/proc/kallsyms`, as `perf script` names them.

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
    /// The objects of each address space.
    maps: HashMap<u32, Vec<Mapping>>,
    /// The kernel's functions (address, name), sorted; read on first use.
    kernel: Option<Vec<(u64, String)>>,
    /// The load segments (file offset, address) of each file seen in a
    /// perf `MMAP` record.
    segments: HashMap<String, Vec<(u64, u64, u64)>>,
    debug_dirs: Vec<PathBuf>,
    /// Index in `loaded` per file (None: not found or not readable).
    files: HashMap<(String, Vec<u8>), Option<usize>>,
    /// The files read (the symbolizer may move to another thread).
    loaded: Vec<Loaded>,
    cache: HashMap<(u32, u64), Vec<String>>,
    /// Objects whose file could not be found or read (reported once).
    pub missing: Vec<String>,
    /// Whether an address names the functions inlined there too (the
    /// default).
    pub inline: bool,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn build_id_of(file: &object::File) -> Option<Vec<u8>> {
    file.build_id().ok().flatten().map(|b| b.to_vec())
}

/// This process's `[vdso]`: the kernel's, the same in every process of
/// the machine (perf names a sample's vDSO frames the same way).
fn vdso() -> Option<&'static [u8]> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let range = line.split_whitespace().next()?;
    let (a, b) = range.split_once('-')?;
    let (a, b) = (
        usize::from_str_radix(a, 16).ok()?,
        usize::from_str_radix(b, 16).ok()?,
    );
    // SAFETY: the kernel maps the vDSO readable for the life of the
    // process; it is copied out once.
    let image = unsafe { std::slice::from_raw_parts(a as *const u8, b.checked_sub(a)?) };
    Some(Box::leak(image.to_vec().into_boxed_slice()))
}

fn read(path: &Path) -> Option<&'static [u8]> {
    if path == Path::new("[vdso]") {
        return vdso();
    }
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

/// How good a name among a function's aliases (the same address) is,
/// the best lowest, as perf chooses: one with a size, not weak, global,
/// with fewer leading underscores, the longer name.
type Rank = (bool, bool, bool, usize, std::cmp::Reverse<usize>);

/// The function symbols of `file` (its dynamic ones with `dynamic`), and
/// the labels of its code (assembly's `_start`, untyped).
fn symbols(file: &object::File<'static>, dynamic: bool, out: &mut Vec<(u64, u64, String, Rank)>) {
    let syms = if dynamic {
        file.dynamic_symbols()
    } else {
        file.symbols()
    };
    for s in syms {
        let code = match s.kind() {
            object::SymbolKind::Text => true,
            object::SymbolKind::Unknown | object::SymbolKind::Label => s
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .is_some_and(|sec| sec.kind() == object::SectionKind::Text),
            _ => false,
        };
        if !code || s.address() == 0 {
            continue;
        }
        if let Ok(n) = s.name() {
            if !n.is_empty() {
                let underscores = n.len() - n.trim_start_matches('_').len();
                let rank = (
                    s.size() == 0,
                    s.is_weak(),
                    !s.is_global(),
                    underscores,
                    std::cmp::Reverse(n.len()),
                );
                out.push((s.address(), s.size(), n.to_string(), rank));
            }
        }
    }
}

/// A symbol's name demangled when it is mangled (C++'s `_Z`, Rust's
/// `_R`); a C name stays as it is (`a` is not C++'s `signed char`).
fn demangle(name: &str) -> String {
    if name.starts_with("_Z") || name.starts_with("__Z") || name.starts_with("_R") {
        addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned()
    } else {
        name.to_string()
    }
}

impl Symbolizer {
    /// `debug_dirs` are searched before `/usr/lib/debug`.
    pub fn new(debug_dirs: &[PathBuf]) -> Symbolizer {
        let mut d = debug_dirs.to_vec();
        d.push(PathBuf::from("/usr/lib/debug"));
        Symbolizer {
            maps: HashMap::new(),
            kernel: None,
            segments: HashMap::new(),
            debug_dirs: d,
            files: HashMap::new(),
            loaded: Vec::new(),
            cache: HashMap::new(),
            missing: Vec::new(),
            inline: true,
        }
    }

    /// A newer statedump: an object at the same start replaces the older
    /// one (a library unloaded and another loaded there).
    pub fn add(&mut self, m: Mapping) {
        self.add_in(0, m)
    }

    /// [`Symbolizer::add`] in address space `space`.
    pub fn add_in(&mut self, space: u32, m: Mapping) {
        let maps = self.maps.entry(space).or_default();
        if let Some(old) = maps.iter_mut().find(|o| o.start == m.start) {
            if *old != m {
                *old = m;
                self.cache.clear();
            }
        } else {
            maps.push(m);
            self.cache.clear();
        }
    }

    /// Address space `to` gets a copy of `from`'s objects (a process
    /// forked).
    pub fn copy_space(&mut self, from: u32, to: u32) {
        let maps = self.maps.get(&from).cloned().unwrap_or_default();
        self.maps.insert(to, maps);
        self.cache.clear();
    }

    /// Address space `space` loses its objects (a process executed
    /// another program).
    pub fn clear_space(&mut self, space: u32) {
        self.maps.remove(&space);
        self.cache.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.maps.values().all(|m| m.is_empty())
    }

    /// The object of a perf `MMAP` record: `len` bytes from `start` map
    /// `path` from file offset `pgoff`. Its bias comes from the file's
    /// load segment holding that offset, when the file can be read.
    pub fn mmap(
        &mut self,
        path: &str,
        build_id: Vec<u8>,
        start: u64,
        len: u64,
        pgoff: u64,
    ) -> Mapping {
        let segs = self.segments.entry(path.to_string()).or_insert_with(|| {
            let Some(d) = read(Path::new(path)) else {
                return Vec::new();
            };
            let Ok(f) = object::File::parse(d) else {
                return Vec::new();
            };
            use object::ObjectSegment;
            f.segments()
                .map(|s| {
                    let (off, size) = s.file_range();
                    (off, size, s.address())
                })
                .collect()
        });
        // The run-time address of file offset `pgoff` is `start`; the
        // file's address of that offset is its segment's.
        let file_addr = segs
            .iter()
            .find(|&&(off, size, _)| pgoff >= (off & !0xfff) && pgoff < off + size.max(1))
            .map_or(pgoff, |&(off, _, addr)| {
                addr.wrapping_add(pgoff).wrapping_sub(off)
            });
        Mapping {
            start,
            end: start.saturating_add(len),
            bias: start.wrapping_sub(file_addr),
            path: path.to_string(),
            build_id,
        }
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
        // A mapping known by its path alone (perf's): the file's own id.
        let id = match &main {
            Some(f) if m.build_id.is_empty() => build_id_of(f).unwrap_or_default(),
            _ => m.build_id.clone(),
        };
        let debug = self
            .find_debug_file(path, &id, link.as_deref())
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
        // The full symbol table (the debug file's, else the file's), else
        // the dynamic one.
        let mut syms = Vec::new();
        for f in debug.iter().chain(main.iter()) {
            if syms.is_empty() {
                symbols(f, false, &mut syms);
            }
        }
        for f in debug.iter().chain(main.iter()) {
            if syms.is_empty() {
                symbols(f, true, &mut syms);
            }
        }
        // One name per address: the best of its aliases.
        syms.sort_by(|a, b| a.0.cmp(&b.0).then(a.3.cmp(&b.3)));
        syms.dedup_by_key(|s| s.0);
        let syms = syms
            .into_iter()
            .map(|(a, size, n, _)| (a, size, n))
            .collect();
        Some(Loaded { dwarf, syms })
    }

    /// The names at `addr` (outermost inlined caller first, the function
    /// holding the address last); `addr` is already adjusted for a return
    /// address. `[path]+0xOFF` when no name is known, `[unknown]` outside
    /// every object.
    pub fn names(&mut self, addr: u64) -> Vec<String> {
        self.names_in(0, addr)
    }

    /// [`Symbolizer::names`] in address space `space`.
    pub fn names_in(&mut self, space: u32, addr: u64) -> Vec<String> {
        if let Some(n) = self.cache.get(&(space, addr)) {
            return n.clone();
        }
        let n = self.names_uncached(space, addr);
        self.cache.insert((space, addr), n.clone());
        n
    }

    /// The kernel function holding `addr`, from `/proc/kallsyms`.
    fn kernel_name(&mut self, addr: u64) -> Option<String> {
        let k = self.kernel.get_or_insert_with(|| {
            let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
            let mut v: Vec<(u64, String)> = text
                .lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    let a = u64::from_str_radix(w.next()?, 16).ok()?;
                    let t = w.next()?;
                    let name = w.next()?;
                    (a != 0 && matches!(t, "t" | "T" | "w" | "W")).then(|| (a, name.to_string()))
                })
                .collect();
            v.sort();
            v
        });
        let i = k.partition_point(|s| s.0 <= addr);
        (i > 0).then(|| k[i - 1].1.clone())
    }

    fn names_uncached(&mut self, space: u32, addr: u64) -> Vec<String> {
        let found = self
            .maps
            .get(&space)
            .and_then(|maps| maps.iter().find(|m| addr >= m.start && addr < m.end))
            .cloned();
        let Some(m) = found else {
            // Kernel addresses (the upper half) of a perf sample.
            if addr >= 0xffff_8000_0000_0000 {
                if let Some(n) = self.kernel_name(addr) {
                    return vec![n];
                }
            }
            return vec![format!("[unknown 0x{addr:x}]")];
        };
        let off = addr.wrapping_sub(m.bias);
        let short = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
        let Some(li) = self.load(&m) else {
            return vec![format!("[{short}]+0x{off:x}")];
        };
        let l = &self.loaded[li];
        // The function's symbol, as perf and gprof name it (a compiler's
        // clone keeps its suffix: `f.constprop.0`).
        let symbol = {
            let i = l.syms.partition_point(|s| s.0 <= off);
            (i > 0)
                .then(|| &l.syms[i - 1])
                .filter(|(a, size, _)| *size == 0 || off < a + size)
                .map(|(_, _, name)| demangle(name))
        };
        // The functions inlined there, from DWARF, innermost first; the
        // last is the function itself, named by its symbol when it has one.
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
        if !self.inline {
            out.drain(..out.len().saturating_sub(1));
        }
        match (out.last_mut(), symbol) {
            (Some(last), Some(s)) => *last = s,
            (None, Some(s)) => out.push(s),
            _ => {}
        }
        if out.is_empty() {
            out.push(format!("[{short}]+0x{off:x}"));
        }
        out.reverse(); // find_frames gives the innermost first
        out
    }
}
