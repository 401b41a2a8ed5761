//! The time a tree experiment would take on device-class targets (`--fs ...@class:`),
//! estimated from the class's parameters before anything is created (issue 30, item 6):
//! a slow class must not make a ladder take hours. With adaptive runs, an estimate of
//! the minimum runs of every cell above twice `--max-time` is refused (exit 2) with one
//! line saying the estimate, the budget, the factor and what to change; with `--runs N`
//! (no budget) nothing is refused.
//!
//! A trial's block-device work is counted in requests and bytes per direction
//! ([`Work`]), and the class's model ([`DeviceClass::seconds_for`]) turns it into
//! seconds. The requests each op costs are ext4's with 4 KiB blocks, counted from the
//! loop device's statistics of real runs (see the constants); other file system types
//! get the same counts (an estimate of the order of magnitude, not a prediction).

use super::TreeExperiment;
use super::targets::{TargetSpec, image_size};
use crate::error::{Error, Result};
use crate::ops;
use crate::storage::device_class::{DeviceClass, Work};
use crate::tree::TreeSpec;
use crate::tree::layout::Shape;

/// Largest write request (bytes): writeback merges consecutive blocks, also of
/// different files, up to the loop device's `max_sectors_kb` (1,280): ext4@class:ebs-gp2,
/// create of 64 MiB in 1 to 1,024 files: 67-80 write requests (loop device statistics).
const WRITE_REQUEST: f64 = 1024.0 * 1024.0;

/// Largest read request of a cold read (bytes), per file: readahead. Measured on
/// ext4@class:ebs-gp2: 64 MiB in 1 file 56 requests, in 16 files 111, in 64 files 126, in
/// 256 or 1,024 files one per file.
const READ_REQUEST: f64 = 512.0 * 1024.0;

/// Files whose data one write request carries at most: writeback merges the blocks of
/// consecutive small files, but about 9 of them to a request (ext4@class:ebs-gp2, loop
/// device statistics of the syncfs, `bench/class_create.sh`: 4,096 files of 16 KiB in 474
/// requests, 16,384 of 4 KiB in 1,728; 271 for 4,096 with nbdkit's 2 s token bucket).
const FILES_PER_WRITE: f64 = 9.0;

/// Write requests of a create beyond its data's, per file (inode, directory and bitmap
/// blocks and the journal's copies of them, merged): the rest of those counts.
const CREATE_WRITES_PER_FILE: f64 = 0.008;

/// Requests of a create, a delete, paid once, one after another: journal commits and
/// superblock (the syncfs of a create bound by its bytes ends ~9–12 ms after them:
/// about four requests of 2.25 ms on ebs-gp2).
const CREATE_WRITES: f64 = 4.0;
const DELETE_WRITES: f64 = 8.0;

/// Read requests per file of the metadata-only ops (stat, list, walk, scan, rescan):
/// inode table blocks (16 inodes in each 4 KiB block) read ahead 4 at a time; assumed,
/// not measured.
const META_READS_PER_FILE: f64 = 1.0 / 64.0;

/// One unmount + mkfs.ext4 + mount, measured on a 512 MiB ext4@class:ebs-gp2 and
/// ext4@class:hdd: mkfs 4 reads, 18 writes (17 MiB: the journal, inode tables), 2
/// discards; mount 53 reads (1 MiB, one at a time: hdd 0.73 s); unmount 5 writes.
const FORMAT_READS: f64 = 57.0;
const FORMAT_WRITES: f64 = 8.0;

/// Bytes one format writes: the journal (mke2fs's default size for the image), inode
/// tables (256 bytes per inode), group descriptors and bitmaps.
fn format_bytes(image_bytes: u64, inodes: u64) -> f64 {
    let blocks = image_bytes / 4096;
    // mke2fs's ext2fs_default_journal_size (4 KiB blocks).
    let journal_blocks: u64 = match blocks {
        b if b < 2048 => 0,
        b if b < 32_768 => 1024,
        b if b < 256 * 1024 => 4096,
        b if b < 512 * 1024 => 8192,
        b if b < 4096 * 1024 => 16_384,
        b if b < 8192 * 1024 => 32_768,
        b if b < 16_384 * 1024 => 65_536,
        b if b < 32_768 * 1024 => 131_072,
        _ => 262_144,
    };
    (journal_blocks * 4096 + inodes * 256 + blocks / 8) as f64
}

/// The block-device work of one trial of `tree`, one [`Work`] per step (each with its
/// own queue depth): a fresh format (unless `reuse`), the create (timed or not), every
/// op asked, the delete. `threads` workers read, one per directory at a time.
pub fn trial_work(
    tree: &TreeSpec,
    ops_asked: &[String],
    threads: usize,
    image_bytes: u64,
    inodes: u64,
    reuse: bool,
) -> Vec<Work> {
    let n = tree.files as f64;
    let on_disk = tree.sum_sizes(|b| b.div_ceil(4096) * 4096) as f64;
    let reads_of_data = tree.sum_sizes(|b| (b as f64 / READ_REQUEST).ceil() as u64) as f64;
    let deep = 32;
    let readers = (threads as u64).min(Shape::of(tree).dir_count()).clamp(1, 64) as u32;
    let format_b = format_bytes(image_bytes, inodes);
    let format = [
        Work { reads: FORMAT_READS, read_bytes: FORMAT_READS * 20e3, read_depth: 1, ..Work::default() },
        Work {
            writes: FORMAT_WRITES + (format_b / WRITE_REQUEST).ceil(),
            write_bytes: format_b,
            write_depth: deep,
            ..Work::default()
        },
    ];
    let create = Work {
        writes: CREATE_WRITES
            + (on_disk / WRITE_REQUEST).ceil().max((n / FILES_PER_WRITE).ceil())
            + n * CREATE_WRITES_PER_FILE,
        write_bytes: on_disk + n * 600.0,
        write_depth: deep,
        write_serial: CREATE_WRITES,
        ..Work::default()
    };
    let read = Work { reads: reads_of_data, read_bytes: on_disk, read_depth: readers, ..Work::default() };
    let meta = Work {
        reads: (n * META_READS_PER_FILE).ceil(),
        read_bytes: (n * META_READS_PER_FILE).ceil() * 16384.0,
        read_depth: readers,
        ..Work::default()
    };
    let delete = Work {
        writes: DELETE_WRITES,
        write_bytes: n * 600.0,
        write_depth: deep,
        write_serial: DELETE_WRITES,
        ..Work::default()
    };
    let mut w: Vec<Work> = Vec::new();
    if !reuse {
        w.extend(format);
    }
    w.push(create);
    for op in ops_asked {
        match op.as_str() {
            "create" | "delete" | "rm" => {} // counted once, here and below
            "read" => w.push(read),
            "stat" | "list" | "walk" | "scan" | "rescan" => w.push(meta),
            ops::REFORMAT => w.extend(format),
            // A copy or sync reads the tree and writes a second one.
            _ => w.extend([read, create]),
        }
    }
    // The tree goes with the next format, or by a delete (timed or not) when kept.
    if reuse || ops_asked.iter().any(|o| o == "delete" || o == "rm") {
        w.push(delete);
    }
    w
}

/// Seconds one trial of every tree takes on each device-class target: (label, class,
/// seconds). Targets without a class are left out (their time is not the concern here).
pub fn round_seconds(cfg: &TreeExperiment, copies: u64) -> Result<Vec<(String, DeviceClass, f64)>> {
    let mut out = Vec::new();
    for t in &cfg.targets {
        let TargetSpec::Fs(f) = t else { continue };
        let Some(class) = f.class() else { continue };
        let size = image_size(f, &cfg.trees, cfg.fs_size, copies)?;
        let inodes = crate::storage::managed::inodes_for(size.entries);
        let s: f64 = cfg
            .trees
            .iter()
            .map(|tree| {
                let steps = trial_work(tree, &cfg.ops, cfg.threads, size.bytes, inodes, cfg.reuse);
                steps.iter().map(|w| class.seconds_for(w)).sum::<f64>()
            })
            .sum();
        out.push((f.label(), class.clone(), s));
    }
    Ok(out)
}

/// `90 s`, `14 min`, `2.3 h`.
fn fmt_long(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// Refuse (exit 2) an adaptive experiment whose minimum runs (plus warmups) on its
/// device-class targets would take more than twice `--max-time` by the classes'
/// parameters. Returns the estimate (seconds) when there is a class target.
pub fn check(cfg: &TreeExperiment, copies: u64) -> Result<Option<f64>> {
    let rounds = round_seconds(cfg, copies)?;
    if rounds.is_empty() {
        return Ok(None);
    }
    let Some(a) = cfg.adaptive else {
        let per: f64 = rounds.iter().map(|r| r.2).sum();
        return Ok(Some(per * (cfg.runs + cfg.warmup) as f64));
    };
    let runs = (a.min_runs + cfg.warmup) as f64;
    let total: f64 = rounds.iter().map(|r| r.2).sum::<f64>() * runs;
    // The minimum runs may take the default budget's stretch (`Adaptive::stretch_s`).
    let budget = a.min_runs_budget_s();
    if total > 2.0 * budget {
        let slowest = rounds.iter().max_by(|x, y| x.2.total_cmp(&y.2)).expect("not empty");
        let fewer = match cfg.name.as_str() {
            "ladder" => "--to N (fewer files), fewer --ops",
            "calibrate" => "a smaller tree",
            _ => "fewer files, fewer --ops",
        };
        let factor = total / budget;
        return Err(Error::bad(
            "--max-time",
            format!(
                "{} runs of every cell would take about {} on {} by the class's parameters ({} a round of {} tree(s)), {}× the budget {}; use {fewer}, a faster class, or a larger --max-time",
                a.min_runs + cfg.warmup,
                fmt_long(total),
                slowest.0,
                fmt_long(slowest.2),
                cfg.trees.len(),
                if factor < 10.0 { format!("{factor:.1}") } else { format!("{factor:.0}") },
                fmt_long(budget)
            ),
        ));
    }
    Ok(Some(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::SizeDist;

    fn tree(files: u64, bytes: u64) -> TreeSpec {
        use crate::tree::{Content, Layout};
        TreeSpec {
            files,
            size: SizeDist::Fixed { bytes },
            layout: Layout::Flat,
            name_len: 12,
            content: Content::Zeros,
            seed: 42,
        }
    }

    fn ops(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn total(v: &[Work]) -> (f64, f64) {
        (v.iter().map(|w| w.reads).sum(), v.iter().map(|w| w.writes).sum())
    }

    #[test]
    fn requests_of_a_trial() {
        let create = ops(&["create"]);
        // 64 MiB in 1,024 files: 114 data requests of 9 files (measured 88–170), 4
        // commits, 8 for metadata.
        let c = trial_work(&tree(1024, 64 << 10), &create, 2, 512 << 20, 2387, true);
        assert_eq!(c.len(), 2, "create and the delete of a reused file system");
        assert!((c[0].writes - (4.0 + 114.0 + 1024.0 * 0.008)).abs() < 1e-9, "{:?}", c[0]);
        // 64 MiB in 64 files: 64 requests of 1 MiB.
        let m = trial_work(&tree(64, 1 << 20), &create, 2, 512 << 20, 2387, true);
        assert!((m[0].writes - (4.0 + 64.0 + 64.0 * 0.008)).abs() < 1e-9, "{:?}", m[0]);
        // 4,096 files of 16 KiB: 9 files to a request, not 1 MiB.
        let small = trial_work(&tree(4096, 16 << 10), &create, 2, 512 << 20, 5000, true);
        assert!((small[0].writes - (4.0 + 456.0 + 4096.0 * 0.008)).abs() < 1e-9, "{:?}", small[0]);
        assert_eq!(c[1].writes, DELETE_WRITES);
        // A cold read: one request per 64 KiB file, by one reader in a flat tree.
        let r = trial_work(&tree(1024, 64 << 10), &ops(&["create", "read", "delete"]), 2, 512 << 20, 2387, true);
        assert_eq!((r[1].reads, r[1].read_depth), (1024.0, 1));
        // 64 MiB in one file: 128 reads of 512 KiB.
        let one = trial_work(&tree(1, 64 << 20), &ops(&["read"]), 2, 512 << 20, 2387, true);
        assert_eq!(one[1].reads, 128.0);
        // A fresh format each trial: the mount's 57 reads one at a time, 17 MiB written.
        let f = trial_work(&tree(1, 1), &create, 1, 512 << 20, 2387, false);
        assert_eq!((f[0].reads, f[0].read_depth), (57.0, 1));
        assert!((f[1].write_bytes - 17.0 * 1048576.0).abs() < 0.5 * 1048576.0, "{:?}", f[1]);
        assert_eq!(total(&f).1, f[1].writes + f[2].writes);
    }

    #[test]
    fn journal_sizes_follow_mke2fs() {
        // 512 MiB: 131,072 blocks → 4,096 journal blocks (16 MiB).
        assert_eq!(format_bytes(512 << 20, 0), 16.0 * 1048576.0 + 16384.0);
        assert!(format_bytes(4 << 30, 0) > format_bytes(1 << 30, 0));
    }

    fn cfg(spec: &str, to: u64, max_time_s: f64) -> TreeExperiment {
        // The measured ladders below ran before side rungs existed.
        let ladder = super::super::ladder::LadderSpec { to, second_total: None, ..Default::default() };
        let adaptive =
            crate::results::adaptive::Adaptive { max_time_s, ..crate::results::adaptive::Adaptive::default_settings() };
        TreeExperiment {
            name: "ladder".into(),
            targets: vec![TargetSpec::Fs(crate::storage::fsspec::FsSpec::parse(spec).unwrap())],
            labels: Vec::new(),
            fs_size: None,
            reuse: false,
            order: super::super::Order::Interleaved,
            caches: crate::storage::cache::CacheMode::Cold,
            until: crate::results::Until::Durable,
            measure_allocation: false,
            trees: ladder.trees(&tree(1, 1)).unwrap(),
            side_trees: Vec::new(),
            ops: ops(&["create", "read", "delete"]),
            create: Default::default(),
            runs: 3,
            adaptive: Some(adaptive),
            mock: None,
            warmup: 0,
            threads: 2,
            copy_threads: None,
            portion_files: 10_000,
            keep: false,
            shared_dir: false,
            json: None,
            exports: Vec::new(),
            quiet: true,
            command_line: Vec::new(),
            commands: Vec::new(),
            prices: None,
        }
    }

    #[test]
    fn a_slow_class_over_twice_the_budget_is_refused() {
        // hdd: 65,536 files × (data + metadata) × 13 ms, one slot: hours.
        let e = check(&cfg("ext4@class:hdd", 65_536, 180.0), 1).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(m.starts_with("--max-time: 6 runs of every cell would take about"), "{m}");
        assert!(m.contains("ext4@class:hdd") && m.contains("× the budget 3 min") && m.contains("--to N"), "{m}");
        assert!(!m.contains('\n'));
        // Just over twice: the factor with a decimal; advice in the command's terms.
        let t = check(&cfg("ext4@class:hdd", 64, 1e9), 1).unwrap().unwrap();
        let near = TreeExperiment { name: "ops".into(), ..cfg("ext4@class:hdd", 64, t / 2.5) };
        let m = check(&near, 1).unwrap_err().to_string();
        assert!(m.contains("2.5× the budget") && m.contains("use fewer files, fewer --ops,"), "{m}");
        assert!(check(&cfg("ext4@class:hdd", 64, t / 1.9), 1).is_ok(), "within twice the budget");
        // The same on ebs-io1 to 64 files fits in 3 minutes.
        let t = check(&cfg("ext4@class:ebs-io1", 64, 180.0), 1).unwrap().unwrap();
        assert!(t < 360.0, "{t}");
        // No class target: nothing estimated.
        assert_eq!(check(&cfg("ext4@ram", 65_536, 1.0), 1).unwrap(), None);
        // Fixed runs: estimated, never refused.
        let fixed = TreeExperiment { adaptive: None, runs: 6, ..cfg("ext4@class:hdd", 65_536, 1.0) };
        assert!(check(&fixed, 1).unwrap().unwrap() > 3600.0);
    }

    #[test]
    fn estimates_beside_measured_ladders() {
        // `ladder --fs ext4@class:ebs-gp2 --to 1024 --runs 6` took 48 s, `--to 4096` 83 s,
        // `--fs ext4@class:hdd --to 64 --runs 2` 39 s (2-core VM, 2026-11-25, nbdkit's
        // token bucket at 2 MiB; the estimate counts the device's time only, not the CPU's
        // nor starting the stack). It over-counts a big file's cold read by one reader:
        // readahead keeps several requests in flight (64 MiB in one file: 256 ms measured,
        // 544 ms estimated at one request at a time), so the 4,096 ladder's is 1.34× over.
        let gp2 = TreeExperiment { adaptive: None, runs: 6, ..cfg("ext4@class:ebs-gp2", 1024, 180.0) };
        let t = check(&gp2, 1).unwrap().unwrap();
        println!("ebs-gp2 --to 1024, 6 runs: estimate {t:.1} s, measured 48 s");
        let gp2_4k = TreeExperiment { adaptive: None, runs: 6, ..cfg("ext4@class:ebs-gp2", 4096, 180.0) };
        let t4 = check(&gp2_4k, 1).unwrap().unwrap();
        println!("ebs-gp2 --to 4096, 6 runs: estimate {t4:.1} s, measured 83 s");
        let hdd = TreeExperiment { adaptive: None, runs: 2, ..cfg("ext4@class:hdd", 64, 180.0) };
        let th = check(&hdd, 1).unwrap().unwrap();
        println!("hdd --to 64, 2 runs: estimate {th:.1} s, measured 39 s");
        assert!(t4 > 83.0 * 0.5 && t4 < 83.0 * 1.5, "{t4}");
        assert!(th > 39.0 * 0.5 && th < 39.0 * 1.25, "{th}");
        for c in ["hdd", "ebs-magnetic", "sd-card", "usb2-stick"] {
            let e = TreeExperiment { adaptive: None, runs: 6, ..cfg(&format!("ext4@class:{c}"), 1024, 180.0) };
            println!("{c} --to 1024, 6 runs: estimate {:.1} s", check(&e, 1).unwrap().unwrap());
        }
        assert!(t > 48.0 * 0.5 && t < 48.0 * 1.25, "{t}");
    }
}
