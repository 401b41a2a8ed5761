//! Records put in order with bounded memory: `--itemize`'s changes come from many
//! directories at once and are said in rsync's order when the run ends. Up to
//! [`BUFFER`] bytes are held; past that the held records are sorted and written to an
//! unnamed temporary file (`tempfile::tempfile`: O_TMPFILE in $TMPDIR, gone when closed,
//! as sort(1) spills), and the end merges those runs. Written by hand: the records are
//! two byte strings and a key, and an external-sort crate would bring more than these
//! lines do.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};

/// Bytes of records held before a sorted run is written out. A million changes take
/// about 200 MB as records; held whole they grew a `sync -n -i` by that much.
pub const BUFFER: usize = 4 << 20;

/// One record: where it sorts, the line to print, the JSON item (empty: none).
pub type Record = (Vec<u8>, Vec<u8>, Vec<u8>);

/// Records pushed in any order, taken back sorted by key (equal keys: in push order
/// within a run).
#[derive(Debug, Default)]
pub struct Sorter {
    held: Vec<Record>,
    bytes: usize,
    runs: Vec<File>,
    /// The first error writing a run: the records of that run are kept in memory instead.
    pub spill_error: Option<String>,
}

impl Sorter {
    pub fn push(&mut self, r: Record) {
        self.bytes += r.0.len() + r.1.len() + r.2.len() + 3 * std::mem::size_of::<Vec<u8>>();
        self.held.push(r);
        if self.bytes > BUFFER && self.spill_error.is_none() {
            self.spill();
        }
    }

    /// The held records sorted and written to a run of their own.
    fn spill(&mut self) {
        self.held.sort_by(|a, b| a.0.cmp(&b.0));
        let written = tempfile::tempfile().and_then(|f| {
            let mut w = BufWriter::new(f);
            for r in &self.held {
                for part in [&r.0, &r.1, &r.2] {
                    w.write_all(&(part.len() as u32).to_le_bytes())?;
                    w.write_all(part)?;
                }
            }
            let mut f = w.into_inner().map_err(|e| e.into_error())?;
            f.rewind()?;
            Ok(f)
        });
        match written {
            Ok(f) => {
                self.runs.push(f);
                self.held.clear();
                self.held.shrink_to(1024);
                self.bytes = 0;
            }
            Err(e) => self.spill_error = Some(format!("cannot write a temporary file in {}: {e}", tmp_dir())),
        }
    }

    /// Every record in key order, handed to `each`.
    pub fn drain(mut self, mut each: impl FnMut(Record)) {
        self.held.sort_by(|a, b| a.0.cmp(&b.0));
        if self.runs.is_empty() {
            self.held.into_iter().for_each(each);
            return;
        }
        // Merge: the smallest head of every run and of the held records, one at a time.
        let mut sources: Vec<Source> = self.runs.into_iter().map(|f| Source::Run(BufReader::new(f))).collect();
        sources.push(Source::Held(self.held.into_iter()));
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(r) = s.next() {
                heap.push(Reverse(Head(r, i)));
            }
        }
        while let Some(Reverse(Head(r, i))) = heap.pop() {
            if let Some(next) = sources[i].next() {
                heap.push(Reverse(Head(next, i)));
            }
            each(r);
        }
    }
}

fn tmp_dir() -> String {
    std::env::temp_dir().display().to_string()
}

/// A record and the source it came from, ordered by key, then by source (a run written
/// earlier holds records pushed earlier).
struct Head(Record, usize);

impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.0.0 == o.0.0 && self.1 == o.1
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.0.cmp(&o.0.0).then(self.1.cmp(&o.1))
    }
}

enum Source {
    Run(BufReader<File>),
    Held(std::vec::IntoIter<Record>),
}

impl Source {
    /// The next record (None at the end, or where a run cannot be read back: the records
    /// after that point of that run are lost to the listing, which only says changes).
    fn next(&mut self) -> Option<Record> {
        match self {
            Source::Held(it) => it.next(),
            Source::Run(r) => {
                let mut part = || -> Option<Vec<u8>> {
                    let mut n = [0u8; 4];
                    r.read_exact(&mut n).ok()?;
                    let mut v = vec![0u8; u32::from_le_bytes(n) as usize];
                    r.read_exact(&mut v).ok()?;
                    Some(v)
                };
                Some((part()?, part()?, part()?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_sorted_across_runs_and_memory() {
        let mut s = Sorter::default();
        // Enough to spill several runs: keys in a scrambled order.
        let n = 200_000u32;
        for i in 0..n {
            let k = ((i as u64 * 7_919) % n as u64) as u32; // a permutation: 7,919 is prime
            s.push((k.to_be_bytes().to_vec(), format!("line {k}").into_bytes(), vec![b'j'; 8]));
        }
        assert!(s.runs.len() >= 2, "runs written: {}", s.runs.len());
        let mut got = Vec::new();
        s.drain(|r| got.push(u32::from_be_bytes(r.0.try_into().unwrap())));
        assert_eq!(got.len(), n as usize);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "not in order");
    }

    #[test]
    fn few_records_stay_in_memory() {
        let mut s = Sorter::default();
        for k in [3u8, 1, 2] {
            s.push((vec![k], vec![k], Vec::new()));
        }
        assert!(s.runs.is_empty());
        let mut got = Vec::new();
        s.drain(|r| got.push(r.1[0]));
        assert_eq!(got, [1, 2, 3]);
    }
}
