//! What an installation puts beside the binary, generated from the command
//! line's own definition so that it cannot drift from it: shell completions
//! (`reef completions SHELL`, printed) and manual pages (`reef man OUTDIR`,
//! hidden: one page for `reef` and one for each subcommand, which `make
//! install` and `cmake --install` put in `share/man/man1`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap_complete::Shell;

/// Print a completion script for SHELL on stdout.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Write the manual pages of `reef` and of each subcommand into OUTDIR.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Output directory (created if missing).
    pub out: PathBuf,
}

pub fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<()> {
    // Rendered into memory first: the generators panic on a write error,
    // and `reef completions bash | head` must end quietly.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "reef", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(())
}

pub fn man(args: &ManArgs, cmd: clap::Command) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("{}: cannot create the directory", args.out.display()))?;
    let mut cmd = cmd.disable_help_subcommand(true);
    // Building gives every subcommand its display name (`reef-print`),
    // which names its page and its title.
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, &args.out, &mut written)?;
    eprintln!(
        "reef man: {} pages -> {}",
        written.len(),
        args.out.display()
    );
    Ok(())
}

/// `cmd`'s page and those of its visible subcommands, depth first.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let version = cmd.get_version().unwrap_or(env!("CARGO_PKG_VERSION"));
    let page = clap_mangen::Man::new(cmd.clone())
        .source(format!("reef {version}"))
        .manual("reef manual");
    let path = dir.join(page.get_filename());
    let mut bytes = Vec::new();
    page.render(&mut bytes)?;
    std::fs::write(&path, bytes).with_context(|| format!("{}: cannot write", path.display()))?;
    written.push(path);
    Ok(())
}
