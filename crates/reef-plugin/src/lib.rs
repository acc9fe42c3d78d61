//! `reef-plugin`: the plugin host. A plugin is a shared object exporting
//! `reef_plugin_describe()` (`crates/reef-capi/include/reef_plugin.h`):
//! a filter ([`Filter`], a [`reef_read::keeper`] applied wherever
//! `--filter` is), a sink or an analysis ([`consume`]). Plugins read
//! events through the C reading API's functions on a handle the host
//! gives them ([`reef_capi::EventView`]); the `reef` binary exports those
//! functions, so a plugin links nothing.
//!
//! Everything a plugin can get wrong short of crashing — a missing
//! symbol, another ABI version, a bad description, a failing status,
//! results that are not LAMI — is a [`PluginError`] naming the plugin's
//! file and what was expected.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reef_capi::{reef_reader, reef_status, EventView};
use reef_read::keeper::{KeepAt, Keeper, MakeKeeper};
use reef_read::{Item, ReadOptions, Source};

mod lami;
pub mod out;
mod python;
mod source;
pub use lami::{check_lami, tables, LamiTable};
pub use python::PyPlugin;
pub use source::install_sources;

/// The ABI this host speaks (`REEF_PLUGIN_ABI`).
pub const ABI: u32 = 1;
/// The symbol every plugin exports.
pub const SYMBOL: &str = "reef_plugin_describe";

pub const KIND_FILTER: u32 = 1;
pub const KIND_SINK: u32 = 2;
pub const KIND_ANALYSIS: u32 = 4;
pub const KIND_SOURCE: u32 = 8;

const REEF_OK: reef_status = 0;
const REEF_END: reef_status = 1;
const REEF_ERR_READ: reef_status = -6;

/// `struct reef_plugin`, as the header lays it out.
#[repr(C)]
struct RawPlugin {
    abi: u32,
    size: u32,
    name: *const c_char,
    version: *const c_char,
    description: *const c_char,
    kinds: u32,
    init: Option<unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> reef_status>,
    fini: Option<unsafe extern "C" fn(*mut c_void)>,
    error: Option<unsafe extern "C" fn(*mut c_void) -> *const c_char>,
    filter: Option<unsafe extern "C" fn(*mut c_void, *const reef_reader) -> c_int>,
    consume: Option<unsafe extern "C" fn(*mut c_void, *const reef_reader, c_int) -> reef_status>,
    finish:
        Option<unsafe extern "C" fn(*mut c_void, reef_status, *mut *const c_char) -> reef_status>,
    metadata: Option<unsafe extern "C" fn() -> *const c_char>,
    // From here on, read only when `size` covers them.
    detect: Option<unsafe extern "C" fn(*const c_char, *const u8, usize) -> c_int>,
    read: Option<
        unsafe extern "C" fn(*mut c_void, *const c_char, *mut out::reef_source) -> reef_status,
    >,
}

/// The size of ABI 1's first description, before the source fields.
const BASE_SIZE: usize = std::mem::offset_of!(RawPlugin, detect);

/// What can go wrong with a plugin, naming its file.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("plugin {}: {msg}", path.display())]
    Load { path: PathBuf, msg: String },
    #[error("no plugin named {name:?} {where_}")]
    NotFound { name: String, where_: String },
    #[error("plugin {name} ({}): {msg}", path.display())]
    Run {
        name: String,
        path: PathBuf,
        msg: String,
    },
    #[error(transparent)]
    Read(#[from] reef_read::Error),
}

/// A loaded plugin.
pub struct Plugin {
    pub path: PathBuf,
    pub name: String,
    pub version: String,
    pub description: String,
    pub kinds: u32,
    /// The description, copied (zeros past a shorter one's `size`).
    desc: RawPlugin,
    /// Keeps the code mapped while `desc` is used; never unloaded before.
    _lib: libloading::Library,
}

// SAFETY: the description is static data of the loaded object, read-only;
// the functions are called with one state per reading, each on one thread
// at a time (the contract docs/plugins.md states).
unsafe impl Send for Plugin {}
unsafe impl Sync for Plugin {}

/// A C string of the description, checked.
///
/// # Safety
/// `p` is NULL or points into the loaded object.
unsafe fn text(p: *const c_char, what: &str, path: &Path) -> Result<String, PluginError> {
    if p.is_null() {
        return Err(PluginError::Load {
            path: path.into(),
            msg: format!("its description has no {what} (NULL)"),
        });
    }
    // SAFETY: the caller's promise; the plugin's static string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| PluginError::Load {
            path: path.into(),
            msg: format!("its {what} is not UTF-8"),
        })
}

impl Plugin {
    /// Loads the shared object at `path` and checks its description.
    pub fn load(path: &Path) -> Result<Arc<Plugin>, PluginError> {
        let err = |msg: String| PluginError::Load {
            path: path.into(),
            msg,
        };
        // SAFETY: loading runs the object's initialisers: the user chose
        // to run this code.
        // Every symbol is bound now (RTLD_NOW): a function the host lacks
        // is an error here, not a crash at its first call.
        let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL;
        // SAFETY: as above.
        let lib = unsafe { libloading::os::unix::Library::open(Some(path), flags) }
            .map(libloading::Library::from)
            .map_err(|e| {
                err(format!(
                    "cannot be loaded ({e}); a plugin is a shared object built against \
                 reef_plugin.h (docs/plugins.md)"
                ))
            })?;
        // SAFETY: the symbol's type is the header's.
        let describe: libloading::Symbol<unsafe extern "C" fn() -> *const RawPlugin> =
            unsafe { lib.get(SYMBOL.as_bytes()) }.map_err(|_| {
                err(format!(
                    "exports no {SYMBOL}(): not a reef plugin (docs/plugins.md)"
                ))
            })?;
        // SAFETY: as above.
        let raw = unsafe { describe() };
        if raw.is_null() {
            return Err(err(format!("{SYMBOL}() returned NULL")));
        }
        // SAFETY: the first two fields are laid out alike in every version.
        let (abi, size) = unsafe { ((*raw).abi, (*raw).size) };
        if abi != ABI {
            return Err(err(format!(
                "built for plugin ABI {abi}, this reef loads ABI {ABI}: rebuild it \
                 against this reef's reef_plugin.h"
            )));
        }
        if (size as usize) < BASE_SIZE {
            return Err(err(format!(
                "its description is {size} bytes, ABI {ABI} has at least {BASE_SIZE}"
            )));
        }
        let sources = size as usize >= std::mem::size_of::<RawPlugin>();
        // SAFETY: ABI 1 and its size checked: the header's layout, of
        // which `size` bytes are the plugin's; all zeros is a valid
        // `RawPlugin` (NULL pointers, `None` functions).
        let desc = unsafe {
            let mut d = std::mem::MaybeUninit::<RawPlugin>::zeroed();
            let n = (size as usize).min(std::mem::size_of::<RawPlugin>());
            std::ptr::copy_nonoverlapping(raw.cast::<u8>(), d.as_mut_ptr().cast::<u8>(), n);
            d.assume_init()
        };
        let d = &desc;
        // SAFETY: static strings of the object.
        let name = unsafe { text(d.name, "name", path) }?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(err(format!(
                "its name {name:?} is not letters, digits, '-' and '_'"
            )));
        }
        // SAFETY: as above.
        let version = unsafe { text(d.version, "version", path) }?;
        // SAFETY: as above.
        let description = unsafe { text(d.description, "description", path) }?;
        let kinds = d.kinds;
        if kinds == 0 || kinds & !(KIND_FILTER | KIND_SINK | KIND_ANALYSIS | KIND_SOURCE) != 0 {
            return Err(err(format!(
                "kinds {kinds:#x}: expected REEF_PLUGIN_SOURCE, _FILTER, _SINK and/or _ANALYSIS"
            )));
        }
        if kinds & KIND_SOURCE != 0 && !sources {
            return Err(err(format!(
                "a source whose description is {size} bytes: built against a reef_plugin.h \
                 without sources (it has {})",
                std::mem::size_of::<RawPlugin>()
            )));
        }
        let need = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(err(format!("{what} is NULL")))
            }
        };
        if kinds & KIND_FILTER != 0 {
            need(d.filter.is_some(), "a filter whose `filter`")?;
        }
        if kinds & (KIND_SINK | KIND_ANALYSIS) != 0 {
            need(d.consume.is_some(), "a sink or analysis whose `consume`")?;
            need(d.finish.is_some(), "a sink or analysis whose `finish`")?;
        }
        if kinds & KIND_ANALYSIS != 0 {
            need(d.metadata.is_some(), "an analysis whose `metadata`")?;
        }
        if kinds & KIND_SOURCE != 0 {
            need(d.read.is_some(), "a source whose `read`")?;
        }
        Ok(Arc::new(Plugin {
            path: path.into(),
            name,
            version,
            description,
            kinds,
            desc,
            _lib: lib,
        }))
    }

    fn raw(&self) -> &RawPlugin {
        &self.desc
    }

    /// The kinds' names (`source`, `filter`, `sink`, `analysis`).
    pub fn kind_names(&self) -> Vec<&'static str> {
        [
            (KIND_SOURCE, "source"),
            (KIND_FILTER, "filter"),
            (KIND_SINK, "sink"),
            (KIND_ANALYSIS, "analysis"),
        ]
        .into_iter()
        .filter(|(k, _)| self.kinds & k != 0)
        .map(|(_, n)| n)
        .collect()
    }

    fn run_error(&self, msg: impl Into<String>) -> PluginError {
        PluginError::Run {
            name: self.name.clone(),
            path: self.path.clone(),
            msg: msg.into(),
        }
    }

    /// An analysis's LAMI metadata document, checked.
    pub fn metadata(&self) -> Result<serde_json::Value, PluginError> {
        let Some(f) = self.raw().metadata else {
            return Err(self.run_error("is not an analysis"));
        };
        // SAFETY: the header's function; a static string or NULL.
        let p = unsafe { f() };
        if p.is_null() {
            return Err(self.run_error("metadata() returned NULL"));
        }
        // SAFETY: NUL-terminated (the header's contract).
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
        let v: serde_json::Value = serde_json::from_str(&s)
            .map_err(|e| self.run_error(format!("metadata() is not JSON: {e}")))?;
        lami::check_metadata(&v).map_err(|m| self.run_error(format!("metadata(): {m}")))?;
        Ok(v)
    }

    /// A state for one reading.
    fn instance(self: &Arc<Plugin>, args: Option<&str>) -> Result<Instance, PluginError> {
        let args = match args {
            Some(a) => {
                Some(CString::new(a).map_err(|_| self.run_error("its arguments hold a NUL byte"))?)
            }
            None => None,
        };
        let mut state: *mut c_void = std::ptr::null_mut();
        if let Some(init) = self.raw().init {
            let a = args.as_ref().map_or(std::ptr::null(), |a| a.as_ptr());
            // SAFETY: the header's contract: args NULL or a C string.
            let s = unsafe { init(a, &mut state) };
            if s != REEF_OK {
                let why = self.message(state);
                return Err(self.run_error(format!(
                    "init{} failed ({}){}",
                    args.as_ref()
                        .map(|a| format!("({:?})", a.to_string_lossy()))
                        .unwrap_or_default(),
                    status_name(s),
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {why}")
                    }
                )));
            }
        }
        Ok(Instance {
            plugin: Arc::clone(self),
            state,
            view: EventView::new(),
        })
    }

    /// The plugin's own message for `state`'s last failure.
    fn message(&self, state: *mut c_void) -> String {
        let Some(f) = self.raw().error else {
            return String::new();
        };
        // SAFETY: the header's function.
        let p = unsafe { f(state) };
        if p.is_null() {
            return String::new();
        }
        // SAFETY: NUL-terminated (the header's contract).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// A status's name, as `reef_status_name` gives it.
fn status_name(s: reef_status) -> String {
    let p = reef_capi::reef_status_name(s);
    if p.is_null() {
        format!("status {s}")
    } else {
        // SAFETY: a static string of the C API.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// One reading's state of a plugin; `fini` on drop.
struct Instance {
    plugin: Arc<Plugin>,
    state: *mut c_void,
    view: EventView,
}

// SAFETY: the state is used by one thread at a time (the reading's).
unsafe impl Send for Instance {}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(fini) = self.plugin.raw().fini {
            // SAFETY: the state `init` made, once.
            unsafe { fini(self.state) };
        }
    }
}

impl Instance {
    fn failed(&self, call: &str, s: impl std::fmt::Display) -> String {
        let why = self.plugin.message(self.state);
        if why.is_empty() {
            format!("{call} failed ({s})")
        } else {
            format!("{call} failed ({s}): {why}")
        }
    }
}

impl Keeper for Instance {
    fn keep(&mut self, at: &KeepAt<'_>) -> Result<bool, String> {
        let Some(f) = self.plugin.raw().filter else {
            return Err("is not a filter".into());
        };
        self.view
            .show(at.cursor, at.stream, at.trace, Item::Event, at.ns);
        // SAFETY: the header's contract; the handle shows the event.
        let v = unsafe { f(self.state, self.view.handle()) };
        self.view.hide();
        match v {
            1 => Ok(true),
            0 => Ok(false),
            v if v < 0 => Err(self.failed("filter", status_name(v))),
            v => Err(format!(
                "filter returned {v}: expected 1, 0 or a negative status"
            )),
        }
    }
}

/// A filter plugin with its arguments: a [`MakeKeeper`] for
/// [`ReadOptions::keepers`].
pub struct Filter {
    pub plugin: Arc<Plugin>,
    pub args: Option<String>,
}

impl MakeKeeper for Filter {
    fn name(&self) -> String {
        format!(
            "plugin {} ({})",
            self.plugin.name,
            self.plugin.path.display()
        )
    }

    fn make(&self) -> Result<Box<dyn Keeper>, String> {
        if self.plugin.kinds & KIND_FILTER == 0 {
            return Err(format!(
                "is a {}, not a filter",
                self.plugin.kind_names().join(" and ")
            ));
        }
        match self.plugin.instance(self.args.as_deref()) {
            Ok(i) => Ok(Box::new(i)),
            Err(PluginError::Run { msg, .. }) => Err(msg),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// What a sink or an analysis made of a reading.
pub struct Consumed {
    /// An analysis's results document (checked LAMI), with its metadata.
    pub lami: Option<(serde_json::Value, serde_json::Value)>,
    /// Messages given.
    pub messages: u64,
    /// The reading's error (damaged traces), after which `finish` ran.
    pub read_error: Option<reef_read::Error>,
}

/// Runs a sink or an analysis plugin over the reading `read`.
pub fn consume(
    plugin: &Arc<Plugin>,
    args: Option<&str>,
    read: &ReadOptions,
) -> Result<Consumed, PluginError> {
    if plugin.kinds & (KIND_SINK | KIND_ANALYSIS) == 0 {
        return Err(plugin.run_error(format!(
            "is a {}, not a sink or an analysis",
            plugin.kind_names().join(" and ")
        )));
    }
    let metadata = if plugin.kinds & KIND_ANALYSIS != 0 {
        Some(plugin.metadata()?)
    } else {
        None
    };
    let mut src = Source::open(read)?;
    let mut inst = plugin.instance(args)?;
    let consume = plugin.raw().consume.expect("checked at load");
    let mut messages = 0u64;
    let walked = src.for_each_message(|m| {
        let kind = match m.item {
            Item::Event => 1,
            Item::DiscardedEvents { .. } => 2,
            Item::DiscardedPackets { .. } => 3,
        };
        inst.view.show(m.cursor, m.stream, m.trace, m.item, m.ns);
        // SAFETY: the header's contract; the handle shows the message.
        let s = unsafe { consume(inst.state, inst.view.handle(), kind) };
        inst.view.hide();
        messages += 1;
        if s != REEF_OK {
            let at =
                m.ns.map(|ns| format!(" at {ns} ns from the origin"))
                    .unwrap_or_default();
            return Err(plugin.run_error(
                inst.failed(&format!("consume (message {messages}{at})"), status_name(s)),
            ));
        }
        Ok(ControlFlow::Continue(()))
    });
    let read_error = walked?;
    let finish = plugin.raw().finish.expect("checked at load");
    let mut doc: *const c_char = std::ptr::null();
    let end = if read_error.is_some() {
        REEF_ERR_READ
    } else {
        REEF_END
    };
    // SAFETY: the header's contract.
    let s = unsafe { finish(inst.state, end, &mut doc) };
    if s != REEF_OK {
        return Err(plugin.run_error(inst.failed("finish", status_name(s))));
    }
    let lami = match metadata {
        Some(meta) => {
            if doc.is_null() {
                return Err(plugin.run_error("finish gave no results (*lami is NULL)"));
            }
            // SAFETY: NUL-terminated, valid until fini (the contract).
            let s = unsafe { CStr::from_ptr(doc) }
                .to_string_lossy()
                .into_owned();
            let v: serde_json::Value = serde_json::from_str(&s)
                .map_err(|e| plugin.run_error(format!("its results are not JSON: {e}")))?;
            lami::check_results(&v, &meta)
                .map_err(|m| plugin.run_error(format!("its results: {m}")))?;
            Some((v, meta))
        }
        None => None,
    };
    drop(inst);
    Ok(Consumed {
        lami,
        messages,
        read_error,
    })
}

/// Where plugins are looked for: `$REEF_PLUGIN_PATH` (directories
/// separated by `:`), then `$XDG_DATA_HOME/reef/plugins` (or
/// `~/.local/share/reef/plugins`).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("REEF_PLUGIN_PATH")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    if let Some(d) = data {
        dirs.push(d.join("reef/plugins"));
    }
    dirs
}

/// The files named `*.EXT` in the search directories, in directory order,
/// then by name.
fn search_files(ext: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for d in search_dirs() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut found: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        found.sort();
        all.extend(found);
    }
    all
}

/// The plugins a front end can use: the files it was given, then every
/// `*.so` in the search directories. A file given that does not load is an
/// error; one found in a directory is listed among `broken`.
#[derive(Default)]
pub struct Registry {
    pub plugins: Vec<Arc<Plugin>>,
    /// The plugin classes of Python files (`*.py`).
    pub python: Vec<Arc<PyPlugin>>,
    pub broken: Vec<PluginError>,
}

fn is_py(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "py")
}

impl Registry {
    pub fn load(files: &[PathBuf], search: bool) -> Result<Registry, PluginError> {
        let mut reg = Registry::default();
        for f in files {
            if is_py(f) {
                reg.python
                    .extend(PyPlugin::describe(f)?.into_iter().map(Arc::new));
            } else {
                reg.plugins.push(Plugin::load(f)?);
            }
        }
        if search {
            for p in search_files("so") {
                match Plugin::load(&p) {
                    Ok(pl) => reg.plugins.push(pl),
                    Err(e) => reg.broken.push(e),
                }
            }
            for p in search_files("py") {
                match PyPlugin::describe(&p) {
                    Ok(v) => reg.python.extend(v.into_iter().map(Arc::new)),
                    Err(e) => reg.broken.push(e),
                }
            }
        }
        Ok(reg)
    }

    /// The Python plugin called `name`, if one is.
    pub fn find_python(&self, name: &str) -> Option<Arc<PyPlugin>> {
        self.python.iter().find(|p| p.name == name).cloned()
    }

    /// The plugin called `name` (the first one found).
    pub fn find(&self, name: &str) -> Result<Arc<Plugin>, PluginError> {
        if let Some(p) = self.plugins.iter().find(|p| p.name == name) {
            return Ok(Arc::clone(p));
        }
        let have: Vec<&str> = self
            .plugins
            .iter()
            .map(|p| p.name.as_str())
            .chain(self.python.iter().map(|p| p.name.as_str()))
            .collect();
        Err(PluginError::NotFound {
            name: name.into(),
            where_: if have.is_empty() {
                "(none loaded: give --plugin FILE.so, or put it in $REEF_PLUGIN_PATH or \
                 ~/.local/share/reef/plugins)"
                    .into()
            } else {
                format!("among {}", have.join(", "))
            },
        })
    }
}

/// `NAME[=ARGS]` split.
pub fn name_and_args(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once('=') {
        Some((n, a)) => (n, Some(a)),
        None => (spec, None),
    }
}

/// `--plugin-filter NAME[=ARGS]`: the filter plugin named, looked for
/// among `files` and the search directories when the first reading starts
/// (so that a command's errors come from one place: opening its source).
pub struct FilterSpec {
    pub files: Vec<PathBuf>,
    pub spec: String,
    found: std::sync::OnceLock<Result<Filter, String>>,
}

impl FilterSpec {
    pub fn new(files: Vec<PathBuf>, spec: impl Into<String>) -> FilterSpec {
        FilterSpec {
            files,
            spec: spec.into(),
            found: std::sync::OnceLock::new(),
        }
    }

    fn filter(&self) -> &Result<Filter, String> {
        self.found.get_or_init(|| {
            let (name, args) = name_and_args(&self.spec);
            let reg = Registry::load(&self.files, true).map_err(|e| e.to_string())?;
            let plugin = reg.find(name).map_err(|e| e.to_string())?;
            Ok(Filter {
                plugin,
                args: args.map(str::to_owned),
            })
        })
    }
}

impl MakeKeeper for FilterSpec {
    fn name(&self) -> String {
        match self.filter() {
            Ok(f) => f.name(),
            Err(_) => format!("--plugin-filter {}", self.spec),
        }
    }

    fn make(&self) -> Result<Box<dyn Keeper>, String> {
        match self.filter() {
            Ok(f) => f.make(),
            Err(e) => Err(e.clone()),
        }
    }
}

/// An external analysis: a program that prints LAMI 1.0 (Trace Compass's
/// "custom analyses"; lttng-analyses' `lttng-*-mi` commands), run as
/// `COMMAND --metadata` for its table classes and `COMMAND TRACE...` for
/// its results. Registered by a `NAME.lami` file (its first line that is
/// not blank or a `#` comment is the command line, run by `sh -c`) in a
/// search directory, or on the command line (`NAME=COMMAND`).
#[derive(Debug, Clone)]
pub struct External {
    pub name: String,
    pub command: String,
    /// Where it was registered (a `.lami` file, or the command line).
    pub origin: String,
}

impl External {
    /// `NAME=COMMAND`.
    pub fn parse(spec: &str) -> Result<External, PluginError> {
        let (name, command) = name_and_args(spec);
        let command = command.unwrap_or("").trim();
        if name.is_empty() || command.is_empty() {
            return Err(PluginError::NotFound {
                name: spec.into(),
                where_: "(expected NAME=COMMAND)".into(),
            });
        }
        Ok(External {
            name: name.into(),
            command: command.into(),
            origin: "the command line".into(),
        })
    }

    fn load(path: &Path) -> Result<External, PluginError> {
        let err = |msg: String| PluginError::Load {
            path: path.into(),
            msg,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let command = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .ok_or_else(|| err("holds no command line".into()))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(External {
            name,
            command: command.into(),
            origin: path.display().to_string(),
        })
    }

    fn error(&self, msg: String) -> PluginError {
        PluginError::Run {
            name: self.name.clone(),
            path: PathBuf::from(&self.origin),
            msg,
        }
    }

    /// Runs the command with `args`; its standard output, parsed as JSON.
    fn run(&self, args: &[std::ffi::OsString]) -> Result<serde_json::Value, PluginError> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{} \"$@\"", self.command))
            .arg("sh")
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| self.error(format!("`{}` did not start: {e}", self.command)))?;
        if !out.status.success() {
            // LAMI's way to fail: `{"error-message": ...}` on stdout.
            let said = serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .ok()
                .and_then(|v| v.get("error-message")?.as_str().map(str::to_owned));
            if let Some(m) = said {
                return Err(self.error(format!("`{}` failed ({}): {m}", self.command, out.status)));
            }
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(5).collect();
            return Err(self.error(format!(
                "`{}` failed ({}){}",
                self.command,
                out.status,
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": {}",
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    )
                }
            )));
        }
        serde_json::from_slice(&out.stdout)
            .map_err(|e| self.error(format!("`{}` printed no LAMI JSON: {e}", self.command)))
    }

    /// Its LAMI metadata, checked.
    pub fn metadata(&self) -> Result<serde_json::Value, PluginError> {
        let v = self.run(&["--metadata".into()])?;
        lami::check_metadata(&v).map_err(|m| self.error(format!("its metadata: {m}")))?;
        Ok(v)
    }

    /// Its results on `paths` (with `args` before them), checked against
    /// its metadata: (results, metadata).
    pub fn analyse(
        &self,
        args: &[String],
        paths: &[PathBuf],
    ) -> Result<(serde_json::Value, serde_json::Value), PluginError> {
        let meta = self.metadata()?;
        let mut a: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        a.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
        let v = self.run(&a)?;
        lami::check_results(&v, &meta).map_err(|m| self.error(format!("its results: {m}")))?;
        Ok((v, meta))
    }
}

/// The external analyses registered by `NAME.lami` files in the search
/// directories, and those that do not load.
pub fn externals() -> (Vec<External>, Vec<PluginError>) {
    let (mut found, mut broken) = (Vec::new(), Vec::new());
    for f in search_files("lami") {
        match External::load(&f) {
            Ok(e) => found.push(e),
            Err(e) => broken.push(e),
        }
    }
    (found, broken)
}
