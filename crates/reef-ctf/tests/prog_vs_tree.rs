//! The flat decode programs (`prog`) against the tree decoder they were
//! compiled from: for every plan of every metadata in the shared
//! conformance material, both run over many random buffers from the same
//! state and must agree on the outcome, the position, the values, and the
//! slots, meanings and clock they leave.
//!
//! The skims (`prog::Skim`, how `reef check` crosses an event's context
//! and payload) are compared with those scopes' programs the same way.
//!
//! One difference is allowed: an alignment op dropped because the next op
//! aligns as much reports a truncation as that op's field size instead of
//! 0 bits (same place, same kind of error).

use std::path::{Path, PathBuf};

use reef_ctf::decode::{decode, Cursor, DecodeErrorKind, State, Value};
use reef_ctf::plan::Plan;
use reef_ctf::prog::QuickSkim;
use reef_ctf::TraceClass;

fn metadata_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            metadata_dirs(&p, out);
        } else if p.file_name().is_some_and(|n| n == "metadata") {
            if let Some(d) = p.parent() {
                out.push(d.to_path_buf());
            }
        }
    }
}

mod common;
use common::Rng;

/// Random buffers for the decoders.
trait Data {
    fn data(&mut self) -> Vec<u8>;
}

impl Data for Rng {
    /// Up to 159 random bytes, NULs (strings' ends) more or less frequent.
    fn data(&mut self) -> Vec<u8> {
        let len = self.below(160) as usize;
        let zeros = self.below(4);
        (0..len)
            .map(|_| {
                if self.below(4) < zeros {
                    0
                } else {
                    self.next() as u8
                }
            })
            .collect()
    }
}

fn same_error(a: &DecodeErrorKind, b: &DecodeErrorKind) -> bool {
    match (a, b) {
        (DecodeErrorKind::Truncated { .. }, DecodeErrorKind::Truncated { .. }) => true,
        _ => a == b,
    }
}

/// Runs both decoders `tries` times on random input; returns how many
/// runs decoded without error.
fn compare(plan: &Plan, slots: usize, rng: &mut Rng, what: &str, tries: usize) -> usize {
    let Some(root) = plan.root else { return 0 };
    let mut ok = 0;
    for _ in 0..tries {
        let data = rng.data();
        let bits = data.len() as u64 * 8;
        let base = rng.below(bits.min(64) + 1);
        let pos = base + rng.below(bits.saturating_sub(base).min(32) + 1);
        let end = pos + rng.below(bits.saturating_sub(pos) + 1);
        let mut st = State::new(slots);
        for s in st.slots.iter_mut() {
            *s = [0i128, 1, 2, 3, 4, 31, 65535, -1][rng.below(8) as usize];
        }
        st.clock = rng.next();
        let cur = Cursor {
            data: &data,
            base,
            pos,
            end,
        };
        let (mut c1, mut s1, mut o1) = (cur, st.clone(), Vec::<Value>::new());
        let (mut c2, mut s2, mut o2) = (cur, st, Vec::<Value>::new());
        let r1 = decode(plan, root, &mut c1, &mut s1, &mut o1);
        let r2 = reef_ctf::prog::run(plan, &mut c2, &mut s2, &mut o2);
        let ctx = format!("{what}: data {data:?} base {base} pos {pos} end {end}");
        match (&r1, &r2) {
            (Ok(()), Ok(())) => {
                ok += 1;
                // Compared as printed: a NaN equals itself there.
                assert_eq!(format!("{o1:?}"), format!("{o2:?}"), "values differ, {ctx}");
                assert_eq!(c1.pos, c2.pos, "end position differs, {ctx}");
                assert_eq!(s1.slots, s2.slots, "slots differ, {ctx}");
                assert_eq!(s1.meanings, s2.meanings, "meanings differ, {ctx}");
                assert_eq!(s1.clock, s2.clock, "clock differs, {ctx}");
                assert_eq!(s1.uuid, s2.uuid, "uuid differs, {ctx}");
            }
            (Err(e1), Err(e2)) => {
                assert_eq!(e1.bit_offset, e2.bit_offset, "error place differs, {ctx}");
                assert!(same_error(&e1.kind, &e2.kind), "{e1} vs {e2}, {ctx}");
            }
            _ => panic!("tree {r1:?} vs program {r2:?}, {ctx}"),
        }
    }
    ok
}

#[test]
fn programs_decode_as_the_tree_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance");
    let mut dirs = Vec::new();
    metadata_dirs(&root, &mut dirs);
    dirs.sort();
    assert!(
        dirs.len() > 50,
        "conformance material not found under {}",
        root.display()
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut plans, mut decoded) = (0usize, 0usize);
    // Plans that take the interpreter's shortcuts.
    let (mut id_ts, mut all_ints, mut tagged) = (0usize, 0usize, 0usize);
    // LTTng's compact headers among the tagged ones (5-bit id, the
    // header's own `align(8)` ahead of it).
    let mut compact = 0usize;
    for dir in &dirs {
        // Metadata that does not load is the parser's tests' business.
        let Ok(class) = TraceClass::load(dir) else {
            continue;
        };
        let name = dir.display().to_string();
        let tries = 150;
        plans += 1;
        decoded += compare(
            &class.packet_header,
            class.packet_header_slots,
            &mut rng,
            &name,
            tries,
        );
        for sp in &class.streams {
            let n = sp.refs.len();
            for (what, p) in [
                ("packet header", &sp.packet_header),
                ("packet context", &sp.packet_context),
                ("event header", &sp.event_header),
                ("common context", &sp.event_common_context),
            ] {
                plans += 1;
                id_ts += p.prog.id_ts.is_some() as usize;
                tagged += p.prog.tagged.is_some() as usize;
                compact += p.prog.tagged.is_some_and(|t| t.tag == 5) as usize;
                all_ints += p.prog.all_ints as usize;
                // The shortcuts are rare in this material: more runs each.
                let tries =
                    match p.prog.id_ts.is_some() || p.prog.all_ints || p.prog.tagged.is_some() {
                        true => tries * 20,
                        false => tries,
                    };
                decoded += compare(p, n, &mut rng, &format!("{name} {what}"), tries);
            }
            for ep in sp.event_plans() {
                plans += 2;
                decoded += compare(&ep.context, n, &mut rng, &name, tries);
                decoded += compare(&ep.payload, n, &mut rng, &name, tries);
            }
        }
    }
    // The comparison must have exercised real decoding, not only errors,
    // and each shortcut.
    assert!(
        plans > 200
            && decoded > 5000
            && id_ts > 0
            && all_ints > 0
            && tagged > compact
            && compact > 0,
        "{plans} plans ({id_ts} id+timestamp headers, {tagged} LTTng headers ({compact} compact), {all_ints} of integers only), {decoded} decoded"
    );
    eprintln!(
        "{} traces, {plans} plans ({id_ts} id+timestamp headers, {tagged} LTTng headers ({compact} compact), {all_ints} of integers only), {decoded} successful decodes compared",
        dirs.len()
    );
}

/// Random buffers for `Skim::cross` against the context and payload
/// programs run one after the other: where the skim crosses, both
/// programs decode and end at the same position; where it declines,
/// one of them fails (the error the reader then reports). Returns how
/// many runs crossed.
fn compare_skim(
    ep: &reef_ctf::trace::EventPlans,
    slots: usize,
    rng: &mut Rng,
    what: &str,
    tries: usize,
    quick_aligned: &mut usize,
) -> usize {
    let Some(skim) = &ep.skim else { return 0 };
    let quick = ep.quick;
    // (a quick skim after an alignment: LTTng's bodies of aligned integers)
    let aligned = skim.parts_aligned();
    let mut crossed = 0;
    for _ in 0..tries {
        let data = rng.data();
        let bytes = data.len() as u64;
        let base = rng.below(bytes.min(8) + 1) * 8;
        let pos = base + rng.below(bytes.saturating_sub(base / 8).min(4) + 1) * 8;
        let end = pos + rng.below((bytes * 8).saturating_sub(pos) + 1);
        let cur = Cursor {
            data: &data,
            base,
            pos,
            end,
        };
        let mut st = State::new(slots);
        let mut out = Vec::new();
        let (mut c1, mut c2, mut c3) = (cur, cur, cur);
        let ran = reef_ctf::prog::run(&ep.context, &mut c1, &mut st, &mut out)
            .and_then(|()| reef_ctf::prog::run(&ep.payload, &mut c1, &mut st, &mut out));
        let ctx = format!("{what}: data {data:?} base {base} pos {pos} end {end}");
        // The class's quick skim, where it has one, crosses as its skim.
        if quick != QuickSkim::NONE {
            let mut c4 = cur;
            assert_eq!(
                quick.cross(&mut c3),
                skim.cross(&mut c4),
                "quick skim, {ctx}"
            );
            assert_eq!(c3.pos, c4.pos, "quick skim's end position differs, {ctx}");
            *quick_aligned += usize::from(aligned);
        }
        if skim.cross(&mut c2) {
            crossed += 1;
            assert!(ran.is_ok(), "skim crossed where the programs fail, {ctx}");
            assert_eq!(c1.pos, c2.pos, "end position differs, {ctx}");
        } else {
            assert!(
                ran.is_err(),
                "skim declined where the programs decode, {ctx}"
            );
            assert_eq!(c2.pos, pos, "a declining skim moved the cursor, {ctx}");
        }
    }
    crossed
}

#[test]
fn skims_cross_as_the_programs_do() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance");
    let mut dirs = Vec::new();
    metadata_dirs(&root, &mut dirs);
    dirs.sort();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut skims, mut crossed, mut quick_aligned) = (0usize, 0usize, 0usize);
    for dir in &dirs {
        let Ok(class) = TraceClass::load(dir) else {
            continue;
        };
        let name = dir.display().to_string();
        for sp in &class.streams {
            for ep in sp.event_plans() {
                skims += ep.skim.is_some() as usize;
                crossed +=
                    compare_skim(ep, sp.refs.len(), &mut rng, &name, 150, &mut quick_aligned);
            }
        }
    }
    assert!(
        skims > 100 && crossed > 2000 && quick_aligned > 1000,
        "{skims} skims, {crossed} crossed, {quick_aligned} quick after an alignment"
    );
    eprintln!("{skims} skims, {crossed} random crossings compared, {quick_aligned} of quick skims after an alignment");
}

/// The id + timestamp header shortcut (`Prog::id_ts`, libreef's header)
/// for every id and timestamp size it takes, against the tree decoder:
/// the conformance material has only one such header.
#[test]
fn id_timestamp_headers_decode_as_the_tree_does() {
    let dir = std::env::temp_dir().join(format!("reef-id-ts-{}", std::process::id()));
    let mut rng = Rng(0x853c_49e6_748f_ea9b);
    let mut decoded = 0;
    for id in [8, 16, 32, 64] {
        for ts in [32, 64] {
            std::fs::create_dir_all(&dir).unwrap();
            let tsdl = format!(
                "/* CTF 1.8 */\n\
                 trace {{ major = 1; minor = 8; byte_order = le; }};\n\
                 clock {{ name = c; freq = 1000000000; }};\n\
                 stream {{ event.header := struct {{\n\
                   integer {{ size = {id}; align = 8; signed = false; }} id;\n\
                   integer {{ size = {ts}; align = 8; signed = false; map = clock.c.value; }} timestamp;\n\
                 }}; }};\n\
                 event {{ name = e; id = 0; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};\n"
            );
            std::fs::write(dir.join("metadata"), tsdl).unwrap();
            let class = TraceClass::load(&dir).unwrap();
            let sp = &class.streams[0];
            assert_eq!(
                sp.event_header.prog.id_ts,
                Some((id / 8, ts / 8)),
                "id {id}, timestamp {ts}"
            );
            decoded += compare(
                &sp.event_header,
                sp.refs.len(),
                &mut rng,
                &format!("id {id}, timestamp {ts}"),
                4000,
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(decoded > 8000, "{decoded} decoded");
}
