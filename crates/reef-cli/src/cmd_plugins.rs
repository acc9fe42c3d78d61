//! `reef plugins`, `reef sink` and `reef analyse`: plugins (shared objects
//! built against reef_plugin.h) listed, and run over a reading by
//! `reef_plugin`. Filters run through every reading command's
//! `--plugin-filter`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reef_plugin::{consume, name_and_args, External, Registry};

use crate::source::ReadOpts;

#[derive(clap::Args)]
pub struct PluginsArgs {
    /// Load this plugin file too. Repeatable.
    #[arg(long = "plugin", value_name = "FILE.so|FILE.py")]
    pub plugins: Vec<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct SinkArgs {
    /// The sink plugin, and its arguments after `=`.
    #[arg(value_name = "NAME[=ARGS]")]
    pub spec: String,
    #[command(flatten)]
    pub read: ReadOpts,
}

#[derive(clap::Args)]
pub struct AnalyseArgs {
    /// The analysis plugin, and its arguments after `=`.
    #[arg(value_name = "NAME[=ARGS]")]
    pub spec: String,
    #[command(flatten)]
    pub read: ReadOpts,
    /// Print the results as LAMI 1.0 JSON (as lttng-analyses' --mi).
    #[arg(long)]
    pub lami: bool,
    /// Print the analysis's LAMI metadata (title, table classes) and exit;
    /// no trace is read.
    #[arg(long)]
    pub metadata: bool,
    /// Register an external analysis: a program printing LAMI 1.0 (e.g.
    /// `cputop-mi=lttng-cputop-mi`), run as `COMMAND --metadata` and
    /// `COMMAND [ARGS] TRACE...`; a `NAME.lami` file holding the command
    /// in a plugin directory does the same. Repeatable.
    #[arg(long, value_name = "NAME=COMMAND")]
    pub lami_command: Vec<String>,
}

pub fn list(a: &PluginsArgs) -> anyhow::Result<ExitCode> {
    let reg = Registry::load(&a.plugins, true)?;
    let (ext, ext_broken) = reef_plugin::externals();
    let mut out = std::io::stdout().lock();
    if a.json {
        let entry = |name: &str,
                     kinds: Vec<&str>,
                     version: &str,
                     description: &str,
                     path: &PathBuf,
                     lang: &str| {
            serde_json::json!({
                "name": name,
                "kinds": kinds,
                "version": version,
                "description": description,
                "path": path,
                "language": lang,
            })
        };
        let v: Vec<serde_json::Value> = reg
            .plugins
            .iter()
            .map(|p| {
                entry(
                    &p.name,
                    p.kind_names(),
                    &p.version,
                    &p.description,
                    &p.path,
                    "c",
                )
            })
            .chain(reg.python.iter().map(|p| {
                entry(
                    &p.name,
                    p.kind_names(),
                    &p.version,
                    &p.description,
                    &p.path,
                    "python",
                )
            }))
            .collect();
        let broken: Vec<String> = reg.broken.iter().map(|e| e.to_string()).collect();
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "plugins": v,
                "external": ext.iter().map(|e| serde_json::json!({
                    "name": e.name, "command": e.command, "origin": e.origin,
                })).collect::<Vec<_>>(),
                "broken": broken,
                "search": reef_plugin::search_dirs(),
            }),
        )?;
        writeln!(out)?;
    } else {
        if reg.plugins.is_empty() && reg.python.is_empty() {
            writeln!(out, "no plugin found")?;
        }
        for p in &reg.python {
            writeln!(
                out,
                "{} {} [{}, python]\n    {}\n    {}",
                p.name,
                p.version,
                p.kind_names().join(", "),
                p.description,
                p.path.display()
            )?;
        }
        for p in &reg.plugins {
            writeln!(
                out,
                "{} {} [{}]\n    {}\n    {}",
                p.name,
                p.version,
                p.kind_names().join(", "),
                p.description,
                p.path.display()
            )?;
        }
        let dirs: Vec<String> = reef_plugin::search_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        writeln!(out, "searched: {}", dirs.join(":"))?;
    }
    if !a.json {
        for e in &ext {
            writeln!(
                out,
                "{} [external analysis]\n    {}\n    {}",
                e.name, e.command, e.origin
            )?;
        }
    }
    for e in reg.broken.iter().chain(&ext_broken) {
        eprintln!("reef: warning: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn sink(a: &SinkArgs) -> anyhow::Result<ExitCode> {
    let (name, args) = name_and_args(&a.spec);
    let reg = Registry::load(&a.read.plugins, true)?;
    if !reg.plugins.iter().any(|p| p.name == name) {
        if let Some(py) = reg.find_python(name) {
            if py.kinds & reef_plugin::KIND_SINK == 0 {
                anyhow::bail!(
                    "plugin {} is a {}, not a sink",
                    py.name,
                    py.kind_names().join(" and ")
                );
            }
            let code = py.sink(args, &a.read.options())?;
            return Ok(ExitCode::from(code.clamp(0, 255) as u8));
        }
    }
    let p = reg.find(name)?;
    if p.kinds & reef_plugin::KIND_SINK == 0 {
        anyhow::bail!(
            "plugin {} is a {}, not a sink",
            p.name,
            p.kind_names().join(" and ")
        );
    }
    let done = consume(&p, args, &a.read.options())?;
    if let Some(e) = done.read_error {
        return Err(e.into());
    }
    Ok(ExitCode::SUCCESS)
}

/// The external analysis `name`: given on the command line, else (when no
/// plugin has the name) registered by a `.lami` file.
fn external(a: &AnalyseArgs, name: &str, plugin_found: bool) -> anyhow::Result<Option<External>> {
    for spec in &a.lami_command {
        let e = External::parse(spec)?;
        if e.name == name {
            return Ok(Some(e));
        }
    }
    if plugin_found {
        return Ok(None);
    }
    Ok(reef_plugin::externals()
        .0
        .into_iter()
        .find(|e| e.name == name))
}

fn run_external(a: &AnalyseArgs, e: &External, args: Option<&str>) -> anyhow::Result<ExitCode> {
    let r = &a.read;
    if r.begin.is_some()
        || r.end.is_some()
        || r.filter.is_some()
        || r.script.is_some()
        || !r.plugin_filter.is_empty()
    {
        anyhow::bail!(
            "{} is an external analysis ({}): it reads the traces itself, so --begin, --end, \
             --filter, --script and --plugin-filter do not apply (give its own options after `=`)",
            e.name,
            e.command
        );
    }
    let mut out = std::io::stdout().lock();
    if a.metadata {
        serde_json::to_writer(&mut out, &e.metadata()?)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let args: Vec<String> = args
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let (results, meta) = e.analyse(&args, &r.paths)?;
    print_results(&mut out, a.lami, &results, &meta)?;
    Ok(ExitCode::SUCCESS)
}

fn print_results(
    out: &mut impl Write,
    lami: bool,
    results: &serde_json::Value,
    meta: &serde_json::Value,
) -> anyhow::Result<()> {
    if lami {
        serde_json::to_writer(&mut *out, results)?;
        writeln!(out)?;
    } else {
        for (i, t) in reef_plugin::tables(results, meta).iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            out.write_all(t.text().as_bytes())?;
        }
    }
    Ok(())
}

pub fn analyse(a: &AnalyseArgs) -> anyhow::Result<ExitCode> {
    let (name, args) = name_and_args(&a.spec);
    let found = Registry::load(&a.read.plugins, true)?.find(name);
    if let Some(e) = external(a, name, found.is_ok())? {
        return run_external(a, &e, args);
    }
    let p = found?;
    if p.kinds & reef_plugin::KIND_ANALYSIS == 0 {
        anyhow::bail!(
            "plugin {} is a {}, not an analysis",
            p.name,
            p.kind_names().join(" and ")
        );
    }
    let mut out = std::io::stdout().lock();
    if a.metadata {
        serde_json::to_writer(&mut out, &p.metadata()?)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let done = consume(&p, args, &a.read.options())?;
    let Some((results, meta)) = done.lami else {
        anyhow::bail!("plugin {} gave no results", p.name);
    };
    print_results(&mut out, a.lami, &results, &meta)?;
    if let Some(e) = done.read_error {
        return Err(e.into());
    }
    Ok(ExitCode::SUCCESS)
}
