//! Several invocations of one experiment as one result set whose runs come in blocks
//! (`analysis::blocks`): each file's blocks stay its own, so the variation between
//! invocations enters every interval directly. `report --pool`, `compare --pool-a/-b`
//! use it. Unlike `report`'s side-by-side combination, targets are matched, not
//! renamed: the files must be the same experiment on the same targets.

use super::ResultSet;

/// Block ids of file `i` start at `i × FILE_BLOCKS` (a file has far fewer blocks).
const FILE_BLOCKS: u32 = crate::analysis::blocks::INVOCATION_BLOCKS;

/// Pool `sets` (in the order given; settings and provenance from the first). Refused
/// when they are not one experiment: another experiment name, time (`until`), or a
/// target of another id or file system; and when two are one invocation (its id, or
/// host, start and command line in files without one): its runs would count twice
/// as independent invocations and narrow every interval falsely.
pub fn pool(mut sets: Vec<(String, ResultSet)>) -> Result<ResultSet, String> {
    if sets.is_empty() {
        return Err("nothing to pool".into());
    }
    for (i, (a, ra)) in sets.iter().enumerate() {
        if let Some((b, _)) = sets[i + 1..].iter().find(|(_, rb)| ra.provenance.same_invocation(&rb.provenance)) {
            return Err(format!(
                "{a} and {b} are one invocation (started {} on {}): pooling it twice would count its runs twice",
                ra.provenance.started_utc, ra.provenance.host
            ));
        }
    }
    let (first_name, mut out) = sets.remove(0);
    relabel_blocks(&mut out, 0);
    for (i, (name, mut rs)) in sets.into_iter().enumerate() {
        if rs.experiment.name != out.experiment.name {
            return Err(format!(
                "{name} is a {} experiment, {first_name} a {}: only invocations of one experiment pool",
                rs.experiment.name, out.experiment.name
            ));
        }
        if rs.experiment.until != out.experiment.until {
            return Err(format!("{name} times phases until another point than {first_name} (--until)"));
        }
        for t in &rs.targets {
            match out.targets.iter().find(|o| o.id == t.id) {
                Some(o) if o.fs_type == t.fs_type => {}
                Some(o) => {
                    return Err(format!(
                        "target {} is {} in {name} and {} in {first_name}: not the same target",
                        t.id, t.fs_type, o.fs_type
                    ));
                }
                None => out.targets.push(t.clone()),
            }
        }
        relabel_blocks(&mut rs, (i as u32 + 1) * FILE_BLOCKS);
        let order0 = out.measurements.iter().map(|m| m.order + 1).max().unwrap_or(0);
        for mut m in rs.measurements {
            // Run numbers go on after the cell's runs so far.
            let last = out
                .measurements
                .iter()
                .filter(|o| o.target == m.target && o.op == m.op && o.tree_key == m.tree_key)
                .map(|o| o.run)
                .max()
                .unwrap_or(0);
            m.run += last;
            m.order += order0;
            out.measurements.push(m);
        }
        for op in rs.experiment.ops {
            if !out.experiment.ops.contains(&op) {
                out.experiment.ops.push(op);
            }
        }
        out.complete &= rs.complete;
    }
    out.derive();
    Ok(out)
}

/// Give every measurement of `rs` a block id from `base` on: its own block, or (files
/// from before blocks) each run a block of its own.
fn relabel_blocks(rs: &mut ResultSet, base: u32) {
    for m in &mut rs.measurements {
        m.block = Some(base + m.block.unwrap_or(FILE_BLOCKS / 2 + m.run));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::Summary;

    /// A result set of one cell whose runs are `times`, in blocks of two.
    fn invocation(times: &[f64]) -> ResultSet {
        let mut rs = crate::results::testing::one_cell(times);
        rs.provenance.invocation = format!("{times:?}-{}", rs.provenance.invocation);
        for (i, m) in rs.measurements.iter_mut().enumerate() {
            m.block = Some(i as u32 / 2);
        }
        rs.derive();
        rs
    }

    fn cell(rs: &ResultSet) -> &Summary {
        &rs.summaries[0].stats
    }

    #[test]
    fn pooled_invocations_carry_their_difference() {
        // Two invocations, each tight, 10% apart: pooled, the interval holds both.
        let a = invocation(&[1.00, 1.01, 0.99, 1.00, 1.01, 0.99, 1.0, 1.0]);
        let b = invocation(&[1.10, 1.11, 1.09, 1.10, 1.11, 1.09, 1.1, 1.1]);
        let p = pool(vec![("a".into(), a.clone()), ("b".into(), b)]).unwrap();
        let s = cell(&p);
        assert_eq!(s.n, 16);
        assert_eq!(s.blocks, 8);
        let [lo, hi] = s.median_ci95_s.unwrap();
        assert!(lo <= 1.0 && hi >= 1.1, "pooled interval {lo}–{hi}");
        let [alo, ahi] = cell(&a).median_ci95_s.unwrap();
        assert!(ahi < 1.05 && alo > 0.95, "one invocation alone {alo}–{ahi}");
        // Three invocations: they are a level of their own, and with 2 degrees of
        // freedom their spread makes the interval wide (blocks alone: about ±5%).
        let c = invocation(&[1.20, 1.21, 1.19, 1.20, 1.21, 1.19, 1.2, 1.2]);
        let sets = vec![("a".into(), a.clone()), ("b".into(), invocation(&[1.1; 8])), ("c".into(), c)];
        let [lo, hi] = cell(&pool(sets).unwrap()).median_ci95_s.unwrap();
        assert!(hi / lo > 1.35, "three invocations: {lo}–{hi}");
    }

    #[test]
    fn another_experiment_is_refused() {
        let a = invocation(&[1.0; 6]);
        let mut b = invocation(&[1.0; 6]);
        b.experiment.name = "bigfile".into();
        let e = pool(vec![("a".into(), a.clone()), ("b".into(), b)]).unwrap_err();
        assert!(e.contains("only invocations of one experiment"), "{e}");
        let mut c = a.clone();
        c.provenance.invocation.push('c'); // another invocation, on another file system
        c.targets[0].fs_type = "xfs".into();
        let e = pool(vec![("a".into(), a), ("c".into(), c)]).unwrap_err();
        assert!(e.contains("not the same target"), "{e}");
    }

    #[test]
    fn one_invocation_twice_is_refused() {
        let a = invocation(&[1.0, 1.1, 0.9, 1.0, 1.05, 0.95]);
        let e = pool(vec![("a".into(), a.clone()), ("copy".into(), a.clone())]).unwrap_err();
        assert!(e.contains("a and copy are one invocation"), "{e}");
        // files from before invocation ids: host, start and command line
        let mut old = a.clone();
        old.provenance.invocation.clear();
        let mut b = invocation(&[2.0; 6]);
        b.provenance.started_utc = "2000-01-01T00:00:00Z".into();
        let e = pool(vec![("b".into(), b), ("old".into(), old.clone()), ("a".into(), a)]).unwrap_err();
        assert!(e.contains("old and a are one invocation"), "{e}");
        let mut later = old.clone();
        later.provenance.started_utc = "2099-01-01T00:00:00Z".into();
        assert!(pool(vec![("old".into(), old), ("later".into(), later)]).is_ok());
    }
}
