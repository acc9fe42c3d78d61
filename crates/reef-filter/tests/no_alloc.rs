//! Evaluating a compiled program allocates nothing: counted with a global
//! allocator wrapper.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use reef_filter::ast::Target;
use reef_filter::{parse_expr, Lookup, Program, Val};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Only this test's thread is counted (the harness allocates on others).
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}

#[global_allocator]
static A: Counting = Counting;

struct Ev {
    name: &'static [u8],
    comm: &'static [u8],
    tid: i128,
    ratio: f64,
}

impl Lookup for Ev {
    fn get(&self, slot: u32) -> Val<'_> {
        match slot {
            0 => Val::Str(self.name),
            1 => Val::Str(self.comm),
            2 => Val::Int(self.tid),
            3 => Val::Float(self.ratio),
            _ => Val::Missing,
        }
    }
}

#[test]
fn evaluation_does_not_allocate() {
    let e = parse_expr(
        r#"($name == "sched_*" || $name =* "*_entry") && comm != "kworker*" && (tid * 3 + 1) % 7 < 5 && ratio / 2 >= 0.1 && !(nope == 1) && comm < "zzz""#,
    )
    .unwrap();
    let p = Program::compile(&e, &mut |r, _| {
        Ok(match &r.target {
            Target::Name => 0,
            Target::Field(f) if f[0] == "comm" => 1,
            Target::Field(f) if f[0] == "tid" => 2,
            Target::Field(f) if f[0] == "ratio" => 3,
            _ => 4,
        })
    })
    .unwrap();
    let events = [
        Ev {
            name: b"sched_switch",
            comm: b"bash",
            tid: 4,
            ratio: 0.5,
        },
        Ev {
            name: b"irq_handler_entry",
            comm: b"kworker/0:1",
            tid: 4,
            ratio: 0.5,
        },
        Ev {
            name: b"softirq_entry",
            comm: b"sshd",
            tid: 5,
            ratio: 1.0,
        },
        Ev {
            name: b"kmem_kfree",
            comm: b"sshd",
            tid: 5,
            ratio: 1.0,
        },
    ];
    COUNTING.with(|c| c.set(true));
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut hits = 0;
    for _ in 0..10_000 {
        for ev in &events {
            hits += p.matches(ev) as usize;
        }
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(false));
    assert_eq!(after - before, 0, "allocations during evaluation");
    // sched_switch: (4*3+1)%7 = 6, not < 5; softirq_entry: 16%7 = 2.
    assert_eq!(hits, 10_000);
}
