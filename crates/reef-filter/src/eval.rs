//! Compiling an [`Expr`] into a [`Program`] and evaluating it.
//!
//! Compilation resolves each reference to a caller-chosen slot number (the
//! caller knows where the values live: the current event, a saved begin
//! event, ...), folds string literals into byte strings or glob patterns and
//! rejects what can never make sense (`"a" + 1`). Evaluation walks the
//! compiled tree over [`Val`]s, which borrow from the event: it allocates
//! nothing.

use crate::ast::{BinOp, Expr, Ref, Target};
use crate::error::ExprError;
use crate::glob::Glob;

/// A value during evaluation. Strings borrow the event's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'a> {
    /// The field is not in this event (or arithmetic failed: overflow,
    /// division by zero, a string operand).
    Missing,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'a [u8]),
}

impl Val<'_> {
    /// A value as a condition: true for `true` and non-zero numbers; false
    /// for a missing field or a string.
    pub fn truth(self) -> bool {
        match self {
            Val::Bool(b) => b,
            Val::Int(i) => i != 0,
            Val::Float(f) => f != 0.0,
            Val::Missing | Val::Str(_) => false,
        }
    }

    fn num(self) -> Option<Num> {
        match self {
            Val::Bool(b) => Some(Num::I(b as i128)),
            Val::Int(i) => Some(Num::I(i)),
            Val::Float(f) => Some(Num::F(f)),
            _ => None,
        }
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i128),
    F(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// Where the values of referenced fields come from: `get(slot)` for the
/// slot the resolver gave the reference at compile time.
pub trait Lookup {
    fn get(&self, slot: u32) -> Val<'_>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone)]
enum Node {
    Int(i128),
    Float(f64),
    Str(Box<[u8]>),
    Slot(u32),
    Not(Box<Node>),
    Neg(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cmp(Cmp, Box<Node>, Box<Node>),
    Glob {
        negate: bool,
        subject: Box<Node>,
        pattern: Glob,
    },
    Arith(Arith, Box<Node>, Box<Node>),
}

/// What compilation knows of a sub-expression's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cond,
    Num,
    Str,
    /// A field: any type, known only per event.
    Any,
}

/// A compiled expression.
#[derive(Debug, Clone)]
pub struct Program {
    root: Node,
}

impl Program {
    /// Compiles `e`, asking `resolve` for the slot of each reference (it may
    /// refuse one with an error, e.g. `$begin` where there is no begin event;
    /// the second argument is the reference's position).
    pub fn compile(
        e: &Expr,
        resolve: &mut dyn FnMut(&Ref, usize) -> Result<u32, ExprError>,
    ) -> Result<Program, ExprError> {
        let (root, _) = compile(e, resolve)?;
        Ok(Program { root })
    }

    /// Evaluates the expression as a condition.
    #[inline]
    pub fn matches(&self, env: &dyn Lookup) -> bool {
        eval(&self.root, env).truth()
    }

    /// Evaluates the expression to a value.
    pub fn value<'a>(&'a self, env: &'a dyn Lookup) -> Val<'a> {
        eval(&self.root, env)
    }
}

fn describe(k: Kind) -> &'static str {
    match k {
        Kind::Cond => "a condition",
        Kind::Num => "a number",
        Kind::Str => "a string",
        Kind::Any => "a field",
    }
}

fn compile(
    e: &Expr,
    resolve: &mut dyn FnMut(&Ref, usize) -> Result<u32, ExprError>,
) -> Result<(Node, Kind), ExprError> {
    Ok(match e {
        Expr::Int { v, .. } => (Node::Int(*v as i128), Kind::Num),
        Expr::Float { v, .. } => (Node::Float(*v), Kind::Num),
        Expr::Str { v, .. } => (
            Node::Str(Glob::unescape(v).into_bytes().into_boxed_slice()),
            Kind::Str,
        ),
        Expr::Ref { r, pos } => {
            let kind = match r.target {
                Target::Name => Kind::Str,
                Target::Timestamp => Kind::Num,
                Target::Field(_) => Kind::Any,
            };
            (Node::Slot(resolve(r, *pos)?), kind)
        }
        Expr::Not { e, pos } => {
            let (n, k) = compile(e, resolve)?;
            if k == Kind::Str {
                return Err(ExprError::new(
                    *pos,
                    "`!` needs a condition, not a string (to negate a comparison, write `!(a == b)` or use `!=`)",
                ));
            }
            (Node::Not(Box::new(n)), Kind::Cond)
        }
        Expr::Neg { e, pos } => {
            let (n, k) = compile(e, resolve)?;
            if matches!(k, Kind::Str | Kind::Cond) {
                return Err(ExprError::new(
                    *pos,
                    format!("`-` needs a number, not {}", describe(k)),
                ));
            }
            (Node::Neg(Box::new(n)), Kind::Num)
        }
        Expr::Bin { op, l, r, pos } => {
            let (ln, lk) = compile(l, resolve)?;
            // A glob pattern is only recognised in a string literal on the
            // right of `==`, `!=` or `=*`.
            if matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Glob) {
                if let Expr::Str { v, .. } = &**r {
                    if lk == Kind::Num || lk == Kind::Cond {
                        return Err(ExprError::new(
                            *pos,
                            format!("cannot compare {} with a string", describe(lk)),
                        ));
                    }
                    if *op == BinOp::Glob || Glob::is_pattern(v) {
                        let pattern = Glob::new(v);
                        return Ok((
                            Node::Glob {
                                negate: *op == BinOp::Ne,
                                subject: Box::new(ln),
                                pattern,
                            },
                            Kind::Cond,
                        ));
                    }
                }
            }
            if *op == BinOp::Glob {
                return Err(ExprError::new(
                    r.pos(),
                    "expected a string pattern on the right of `=*`",
                ));
            }
            let (rn, rk) = compile(r, resolve)?;
            let (a, b) = (Box::new(ln), Box::new(rn));
            match op {
                BinOp::And | BinOp::Or => {
                    for (k, at) in [(lk, l.pos()), (rk, r.pos())] {
                        if k == Kind::Str {
                            return Err(ExprError::new(
                                at,
                                "a string is not a condition (compare it: `$evt.$name == \"...\"`)",
                            ));
                        }
                    }
                    let n = if *op == BinOp::And {
                        Node::And(a, b)
                    } else {
                        Node::Or(a, b)
                    };
                    (n, Kind::Cond)
                }
                op if op.is_arithmetic() => {
                    for (k, at) in [(lk, l.pos()), (rk, r.pos())] {
                        if matches!(k, Kind::Str | Kind::Cond) {
                            return Err(ExprError::new(
                                at,
                                format!("arithmetic needs numbers, not {}", describe(k)),
                            ));
                        }
                    }
                    let ar = match op {
                        BinOp::Add => Arith::Add,
                        BinOp::Sub => Arith::Sub,
                        BinOp::Mul => Arith::Mul,
                        BinOp::Div => Arith::Div,
                        _ => Arith::Rem,
                    };
                    (Node::Arith(ar, a, b), Kind::Num)
                }
                _ => {
                    let str_num =
                        |x: Kind, y: Kind| x == Kind::Str && matches!(y, Kind::Num | Kind::Cond);
                    if str_num(lk, rk) || str_num(rk, lk) {
                        return Err(ExprError::new(
                            *pos,
                            "cannot compare a string with a number",
                        ));
                    }
                    let c = match op {
                        BinOp::Eq => Cmp::Eq,
                        BinOp::Ne => Cmp::Ne,
                        BinOp::Lt => Cmp::Lt,
                        BinOp::Le => Cmp::Le,
                        BinOp::Gt => Cmp::Gt,
                        _ => Cmp::Ge,
                    };
                    (Node::Cmp(c, a, b), Kind::Cond)
                }
            }
        }
    })
}

fn eval<'a>(n: &'a Node, env: &'a dyn Lookup) -> Val<'a> {
    match n {
        Node::Int(i) => Val::Int(*i),
        Node::Float(f) => Val::Float(*f),
        Node::Str(s) => Val::Str(s),
        Node::Slot(s) => env.get(*s),
        Node::Not(e) => Val::Bool(!eval(e, env).truth()),
        Node::Neg(e) => match eval(e, env).num() {
            Some(Num::I(i)) => Val::Int(-i),
            Some(Num::F(f)) => Val::Float(-f),
            None => Val::Missing,
        },
        Node::And(a, b) => Val::Bool(eval(a, env).truth() && eval(b, env).truth()),
        Node::Or(a, b) => Val::Bool(eval(a, env).truth() || eval(b, env).truth()),
        Node::Glob {
            negate,
            subject,
            pattern,
        } => match eval(subject, env) {
            Val::Str(s) => Val::Bool(pattern.matches(s) != *negate),
            _ => Val::Bool(false),
        },
        Node::Cmp(c, a, b) => Val::Bool(compare(*c, eval(a, env), eval(b, env))),
        Node::Arith(op, a, b) => {
            let (Some(x), Some(y)) = (eval(a, env).num(), eval(b, env).num()) else {
                return Val::Missing;
            };
            arith(*op, x, y)
        }
    }
}

/// A comparison involving a missing value, or a string and a number, is
/// false, whatever the operator.
fn compare(c: Cmp, a: Val, b: Val) -> bool {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Val::Str(x), Val::Str(y)) => x.cmp(y),
        _ => match (a.num(), b.num()) {
            (Some(Num::I(x)), Some(Num::I(y))) => x.cmp(&y),
            (Some(x), Some(y)) => match x.f().partial_cmp(&y.f()) {
                Some(o) => o,
                // NaN: only `!=` holds.
                None => return c == Cmp::Ne,
            },
            _ => return false,
        },
    };
    match c {
        Cmp::Eq => ord == Ordering::Equal,
        Cmp::Ne => ord != Ordering::Equal,
        Cmp::Lt => ord == Ordering::Less,
        Cmp::Le => ord != Ordering::Greater,
        Cmp::Gt => ord == Ordering::Greater,
        Cmp::Ge => ord != Ordering::Less,
    }
}

/// Integer arithmetic is exact (128 bits; `/` truncates as in C); overflow
/// and division by zero give a missing value. Any float makes it float.
fn arith<'a>(op: Arith, x: Num, y: Num) -> Val<'a> {
    if let (Num::I(a), Num::I(b)) = (x, y) {
        let r = match op {
            Arith::Add => a.checked_add(b),
            Arith::Sub => a.checked_sub(b),
            Arith::Mul => a.checked_mul(b),
            Arith::Div => a.checked_div(b),
            Arith::Rem => a.checked_rem(b),
        };
        return r.map_or(Val::Missing, Val::Int);
    }
    let (a, b) = (x.f(), y.f());
    Val::Float(match op {
        Arith::Add => a + b,
        Arith::Sub => a - b,
        Arith::Mul => a * b,
        Arith::Div => a / b,
        Arith::Rem => a % b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Ctx;
    use crate::parser::parse_expr;

    /// An event as a list of (field name, value); slot = index in `names`.
    struct Ev<'a> {
        name: &'a str,
        fields: Vec<(&'a str, Val<'a>)>,
        slots: Vec<Option<usize>>,
    }

    impl Lookup for Ev<'_> {
        fn get(&self, slot: u32) -> Val<'_> {
            if slot == u32::MAX {
                return Val::Str(self.name.as_bytes());
            }
            match self.slots[slot as usize] {
                Some(i) => self.fields[i].1,
                None => Val::Missing,
            }
        }
    }

    fn run(expr: &str, name: &str, fields: Vec<(&str, Val)>) -> bool {
        let e = parse_expr(expr).unwrap();
        let mut refs: Vec<String> = Vec::new();
        let p = Program::compile(&e, &mut |r, _| {
            assert_eq!(r.ctx, Ctx::Evt);
            Ok(match &r.target {
                Target::Name => u32::MAX,
                Target::Field(p) => {
                    refs.push(p.join("."));
                    (refs.len() - 1) as u32
                }
                Target::Timestamp => unreachable!(),
            })
        })
        .unwrap();
        let slots = refs
            .iter()
            .map(|r| fields.iter().position(|(n, _)| n == r))
            .collect();
        p.matches(&Ev {
            name,
            fields,
            slots,
        })
    }

    fn compile_err(expr: &str) -> usize {
        let e = parse_expr(expr).unwrap();
        Program::compile(&e, &mut |_, _| Ok(0)).unwrap_err().pos
    }

    #[test]
    fn names_and_globs() {
        assert!(run(
            "$evt.$name == \"sched_switch\"",
            "sched_switch",
            vec![]
        ));
        assert!(!run(
            "$evt.$name == \"sched_switch\"",
            "sched_wakeup",
            vec![]
        ));
        assert!(run("$evt.$name == \"sched_*\"", "sched_wakeup", vec![]));
        assert!(run(
            "$evt.$name != \"sched_*\"",
            "irq_handler_entry",
            vec![]
        ));
        assert!(run("$name =* \"*_entry\"", "irq_handler_entry", vec![]));
        assert!(!run("$name == \"sched\\*\"", "sched_x", vec![]));
        assert!(run("$name == \"sched\\*\"", "sched*", vec![]));
        assert!(run("$name < \"b\"", "a", vec![]));
    }

    #[test]
    fn numbers() {
        let f = || {
            vec![
                ("tid", Val::Int(42)),
                ("ratio", Val::Float(0.5)),
                ("big", Val::Int(u64::MAX as i128)),
            ]
        };
        assert!(run("tid == 42 && ratio < 1", "e", f()));
        assert!(run("tid == 42.0", "e", f()));
        assert!(!run("tid == 42.5", "e", f()));
        assert!(run("tid * 2 + 1 == 85", "e", f()));
        assert!(run("tid / 5 == 8 && tid % 5 == 2", "e", f()));
        assert!(run("tid / 5.0 == 8.4", "e", f()));
        assert!(run("big == 0xFFFFFFFFFFFFFFFF && big > -1", "e", f()));
        assert!(run("-tid == 0 - 42", "e", f()));
        assert!(!run("tid / 0 == 0", "e", f()));
        assert!(run("!(tid / 0 == 0)", "e", f()));
        assert!(run("ratio && tid", "e", f()));
    }

    #[test]
    fn missing_fields_make_comparisons_false() {
        let f = || vec![("tid", Val::Int(1))];
        assert!(!run("nope == 1", "e", f()));
        assert!(!run("nope != 1", "e", f()));
        assert!(!run("nope < 1 || nope >= 1", "e", f()));
        assert!(run("!(nope == 1)", "e", f()));
        assert!(run("nope == 1 || tid == 1", "e", f()));
        assert!(!run("nope", "e", f()));
    }

    #[test]
    fn strings() {
        let f = || vec![("comm", Val::Str(b"bash")), ("n", Val::Int(3))];
        assert!(run("comm == \"bash\"", "e", f()));
        assert!(run("comm == \"ba*\"", "e", f()));
        assert!(!run("comm == n", "e", f()));
        assert!(!run("comm != n", "e", f()));
        assert!(!run("comm + 1 == 2", "e", f()));
    }

    #[test]
    fn type_errors_have_positions() {
        assert_eq!(compile_err("\"a\" + 1 == 2"), 0);
        assert_eq!(compile_err("a == 1 && \"x\""), 10);
        assert_eq!(compile_err("1 == \"x\""), 2);
        assert_eq!(compile_err("!$name"), 0);
        assert_eq!(compile_err("a =* 3"), 5);
    }
}
