//! reference.py's `log_hash`, for the Rust tests that compare a log of
//! intervals with its expectations (included with `#[path]`).

const MOD: i128 = (1 << 61) - 1;

/// The hash of (name, begin, end, group) tuples, in their order.
pub fn log_hash(log: &[(String, i64, i64, String)]) -> u64 {
    let mut h: i128 = 0;
    for (name, b, e, g) in log {
        let mut xs = vec![*b as i128, *e as i128];
        xs.extend(
            name.bytes()
                .chain([0])
                .chain(g.bytes())
                .chain([0])
                .map(i128::from),
        );
        for x in xs {
            h = (h * 1_000_003 + x.rem_euclid(MOD)) % MOD;
        }
    }
    h as u64
}
