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
    /// Whether event text is coloured: as babeltrace2, `always` or `auto`
    /// with stdout a terminal, and in both cases only when the terminal
    /// supports colour ([`term_color_support`]).
    pub fn enabled(self) -> bool {
        let wanted = match self {
            ColorWhen::Never => false,
            ColorWhen::Always => true,
            ColorWhen::Auto => std::io::stdout().is_terminal(),
        };
        wanted && term_color_support()
    }
}

/// babeltrace2's global colour support: forced by
/// `BABELTRACE_TERM_COLOR=always|never`, otherwise a known colour terminal
/// type with both stdout and stderr on a terminal.
pub fn term_color_support() -> bool {
    match std::env::var("BABELTRACE_TERM_COLOR").as_deref() {
        Ok(v) if v.eq_ignore_ascii_case("always") => return true,
        Ok(v) if v.eq_ignore_ascii_case("never") => return false,
        _ => {}
    }
    let term_ok = std::env::var("TERM").is_ok_and(|t| {
        [
            "xterm", "rxvt", "konsole", "gnome", "screen", "tmux", "putty",
        ]
        .iter()
        .any(|p| t.starts_with(p))
    });
    term_ok && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}
