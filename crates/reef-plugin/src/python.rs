//! Python plugins: a module file whose `reef.plugin.Source` and
//! `reef.plugin.Sink` classes the reef Python package runs
//! (python/reef/plugin.py). The host does not embed Python: it starts
//! the package (`python3`, or `$REEF_PYTHON`) to describe a file's
//! plugins, to convert a file with a source (into a CTF directory, read
//! back with [`reef_ctf::source::read_dir`]) and to run a sink over the
//! same reading as the command's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use reef_ctf::source::{Converted, Format};
use reef_ctf::Error;
use reef_read::ReadOptions;

use crate::{PluginError, KIND_SINK, KIND_SOURCE};

/// A plugin class of a Python file.
#[derive(Debug, Clone)]
pub struct PyPlugin {
    pub path: PathBuf,
    pub name: String,
    pub version: String,
    pub description: String,
    pub kinds: u32,
    /// A source's detection: the bytes its files start with, the
    /// suffixes of their names.
    pub magic: Vec<u8>,
    pub suffixes: Vec<String>,
}

fn python() -> OsString {
    std::env::var_os("REEF_PYTHON").unwrap_or_else(|| "python3".into())
}

fn package(args: &[OsString]) -> Command {
    let mut c = Command::new(python());
    c.arg("-c").arg(reef_read::script::BOOT).args(args);
    c
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

impl PyPlugin {
    /// The plugins the Python file `path` defines.
    pub fn describe(path: &Path) -> Result<Vec<PyPlugin>, PluginError> {
        let err = |msg: String| PluginError::Load {
            path: path.into(),
            msg,
        };
        let out = package(&["plugin-describe".into(), path.into()])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                err(format!(
                    "Python plugins run in the reef Python package: starting `{}` failed: {e}",
                    python().to_string_lossy()
                ))
            })?;
        if !out.status.success() {
            let e = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = e.lines().rev().take(8).collect();
            return Err(err(format!(
                "describing it failed ({}): {}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| err(format!("its description is not JSON: {e}")))?;
        let list = v
            .as_array()
            .ok_or_else(|| err("its description is not a list".into()))?;
        let mut found = Vec::new();
        for d in list {
            let s = |k: &str| d.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            let name = s("name");
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(err(format!(
                    "a plugin name {name:?} is not letters, digits, '-' and '_'"
                )));
            }
            let mut kinds = 0;
            for k in d
                .get("kinds")
                .and_then(|k| k.as_array())
                .into_iter()
                .flatten()
            {
                kinds |= match k.as_str() {
                    Some("source") => KIND_SOURCE,
                    Some("sink") => KIND_SINK,
                    _ => 0,
                };
            }
            found.push(PyPlugin {
                path: path.into(),
                name,
                version: s("version"),
                description: s("description"),
                kinds,
                magic: unhex(&s("magic")),
                suffixes: d
                    .get("suffixes")
                    .and_then(|x| x.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect(),
            });
        }
        Ok(found)
    }

    /// The kinds' names.
    pub fn kind_names(&self) -> Vec<&'static str> {
        [(KIND_SOURCE, "source"), (KIND_SINK, "sink")]
            .into_iter()
            .filter(|(k, _)| self.kinds & k != 0)
            .map(|(_, n)| n)
            .collect()
    }

    /// Runs the sink over the reading `read`: the package reads the same
    /// paths, window and filter. Its exit status.
    pub fn sink(&self, args: Option<&str>, read: &ReadOptions) -> Result<i32, PluginError> {
        let run_err = |msg: String| PluginError::Run {
            name: self.name.clone(),
            path: self.path.clone(),
            msg,
        };
        if read.script.is_some() || !read.keepers.0.is_empty() {
            return Err(run_err(
                "a Python sink reads the traces in the Python package: --script and \
                 --plugin-filter do not apply to it"
                    .into(),
            ));
        }
        let mut a: Vec<OsString> = vec![
            "plugin-sink".into(),
            self.path.clone().into(),
            self.name.clone().into(),
        ];
        if let Some(x) = args {
            a.push("--args".into());
            a.push(x.into());
        }
        if let Some(b) = &read.begin {
            a.push("--begin".into());
            a.push(b.to_string().into());
        }
        if let Some(e) = &read.end {
            a.push("--end".into());
            a.push(e.to_string().into());
        }
        if let Some(f) = &read.filter {
            a.push("--filter".into());
            a.push(f.into());
        }
        if let Some(j) = read.workers {
            a.push("-j".into());
            a.push(j.to_string().into());
        }
        a.push("--".into());
        a.extend(read.paths.iter().map(Into::into));
        let st = package(&a).stdin(Stdio::null()).status().map_err(|e| {
            run_err(format!(
                "starting `{}` failed: {e}",
                python().to_string_lossy()
            ))
        })?;
        Ok(st.code().unwrap_or(1))
    }
}

/// A Python source as a [`reef_ctf::source`] format.
pub(crate) struct PySource(pub Arc<PyPlugin>);

impl Format for PySource {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn description(&self) -> &str {
        &self.0.description
    }

    fn detect(&self, path: &Path, head: &[u8]) -> bool {
        let p = &self.0;
        (!p.magic.is_empty() && head.starts_with(&p.magic))
            || path
                .file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| {
                    p.suffixes
                        .iter()
                        .any(|s| !s.is_empty() && n.ends_with(s.as_str()))
                })
    }

    fn convert(&self, path: &Path) -> Result<Converted, Error> {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = &self.0;
        let err = |msg: String| Error::Stream {
            path: path.to_path_buf(),
            offset: 0,
            msg: format!("plugin {} ({}): {msg}", p.name, p.path.display()),
        };
        let dir = std::env::temp_dir().join(format!(
            ".reef-source-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        // The source's traceback, if it raises, goes to the user as is.
        let st = package(&[
            "plugin-source".into(),
            p.path.clone().into(),
            p.name.clone().into(),
            path.into(),
            dir.clone().into(),
        ])
        .stdin(Stdio::null())
        .status();
        let done = match st {
            Ok(s) if s.success() => reef_ctf::source::read_dir(path, &dir),
            Ok(s) => Err(err(format!("the Python package failed ({s})"))),
            Err(e) => Err(err(format!(
                "starting `{}` failed: {e}",
                python().to_string_lossy()
            ))),
        };
        let _ = std::fs::remove_dir_all(&dir);
        done
    }
}
