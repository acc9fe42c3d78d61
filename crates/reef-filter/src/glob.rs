//! Glob patterns: `*` matches any run of bytes (possibly empty); `\*` is a
//! literal star. Nothing else is special.

/// A compiled pattern: the literal pieces between the stars.
#[derive(Debug, Clone)]
pub struct Glob {
    pieces: Vec<Box<[u8]>>,
    /// The pattern starts / ends with a star.
    open_start: bool,
    open_end: bool,
}

impl Glob {
    /// Whether the string literal, as the lexer keeps it, holds an unescaped
    /// star.
    pub fn is_pattern(lit: &str) -> bool {
        let mut esc = false;
        for c in lit.chars() {
            match (esc, c) {
                (false, '\\') => esc = true,
                (false, '*') => return true,
                _ => esc = false,
            }
        }
        false
    }

    /// The literal's text with `\*` and `\\` turned into `*` and `\`.
    pub fn unescape(lit: &str) -> String {
        let mut out = String::with_capacity(lit.len());
        let mut esc = false;
        for c in lit.chars() {
            if !esc && c == '\\' {
                esc = true;
                continue;
            }
            esc = false;
            out.push(c);
        }
        out
    }

    pub fn new(lit: &str) -> Glob {
        let mut pieces = vec![Vec::new()];
        let mut esc = false;
        for c in lit.chars() {
            let mut buf = [0u8; 4];
            match (esc, c) {
                (false, '\\') => {
                    esc = true;
                    continue;
                }
                (false, '*') => pieces.push(Vec::new()),
                _ => pieces
                    .last_mut()
                    .expect("never empty")
                    .extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
            }
            esc = false;
        }
        // With no star there is one piece, anchored at both ends.
        let open_start = pieces.len() > 1 && pieces[0].is_empty();
        let open_end = pieces.len() > 1 && pieces.last().is_some_and(|p| p.is_empty());
        let starless = pieces.len() == 1;
        let mut pieces: Vec<Box<[u8]>> = pieces
            .into_iter()
            .filter(|p| !p.is_empty())
            .map(Vec::into_boxed_slice)
            .collect();
        if starless && pieces.is_empty() {
            pieces.push(Box::default());
        }
        Glob {
            pieces,
            open_start,
            open_end,
        }
    }

    pub fn matches(&self, s: &[u8]) -> bool {
        let n = self.pieces.len();
        if !self.open_start && !self.open_end && n == 1 {
            // No star at all.
            return *self.pieces[0] == *s;
        }
        let mut rest = s;
        let mut first = 0;
        let mut last = n;
        if !self.open_start {
            match self.pieces.first() {
                Some(p) if rest.starts_with(p) => rest = &rest[p.len()..],
                _ => return false,
            }
            first = 1;
        }
        if !self.open_end && last > first {
            match self.pieces.last() {
                Some(p) if rest.ends_with(p) => rest = &rest[..rest.len() - p.len()],
                _ => return false,
            }
            last -= 1;
        }
        for p in &self.pieces[first..last] {
            match rest.windows(p.len()).position(|w| w == &**p) {
                Some(i) => rest = &rest[i + p.len()..],
                None => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Glob::new(p).matches(s.as_bytes())
    }

    #[test]
    fn matching() {
        assert!(m("sched_*", "sched_switch"));
        assert!(m("sched_*", "sched_"));
        assert!(!m("sched_*", "sche"));
        assert!(m("*_entry", "syscall_entry"));
        assert!(!m("*_entry", "syscall_exit"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "abc"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxcyyb"));
        assert!(!m("ab*ba", "aba"));
        assert!(m("*x*", "axb"));
        assert!(m("a\\*", "a*"));
        assert!(!m("a\\*", "ab"));
        assert!(m("abc", "abc"));
        assert!(!m("abc", "abcd"));
        assert!(Glob::is_pattern("a*"));
        assert!(!Glob::is_pattern("a\\*"));
        assert!(Glob::is_pattern("a\\\\*"));
        assert_eq!(Glob::unescape("a\\*\\\\"), "a*\\");
    }
}
