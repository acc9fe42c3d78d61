//! A flame graph as one self-contained SVG file: a frame per call path,
//! its width its share of the weight, callers below callees; siblings in
//! name order (as Brendan Gregg's flame graphs), colours from the name so
//! that a function keeps its colour. Each frame's `<title>` gives its name,
//! weight and share (a browser shows it on hover).

use std::collections::BTreeMap;
use std::io::{self, Write};

const WIDTH: f64 = 1200.0;
const ROW: f64 = 16.0;
const PAD: f64 = 10.0;
const TOP: f64 = 40.0;
/// Frames narrower than this (pixels) are left out (their weight still
/// counts in their parents').
const MIN_WIDTH: f64 = 0.1;

#[derive(Default)]
struct Frame {
    weight: u64,
    kids: BTreeMap<String, Frame>,
}

fn depth(f: &Frame) -> usize {
    f.kids.values().map(|k| 1 + depth(k)).max().unwrap_or(0)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A warm colour from the name (FNV-1a).
fn colour(name: &str) -> (u8, u8, u8) {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    let r = 205 + (h % 50) as u8;
    let g = ((h >> 8) % 180) as u8;
    let b = ((h >> 16) % 55) as u8;
    (r, g, b)
}

/// Writes the flame graph of all groups of `stacks` (a group, when not
/// empty, is the frame below its stacks). `unit` names the weight
/// (`samples`, `ns`).
pub fn write(
    stacks: &crate::Stacks,
    title: &str,
    unit: &str,
    out: &mut impl Write,
) -> io::Result<()> {
    let mut root = Frame::default();
    for (g, st) in &stacks.groups {
        for (stack, w) in st {
            root.weight += w;
            let mut at = &mut root;
            let names = (!g.is_empty()).then_some(g).into_iter().chain(stack.iter());
            for n in names {
                at = at.kids.entry(n.clone()).or_default();
                at.weight += w;
            }
        }
    }
    let rows = depth(&root) + 1;
    let height = TOP + rows as f64 * ROW + PAD;
    writeln!(
        out,
        r##"<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f8"/>
<text x="{}" y="24" font-family="Verdana, sans-serif" font-size="17" text-anchor="middle">{}</text>"##,
        WIDTH / 2.0,
        esc(title)
    )?;
    let scale = if root.weight > 0 {
        (WIDTH - 2.0 * PAD) / root.weight as f64
    } else {
        0.0
    };
    let total = root.weight.max(1);
    let mut ctx = Ctx {
        out,
        scale,
        total,
        unit,
        height,
    };
    ctx.frame("all", &root, PAD, 0)?;
    writeln!(ctx.out, "</svg>")
}

struct Ctx<'a, W: Write> {
    out: &'a mut W,
    scale: f64,
    total: u64,
    unit: &'a str,
    height: f64,
}

impl<W: Write> Ctx<'_, W> {
    fn frame(&mut self, name: &str, f: &Frame, x: f64, level: usize) -> io::Result<()> {
        let w = f.weight as f64 * self.scale;
        if w < MIN_WIDTH {
            return Ok(());
        }
        let y = self.height - PAD - (level + 1) as f64 * ROW;
        let (r, g, b) = if level == 0 {
            (200, 200, 200)
        } else {
            colour(name)
        };
        let share = 100.0 * f.weight as f64 / self.total as f64;
        // About 7 px per character at 12 px Verdana.
        let fit = ((w - 6.0) / 7.0).floor().max(0.0) as usize;
        let label = if name.chars().count() <= fit {
            esc(name)
        } else if fit > 2 {
            format!("{}..", esc(&name.chars().take(fit - 2).collect::<String>()))
        } else {
            String::new()
        };
        writeln!(
            self.out,
            r#"<g><title>{} ({} {}, {:.2}%)</title><rect x="{x:.3}" y="{y:.1}" width="{w:.3}" height="{:.1}" fill="rgb({r},{g},{b})" rx="2" ry="2"/><text x="{:.1}" y="{:.1}" font-family="Verdana, sans-serif" font-size="12">{label}</text></g>"#,
            esc(name),
            f.weight,
            self.unit,
            share,
            ROW - 1.0,
            x + 3.0,
            y + ROW - 4.5,
        )?;
        let mut kx = x;
        for (n, k) in &f.kids {
            self.frame(n, k, kx, level + 1)?;
            kx += k.weight as f64 * self.scale;
        }
        Ok(())
    }
}
