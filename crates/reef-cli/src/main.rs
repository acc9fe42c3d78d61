//! `reef`: read, check and record CTF traces.

// Doc comments here are clap's help text, written for a terminal: `[IPV6]`
// is not a link.
#![allow(rustdoc::broken_intra_doc_links)]

mod cmd_activities;
mod cmd_analyses;
mod cmd_check;
mod cmd_convert;
mod cmd_gen;
mod cmd_install;
mod cmd_listen;
mod cmd_periods;
mod cmd_plugins;
mod cmd_print;
mod cmd_profile;
mod cmd_record;
mod cmd_recover;
mod cmd_sql;
mod cmd_stats;
mod cmd_view;
mod output;
mod render;
mod report;
mod script;
mod source;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use reef_analyses::io::Mode;

#[derive(Parser)]
#[command(name = "reef", version, about = "A fast toolkit for CTF traces")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every event of the CTF traces under PATH..., merged in time
    /// order, exactly as `babeltrace2 PATH...` does.
    ///
    /// Example: reef print --clock-seconds ~/lttng-traces/my-session
    Print(cmd_print::PrintArgs),
    /// Decode every field of every event and report each trace's shape, or
    /// the first error.
    ///
    /// Example: reef check ~/lttng-traces/my-session
    Check(cmd_check::CheckArgs),
    /// Generate the C header, CTF metadata and JSON dictionary of a `.reef`
    /// event schema.
    ///
    /// Example: reef gen events.reef -o build/gen
    Gen(cmd_gen::GenArgs),
    /// CPU usage per thread, per CPU and in total over an LTTng kernel
    /// trace, as lttng-cputop (same numbers); --lami for Trace Compass.
    ///
    /// Example: reef cputop --limit 20 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Cputop(cmd_analyses::CputopArgs),
    /// System call count, duration statistics and return values per
    /// thread, as lttng-syscallstats; --lami for Trace Compass.
    ///
    /// Example: reef syscallstats --begin 18:18:56 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Syscallstats(cmd_analyses::SyscallstatsArgs),
    /// Hard and soft IRQ durations and raise latencies, as lttng-irqstats;
    /// --lami for Trace Compass.
    ///
    /// Example: reef irqstats --lami ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Irqstats(cmd_analyses::IrqstatsArgs),
    /// Every hard IRQ and softirq handler run (time range, raise, CPU), as
    /// lttng-irqlog; --lami for Trace Compass.
    ///
    /// Example: reef irqlog --begin 18:18:56 --end 18:18:57 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Irqlog(cmd_analyses::IrqstatsArgs),
    /// Frequency distributions of IRQ and softirq handler durations, per
    /// interrupt, as lttng-irqfreq; --lami for Trace Compass.
    ///
    /// Example: reef irqfreq --freq-resolution 10 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Irqfreq(cmd_analyses::IrqfreqArgs),
    /// Scheduling latencies (wakeup to switch-in) in total, per thread and
    /// per priority, as lttng-schedstats; --lami for Trace Compass.
    ///
    /// Example: reef schedstats --total --per-prio ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Schedstats(cmd_analyses::SchedstatsArgs),
    /// Every scheduling latency (wakeup, switch-in, priority, CPU, woken
    /// and waking threads), as lttng-schedlog; --lami for Trace Compass.
    ///
    /// Example: reef schedlog --lami ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Schedlog(cmd_analyses::SchedArgs),
    /// The longest scheduling latencies, as lttng-schedtop; --lami for
    /// Trace Compass.
    ///
    /// Example: reef schedtop --limit 20 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Schedtop(cmd_analyses::SchedtopArgs),
    /// Frequency distributions of scheduling latencies (in total, per
    /// thread, per priority), as lttng-schedfreq; --lami for Trace Compass.
    ///
    /// Example: reef schedfreq --total --freq-resolution 50 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Schedfreq(cmd_analyses::SchedfreqArgs),
    /// Pages allocated and freed per thread, as lttng-memtop; --lami for
    /// Trace Compass.
    ///
    /// Example: reef memtop --limit 5 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Memtop(cmd_analyses::MemtopArgs),
    /// Latency statistics of I/O system calls (open, read, write, sync), as
    /// lttng-iolatencystats; --lami for Trace Compass.
    ///
    /// Example: reef iolatency ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Iolatency(cmd_analyses::IoArgs),
    /// Frequency distributions of I/O system call latencies (open, read,
    /// write, sync) and of disk request latencies, as lttng-iolatencyfreq;
    /// --lami for Trace Compass.
    ///
    /// Example: reef iolatencyfreq --freq-resolution 40 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Iolatencyfreq(cmd_analyses::IoFreqArgs),
    /// The longest I/O system calls of each kind, with their sizes, files
    /// and descriptors, as lttng-iolatencytop; --lami for Trace Compass.
    ///
    /// Example: reef iolatencytop --limit 5 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Iolatencytop(cmd_analyses::IoTopArgs),
    /// Every I/O system call in the order they began (duration, size,
    /// thread, file, descriptor), as lttng-iolog; --lami for Trace Compass.
    ///
    /// Example: reef iolog --min 100 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Iolog(cmd_analyses::IoArgs),
    /// Who read and wrote how much: per process (disk, network, unknown),
    /// per file, block I/O per process and per disk, per network
    /// interface, as lttng-iousagetop; --lami for Trace Compass.
    ///
    /// Example: reef iousagetop --limit 20 ~/lttng-traces/my-session/kernel
    #[command(
        mut_arg("paths", cmd_analyses::paths_optional),
        mut_arg("begin", cmd_analyses::lami_time),
        mut_arg("end", cmd_analyses::lami_time)
    )]
    Iousagetop(cmd_analyses::IoTopArgs),
    /// Connect to a program traced with REEF_LISTEN and receive its trace
    /// live: write it as a CTF trace directory (-o) and/or print its events
    /// as they arrive (--print, the default without -o).
    ///
    /// Example: reef listen 127.0.0.1:6666 -o live-trace --print
    Listen(cmd_listen::ListenArgs),
    /// Count events per name, per stream/CPU, per thread and process; time
    /// range, rates, discarded events and packets.
    ///
    /// Example: reef stats --filter '$evt.$name == "sched_*"' ~/lttng-traces/my-session
    Stats(cmd_stats::StatsArgs),
    /// Pair begin and end events by key (per thread by default) and report
    /// the intervals between them: log, statistics, frequency, longest.
    ///
    /// Example: reef activities --begin '$evt.$name == "lock:ACQUIRE"' --end '$evt.$name == "lock:RELEASE"' --key mutex TRACE
    Activities(cmd_activities::ActivitiesArgs),
    /// Periods between events matching expressions, nested in parent
    /// periods, with captured values (lttng-periodlog/-stats/-freq/-top).
    ///
    /// Example: reef periods --period 'irq : $evt.$name == "irq_handler_entry" : $evt.$name == "irq_handler_exit" && $evt.irq == $begin.$evt.irq' --stats TRACE
    Periods(cmd_periods::PeriodsArgs),
    /// Serve a web timeline of the traces (CPUs, threads, events, the event
    /// list, filters, search, statistics) from an index built in one pass;
    /// prints the page's address.
    ///
    /// Example: reef view --open ~/lttng-traces/my-session/kernel
    View(cmd_view::ViewArgs),
    /// Where the time went: sampled call stacks (REEF_SAMPLE) or function
    /// entry/exit (-finstrument-functions, LTTng-UST cyg-profile),
    /// symbolized, as folded stacks, speedscope JSON or a call tree.
    ///
    /// Example: REEF_SAMPLE=cpu-clock:1ms REEF_OUTPUT=t ./app; reef profile --folded t
    Profile(cmd_profile::ProfileArgs),
    /// Write the traces read (with --begin/--end/--filter) as CTF traces
    /// again (the default: a cut of the traces, whole packets copied byte
    /// for byte), or for other tools: a Parquet dataset for DuckDB, Spark
    /// and `reef sql`, a Chrome trace (JSON) or a Perfetto trace for
    /// Perfetto's UI and about:tracing.
    ///
    /// Example: reef convert --begin 10:00:00 --end 10:00:05 ~/lttng-traces/my-session -o cut
    ///
    /// Example: reef convert --to parquet -o dataset ~/lttng-traces/my-session/kernel
    Convert(cmd_convert::ConvertArgs),
    /// SQL over the tables of `reef convert --to parquet` (events, one per
    /// event class, and for kernel traces sched_slices, thread_states,
    /// syscalls, irqs), from traces (converted on the fly) or datasets;
    /// output as a table, CSV or JSON. Runs the `reef-sql` engine
    /// (DataFusion), built apart: cargo build --profile sql -p reef-sql.
    ///
    /// Example: reef sql ~/lttng-traces/my-session/kernel 'SELECT procname, tid, sum(dur) / 1e9 AS cpu_s FROM sched_slices GROUP BY procname, tid ORDER BY cpu_s DESC LIMIT 10'
    #[command(
        mut_arg("paths", cmd_sql::paths_then_query),
        override_usage = "reef sql [OPTIONS] TRACE_OR_DATASET... QUERY"
    )]
    Sql(cmd_sql::SqlArgs),
    /// Record the kernel through tracefs (ftrace, no LTTng modules) into a
    /// CTF trace directory, with a process state dump first, while a
    /// command runs (or for --duration seconds). Needs root.
    ///
    /// Example: reef record --kernel -e sched,irq,syscalls -o k -- make -j2
    Record(cmd_record::RecordArgs),
    /// Write the trace of a libreef program that died: its stream files,
    /// completed with what its crash-safe rings (REEF_CRASH_SAFE=1) held.
    ///
    /// Example: REEF_CRASH_SAFE=1 REEF_OUTPUT=t ./app; reef recover t -o t-recovered
    Recover(cmd_recover::RecoverArgs),
    /// List the plugins found (--plugin files, $REEF_PLUGIN_PATH,
    /// ~/.local/share/reef/plugins): name, version, kinds, description.
    ///
    /// Example: reef plugins --plugin ./build/latency.so
    Plugins(cmd_plugins::PluginsArgs),
    /// Run a sink plugin over the traces: it receives every message in
    /// time order (after --begin/--end/--filter/--plugin-filter).
    ///
    /// Example: reef sink csv=out.csv --plugin ./csv.so TRACE
    Sink(cmd_plugins::SinkArgs),
    /// Run an analysis plugin over the traces and print its LAMI tables
    /// (--lami: the LAMI 1.0 JSON).
    ///
    /// Example: reef analyse latency=begin:end --plugin ./latency.so TRACE
    Analyse(cmd_plugins::AnalyseArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell) on stdout.
    ///
    /// Example: reef completions bash > ~/.local/share/bash-completion/completions/reef
    Completions(cmd_install::CompletionsArgs),
    /// Write the manual pages of reef and its subcommands (used by `make
    /// install`).
    #[command(hide = true)]
    Man(cmd_install::ManArgs),
}

/// Has glibc's malloc serve blocks of up to 4 MiB from its heap: above
/// its default threshold (128 KiB), each would be a fresh mapping whose
/// pages fault in one by one, while a heap reuses pages already touched
/// (a kernel trace's metadata builds a few such tables of event classes:
/// `reef cputop` on LTTng's uneven-streams trace had 1,727 page faults,
/// 1,389 so).
///
/// Then has the heap's first megabytes backed by transparent huge pages
/// where the kernel offers them (`enabled` set to `always` or
/// `madvise`): a start-up that builds a few megabytes of tables (parsing
/// a kernel trace's 350-450 KB of metadata) otherwise takes a page fault
/// per 4 KiB page, 1.2-1.5 us each on a virtual machine, where a 2 MiB
/// page costs 45-90 us once. The heap is grown by 8 MiB ahead (glibc's
/// top pad) so that whole 2 MiB ranges lie in it; the part of the heap
/// below the first of them is set aside (a block never touched: address
/// space, not memory) so that allocations start in them; those are
/// advised. Memory the program does not touch stays unbacked.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets parameters of the allocator, before any
    // thread is started; sbrk(0) only reads the program break; the blocks
    // malloc returns are freed, or (the one set aside) kept and never
    // used; madvise only advises on whole 2 MiB ranges of the heap's
    // mapping (below the break), and fails harmlessly where huge pages
    // are not offered.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        const HUGE: usize = 2 << 20;
        const GROW: usize = 256 << 10;
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 32 << 20);
        // A block larger than the heap's first 132 KiB grows it, by the
        // pad. (black_box: a malloc whose block is unused may be elided.)
        let grow = std::hint::black_box(libc::malloc(GROW)) as usize;
        let end = libc::sbrk(0) as usize;
        // The 2 MiB ranges past every byte malloc wrote: a range where a
        // 4 KiB page was touched before the advice keeps 4 KiB pages.
        let from = (grow + GROW + 4096).next_multiple_of(HUGE);
        let to = end / HUGE * HUGE;
        let advised = grow != 0
            && end != usize::MAX
            && to > from
            && libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) == 0;
        libc::free(grow as *mut libc::c_void);
        if advised {
            // The heap below the advised ranges, set aside (its end is
            // where allocations go on, in the first range).
            let first = std::hint::black_box(libc::malloc(64)) as usize;
            if first != 0 && first + 4096 < from {
                std::hint::black_box(libc::malloc(from - first - 64));
            }
            libc::free(first as *mut libc::c_void);
        }
    }
}

/// The command line of an analysis, parsed by a parser of that command
/// alone; `None` when it does not parse (help, version and errors are the
/// whole parser's business: its messages name every command) or is not an
/// analysis. Building the whole parser (30 commands, hundreds of options)
/// costs about 1.6 M instructions and 150 page faults, a tenth of what
/// `reef cputop` costs on a 30 k-event kernel trace. The parser built is
/// the one the derive builds for the command (`tests::one_command_parses_as_all`).
fn parse_analysis(args: &[std::ffi::OsString]) -> Option<Cli> {
    fn one<A: clap::Args>(name: &'static str, args: &[std::ffi::OsString]) -> Option<A> {
        let sub = A::augment_args(clap::Command::new(name))
            .mut_arg("paths", cmd_analyses::paths_optional)
            .mut_arg("begin", cmd_analyses::lami_time)
            .mut_arg("end", cmd_analyses::lami_time);
        let m = clap::Command::new("reef")
            .subcommand(sub)
            .try_get_matches_from(args)
            .ok()?;
        A::from_arg_matches(m.subcommand_matches(name)?).ok()
    }
    macro_rules! pick {
        ($($name:literal => $variant:ident),* $(,)?) => {
            match args.get(1)?.to_str()? {
                $($name => Command::$variant(one($name, args)?),)*
                _ => return None,
            }
        };
    }
    let command = pick! {
        "cputop" => Cputop,
        "syscallstats" => Syscallstats,
        "irqstats" => Irqstats,
        "irqlog" => Irqlog,
        "irqfreq" => Irqfreq,
        "schedstats" => Schedstats,
        "schedlog" => Schedlog,
        "schedtop" => Schedtop,
        "schedfreq" => Schedfreq,
        "memtop" => Memtop,
        "iolatency" => Iolatency,
        "iolatencyfreq" => Iolatencyfreq,
        "iolatencytop" => Iolatencytop,
        "iolog" => Iolog,
        "iousagetop" => Iousagetop,
    };
    Some(Cli { command })
}

fn main() -> ExitCode {
    tune_malloc();
    output::reset_sigpipe();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match parse_analysis(&args) {
        Some(cli) => cli,
        None => Cli::parse_from(args),
    };
    let r = match &cli.command {
        Command::Print(a) => cmd_print::run(a),
        Command::View(a) => cmd_view::run(a),
        Command::Profile(a) => cmd_profile::run(a),
        Command::Check(a) => cmd_check::run(a),
        Command::Gen(a) => cmd_gen::run(a).map(|()| ExitCode::SUCCESS),
        Command::Cputop(a) => cmd_analyses::cputop(a),
        Command::Syscallstats(a) => cmd_analyses::syscallstats(a),
        Command::Irqstats(a) => cmd_analyses::irqstats(a),
        Command::Irqlog(a) => cmd_analyses::irqlog(a),
        Command::Schedlog(a) => cmd_analyses::schedlog(a),
        Command::Schedtop(a) => cmd_analyses::schedtop(a),
        Command::Schedfreq(a) => cmd_analyses::schedfreq(a),
        Command::Irqfreq(a) => cmd_analyses::irqfreq(a),
        Command::Schedstats(a) => cmd_analyses::schedstats(a),
        Command::Memtop(a) => cmd_analyses::memtop(a),
        Command::Iolatency(a) => cmd_analyses::io(a, Mode::Stats),
        Command::Iolatencyfreq(a) => {
            cmd_analyses::io(&a.io, Mode::Freq(a.freq_resolution as usize))
        }
        Command::Iolatencytop(a) => cmd_analyses::io(&a.io, Mode::Top(a.limit)),
        Command::Iolog(a) => cmd_analyses::io(a, Mode::Log),
        Command::Iousagetop(a) => cmd_analyses::io(&a.io, Mode::Usage(a.limit)),
        Command::Listen(a) => cmd_listen::run(a),
        Command::Plugins(a) => cmd_plugins::list(a),
        Command::Sink(a) => cmd_plugins::sink(a),
        Command::Analyse(a) => cmd_plugins::analyse(a),
        Command::Stats(a) => cmd_stats::run(a),
        Command::Activities(a) if cmd_activities::decoded_by_script(a) => script::delegate(),
        Command::Activities(a) => cmd_activities::run(a),
        Command::Periods(a) => cmd_periods::run(a),
        Command::Record(a) => cmd_record::run(a),
        Command::Recover(a) => cmd_recover::run(a),
        Command::Convert(a) => cmd_convert::run(a),
        Command::Sql(a) => cmd_sql::run(a),
        Command::Completions(a) => {
            cmd_install::completions(a, Cli::command()).map(|()| ExitCode::SUCCESS)
        }
        Command::Man(a) => cmd_install::man(a, Cli::command()).map(|()| ExitCode::SUCCESS),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            if output::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("reef: error: {e:#}");
            // A bad expression is a usage error, as clap's.
            let bad_expr = e.downcast_ref::<reef_filter::LocatedError>().is_some()
                || matches!(
                    e.downcast_ref::<reef_read::Error>(),
                    Some(reef_read::Error::Filter(_))
                );
            if bad_expr {
                return ExitCode::from(2);
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An analysis's arguments as `Debug` prints them.
    fn debug(c: &Command) -> String {
        match c {
            Command::Cputop(a) => format!("cputop {a:?}"),
            Command::Syscallstats(a) => format!("syscallstats {a:?}"),
            Command::Irqstats(a) => format!("irqstats {a:?}"),
            Command::Irqlog(a) => format!("irqlog {a:?}"),
            Command::Irqfreq(a) => format!("irqfreq {a:?}"),
            Command::Schedstats(a) => format!("schedstats {a:?}"),
            Command::Schedlog(a) => format!("schedlog {a:?}"),
            Command::Schedtop(a) => format!("schedtop {a:?}"),
            Command::Schedfreq(a) => format!("schedfreq {a:?}"),
            Command::Memtop(a) => format!("memtop {a:?}"),
            Command::Iolatency(a) => format!("iolatency {a:?}"),
            Command::Iolatencyfreq(a) => format!("iolatencyfreq {a:?}"),
            Command::Iolatencytop(a) => format!("iolatencytop {a:?}"),
            Command::Iolog(a) => format!("iolog {a:?}"),
            Command::Iousagetop(a) => format!("iousagetop {a:?}"),
            _ => panic!("not an analysis"),
        }
    }

    /// Every analysis, on command lines that parse and some that do not:
    /// the parser of the command alone gives what the whole one gives, or
    /// declines where the whole one fails.
    #[test]
    fn one_command_parses_as_all() {
        let names = [
            "cputop",
            "syscallstats",
            "irqstats",
            "irqlog",
            "irqfreq",
            "schedstats",
            "schedlog",
            "schedtop",
            "schedfreq",
            "memtop",
            "iolatency",
            "iolatencyfreq",
            "iolatencytop",
            "iolog",
            "iousagetop",
        ];
        let all = Cli::command();
        let lines: &[&[&str]] = &[
            &["T"],
            &["T", "U"],
            &["--lami", "T"],
            &["--metadata"],
            &["--lami", "--metadata"],
            &["--mi-version"],
            &["--begin", "18:18:56", "--end", "1499451536", "T"],
            &["--begin", "2017-07-07 18:18:56.1", "T"],
            &["--limit", "3", "--tid", "1,2", "--procname", "a,b", "T"],
            &["--cpu", "0,1", "-j", "2", "T"],
            &["--min", "1.5", "--max", "20", "T"],
            &["--top", "5", "T"],
            &["--per-tid", "--per-prio", "--total", "T"],
            &["--freq-resolution", "10", "--freq-uniform", "T"],
            &["--irq", "1", "--softirq", "2", "T"],
            &["--test-compatibility", "--lami", "T"],
            &["--filter", "$evt.$name == \"a\"", "T"],
            &[],
            &["--begin", "nonsense", "T"],
            &["--no-such-option", "T"],
            &["--limit", "x", "T"],
            &["--help"],
            &["-h"],
        ];
        let (mut same, mut declined) = (0, 0);
        for name in names {
            assert!(
                all.find_subcommand(name).is_some(),
                "{name} is not a command"
            );
            for line in lines {
                let args: Vec<std::ffi::OsString> = ["reef", name]
                    .iter()
                    .chain(line.iter())
                    .map(|s| s.into())
                    .collect();
                let full = Cli::try_parse_from(&args);
                match (parse_analysis(&args), full) {
                    (Some(fast), Ok(full)) => {
                        assert_eq!(debug(&fast.command), debug(&full.command), "{args:?}");
                        same += 1;
                    }
                    (None, Err(_)) => declined += 1,
                    (fast, full) => panic!(
                        "{args:?}: one command {}, all commands {}",
                        if fast.is_some() { "parses" } else { "declines" },
                        if full.is_ok() { "parse" } else { "fail" }
                    ),
                }
            }
        }
        assert!(
            same > 100 && declined > 50,
            "{same} parsed, {declined} declined"
        );
        assert!(parse_analysis(&["reef".into(), "check".into(), "T".into()]).is_none());
    }
}
