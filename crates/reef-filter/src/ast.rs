//! The syntax tree of an expression, with byte positions for messages.

/// Which event a reference reads: the current one, the one that began the
/// period (or activity), or the one that began the parent period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ctx {
    Evt,
    Begin,
    ParentBegin,
}

/// Which part of the event a field is looked up in. `Auto` searches the
/// payload, then the event context, the stream event context, the event
/// header, the packet context and the packet header, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Auto,
    Payload,
    Context,
    StreamContext,
    Header,
    PacketContext,
    PacketHeader,
}

impl Scope {
    /// The `$word` that selects the scope.
    pub fn from_word(w: &str) -> Option<Scope> {
        Some(match w {
            "payload" => Scope::Payload,
            "ctx" => Scope::Context,
            "stream_ctx" => Scope::StreamContext,
            "header" => Scope::Header,
            "pkt_ctx" => Scope::PacketContext,
            "pkt_header" => Scope::PacketHeader,
            _ => return None,
        })
    }
}

/// What a reference names in its event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// `$name`: the event's name.
    Name,
    /// `$timestamp`: nanoseconds from the clock's origin.
    Timestamp,
    /// A field, by name; members of structures as `outer.inner`.
    Field(Vec<String>),
}

/// A reference such as `$begin.$evt.$payload.prev_tid`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ref {
    pub ctx: Ctx,
    pub scope: Scope,
    pub target: Target,
}

impl std::fmt::Display for Ref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.ctx {
            Ctx::Evt => {}
            Ctx::Begin => f.write_str("$begin.")?,
            Ctx::ParentBegin => f.write_str("$parent.$begin.")?,
        }
        f.write_str("$evt.")?;
        let scope = match self.scope {
            Scope::Auto => "",
            Scope::Payload => "$payload.",
            Scope::Context => "$ctx.",
            Scope::StreamContext => "$stream_ctx.",
            Scope::Header => "$header.",
            Scope::PacketContext => "$pkt_ctx.",
            Scope::PacketHeader => "$pkt_header.",
        };
        f.write_str(scope)?;
        match &self.target {
            Target::Name => f.write_str("$name"),
            Target::Timestamp => f.write_str("$timestamp"),
            Target::Field(path) => f.write_str(&path.join(".")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    /// `=*`: the right-hand string is always a glob pattern.
    Glob,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Glob | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
        )
    }
}

/// An expression. `pos` is the byte offset messages point at: the start of
/// a literal or reference, the operator of a unary or binary expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Int {
        v: u64,
        pos: usize,
    },
    Float {
        v: f64,
        pos: usize,
    },
    Str {
        v: String,
        pos: usize,
    },
    Ref {
        r: Ref,
        pos: usize,
    },
    Not {
        e: Box<Expr>,
        pos: usize,
    },
    Neg {
        e: Box<Expr>,
        pos: usize,
    },
    Bin {
        op: BinOp,
        l: Box<Expr>,
        r: Box<Expr>,
        pos: usize,
    },
}

impl Expr {
    pub fn pos(&self) -> usize {
        match self {
            Expr::Int { pos, .. }
            | Expr::Float { pos, .. }
            | Expr::Str { pos, .. }
            | Expr::Ref { pos, .. }
            | Expr::Not { pos, .. }
            | Expr::Neg { pos, .. } => *pos,
            Expr::Bin { l, .. } => l.pos(),
        }
    }

    /// Every reference in the expression, with its position, in order.
    pub fn refs(&self) -> Vec<(&Ref, usize)> {
        let mut out = Vec::new();
        fn walk<'a>(e: &'a Expr, out: &mut Vec<(&'a Ref, usize)>) {
            match e {
                Expr::Ref { r, pos } => out.push((r, *pos)),
                Expr::Not { e, .. } | Expr::Neg { e, .. } => walk(e, out),
                Expr::Bin { l, r, .. } => {
                    walk(l, out);
                    walk(r, out);
                }
                _ => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

/// `NAME[(PARENT)] : BEGIN [: END]` (see `reef periods`).
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodDef {
    pub name: Option<String>,
    pub parent: Option<(String, usize)>,
    pub begin: Expr,
    /// When absent, the begin expression ends the period too.
    pub end: Option<Expr>,
}

/// One capture: `[NAME =] REF`; unnamed captures are named by the
/// reference as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    pub name: String,
    pub r: Ref,
    pub pos: usize,
}

/// `NAME : [CAPTURE, ...] [: CAPTURE, ...]`: what to record from the begin
/// and the end event of each period named NAME.
#[derive(Debug, Clone, PartialEq)]
pub struct CapturesDef {
    pub name: String,
    pub name_pos: usize,
    pub begin: Vec<Capture>,
    pub end: Vec<Capture>,
}
