//! `--itemize` on the object engines: the local engine's [`Change`]s (`engine::copy::
//! itemize`), one per file or object sent and per entry deleted, sorted in rsync's order
//! (by name in each directory, a directory's deletions first) when the run ends, and
//! written in copy's words or rsync's codes; with `--json` they are the document's
//! `changes` array, as copy's.
//!
//! An object has no mode, owner, group, ACLs, xattrs or links and a store has no
//! directories, so only these lines appear: `new file P` (`>f+++++++++ P`), `changed file
//! P (size, time)` (`>f.st...... P`: `s` when the sizes differ, `t` when the times decided:
//! an object last modified before the file was on upload and between prefixes, another
//! `mtime` on download), and `deleted P` (`*deleting   P`; on a local DST also a
//! directory, `*deleting   P/`, each entry its own line, as `rsync -i` lists them). Never
//! `c`, `p`, `o`, `g`, `a`, `x`, nor a directory's own line: the directories a download
//! makes for its files are not listed. The transfer column is `>` on every side, as the
//! local engine writes it (rsync writes `<` when it pushes to a remote host). Each line
//! says what the run set out to do: a transfer that failed is also a `failed:` line.

use crate::engine::copy::itemize::{Change, Format, Verb};

/// A file or object sent: new when DST has nothing there, else changed by size and/or
/// time (`there`: (size differs, time differs)).
pub fn sent(rel: &str, there: Option<(bool, bool)>) -> Change {
    match there {
        None => Change::new(Verb::New, "file", rel.as_bytes()),
        Some((size, time)) => {
            let what = [(size, "size"), (time, "time")].into_iter().filter(|w| w.0).map(|w| w.1).collect();
            Change { what, ..Change::new(Verb::Changed, "file", rel.as_bytes()) }
        }
    }
}

/// The `--itemize` lines of `changes`, one a line, in `format`.
pub fn lines(changes: &[Change], format: Format) -> String {
    changes
        .iter()
        .map(|c| match format {
            Format::Words => c.text(),
            Format::Rsync => c.rsync(),
        })
        .map(|l| l + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_an_object_run_can_print() {
        let mut all = vec![
            sent("b/z", Some((true, false))),
            sent("a", None),
            Change::new(Verb::Deleted, "file", b"b/gone"),
            sent("b/t", Some((false, true))),
            Change::new(Verb::Deleted, "dir", b"old"),
        ];
        all.sort_by(|a, b| a.order.cmp(&b.order));
        assert_eq!(
            lines(&all, Format::Words),
            "deleted old\nnew file a\ndeleted b/gone\nchanged file b/t (time)\nchanged file b/z (size)\n"
        );
        assert_eq!(
            lines(&all, Format::Rsync),
            "*deleting   old/\n>f+++++++++ a\n*deleting   b/gone\n>f..t...... b/t\n>f.s....... b/z\n"
        );
        assert_eq!(sent("x", Some((true, true))).rsync(), ">f.st...... x");
    }
}
