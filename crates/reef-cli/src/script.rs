//! `reef activities --script FILE.py` (an activity decoder, and the script's
//! `keep(event)` when it has one; with `--begin`/`--end` the command runs
//! itself and `--script` is a filter, as on every reading command): the command line
//! is handed to the `reef` Python package (`python3 -m reef ...`, or
//! `$REEF_PYTHON`), which runs the script over the same reading library.
//! The binary does not link libpython: it stays one file that runs without
//! Python, and a script costs only the Python start (about 50 ms) plus the
//! Python calls per event.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

/// `python -m reef`, with a clear message when the package is missing.
const BOOT: &str = "import sys
try:
    import reef.__main__ as m
except ImportError as e:
    sys.exit(f'reef: error: --script needs the reef Python package ({e}); install it: pip install ./python')
sys.exit(m.main(sys.argv[1:]))
";

/// Replaces this process with `python3 -m reef` and the same arguments;
/// returns only when that cannot start.
pub fn delegate() -> anyhow::Result<ExitCode> {
    let python = std::env::var_os("REEF_PYTHON").unwrap_or_else(|| "python3".into());
    let err = Command::new(&python)
        .args(["-c", BOOT])
        .args(std::env::args_os().skip(1))
        .exec();
    anyhow::bail!(
        "--script runs Python scripts through the reef Python package: starting `{} -m reef` failed: {err} \
         (install the package: pip install ./python; REEF_PYTHON chooses the interpreter)",
        python.to_string_lossy()
    )
}
