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
