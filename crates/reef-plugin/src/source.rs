//! Source plugins as [`reef_ctf::source`] formats: a plugin's `detect`
//! claims a file, its `read` delivers events through the
//! `reef_source_*` functions into a [`Builder`], which makes the CTF
//! trace every front end reads.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use crate::out::reef_source;
use reef_ctf::source::{Builder, Converted, Format};
use reef_ctf::Error;

use crate::{status_name, Plugin, PluginError, Registry, KIND_SOURCE, REEF_OK};

struct PluginSource {
    plugin: Arc<Plugin>,
}

impl Format for PluginSource {
    fn name(&self) -> &str {
        &self.plugin.name
    }

    fn description(&self) -> &str {
        &self.plugin.description
    }

    fn detect(&self, path: &Path, head: &[u8]) -> bool {
        let Some(f) = self.plugin.raw().detect else {
            return false;
        };
        let Ok(p) = CString::new(path.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: the header's contract: a C string and `len` bytes.
        unsafe { f(p.as_ptr(), head.as_ptr(), head.len()) == 1 }
    }

    fn convert(&self, path: &Path) -> Result<Converted, Error> {
        let err = |msg: String| Error::Stream {
            path: path.to_path_buf(),
            offset: 0,
            msg,
        };
        let pl = &self.plugin;
        let read = pl.raw().read.ok_or_else(|| err("is not a source".into()))?;
        let inst = pl.instance(None).map_err(|e| err(e.to_string()))?;
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| err("the path holds a NUL byte".into()))?;
        let mut out = reef_source::new(Builder::new(path, &pl.name));
        // SAFETY: the header's contract: the state `init` made, a C
        // string, and a handle valid for the call.
        let st = unsafe { read(inst.state, cpath.as_ptr(), &mut out) };
        if st != REEF_OK {
            let why = inst.failed("read", status_name(st));
            out.builder
                .fail_with(format!("plugin {} ({}): {why}", pl.name, pl.path.display()));
        }
        drop(inst);
        out.builder.finish()
    }
}

/// Registers the source plugins among `files` and in the search
/// directories, loaded when a file no built-in format claims is read or a
/// source is named (`-i NAME`). Once per process.
pub fn install_sources(files: &[PathBuf]) {
    static ONCE: Once = Once::new();
    let files = files.to_vec();
    ONCE.call_once(move || {
        reef_ctf::source::add_provider(Box::new(move || {
            let reg = Registry::load(&files, true).map_err(|e: PluginError| e.to_string())?;
            let c = reg
                .plugins
                .into_iter()
                .filter(|p| p.kinds & KIND_SOURCE != 0)
                .map(|plugin| Arc::new(PluginSource { plugin }) as Arc<dyn Format>);
            let py = reg
                .python
                .into_iter()
                .filter(|p| p.kinds & KIND_SOURCE != 0)
                .map(|p| Arc::new(crate::python::PySource(p)) as Arc<dyn Format>);
            Ok(c.chain(py).collect())
        }));
    });
}
