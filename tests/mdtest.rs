//! Issue 42, item 6: `manyfiles mdtest --easy|--hard`, IO500's metadata presets. Runs the
//! binary on temp dirs with small counts: the phases each preset has, the files and bytes
//! each phase handled (in the JSON and the table), the stonewall's count carried into the
//! later phases, and the md score as the geometric mean of the rates the table printed.
//! Under MPI (`cargo test --features mpi --test mdtest -- mpi`): two ranks, with `-N 1`'s
//! neighbour shift, count twice the files.

mod common;

use common::*;
use std::path::Path;

/// The phases' rows of the printed table: (phase, files column, median kIOPS).
fn printed_rates(stdout: &str) -> Vec<(String, String, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().filter(|w| *w != "│").collect();
            let phase = *w.first()?;
            if !["create", "create-stonewall", "stat", "read", "delete"].contains(&phase) {
                return None;
            }
            // The files (one count: these tests' runs make the same count), the median kIOPS.
            Some((phase.to_string(), w.get(1)?.to_string(), w.get(2)?.parse().ok()?))
        })
        .collect()
}

/// The md score the run printed.
fn printed_score(stdout: &str) -> f64 {
    let line = stdout.lines().find(|l| l.starts_with("md score: ")).unwrap_or_else(|| panic!("no score: {stdout}"));
    line["md score: ".len()..].split_whitespace().next().unwrap().parse().unwrap()
}

fn run_mdtest(preset: &str, files: &str, extra: &[&str], target: &Path, json: &Path) -> Run {
    let mut args = vec![
        "mdtest",
        preset,
        "--files",
        files,
        "--target",
        target.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let r = run(&args);
    r.ok();
    r
}

fn measurements<'a>(rs: &'a serde_json::Value, op: &str) -> Vec<&'a serde_json::Value> {
    arr(rs, "measurements").iter().filter(|m| s(m, "op") == op).collect()
}

/// The score is the geometric mean of the phases' printed medians (each printed to 3
/// significant figures, so within their rounding).
fn assert_score_is_geometric_mean(stdout: &str, phases: &[&str]) {
    let rates = printed_rates(stdout);
    let scored: Vec<f64> = rates.iter().filter(|r| phases.contains(&r.0.as_str())).map(|r| r.2).collect();
    assert_eq!(scored.len(), phases.len(), "{stdout}");
    let geo = (scored.iter().map(|x| x.ln()).sum::<f64>() / scored.len() as f64).exp();
    let score = printed_score(stdout);
    assert!((score / geo - 1.0).abs() < 0.01, "score {score} is not the geometric mean {geo} of {scored:?}\n{stdout}");
}

#[test]
fn easy_times_create_stat_delete_of_empty_files_in_a_directory_per_rank() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("easy.json");
    let r = run_mdtest("--easy", "500", &["--runs", "2"], dir.path(), &json);
    let rates = printed_rates(&r.stdout);
    let phases: Vec<&str> = rates.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(phases, ["create", "stat", "delete"], "{}", r.stdout);
    assert!(rates.iter().all(|r| r.1 == "500" && r.2 > 0.0), "{}", r.stdout);
    assert!(r.stdout.contains("mdtest-easy on "), "{}", r.stdout);
    assert_score_is_geometric_mean(&r.stdout, &["create", "stat", "delete"]);
    let rs = load_json(&json);
    assert_eq!(s(get(&rs, "experiment"), "name"), "mdtest");
    for op in ["create", "stat", "delete"] {
        let ms = measurements(&rs, op);
        assert_eq!(ms.len(), 2, "{op}: one per run");
        for m in ms {
            assert!(measurement_complete(m), "{m}");
            assert_eq!(u(m, "files"), 500, "{op}");
            assert_eq!(u(m, "bytes"), 0, "{op}: empty files");
            assert_eq!(u(m, "threads"), 1, "{op}: one thread per rank");
        }
    }
    assert!(measurements(&rs, "read").is_empty(), "easy has no read phase");
    assert!(run_dirs(dir.path()).is_empty(), "run directory left behind");
}

#[test]
fn hard_writes_and_reads_3901_bytes_per_file_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hard.json");
    let r = run_mdtest("--hard", "300", &["--runs", "1", "--keep"], dir.path(), &json);
    let phases: Vec<String> = printed_rates(&r.stdout).into_iter().map(|r| r.0).collect();
    assert_eq!(phases, ["create", "stat", "read", "delete"], "{}", r.stdout);
    assert_score_is_geometric_mean(&r.stdout, &["create", "stat", "read", "delete"]);
    let rs = load_json(&json);
    for (op, bytes) in [("create", 300 * 3901), ("stat", 0), ("read", 300 * 3901), ("delete", 0)] {
        let m = measurements(&rs, op)[0];
        assert!(measurement_complete(m), "{m}");
        assert_eq!((u(m, "files"), u(m, "bytes")), (300, bytes), "{op}");
    }
    // The kept run directory: tree/ emptied by delete and removed, nothing else made.
    let kept = run_dirs(dir.path());
    assert_eq!(kept.len(), 1);
    assert!(tree_files(&kept[0]).is_empty(), "every file deleted: {:?}", tree_files(&kept[0]));
    std::fs::remove_dir_all(&kept[0]).unwrap();
}

/// `--until returned` syncs nothing (as mdtest without `-Y`: the next phase finds the
/// writes still in memory); the durable default ends create and delete with a timed
/// syncfs, and stat and read with none.
#[test]
fn only_durable_time_syncs_and_only_after_writes() {
    let dir = tempfile::tempdir().unwrap();
    for (until, synced) in [("returned", false), ("durable", true)] {
        let json = dir.path().join(format!("{until}.json"));
        run_mdtest("--hard", "200", &["--runs", "1", "--until", until], dir.path(), &json);
        let rs = load_json(&json);
        for op in ["create", "stat", "read", "delete"] {
            let m = measurements(&rs, op)[0];
            let flushed = m.get("flush_s").is_some_and(|f| !f.is_null());
            let writes = op == "create" || op == "delete";
            assert_eq!(flushed, synced && writes, "{until} {op}: {m}");
        }
    }
}

#[test]
fn the_stonewall_stops_creates_and_the_later_phases_take_the_count_reached() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("wall.json");
    // Far more files than one second makes: the wall stops creates.
    let r = run_mdtest("--easy", "5M", &["--stonewall", "1", "--runs", "1", "--paths", "relative"], dir.path(), &json);
    let rs = load_json(&json);
    let create = measurements(&rs, "create")[0];
    let wall = measurements(&rs, "create-stonewall")[0];
    let made = u(create, "files");
    assert!(made > 0 && made < 5_000_000, "stopped by the wall: {made}");
    assert!(f(create, "elapsed_s") >= 1.0, "{create}");
    // One rank: nothing to wear out, the wall's count is create's.
    assert_eq!(u(wall, "files"), made);
    for op in ["stat", "delete"] {
        let m = measurements(&rs, op)[0];
        assert!(measurement_complete(m), "{m}");
        assert_eq!(u(m, "files"), made, "{op} takes the count create reached");
    }
    // Printed, not scored.
    let rates = printed_rates(&r.stdout);
    assert!(rates.iter().any(|r| r.0 == "create-stonewall"), "{}", r.stdout);
    assert_score_is_geometric_mean(&r.stdout, &["create", "stat", "delete"]);
}

#[test]
fn a_preset_is_required_and_more_threads_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().to_str().unwrap();
    let r = run(["mdtest", "--target", t]);
    assert_bad_input(&r, "--easy", "give --easy or --hard");
    let r = run(["mdtest", "--easy", "--threads", "4", "--target", t]);
    assert_bad_input(&r, "--threads", "one thread per rank");
    let r = run(["mdtest", "--easy", "--hard", "--target", t]);
    r.expect_code(2);
    let r = run(["mdtest", "--hard", "--stonewall", "0", "--target", t]);
    assert_bad_input(&r, "--stonewall", "at least 1");
    assert!(run_dirs(dir.path()).is_empty());
}

/// `--paths full` (the default) names every file by its whole path, which the kernel
/// walks again on every call: it runs only where no other user can redirect that path. A
/// world-writable directory on the way is refused (exit 2, one line naming it) before
/// anything is made; `--paths relative` (directory fds all the way) runs there, and
/// both ways handle the same files.
#[test]
fn whole_paths_are_refused_where_another_user_could_redirect_them() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let t = open.to_str().unwrap();
    let r = run(["mdtest", "--easy", "--files", "100", "--runs", "1", "--target", t]);
    assert_bad_input(&r, "--paths", "is writable by others (mode 0777) without the sticky bit");
    assert!(r.stderr.contains(&format!("{t} is writable")), "{}", r.stderr);
    assert!(run_dirs(&open).is_empty(), "nothing made");
    let json = dir.path().join("relative.json");
    run_mdtest("--hard", "200", &["--runs", "1", "--paths", "relative"], &open, &json);
    let rs = load_json(&json);
    for op in ["create", "stat", "read", "delete"] {
        assert_eq!(u(measurements(&rs, op)[0], "files"), 200, "{op}");
    }
    assert!(run_dirs(&open).is_empty());
    let r = run(["mdtest", "--easy", "--paths", "sideways", "--target", t]);
    assert_bad_input(&r, "--paths", "expected full or relative");
}

/// Two ranks (`cargo test --features mpi --test mdtest -- mpi`): each phase counts both
/// ranks' files; easy's directories and hard's shared one are gone afterwards.
#[cfg(feature = "mpi")]
#[test]
fn mpi_two_ranks_count_both_ranks_files() {
    let Some(_one) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (preset, phases) in
        [("--easy", vec!["create", "stat", "delete"]), ("--hard", vec!["create", "stat", "read", "delete"])]
    {
        let json = dir.path().join(format!("{preset}.json"));
        let t = dir.path().to_str().unwrap();
        let args = ["mdtest", preset, "--files", "400", "--runs", "1", "--target", t, "--json", json.to_str().unwrap()];
        let r = mpirun_with(2, &args, std::time::Duration::from_secs(180));
        r.ok();
        assert!(r.stdout.contains("2 ranks, one thread per rank"), "{}", r.stdout);
        let rates = printed_rates(&r.stdout);
        assert_eq!(rates.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), phases, "{}", r.stdout);
        assert!(rates.iter().all(|r| r.1 == "800"), "{}", r.stdout);
        assert_score_is_geometric_mean(&r.stdout, &phases);
        let rs = load_json(&json);
        for op in &phases {
            let m = measurements(&rs, op)[0];
            assert!(measurement_complete(m), "{m}");
            let per_rank: Vec<u64> = arr(get(m, "ranks"), "rank_files").iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(per_rank, [400, 400], "{op}");
        }
        assert!(run_dirs(dir.path()).is_empty(), "run directory left behind");
    }
}
