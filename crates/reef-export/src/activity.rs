//! Activities (`reef activities`' engine, one definition given to
//! `reef convert`) as slices: each activity is placed on a lane of its
//! group (its key's text), a lane being a row where slices never overlap:
//! activities of one key may overlap (several CPUs taking the same IRQ),
//! so a group gets as many lanes as it has activities at once.

use reef_engines::activities::Activities;
use reef_engines::intervals::{Interval, IntervalEngine};
use reef_read::Msg;

/// One activity and the lane it goes on.
pub struct Placed {
    /// Lanes are numbered from 0 in the order they are first used.
    pub lane: usize,
    /// The lane's name: the group (`activities` when it has none), then
    /// ` #n` for its n-th lane (n ≥ 2).
    pub lane_name: String,
    pub interval: Interval,
}

pub struct ActivitySlices {
    engine: Activities,
    /// What the slices are called.
    pub name: String,
    /// Per lane: its group and the end of its last slice.
    lanes: Vec<(String, i64)>,
    /// Activities placed.
    pub count: u64,
}

impl ActivitySlices {
    pub fn new(engine: Activities, name: &str) -> ActivitySlices {
        ActivitySlices {
            engine,
            name: name.to_string(),
            lanes: Vec::new(),
            count: 0,
        }
    }

    /// Reads one event (in time order); returns the activities it ends,
    /// placed.
    pub fn event(&mut self, m: &Msg<'_>, ns: i64) -> Vec<Placed> {
        // Vec::new does not allocate: most events end no activity.
        let mut found = Vec::new();
        self.engine.event(m, ns, &mut found);
        let mut out = Vec::with_capacity(found.len());
        for iv in found {
            // Activities come at their ends, in time order: a lane whose
            // last slice ended by this one's begin is free.
            let free = self
                .lanes
                .iter()
                .position(|(g, end)| *g == iv.group && *end <= iv.begin_ns);
            let lane = match free {
                Some(l) => l,
                None => {
                    self.lanes.push((iv.group.clone(), i64::MIN));
                    self.lanes.len() - 1
                }
            };
            self.lanes[lane].1 = iv.end_ns;
            let nth = self.lanes[..=lane]
                .iter()
                .filter(|(g, _)| *g == iv.group)
                .count();
            let base = if iv.group.is_empty() {
                "activities"
            } else {
                iv.group.as_str()
            };
            let lane_name = if nth > 1 {
                format!("{base} #{nth}")
            } else {
                base.to_string()
            };
            self.count += 1;
            out.push(Placed {
                lane,
                lane_name,
                interval: iv,
            });
        }
        out
    }
}

/// Placed activities as rows of the Parquet `activities` table: `name`
/// (the definition's), `group` (the key's text; null without a key),
/// `lane`, `ts` (begin), `dur`, `end_ts`, ns from the origin.
#[derive(Default)]
pub struct Rows {
    name: reef_arrow::cols::Strs,
    group: reef_arrow::cols::Strs,
    lane: reef_arrow::cols::Strs,
    ts: reef_arrow::cols::Prim<i64>,
    dur: reef_arrow::cols::Prim<i64>,
    end_ts: reef_arrow::cols::Prim<i64>,
    /// Rows not yet taken.
    pub rows: usize,
}

impl Rows {
    pub fn push(&mut self, name: &str, p: &Placed) {
        let iv = &p.interval;
        self.name.push(name.as_bytes());
        if iv.group.is_empty() {
            self.group.push_null();
        } else {
            self.group.push(iv.group.as_bytes());
        }
        self.lane.push(p.lane_name.as_bytes());
        self.ts.push(iv.begin_ns);
        self.dur.push(iv.duration_ns);
        self.end_ts.push(iv.end_ns);
        self.rows += 1;
    }

    /// The rows so far as one batch (none when there are none).
    pub fn take(&mut self) -> Result<Option<arrow_array::RecordBatch>, arrow_schema::ArrowError> {
        use arrow_schema::{DataType, Field};
        if self.rows == 0 {
            return Ok(None);
        }
        let n = std::mem::take(&mut self.rows);
        let i = |n: &str| Field::new(n, DataType::Int64, false);
        let u = |n: &str, null| Field::new(n, DataType::Utf8, null);
        reef_arrow::record_batch(
            vec![
                (u("name", false), self.name.finish()),
                (u("group", true), self.group.finish()),
                (u("lane", false), self.lane.finish()),
                (i("ts"), self.ts.finish()),
                (i("dur"), self.dur.finish()),
                (i("end_ts"), self.end_ts.finish()),
            ],
            n,
        )
        .map(Some)
    }
}
