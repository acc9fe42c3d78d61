//! Script filters ([`ReadOptions::script`]): a Python file's
//! `keep(event) -> bool` applied like `--filter`, by every reading command.
//!
//! The library does not embed Python. It starts the `reef` Python package
//! (`python3`, or `$REEF_PYTHON`) on the same reading — same paths,
//! window and filter, so the same events in the same order — and the
//! package sends back one bit per event: kept or not. The reading takes
//! the N-th bit for its N-th event. The bits are kept (one bit an event),
//! so a command reading the traces several times (the frequency pass of
//! `reef periods`, an analysis' passes) runs the script once.
//!
//! The bits arrive as frames: a little-endian `u32` count of events, then
//! that many bits packed least significant first; a count of zero ends
//! the stream. A stream ending without it means the script failed: its
//! traceback, and the event it failed on, went to stderr.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::{Error, ReadOptions};

/// Starts the package's command line (`python/reef/__main__.py`): its
/// arguments follow.
pub const BOOT: &str = "import sys
try:
    import reef.__main__ as m
except ImportError as e:
    sys.exit(f'reef: error: --script needs the reef Python package ({e}); install it: pip install ./python')
sys.exit(m.main(sys.argv[1:]))
";

#[derive(Default)]
struct State {
    words: Vec<u64>,
    len: u64,
    /// `Some` once the stream ended: `Ok` after its end frame, or why not.
    done: Option<Result<(), String>>,
}

/// One script's verdicts on one reading's events, as they arrive.
pub struct KeepBits {
    script: PathBuf,
    state: Mutex<State>,
    grown: Condvar,
}

impl KeepBits {
    /// The verdict on the `n`-th event (from 0), waiting for it.
    pub fn get(&self, n: u64) -> Result<bool, Error> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if n < st.len {
                return Ok(st.words[(n / 64) as usize] >> (n % 64) & 1 == 1);
            }
            match &st.done {
                None => st = self.grown.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(Ok(())) => {
                    return Err(self.error(format!(
                        "the script's reading ended after {} events, this one has more \
                         (did the traces change?)",
                        st.len
                    )))
                }
                Some(Err(why)) => return Err(self.error(why.clone())),
            }
        }
    }

    fn error(&self, msg: String) -> Error {
        Error::Script {
            script: self.script.clone(),
            msg,
        }
    }

    fn push(&self, bytes: &[u8], count: u32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..count as u64 {
            let bit = bytes[(i / 8) as usize] >> (i % 8) & 1;
            let n = st.len;
            if n.is_multiple_of(64) {
                st.words.push(0);
            }
            if bit == 1 {
                st.words[(n / 64) as usize] |= 1 << (n % 64);
            }
            st.len += 1;
        }
        drop(st);
        self.grown.notify_all();
    }

    fn finish(&self, r: Result<(), String>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.done = Some(r);
        drop(st);
        self.grown.notify_all();
    }
}

/// The arguments that make the package read what `opts` reads.
fn args(opts: &ReadOptions, script: &std::path::Path) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = vec!["keep-bits".into(), "--script".into()];
    a.push(script.into());
    if let Some(b) = &opts.begin {
        a.push("--begin".into());
        a.push(b.to_string().into());
    }
    if let Some(e) = &opts.end {
        a.push("--end".into());
        a.push(e.to_string().into());
    }
    if opts.gmt {
        a.push("--gmt".into());
    }
    if let Some(f) = &opts.filter {
        a.push("--filter".into());
        a.push(f.into());
    }
    a.push("--".into());
    a.extend(opts.paths.iter().map(Into::into));
    a
}

/// The verdicts of `opts.script` on the reading `opts` describes: started
/// once per process and reading, shared by every pass.
pub fn keep_bits(opts: &ReadOptions) -> Result<Option<Arc<KeepBits>>, Error> {
    let Some(script) = &opts.script else {
        return Ok(None);
    };
    static RUNS: OnceLock<Mutex<HashMap<Vec<std::ffi::OsString>, Arc<KeepBits>>>> = OnceLock::new();
    let key = args(opts, script);
    let mut runs = RUNS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(k) = runs.get(&key) {
        return Ok(Some(k.clone()));
    }
    if opts.paths.iter().any(|p| crate::lttng_live::is_live(p)) {
        return Err(Error::Script {
            script: script.clone(),
            msg: "a script does not read live sessions (the relay lets one viewer attach \
                  to a session, and the script's reading would be a second one)"
                .into(),
        });
    }
    if !script.is_file() {
        return Err(Error::Script {
            script: script.clone(),
            msg: "no such file".into(),
        });
    }
    let python = std::env::var_os("REEF_PYTHON").unwrap_or_else(|| "python3".into());
    let mut child = Command::new(&python)
        .args(["-c", BOOT])
        .args(&key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|err| Error::Script {
            script: script.clone(),
            msg: format!(
                "scripts run in the reef Python package: starting `{}` failed: {err} \
                 (install the package: pip install ./python; REEF_PYTHON chooses the interpreter)",
                python.to_string_lossy()
            ),
        })?;
    let bits = Arc::new(KeepBits {
        script: script.clone(),
        state: Mutex::default(),
        grown: Condvar::new(),
    });
    let mut out = child.stdout.take().expect("piped stdout");
    let b = bits.clone();
    std::thread::Builder::new()
        .name("reef-script".into())
        .spawn(move || {
            let ended = read_frames(&mut out, &b);
            drop(out);
            let status = child.wait();
            b.finish(match (ended, status) {
                (Ok(true), _) => Ok(()),
                (Ok(false), Ok(s)) => Err(format!("the script stopped ({s})")),
                (Err(e), _) => Err(format!("reading the script's verdicts: {e}")),
                (_, Err(e)) => Err(format!("waiting for the script: {e}")),
            });
        })
        .map_err(|err| Error::Script {
            script: script.clone(),
            msg: format!("starting a thread: {err}"),
        })?;
    runs.insert(key, bits.clone());
    Ok(Some(bits))
}

/// A script's verdicts on one stream's events, in the stream's order.
#[derive(Default, Debug, Clone)]
pub struct StreamBits {
    words: Vec<u64>,
    len: u64,
}

impl StreamBits {
    /// No verdicts.
    pub const EMPTY: StreamBits = StreamBits {
        words: Vec::new(),
        len: 0,
    };

    fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            self.words[(self.len / 64) as usize] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    /// The verdict on the stream's `n`-th event of the reading (from 0);
    /// `None` past the events the script saw.
    pub fn get(&self, n: u64) -> Option<bool> {
        (n < self.len).then(|| self.words[(n / 64) as usize] >> (n % 64) & 1 == 1)
    }
}

/// `opts.script`'s verdicts sorted out per stream (index as in
/// [`crate::Msg::stream`]), for a reader that reads each stream on its
/// own (the CTF writer): the reading of `opts` without the script is
/// walked once in time order, its N-th event getting the script's N-th
/// verdict. A stream's events in that reading are, in order, the events
/// it holds in the window that pass the filter, so the stream's `n`-th
/// such event gets bit `n`. A reading error ends the walk: the verdicts
/// before it stand (the reader meets the same error).
///
/// The keepers ([`ReadOptions::keepers`]) are sorted out the same way:
/// an event's bit is set when the script and every keeper keep it.
pub fn per_stream(opts: &ReadOptions) -> Result<Option<Vec<StreamBits>>, Error> {
    let bits = keep_bits(opts)?;
    if bits.is_none() && opts.keepers.is_empty() {
        return Ok(None);
    }
    let mut plain = opts.clone();
    plain.script = None;
    plain.keepers = Default::default();
    let mut keepers = crate::keeper::make_all(&opts.keepers)?;
    let mut src = crate::Source::open(&plain)?;
    let mut per = vec![StreamBits::default(); src.cursors().len()];
    let mut n = 0u64;
    let walked = src.for_each_message(|m| {
        if m.item == reef_ctf::Item::Event {
            let mut kept = match &bits {
                Some(bits) => bits.get(n)?,
                None => true,
            };
            n += 1;
            let at = crate::keeper::KeepAt {
                cursor: m.cursor,
                stream: m.stream,
                trace: m.trace,
                ns: m.ns,
            };
            kept = kept && crate::keeper::keep_all(&mut keepers, &at)?;
            per[m.stream].push(kept);
        }
        Ok::<_, Error>(std::ops::ControlFlow::Continue(()))
    });
    walked?;
    Ok(Some(per))
}

/// Reads frames into `bits`; true when the end frame came.
fn read_frames(r: &mut impl Read, bits: &KeepBits) -> std::io::Result<bool> {
    let mut buf = Vec::new();
    loop {
        let mut n = [0u8; 4];
        if let Err(e) = r.read_exact(&mut n) {
            return match e.kind() {
                std::io::ErrorKind::UnexpectedEof => Ok(false),
                _ => Err(e),
            };
        }
        let count = u32::from_le_bytes(n);
        if count == 0 {
            return Ok(true);
        }
        buf.resize(count.div_ceil(8) as usize, 0);
        if let Err(e) = r.read_exact(&mut buf) {
            return match e.kind() {
                std::io::ErrorKind::UnexpectedEof => Ok(false),
                _ => Err(e),
            };
        }
        bits.push(&buf, count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits() -> KeepBits {
        KeepBits {
            script: "s.py".into(),
            state: Mutex::default(),
            grown: Condvar::new(),
        }
    }

    #[test]
    fn frames_become_bits_in_order() {
        // 10 events: 1,0,1,1,0,0,0,1 | 0,1; then 70 events all kept; end.
        let mut wire = vec![10, 0, 0, 0, 0b1000_1101, 0b10];
        wire.extend([70, 0, 0, 0]);
        wire.extend([0xff; 9]);
        wire.extend([0, 0, 0, 0]);
        let b = bits();
        assert!(read_frames(&mut &wire[..], &b).unwrap());
        b.finish(Ok(()));
        let got: Vec<bool> = (0..10).map(|n| b.get(n).unwrap()).collect();
        let want = [
            true, false, true, true, false, false, false, true, false, true,
        ];
        assert_eq!(got, want);
        assert!((10..80).all(|n| b.get(n).unwrap()));
        let e = b.get(80).unwrap_err().to_string();
        assert!(e.contains("ended after 80 events"), "{e}");
    }

    #[test]
    fn a_cut_stream_is_the_script_failing() {
        let wire = [10u8, 0, 0, 0, 0xff]; // one byte of two
        let b = bits();
        assert!(!read_frames(&mut &wire[..], &b).unwrap());
        b.finish(Err("the script stopped (exit status: 1)".into()));
        let e = b.get(0).unwrap_err().to_string();
        assert!(e.contains("s.py") && e.contains("exit status: 1"), "{e}");
    }
}
