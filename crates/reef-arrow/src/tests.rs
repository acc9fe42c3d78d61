use std::collections::BTreeMap;
use std::ops::ControlFlow;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use reef_read::{ReadOptions, Source};

use super::*;

const KERNEL: &str = "../../../shared/conformance/kernel-traces/bug446190";

/// Every event is one row of the events table and one row of its class's
/// table, `seq` numbering them in reading order, whatever the batch size.
#[test]
fn rows_and_seq() {
    for batch_rows in [1000, 65536] {
        let mut src = Source::open(&ReadOptions::new([KERNEL])).unwrap();
        let mut b = Batcher::new(Options {
            batch_rows,
            trace_column: true,
        });
        let mut names: BTreeMap<String, u64> = BTreeMap::new();
        let mut batches = Vec::new();
        let stopped = src
            .for_each_event(|m, _| {
                *names.entry(m.cursor.event_name().to_string()).or_default() += 1;
                b.push(m)?;
                batches.extend(b.take_ready());
                Ok::<_, ArrowError>(ControlFlow::Continue(()))
            })
            .unwrap();
        assert!(stopped.is_none());
        batches.extend(b.finish().unwrap());
        let mut per_table: BTreeMap<String, u64> = BTreeMap::new();
        let mut seqs = Vec::new();
        let mut class_seqs = Vec::new();
        for bt in &batches {
            assert!(bt.batch.num_rows() <= batch_rows);
            *per_table.entry(bt.table.name().to_string()).or_default() +=
                bt.batch.num_rows() as u64;
            let seq = bt
                .batch
                .column_by_name("seq")
                .unwrap()
                .as_primitive::<Int64Type>();
            match bt.table {
                Table::Events => seqs.extend(seq.values().iter().copied()),
                Table::Class { .. } => class_seqs.extend(seq.values().iter().copied()),
            }
        }
        let total: u64 = names.values().sum();
        assert!(total > 1000);
        assert_eq!(per_table.remove("events"), Some(total));
        assert_eq!(per_table, names);
        assert_eq!(seqs, (0..total as i64).collect::<Vec<_>>());
        class_seqs.sort_unstable();
        assert_eq!(class_seqs, seqs);
    }
}
