//! Output helpers: quiet exit on a closed pipe, colour detection.

use std::io::IsTerminal;

/// Restores the default SIGPIPE action is *not* done: a closed pipe
/// surfaces as an `EPIPE` write error, which [`is_broken_pipe`] recognises so
/// that `reef print T | head` exits 0 quietly.
pub fn reset_sigpipe() {}

pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Never,
    Auto,
    Always,
}

impl ColorWhen {
    pub fn enabled(self) -> bool {
        match self {
            ColorWhen::Never => false,
            ColorWhen::Always => true,
            ColorWhen::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var("TERM").map_or(true, |t| t != "dumb")
                    && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }
}
