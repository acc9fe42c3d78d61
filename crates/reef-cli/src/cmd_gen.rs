//! `reef gen SCHEMA -o OUTDIR`: generate the C header, the CTF metadata and
//! the JSON dictionary of a `.reef` schema.

use std::path::PathBuf;

/// Generate the C header, CTF metadata and JSON dictionary of a `.reef` schema.
#[derive(Debug, clap::Args)]
pub struct GenArgs {
    /// The `.reef` schema file.
    pub schema: PathBuf,
    /// Output directory (created if missing).
    #[arg(short = 'o', long = "output", value_name = "OUTDIR")]
    pub out: PathBuf,
}

pub fn run(args: &GenArgs) -> anyhow::Result<()> {
    // Both error kinds already name the file (`file:line:column: expected
    // ...`, or `path: io error`): no extra context.
    let generated = reef_gen::generate(&args.schema, &args.out)?;
    let events: usize = generated
        .schema
        .subsystems
        .iter()
        .map(|s| s.events.len())
        .sum();
    eprintln!(
        "reef gen: {} subsystems, {} events -> {}, {}, {}",
        generated.schema.subsystems.len(),
        events,
        generated.header.display(),
        generated.metadata.display(),
        generated.json.display()
    );
    Ok(())
}
