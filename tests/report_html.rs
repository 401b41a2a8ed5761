//! `manyfiles report --html`: the page is self-contained, and headless Chromium renders
//! every chart (a screenshot of each chart anchor is not blank) without console errors.
//! Also `--png DIR` and the exports, and bad input.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

/// Result files with every chart kind: two ladders (two targets after combining, so
/// log-log lines per target and bars) and an ops run with portions.
fn results(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for (name, args) in [
        ("l1.json", "ladder --total 256k --to 256 --runs 2"),
        ("l2.json", "ladder --total 256k --to 256 --runs 2"),
        ("o.json", "ops --files 3000 --portion 500 --runs 2 --ops create,read"),
    ] {
        let json = dir.join(name);
        let mut a = words(args);
        a.extend(["--target".into(), dir.display().to_string(), "--json".into(), json.display().to_string()]);
        a.push("--quiet".into());
        run(&a).ok();
        files.push(json.display().to_string());
    }
    files
}

fn chromium() -> Option<std::path::PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().map(std::path::PathBuf::from).find(|p| p.exists())
}

/// Mean and variance of the luminance of an RGB(A) PNG, and the share of pixels that
/// are not (near) white.
fn pixel_stats(path: &Path) -> (f64, f64, f64) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    assert!(ch >= 3, "{:?}", info.color_type);
    let px: Vec<f64> = buf[..info.buffer_size()]
        .chunks(ch)
        .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
        .collect();
    let n = px.len() as f64;
    let mean = px.iter().sum::<f64>() / n;
    let var = px.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let ink = px.iter().filter(|x| **x < 240.0).count() as f64 / n;
    (mean, var, ink)
}

#[test]
fn html_report_renders_every_chart_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let files = results(tmp.path());
    let html = tmp.path().join("report.html");
    let pngs = tmp.path().join("png");
    let mut a = vec!["report".to_string()];
    a.extend(files.iter().cloned());
    a.extend(["--html".into(), html.display().to_string(), "--png".into(), pngs.display().to_string()]);
    a.extend(["--markdown".into(), tmp.path().join("r.md").display().to_string()]);
    run(&a).ok();

    let page = std::fs::read_to_string(&html).unwrap();
    // Self-contained: no scripts, no external resources (the SVG namespace is a name, not a fetch).
    assert!(!page.contains("<script"), "no scripts");
    let stripped = page.replace("http://www.w3.org/2000/svg", "").replace("http://www.w3.org/1999/xlink", "");
    assert!(!stripped.contains("http://") && !stripped.contains("https://"), "no external URL");
    assert!(!page.contains(" src="), "no external resources");
    assert!(page.contains("src:url(data:font/ttf;base64,"), "the chart font is embedded");
    let ids: Vec<String> =
        page.split("<section class=\"c\" id=\"").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect();
    for want in ["time-vs-files-create", "time-vs-files-read", "bars-largest-tree", "portions-create"] {
        assert!(ids.iter().any(|i| i == want), "chart {want} in {ids:?}");
    }
    assert!(page.contains("<h2 id=\"detections\">Detections</h2>") && page.contains("<footer class=\"provenance\">"));
    assert!(page.contains("Fitted costs"));
    // Every chart also as PNG, drawn with the bundled font.
    for id in &ids {
        let p = pngs.join(format!("{id}.png"));
        let (_, var, ink) = pixel_stats(&p);
        assert!(var > 100.0 && ink > 0.01, "{id}.png looks blank: variance {var}, ink {ink}");
    }
    assert!(std::fs::read_to_string(tmp.path().join("r.md")).unwrap().contains("Fitted cost"));

    let Some(browser) = chromium() else {
        assert!(std::env::var("CI").is_err(), "CI must install chromium (.ci/run)");
        eprintln!("skipped: the headless Chromium part needs Debian's chromium");
        return;
    };
    for id in &ids {
        let shot = tmp.path().join(format!("shot-{id}.png"));
        let profile = tempfile::tempdir().unwrap();
        let out = Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=900,540",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}#{id}", html.display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && shot.exists(), "chromium failed on {id}:\n{err}");
        // Page errors and console messages are logged as CONSOLE lines.
        let console: Vec<&str> = err.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect();
        assert!(console.is_empty(), "console output on {id}: {console:#?}");
        let (mean, var, ink) = pixel_stats(&shot);
        assert!(var > 100.0 && ink > 0.01, "screenshot of {id} is blank: mean {mean}, variance {var}, ink {ink}");
    }
}

#[test]
fn report_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("none.json");
    let r = run(["report", missing.to_str().unwrap(), "--html", tmp.path().join("r.html").to_str().unwrap()]);
    assert_bad_input(&r, "RESULTS.json", "missing file");
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, "{}").unwrap();
    let r = run(["report", junk.to_str().unwrap(), "--html", tmp.path().join("r.html").to_str().unwrap()]);
    assert_bad_input(&r, "RESULTS.json", "not a result file");
    let r = run(["report", junk.to_str().unwrap()]);
    assert_bad_input(&r, "--html", "nothing to write");
    assert!(!tmp.path().join("r.html").exists(), "nothing created");
}

// ---- Every experiment's page in Chromium (issue 29): DOM and screenshot. ----

/// Where the screenshots stay for a person to look at (printed; not removed).
fn shots_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("manyfiles-report-shots-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run the binary, panicking with its output unless it succeeds.
fn ok(args: &[String]) {
    run(args).ok();
}

fn args(s: &str, extra: &[&str]) -> Vec<String> {
    let mut a = words(s);
    a.extend(extra.iter().map(|x| x.to_string()));
    a
}

/// Chromium's serialized DOM of `html` and a 1,400 px wide screenshot of the page
/// (None: no Chromium here, which CI does not accept).
fn chromium_page(html: &Path, name: &str) -> Option<(String, std::path::PathBuf)> {
    let Some(browser) = chromium() else {
        assert!(std::env::var("CI").is_err(), "CI must install chromium (.ci/run)");
        eprintln!("skipped: the headless Chromium part needs Debian's chromium");
        return None;
    };
    let shot = shots_dir().join(format!("{name}.png"));
    let base = |profile: &Path| {
        let mut c = Command::new(&browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1400,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
        c
    };
    let p1 = tempfile::tempdir().unwrap();
    let out = base(p1.path()).arg("--dump-dom").arg(format!("file://{}", html.display())).output().unwrap();
    assert!(out.status.success(), "chromium --dump-dom failed on {name}: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let p2 = tempfile::tempdir().unwrap();
    let out = base(p2.path())
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(out.status.success() && shot.exists(), "chromium --screenshot failed on {name}");
    eprintln!("screenshot of {name}: {}", shot.display());
    Some((dom, shot))
}

/// The values of `attr="…"` in `s`.
fn attrs<'a>(s: &'a str, attr: &str) -> Vec<&'a str> {
    let key = format!("{attr}=\"");
    s.split(key.as_str()).skip(1).map(|x| x.split('"').next().unwrap()).collect()
}

/// What a page must show.
struct Expect<'a> {
    /// Labels that must be legend entries of some chart (`data-target-label`).
    legend: &'a [&'a str],
    /// Labels that must be named in the heading.
    heading: &'a [&'a str],
    recommendation: bool,
    /// Every figure has its interval (`data-ci`); otherwise `data-no-ci` with a reason.
    all_intervals: bool,
}

/// Assert on the page's DOM and its screenshot; the DOM as Chromium built it, or the
/// file's text where there is no Chromium (a user's machine).
fn check_page(html: &Path, name: &str, e: Expect) -> String {
    let page = std::fs::read_to_string(html).unwrap();
    assert!(!page.contains("<script"), "{name}: no scripts");
    let Some((dom, shot)) = chromium_page(html, name) else { return page };
    let legends: String =
        dom.split("<ul class=\"legend\">").skip(1).map(|s| s.split("</ul>").next().unwrap()).collect();
    for l in e.legend {
        assert!(attrs(&legends, "data-target-label").contains(l), "{name}: legend entry {l:?} in {legends}");
    }
    let heading = dom.split("<p class=\"targets\">").nth(1).and_then(|s| s.split("</p>").next()).unwrap_or("");
    for l in e.heading {
        assert!(attrs(heading, "data-target-label").contains(l), "{name}: target {l:?} in the heading: {heading}");
    }
    // Every figure: an interval, or the reason there is none.
    let figs: Vec<&str> = dom.split("<td class=\"fig\"").skip(1).map(|s| s.split('>').next().unwrap()).collect();
    assert!(!figs.is_empty(), "{name}: no figures");
    for f in &figs {
        let has_ci = f.contains("data-ci=\"");
        if e.all_intervals {
            assert!(has_ci, "{name}: a figure without its interval: {f}");
        } else {
            assert!(has_ci || f.contains("data-no-ci=\"") || f.contains("data-se=\""), "{name}: {f}");
        }
    }
    for ci in attrs(&dom, "data-ci") {
        let v: Vec<f64> = ci.split(',').map(|x| x.parse().unwrap()).collect();
        assert!(v.len() == 2 && v[0] <= v[1] && v[0] >= 0.0, "{name}: interval {ci}");
    }
    // Every chart: inline SVG, a legend, and its entries' labels.
    let sections: Vec<&str> = dom.split("<section class=\"c\"").skip(1).collect();
    assert!(!sections.is_empty(), "{name}: no chart");
    for s in &sections {
        assert!(s.contains("<svg") && s.contains("<ul class=\"legend\">"), "{name}: chart without svg or legend");
    }
    assert_eq!(dom.contains("class=\"recommendation\""), e.recommendation, "{name}: recommendation");
    // Detections grouped: one <details> per kind, its count the items inside.
    for d in dom.split("<details class=\"detection\"").skip(1) {
        let d = d.split("</details>").next().unwrap();
        let count: usize = attrs(d, "data-count")[0].parse().unwrap();
        assert_eq!(d.matches("<li>").count(), count, "{name}: detection group {d}");
    }
    let kinds = attrs(&dom, "data-kind");
    let mut unique = kinds.clone();
    unique.dedup();
    assert_eq!(kinds.len(), unique.len(), "{name}: one group per kind: {kinds:?}");
    assert!(dom.contains("<footer class=\"provenance\">") && dom.contains("built from"), "{name}: provenance");
    // The screenshot: 1,400 px wide, not blank.
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let info = decoder.read_info().unwrap().info().clone();
    assert_eq!((info.width, info.height), (1400, 2000), "{name}: screenshot size");
    let (mean, var, ink) = pixel_stats(&shot);
    assert!(var > 100.0 && ink > 0.005, "{name}: blank screenshot: mean {mean}, variance {var}, ink {ink}");
    dom
}

/// The rows of `<table class="CLASS">` in `dom`: each cell's opening tag and its text.
fn table_rows(dom: &str, class: &str) -> Vec<Vec<(String, String)>> {
    let t = dom.split(&format!("<table class=\"{class}\">")).nth(1).unwrap_or_else(|| panic!("no table {class}"));
    let t = t.split("</table>").next().unwrap();
    let text = |s: &str| {
        let mut o = String::new();
        let mut tag = false;
        for c in s.chars() {
            match c {
                '<' => tag = true,
                '>' => tag = false,
                c if !tag => o.push(c),
                _ => {}
            }
        }
        o.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    };
    t.split("<tr>")
        .skip(2) // the header row
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let (open, rest) = c.split_once('>').unwrap();
                    (open.to_string(), text(rest.split("</td>").next().unwrap()).trim().to_string())
                })
                .collect()
        })
        .collect()
}

/// Every figure cell of a table row has its interval (`data-ci`, lo ≤ hi).
fn all_with_ci(name: &str, row: &[(String, String)]) {
    for (open, text) in &row[1..] {
        let ci = attrs(open, "data-ci");
        assert!(open.contains("class=\"fig\"") && ci.len() == 1, "{name}: {open} {text}");
        let v: Vec<f64> = ci[0].split(',').map(|x| x.parse().unwrap()).collect();
        assert!(v[0] <= v[1], "{name}: {open}");
    }
}

const MOCK: &str = "--quiet --mock-timing cv=0.03";

/// An experiment's result file, rendered with `report --html`, checked; its DOM.
fn experiment_page(name: &str, cmd: &str, e: Expect) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, json, html) = (tmp.path().display().to_string(), tmp.path().join("r.json"), tmp.path().join("r.html"));
    ok(&args(cmd, &["--target", &dir, "--json", json.to_str().unwrap()]));
    ok(&args("report", &[json.to_str().unwrap(), "--html", html.to_str().unwrap()]));
    check_page(&html, name, e)
}

#[test]
fn every_experiment_page_in_chromium_ops_sync_scan() {
    let e = |l| Expect { legend: l, heading: l, recommendation: false, all_intervals: true };
    let cmd = format!("ops --files 2000 --portion 400 --runs 6 --ops create,stat,read --label disk-a {MOCK}");
    experiment_page("ops", &cmd, e(&["disk-a"]));
    let cmd = format!("ops --files 300 --runs 6 --ops create,sync,sync-nochange --label disk-s {MOCK}");
    experiment_page("sync", &cmd, e(&["disk-s"]));
    let cmd = format!("ops --files 300 --runs 6 --ops create,scan,rescan --label disk-x {MOCK}");
    experiment_page("scan", &cmd, e(&["disk-x"]));
}

#[test]
fn every_experiment_page_in_chromium_bigfile_dirsize() {
    let e = |l| Expect { legend: l, heading: l, recommendation: false, all_intervals: true };
    let dom = experiment_page("bigfile", &format!("bigfile --size 4MiB --runs 6 --label big-a {MOCK}"), e(&["big-a"]));
    // bigfile's own table, as the terminal prints it: the phases, the total and the
    // bandwidth, each with its interval; not the shared measurements table.
    assert!(!dom.contains("<table class=\"measurements\">"), "bigfile: its own table instead");
    let rows = table_rows(&dom, "bigfile");
    assert_eq!(rows.len(), 1, "bigfile: one row per target: {rows:?}");
    assert_eq!(rows[0].len(), 6, "target, write loop, close, unlink, total, bandwidth: {rows:?}");
    assert_eq!(rows[0][0].1, "big-a");
    all_with_ci("bigfile", &rows[0]);
    for (_, text) in &rows[0][1..5] {
        assert!(text.contains(" ± ") && text.ends_with('s'), "bigfile: mean ± half-width: {text}");
    }
    assert!(rows[0][5].1.contains("MiB/s (") && rows[0][5].0.contains("data-unit=\"MiB/s\""), "{:?}", rows[0][5]);
    let cmd = format!("dirsize --max 2000 --portion 400 --runs 6 --label dir-a {MOCK}");
    experiment_page("dirsize", &cmd, e(&["dir-a"]));
}

#[test]
fn every_experiment_page_in_chromium_clusters() {
    if !is_root() {
        assert!(std::env::var("CI").is_err(), "CI runs as root");
        eprintln!("skipped: clusters formats test file systems (root)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (json, html) = (tmp.path().join("r.json"), tmp.path().join("r.html"));
    let cmd =
        format!("clusters --fs ext4@ram --cluster 1k,4k --sizes 1k,4k --portion 100 --portions 3 --runs 6 {MOCK}");
    ok(&args(&cmd, &["--json", json.to_str().unwrap()]));
    ok(&args("report", &[json.to_str().unwrap(), "--html", html.to_str().unwrap()]));
    let l = ["ext4:1k@ram", "ext4:4k@ram"];
    let dom =
        check_page(&html, "clusters", Expect { legend: &l, heading: &l, recommendation: false, all_intervals: true });
    // clusters' own tables: seconds per portion, space per file (st_blocks) with its
    // slack, and the file system's growth per file; a row per cluster size, a column
    // per file size.
    assert!(!dom.contains("<table class=\"measurements\">"), "clusters: its own tables instead");
    for class in ["clusters-time", "clusters-allocated", "clusters-fs"] {
        let rows = table_rows(&dom, class);
        assert_eq!(rows.iter().map(|r| r[0].1.as_str()).collect::<Vec<_>>(), l, "{class}: {rows:?}");
        for r in &rows {
            assert_eq!(r.len(), 3, "{class}: target and two file sizes: {r:?}");
            all_with_ci(class, r);
        }
    }
    // A 1 KiB file takes one 4 KiB cluster (75% slack) and one 1 KiB cluster (none).
    let alloc = table_rows(&dom, "clusters-allocated");
    assert_eq!(alloc[0][1].1, "1 KiB (0% slack)", "{alloc:?}");
    assert_eq!(alloc[1][1].1, "4 KiB (75.0% slack)", "{alloc:?}");
    assert!(alloc[1][1].0.contains("data-ci=\"4.096e3,4.096e3\""), "every run allocated the same: {alloc:?}");
    let time = table_rows(&dom, "clusters-time");
    assert!(time[0][1].1.contains(" ± ") && time[0][1].1.ends_with('s'), "{time:?}");
}

#[test]
fn every_experiment_page_in_chromium_ladder_compare_predict() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let j = |n: &str| tmp.path().join(n).display().to_string();
    // Different seeds, or the two targets' lines would lie on each other.
    for (f, label, seed) in [("a.json", "disk-a", 1), ("b.json", "disk-b", 3)] {
        let cmd = format!("ladder --total 64k --to 256 --runs 6 --label {label} {MOCK},seed={seed}");
        ok(&args(&cmd, &["--target", &dir, "--json", &j(f)]));
    }
    // Two ladders as one report: two targets, each a legend entry of every chart.
    ok(&args("report", &[&j("a.json"), &j("b.json"), "--html", &j("l.html")]));
    let l = ["disk-a", "disk-b"];
    check_page(
        tmp.path().join("l.html").as_path(),
        "ladder",
        Expect { legend: &l, heading: &l, recommendation: false, all_intervals: false },
    );
    // compare: the same target label on both sides (so B's file is relabelled A's).
    ok(&args(
        "ladder --total 64k --to 256 --runs 6 --label disk-a --mock-timing cv=0.03,seed=2 --quiet",
        &["--target", &dir, "--json", &j("a2.json")],
    ));
    ok(&args("compare", &[&j("a.json"), &j("a2.json"), "--html", &j("c.html")]));
    let page = std::fs::read_to_string(j("c.html")).unwrap();
    assert!(page.contains("data-verdict=") && page.contains("id=\"ratios-forest\""), "compare page");
    // The forest plot's ratio axis has ticks on both sides of 1× (not 1× alone).
    let forest = page.split("id=\"ratios-forest\"").nth(1).unwrap().split("</section>").next().unwrap();
    let ticks: Vec<f64> = forest
        .split('>')
        .filter_map(|t| t.split('<').next().and_then(|x| x.trim().strip_suffix('×')).and_then(|x| x.parse().ok()))
        .collect();
    assert!(ticks.contains(&1.0), "a 1× tick: {ticks:?}");
    assert!(ticks.iter().any(|t| *t < 1.0) && ticks.iter().any(|t| *t > 1.0), "ticks around 1×: {ticks:?}");
    check_page(
        tmp.path().join("c.html").as_path(),
        "compare",
        Expect { legend: &["disk-a"], heading: &["disk-a"], recommendation: false, all_intervals: true },
    );
    // predict --json, then report --html on it.
    let tree = tmp.path().join("tree");
    ok(&args("gen --files 1000 --quiet", &[tree.to_str().unwrap()]));
    // predict exits 1 when no fit passed its check (a loaded machine): the page is made
    // from its JSON all the same.
    let r = run(args("predict", &["--model", &j("a.json"), "--tree", tree.to_str().unwrap(), "--json", &j("p.json")]));
    if !(r.code == Some(1) && r.stderr.contains("every fit failed its check")) {
        r.ok();
    }
    ok(&args("report", &[&j("p.json"), "--html", &j("p.html")]));
    let page = std::fs::read_to_string(j("p.html")).unwrap();
    // 1,000 files is beyond the 256 calibrated: every row says it extrapolates.
    assert!(page.contains("data-extrapolated=\"1\"") && page.contains("× the calibrated range on"), "predict page");
    check_page(
        tmp.path().join("p.html").as_path(),
        "predict",
        Expect { legend: &["disk-a"], heading: &["disk-a"], recommendation: false, all_intervals: false },
    );
    // A predict file goes alone and as HTML only.
    let r = run(["report", &j("p.json"), "--csv", &j("p.csv")]);
    assert_bad_input(&r, "--html", "predict file with --csv");
}

#[test]
fn every_experiment_page_in_chromium_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let (json, html) = (tmp.path().join("r.json"), tmp.path().join("r.html"));
    let dir = tmp.path().display().to_string();
    let cmd = "pack --total 64k --to 16 --runs 6 --containers tar --copies 5 --quiet";
    ok(&args(cmd, &["--src-target", &dir, "--json", json.to_str().unwrap()]));
    ok(&args("report", &[json.to_str().unwrap(), "--html", html.to_str().unwrap()]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2 id=\"routes\">Routes</h2>") && page.contains("data-route=\"tar (unpack)\""), "routes");
    assert!(page.contains("recommendation for 16 files"), "the recommendation names the largest tree");
    assert!(page.contains("total for 5 copies"), "k from the run's --copies");
    let heading = page.split("<p class=\"targets\">").nth(1).unwrap_or("").split("</p>").next().unwrap();
    assert!(heading.contains(&format!("data-target-label=\"{dir} (")), "the target by its label: {heading}");
    // Real times (pack has no mock timing): some figures may lack an interval, each says why.
    check_page(&html, "pack", Expect { legend: &[], heading: &[], recommendation: true, all_intervals: false });
}
