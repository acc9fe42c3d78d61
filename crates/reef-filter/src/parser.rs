//! Recursive-descent parser over [`crate::lexer`] tokens.
//!
//! Precedence, loosest first: `||`, `&&`, comparisons (`== != =* < <= > >=`,
//! not chained), `+ -`, `* / %`, unary `! -`. As in C, `!` binds tighter
//! than a comparison: write `!($evt.a == 1)`.

use crate::ast::*;
use crate::error::ExprError;
use crate::lexer::{lex, Tok, Token};

struct Parser {
    toks: Vec<Token>,
    i: usize,
    /// Current nesting of parentheses and unary operators.
    depth: usize,
}

/// Most tokens an expression may have, and deepest nesting of parentheses
/// and unary operators: compiling and evaluating recurse over the tree, so
/// its size is bounded to keep the stack small whatever the input.
pub const MAX_TOKENS: usize = 4096;
pub const MAX_DEPTH: usize = 128;

/// Parses a whole expression.
pub fn parse_expr(text: &str) -> Result<Expr, ExprError> {
    let mut p = Parser::new(text)?;
    let e = p.or()?;
    p.expect_end("an operator")?;
    Ok(e)
}

/// Parses a period definition `NAME[(PARENT)] : BEGIN [: END]` (NAME may be
/// omitted: `: BEGIN [: END]`).
pub fn parse_period(text: &str) -> Result<PeriodDef, ExprError> {
    let mut p = Parser::new(text)?;
    let mut name = None;
    let mut parent = None;
    if let Tok::Ident(n) = &p.peek().tok {
        name = Some(n.clone());
        p.i += 1;
        if p.peek().tok == Tok::LParen {
            p.i += 1;
            match &p.peek().tok {
                Tok::Ident(n) => {
                    parent = Some((n.clone(), p.peek().start));
                    p.i += 1;
                }
                _ => return Err(p.unexpected("the parent period's name")),
            }
            p.expect(Tok::RParen, "`)` after the parent period's name")?;
        }
    }
    p.expect(
        Tok::Colon,
        if name.is_some() {
            "`:` after the period's name"
        } else {
            "a period name or `:`"
        },
    )?;
    let begin = p.or()?;
    let end = if p.peek().tok == Tok::Colon {
        p.i += 1;
        Some(p.or()?)
    } else {
        None
    };
    p.expect_end(if end.is_some() {
        "an operator"
    } else {
        "an operator or `:` before the end expression"
    })?;
    Ok(PeriodDef {
        name,
        parent,
        begin,
        end,
    })
}

/// Parses `NAME : [CAPTURE, ...] [: CAPTURE, ...]` where a capture is
/// `[NAME =] REF`.
pub fn parse_captures(text: &str) -> Result<CapturesDef, ExprError> {
    let mut p = Parser::new(text)?;
    let (name, name_pos) = match &p.peek().tok {
        Tok::Ident(n) => (n.clone(), p.peek().start),
        _ => return Err(p.unexpected("the name of the period the captures are for")),
    };
    p.i += 1;
    p.expect(Tok::Colon, "`:` after the period's name")?;
    let begin = p.captures(text)?;
    let end = if p.peek().tok == Tok::Colon {
        p.i += 1;
        p.captures(text)?
    } else {
        Vec::new()
    };
    p.expect_end("`,` or `:`")?;
    Ok(CapturesDef {
        name,
        name_pos,
        begin,
        end,
    })
}

impl Parser {
    fn new(text: &str) -> Result<Parser, ExprError> {
        let toks = lex(text)?;
        if toks.len() > MAX_TOKENS {
            return Err(ExprError::new(
                toks[MAX_TOKENS].start,
                format!("expression too long (more than {MAX_TOKENS} tokens)"),
            ));
        }
        Ok(Parser {
            toks,
            i: 0,
            depth: 0,
        })
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ExprError::new(
                self.peek().start,
                format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    fn peek(&self) -> &Token {
        &self.toks[self.i]
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.i + k).min(self.toks.len() - 1)].tok
    }

    fn unexpected(&self, expected: &str) -> ExprError {
        let t = self.peek();
        ExprError::new(
            t.start,
            format!("expected {expected}, found {}", t.tok.describe()),
        )
    }

    fn expect(&mut self, tok: Tok, expected: &str) -> Result<usize, ExprError> {
        if self.peek().tok == tok {
            self.i += 1;
            Ok(self.toks[self.i - 1].start)
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn expect_end(&self, expected: &str) -> Result<(), ExprError> {
        if self.peek().tok == Tok::Eof {
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn captures(&mut self, text: &str) -> Result<Vec<Capture>, ExprError> {
        let mut out = Vec::new();
        if matches!(self.peek().tok, Tok::Colon | Tok::Eof) {
            return Ok(out);
        }
        loop {
            let start = self.peek().start;
            let mut name = None;
            if let (Tok::Ident(n), Tok::Assign) = (&self.peek().tok, self.peek_at(1)) {
                name = Some(n.clone());
                self.i += 2;
            }
            let pos = self.peek().start;
            let r = match self.primary()? {
                Expr::Ref { r, .. } => r,
                _ => {
                    return Err(ExprError::new(
                        pos,
                        "expected a reference such as `$evt.field`",
                    ))
                }
            };
            let end = self.toks[self.i - 1].end;
            let name = name.unwrap_or_else(|| text[pos..end].to_string());
            if out.iter().any(|c: &Capture| c.name == name) {
                return Err(ExprError::new(
                    start,
                    format!("capture `{name}` is defined twice"),
                ));
            }
            out.push(Capture { name, r, pos });
            if self.peek().tok != Tok::Comma {
                return Ok(out);
            }
            self.i += 1;
        }
    }

    fn or(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.and()?;
        while self.peek().tok == Tok::OrOr {
            let pos = self.peek().start;
            self.i += 1;
            let r = self.and()?;
            l = Expr::Bin {
                op: BinOp::Or,
                l: Box::new(l),
                r: Box::new(r),
                pos,
            };
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.comparison()?;
        while self.peek().tok == Tok::AndAnd {
            let pos = self.peek().start;
            self.i += 1;
            let r = self.comparison()?;
            l = Expr::Bin {
                op: BinOp::And,
                l: Box::new(l),
                r: Box::new(r),
                pos,
            };
        }
        Ok(l)
    }

    fn comparison_op(&self) -> Option<BinOp> {
        Some(match self.peek().tok {
            Tok::EqEq => BinOp::Eq,
            Tok::NotEq => BinOp::Ne,
            Tok::GlobEq => BinOp::Glob,
            Tok::Lt => BinOp::Lt,
            Tok::Le => BinOp::Le,
            Tok::Gt => BinOp::Gt,
            Tok::Ge => BinOp::Ge,
            _ => return None,
        })
    }

    fn comparison(&mut self) -> Result<Expr, ExprError> {
        let l = self.additive()?;
        if self.peek().tok == Tok::Assign {
            return Err(ExprError::new(
                self.peek().start,
                "unexpected `=`: did you mean `==`?",
            ));
        }
        let Some(op) = self.comparison_op() else {
            return Ok(l);
        };
        let pos = self.peek().start;
        self.i += 1;
        let r = self.additive()?;
        if self.comparison_op().is_some() {
            return Err(ExprError::new(
                self.peek().start,
                "comparisons do not chain: use `&&` between them",
            ));
        }
        Ok(Expr::Bin {
            op,
            l: Box::new(l),
            r: Box::new(r),
            pos,
        })
    }

    fn additive(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.multiplicative()?;
        loop {
            let op = match self.peek().tok {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(l),
            };
            let pos = self.peek().start;
            self.i += 1;
            let r = self.multiplicative()?;
            l = Expr::Bin {
                op,
                l: Box::new(l),
                r: Box::new(r),
                pos,
            };
        }
    }

    fn multiplicative(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.unary()?;
        loop {
            let op = match self.peek().tok {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(l),
            };
            let pos = self.peek().start;
            self.i += 1;
            let r = self.unary()?;
            l = Expr::Bin {
                op,
                l: Box::new(l),
                r: Box::new(r),
                pos,
            };
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.enter()?;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> Result<Expr, ExprError> {
        let pos = self.peek().start;
        match self.peek().tok {
            Tok::Not => {
                self.i += 1;
                Ok(Expr::Not {
                    e: Box::new(self.unary()?),
                    pos,
                })
            }
            Tok::Minus => {
                self.i += 1;
                Ok(Expr::Neg {
                    e: Box::new(self.unary()?),
                    pos,
                })
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let t = self.peek().clone();
        let pos = t.start;
        match t.tok {
            Tok::Int(v) => {
                self.i += 1;
                Ok(Expr::Int { v, pos })
            }
            Tok::Float(v) => {
                self.i += 1;
                Ok(Expr::Float { v, pos })
            }
            Tok::Str(v) => {
                self.i += 1;
                Ok(Expr::Str { v, pos })
            }
            Tok::LParen => {
                self.i += 1;
                let e = self.or()?;
                if self.peek().tok != Tok::RParen {
                    return Err(self.unexpected("`)` or an operator"));
                }
                self.i += 1;
                Ok(e)
            }
            Tok::Dollar(_) => self.reference(),
            Tok::Ident(name) => {
                // A bare name is shorthand for `$evt.name`.
                self.i += 1;
                let path = self.field_path(name)?;
                Ok(Expr::Ref {
                    r: Ref {
                        ctx: Ctx::Evt,
                        scope: Scope::Auto,
                        target: Target::Field(path),
                    },
                    pos,
                })
            }
            _ => Err(self.unexpected("a value, a field reference or `(`")),
        }
    }

    /// After a field's first name: `.member` parts.
    fn field_path(&mut self, first: String) -> Result<Vec<String>, ExprError> {
        let mut path = vec![first];
        while self.peek().tok == Tok::Dot {
            self.i += 1;
            match &self.peek().tok {
                Tok::Ident(m) => {
                    path.push(m.clone());
                    self.i += 1;
                }
                _ => return Err(self.unexpected("a member name after `.`")),
            }
        }
        Ok(path)
    }

    /// `$word` is next: `[$parent.][$begin.]$evt.[$scope.](field|$name|$timestamp)`.
    fn reference(&mut self) -> Result<Expr, ExprError> {
        let pos = self.peek().start;
        let mut ctx = Ctx::Evt;
        let word = |p: &Parser| match &p.peek().tok {
            Tok::Dollar(w) => Some(w.clone()),
            _ => None,
        };
        let dot = |p: &mut Parser, after: &str| -> Result<(), ExprError> {
            p.expect(Tok::Dot, &format!("`.` after `{after}`"))
                .map(|_| ())
        };
        if word(self).as_deref() == Some("parent") {
            self.i += 1;
            dot(self, "$parent")?;
            if word(self).as_deref() != Some("begin") {
                return Err(self
                    .unexpected("`$begin` after `$parent.` (as in `$parent.$begin.$evt.field`)"));
            }
            ctx = Ctx::ParentBegin;
            self.i += 1;
            dot(self, "$begin")?;
        } else if word(self).as_deref() == Some("begin") {
            ctx = Ctx::Begin;
            self.i += 1;
            dot(self, "$begin")?;
        }
        match word(self).as_deref() {
            Some("evt") => self.i += 1,
            Some("name" | "timestamp") if ctx == Ctx::Evt => {
                // `$name` alone is shorthand for `$evt.$name`.
                let target = if word(self).as_deref() == Some("name") {
                    Target::Name
                } else {
                    Target::Timestamp
                };
                self.i += 1;
                return Ok(Expr::Ref {
                    r: Ref {
                        ctx,
                        scope: Scope::Auto,
                        target,
                    },
                    pos,
                });
            }
            _ => {
                return Err(self.unexpected(
                    "`$evt` (references look like `$evt.field`, `$evt.$name`, `$begin.$evt.field`)",
                ))
            }
        }
        dot(self, "$evt")?;
        let mut scope = Scope::Auto;
        let t = self.peek().clone();
        let target = match &t.tok {
            Tok::Dollar(w) if w == "name" => {
                self.i += 1;
                Target::Name
            }
            Tok::Dollar(w) if w == "timestamp" => {
                self.i += 1;
                Target::Timestamp
            }
            Tok::Dollar(w) => {
                scope = Scope::from_word(w).ok_or_else(|| {
                    ExprError::new(
                        t.start,
                        format!(
                            "unknown `${w}` (expected `$name`, `$timestamp`, or a scope: `$payload`, `$ctx`, `$stream_ctx`, `$header`, `$pkt_ctx`, `$pkt_header`)"
                        ),
                    )
                })?;
                self.i += 1;
                dot(self, &format!("${w}"))?;
                match &self.peek().tok {
                    Tok::Ident(n) => {
                        let n = n.clone();
                        self.i += 1;
                        Target::Field(self.field_path(n)?)
                    }
                    _ => return Err(self.unexpected("a field name")),
                }
            }
            Tok::Ident(n) => {
                let n = n.clone();
                self.i += 1;
                Target::Field(self.field_path(n)?)
            }
            _ => return Err(self.unexpected("a field name, `$name` or `$timestamp` after `$evt.`")),
        };
        Ok(Expr::Ref {
            r: Ref { ctx, scope, target },
            pos,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(e: &Expr) -> String {
        match e {
            Expr::Int { v, .. } => v.to_string(),
            Expr::Float { v, .. } => format!("{v:?}"),
            Expr::Str { v, .. } => format!("{v:?}"),
            Expr::Ref { r, .. } => r.to_string(),
            Expr::Not { e, .. } => format!("!{}", show(e)),
            Expr::Neg { e, .. } => format!("-{}", show(e)),
            Expr::Bin { op, l, r, .. } => format!("({} {op:?} {})", show(l), show(r)),
        }
    }

    fn p(s: &str) -> String {
        show(&parse_expr(s).unwrap())
    }

    fn err(s: &str) -> (usize, String) {
        let e = parse_expr(s).unwrap_err();
        (e.pos, e.message)
    }

    #[test]
    fn precedence() {
        assert_eq!(
            p("a == 1 || b == 2 && !c"),
            "(($evt.a Eq 1) Or (($evt.b Eq 2) And !$evt.c))"
        );
        assert_eq!(
            p("a + 2 * 3 - 1 >= 4"),
            "((($evt.a Add (2 Mul 3)) Sub 1) Ge 4)"
        );
        assert_eq!(p("(a || b) && c"), "(($evt.a Or $evt.b) And $evt.c)");
        assert_eq!(p("-a % 3 < -1.5"), "((-$evt.a Rem 3) Lt -1.5)");
    }

    #[test]
    fn references() {
        assert_eq!(
            p("$evt.$name =* \"sched_*\""),
            "($evt.$name Glob \"sched_*\")"
        );
        assert_eq!(p("$name"), "$evt.$name");
        assert_eq!(p("$evt.$payload.prev_tid"), "$evt.$payload.prev_tid");
        assert_eq!(p("$begin.$evt.$ctx.tid"), "$begin.$evt.$ctx.tid");
        assert_eq!(p("$parent.$begin.$evt.a.b"), "$parent.$begin.$evt.a.b");
        assert_eq!(p("$evt.$pkt_ctx.cpu_id"), "$evt.$pkt_ctx.cpu_id");
        assert_eq!(p("$evt.$timestamp"), "$evt.$timestamp");
    }

    #[test]
    fn error_positions() {
        assert_eq!(err("a == 1 &&").0, 9);
        assert_eq!(
            err("a == 1 &&").1,
            "expected a value, a field reference or `(`, found the end of the expression"
        );
        assert_eq!(err("(a == 1").0, 7);
        assert_eq!(err("a = 1").0, 2);
        assert_eq!(err("a < b < c").0, 6);
        assert_eq!(err("$evt.$bogus.x").0, 5);
        assert_eq!(err("$evt").0, 4);
        assert_eq!(err("$parent.$evt.x").0, 8);
        assert_eq!(err("$begin.$name").0, 7);
        assert_eq!(err("a == 1 b").0, 7);
        assert_eq!(err("$foo").0, 0);
    }

    #[test]
    fn size_limits() {
        let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
        let e = parse_expr(&deep).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{e:?}");
        assert!(parse_expr(&"!".repeat(1000)).is_err());
        let long = vec!["a == 1"; 2000].join(" || ");
        assert!(parse_expr(&long).unwrap_err().message.contains("too long"));
        let ok = vec!["a == 1"; 100].join(" || ");
        assert!(parse_expr(&ok).is_ok());
    }

    #[test]
    fn periods_and_captures() {
        let d =
            parse_period("switch(run) : $evt.$name == \"a\" : $evt.x == $begin.$evt.x").unwrap();
        assert_eq!(d.name.as_deref(), Some("switch"));
        assert_eq!(d.parent.as_ref().map(|p| p.0.as_str()), Some("run"));
        assert!(d.end.is_some());
        let d = parse_period(": a == 1").unwrap();
        assert!(d.name.is_none() && d.end.is_none());
        assert_eq!(parse_period("p a == 1").unwrap_err().pos, 2);
        assert_eq!(parse_period("p(q : a").unwrap_err().pos, 4);
        let c = parse_captures("p : tid = $evt.tid, $evt.$name : $evt.ret").unwrap();
        assert_eq!(c.begin.len(), 2);
        assert_eq!(c.begin[0].name, "tid");
        assert_eq!(c.begin[1].name, "$evt.$name");
        assert_eq!(c.end[0].name, "$evt.ret");
        assert_eq!(
            parse_captures("p : a = $evt.x, a = $evt.y")
                .unwrap_err()
                .pos,
            16
        );
        assert_eq!(parse_captures("p : 1").unwrap_err().pos, 4);
    }
}
