//! `probe --count-by ... -s user --call-graph dwarf`: hits counted in tracer, by the keys
//! their event carries and by their stacks as a streamed `-s` shows them (the user stack
//! unwound from CFI from the copy of its top). The kernel can only count a user stack walked
//! by frame pointers, which ends early in code built without them.

use std::collections::BTreeMap;

use tracer_common::Event;

use crate::output::counts::{Report, Row};
use crate::output::stack::{self, Stack};
use crate::plan::{Aggregation, KeyPart};

/// A row's identity: its shown keys, the process its user addresses belong to, and its
/// stacks' text.
type RowKey = (Vec<String>, u32, String);

/// Counts by [`RowKey`], with the stacks themselves.
pub struct Tally {
    keys: Vec<KeyPart>,
    top: Option<usize>,
    counts: BTreeMap<RowKey, (Vec<Stack>, u64)>,
}

impl Tally {
    /// For `agg`'s keys, which the plan allowed: those of an event's header, and the stack.
    pub fn new(agg: &Aggregation) -> Tally {
        Tally {
            keys: agg.keys.clone(),
            top: agg.top,
            counts: BTreeMap::new(),
        }
    }

    /// Counts one hit of `probe`, with its stacks.
    pub fn add(&mut self, event: &Event, probe: &str, stacks: Vec<Stack>) {
        let keys: Vec<String> = (self.keys.iter())
            .filter_map(|part| shown(part, event, probe))
            .collect();
        let mut text = Vec::new();
        // Into memory: cannot fail.
        let _ = stack::write_text(&mut text, &stacks);
        let text = String::from_utf8_lossy(&text).into_owned();
        let (_, count) = (self.counts)
            .entry((keys, event.pid(), text))
            .or_insert((stacks, 0));
        *count += 1;
    }

    /// The run's counts, as a counted run reports them.
    pub fn report(&self) -> Report {
        let rows = self
            .counts
            .iter()
            .map(|((keys, _, _), (stacks, count))| Row {
                keys: keys.clone(),
                stacks: stacks.clone(),
                count: *count,
                sum: None,
                buckets: Vec::new(),
                below: 0,
                above: 0,
            });
        Report::new(
            (self.keys.iter())
                .filter_map(super::aggregate::column)
                .collect(),
            None,
            None,
            rows.collect(),
            self.top,
        )
    }
}

/// A key column's text, as the kernel's counts show it (`aggregate::report`).
fn shown(part: &KeyPart, event: &Event, probe: &str) -> Option<String> {
    Some(match part {
        KeyPart::Comm => String::from_utf8_lossy(event.comm()).into_owned(),
        KeyPart::Pid => event.pid().to_string(),
        KeyPart::Tid => event.tid().to_string(),
        KeyPart::Cpu => event.cpu.to_string(),
        KeyPart::Probe => probe.to_string(),
        // The plan refuses the others with --call-graph dwarf.
        _ => return None,
    })
}
