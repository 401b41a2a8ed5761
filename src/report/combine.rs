//! Several result files as one ResultSet (e.g. ext4 measured today, xfs tomorrow), so
//! charts, crossovers and exports see every target together.

use crate::results::ResultSet;

/// Concatenates targets and measurements and derives everything again. Settings and
/// provenance come from the first set; a target id used by two files gets the file's
/// index as suffix (`dir#2`), so each keeps its own line. One set is returned as is.
pub fn combine(mut sets: Vec<ResultSet>) -> Option<ResultSet> {
    if sets.len() <= 1 {
        return sets.pop();
    }
    let mut it = sets.into_iter();
    let mut out = it.next()?;
    for (i, rs) in it.enumerate() {
        let suffix = format!("#{}", i + 2);
        let rename = |id: &str, taken: &[crate::storage::TargetInfo]| {
            if taken.iter().any(|t| t.id == id) { format!("{id}{suffix}") } else { id.to_string() }
        };
        let renamed: Vec<(String, String)> =
            rs.targets.iter().map(|t| (t.id.clone(), rename(&t.id, &out.targets))).collect();
        let new_id = |old: &str| renamed.iter().find(|r| r.0 == old).map_or(old.to_string(), |r| r.1.clone());
        let order0 = out.measurements.len() as u64;
        for mut m in rs.measurements {
            m.target = new_id(&m.target);
            m.order += order0;
            out.measurements.push(m);
        }
        for mut t in rs.targets {
            t.id = new_id(&t.id);
            out.targets.push(t);
        }
        for op in rs.experiment.ops {
            if !out.experiment.ops.contains(&op) {
                out.experiment.ops.push(op);
            }
        }
        out.complete &= rs.complete;
        out.notes.extend(rs.notes);
    }
    // Labels too: the same directory measured twice keeps a line, and a name, each.
    let mut labels: Vec<String> = out.targets.iter().map(|t| t.shown()).collect();
    crate::storage::distinct_labels(&mut labels);
    for (t, l) in out.targets.iter_mut().zip(labels) {
        t.label = l;
    }
    out.derive();
    Some(out)
}
