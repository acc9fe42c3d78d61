//! Running an analysis over a reading: the time range lttng-analyses
//! analyses, from [`ReadOptions`] to result tables.

use std::ops::ControlFlow;

use reef_ctf::EnvValue;
use reef_read::{ReadOptions, Source};

use crate::event::{Decoder, Event};
use crate::lami::Table;
use crate::skim;
use crate::{Analysis, Runner};

/// Why an analysis could not start.
#[derive(Debug, thiserror::Error)]
pub enum AnalyseError {
    #[error(transparent)]
    Read(#[from] reef_read::Error),
    #[error("the trace's streams have no time in common; use --no-intersection")]
    NoCommonTime,
    #[error("--begin: time out of range")]
    BeginOutOfRange,
}

/// Whether `src` holds an LTTng kernel trace (`env.domain = "kernel"`),
/// LAMI's `--test-compatibility`.
pub fn is_kernel_trace(src: &Source) -> bool {
    src.traces
        .iter()
        .any(|t| matches!(t.meta().env_get("domain"), Some(EnvValue::Str(d)) if d == "kernel"))
}

/// Runs `analysis` over the traces of `read` and returns its tables, with
/// the reading error that stopped it, if any (the tables then cover the
/// events before it).
///
/// As lttng-analyses: the kernel model sees every event from the start of
/// the trace; `read.begin` only starts the analysed period (its first
/// event at or after that time), `read.end` ends it. With `intersection`,
/// only the time range every stream covers is seen at all. Without a
/// filter, the streams are read as [`skim`] says: with `read.workers` 2
/// or more (or unset, on a machine with two CPUs or more and streams
/// large enough) decoded on a second thread while the calling one merges
/// them and runs the model ([`skim::pipelined`]), else on the calling
/// thread; with one, by a [`Source`] (`read.workers` defaulting to 1).
pub fn analyse<A: Analysis>(
    read: &ReadOptions,
    analysis: A,
    intersection: bool,
) -> Result<(Vec<Table>, Option<reef_read::Error>), AnalyseError> {
    let a = analyse_model(read, analysis, intersection)?;
    Ok((a.tables, a.stopped))
}

/// What [`analyse_model`] gives.
pub struct Analysed<A> {
    /// The result tables.
    pub tables: Vec<Table>,
    /// The reading error that stopped the analysis, if any.
    pub stopped: Option<reef_read::Error>,
    /// The model and the analysis at the end (none if no event was read).
    pub model: Option<Runner<A>>,
    /// What the traces lack of the events the analysis needs
    /// ([`crate::event::missing_events`]).
    pub missing: Vec<String>,
}

/// [`analyse`], also giving back the model. A program about to exit can
/// leave it unfreed (`std::mem::forget`): freeing the I/O analysis's
/// descriptor lives one by one takes a few percent of its time on large
/// traces.
pub fn analyse_model<A: Analysis>(
    read: &ReadOptions,
    analysis: A,
    intersection: bool,
) -> Result<Analysed<A>, AnalyseError> {
    let mut a = run_model(read, analysis, intersection)?;
    a.tables = a.model.as_mut().map(|r| r.finish()).unwrap_or_default();
    Ok(a)
}

/// [`analyse_model`] without making the tables (`tables` is empty): for a
/// writer, which has the model make them ([`Runner::emit`]).
pub fn run_model<A: Analysis>(
    read: &ReadOptions,
    analysis: A,
    intersection: bool,
) -> Result<Analysed<A>, AnalyseError> {
    let mut opts = read.clone();
    let begin = opts.begin.take();
    opts.workers.get_or_insert(1);
    let mut src = Source::open(&opts)?;
    let window = if intersection {
        match crate::intersect::stream_intersection(&src.traces) {
            Some((b, e)) if b > e => return Err(AnalyseError::NoCommonTime),
            w => w,
        }
    } else {
        None
    };
    let interest = analysis.interest();
    let missing = crate::event::missing_events(&src.traces, interest);
    let mut run: Option<Runner<A>> = None;
    let mut analysis = Some(analysis);
    let mut feed = |ev: &Event| {
        if let Some(an) = analysis.take() {
            // The first event: the analysed period can be placed.
            let b = match &begin {
                Some(t) => Some(
                    t.resolve(Some(ev.ts), read.gmt)
                        .ok_or(AnalyseError::BeginOutOfRange)?,
                ),
                None => None,
            };
            let e = match &read.end {
                Some(t) => t.resolve(Some(ev.ts), read.gmt),
                None => None,
            };
            let mut an = an;
            an.range(b, e);
            let r = Runner::new(an, b, None);
            run = Some(match window {
                Some((wb, we)) => r.window(wb, we),
                None => r,
            });
        }
        // None: stop; else the range of ignored events the reader may fold.
        Ok::<_, AnalyseError>(match run.as_mut() {
            Some(r) => r.event(ev).then(|| r.fold_range()),
            None => None,
        })
    };
    let stopped = if !opts.filters_events() && skim::can_read(src.cursors()) {
        let bytes = src
            .traces
            .iter()
            .flat_map(|t| t.sources.iter().flat_map(|s| s.files.iter()))
            .map(|f| f.data().len() as u64)
            .sum();
        let piped = skim::pipelined(read.workers, bytes);
        skim::for_each_event(src.into_streams()?, interest, piped, |ev| {
            Ok::<_, AnalyseError>(match feed(ev)? {
                Some(range) => skim::Next::Go(range),
                None => skim::Next::Stop,
            })
        })?
    } else {
        // A filter reads the events' values in time order.
        let mut dec = Decoder::new(interest);
        src.for_each_event(|m, ns| {
            Ok::<_, AnalyseError>(if feed(&dec.decode(m.cursor, ns))?.is_some() {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        })?
    };
    Ok(Analysed {
        tables: Vec::new(),
        stopped,
        model: run,
        missing,
    })
}
