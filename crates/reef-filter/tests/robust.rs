//! Malformed expressions give errors, never panics: seed expressions
//! mutated many times (characters deleted, inserted, replaced, swapped),
//! then lexed, parsed, compiled and rendered with a caret.

use reef_filter::{parse_captures, parse_expr, parse_period, Program};

const SEEDS: &[&str] = &[
    r#"$evt.$name == "sched_*" && $evt.cpu_id == 1"#,
    r#"!(prev_tid > 0x10) || next_comm =* "swap\*per*" && -a % 3 <= 2.5e-3"#,
    r#"irq : $evt.$name == "irq_handler_entry" : $evt.irq == $begin.$evt.irq"#,
    r#"c(p) : $parent.$begin.$evt.$payload.x != 1 : $evt.$pkt_ctx.y >= (1 + 2) * 3"#,
    r#"p : a = $evt.x, $evt.$name : b = $begin.$evt.y"#,
];

const ALPHABET: &[char] = &[
    '$', '.', '"', '\\', '*', '(', ')', '!', '=', '<', '>', '&', '|', ':', ',', '-', '+', '/', '%',
    '0', '9', 'x', 'e', 'E', ' ', 'a', '_', 'é', '\t', '\n',
];

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

fn exercise(text: &str) {
    let len = text.len();
    match parse_expr(text) {
        Ok(e) => {
            if let Err(err) = Program::compile(&e, &mut |_, _| Ok(0)) {
                assert!(err.pos <= len, "{text:?}: {err:?}");
                let _ = err.render(text);
            }
        }
        Err(err) => {
            assert!(err.pos <= len, "{text:?}: {err:?}");
            let r = err.render(text);
            assert!(r.lines().count() >= 3, "{r}");
        }
    }
    for res in [parse_period(text).err(), parse_captures(text).err()]
        .into_iter()
        .flatten()
    {
        assert!(res.pos <= len, "{text:?}: {res:?}");
        let _ = res.render(text);
    }
}

#[test]
fn mutated_expressions_never_panic() {
    let mut rng = Lcg(0x5eed);
    let mut n = 0;
    for seed in SEEDS {
        exercise(seed);
        for _ in 0..4000 {
            let mut chars: Vec<char> = seed.chars().collect();
            for _ in 0..1 + rng.next(4) {
                let at = rng.next(chars.len() + 1);
                match rng.next(4) {
                    0 if at < chars.len() => {
                        chars.remove(at);
                    }
                    1 => chars.insert(at, ALPHABET[rng.next(ALPHABET.len())]),
                    2 if at < chars.len() => chars[at] = ALPHABET[rng.next(ALPHABET.len())],
                    _ if at + 1 < chars.len() => chars.swap(at, at + 1),
                    _ => {}
                }
            }
            let text: String = chars.into_iter().collect();
            exercise(&text);
            exercise(
                &text[..text
                    .char_indices()
                    .nth(rng.next(text.len() + 1))
                    .map_or(text.len(), |(i, _)| i)],
            );
            n += 1;
        }
    }
    assert_eq!(n, SEEDS.len() * 4000);
}
