//! The HTML report's log axes (issue 40, item 7): every decade of a log axis has its
//! tick label, counts read as integers (`1`, `10`, `100`, `1k`), times as round figures
//! (`1 ms`, `10 ms`, `100 ms`), never `1.00` or `10.0`.

mod common;

use common::*;

/// The texts of an SVG (`<text …>T</text>`), in drawing order.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = t.split_once('>')?.1;
            Some(body.split_once("</text>")?.0.trim().to_string())
        })
        .collect()
}

/// The inline SVG of the chart section `id` on `page`.
fn chart_svg<'a>(page: &'a str, id: &str) -> &'a str {
    let from = page.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no chart {id}"));
    let rest = &page[from..];
    let start = rest.find("<svg").expect("an svg");
    let end = rest.find("</svg>").expect("its end");
    &rest[start..end]
}

#[test]
fn log_axes_label_every_decade_with_round_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("l.json");
    // Synthetic times (1 ms + 5 µs a file + 2 ns a byte): the create chart's time axis
    // spans about 1 ms to 85 ms, over the 10 – 100 ms decade.
    let ladder = format!(
        "ladder --target {} --total 256k --from 1 --to 16384 --runs 2 --ops create,delete --mock-timing cv=0.02,seed=3 --json {} --quiet",
        tmp.path().display(),
        json.display()
    );
    run(words(&ladder)).ok();
    let html = tmp.path().join("l.html");
    run(["report", json.to_str().unwrap(), "--html", html.to_str().unwrap()]).ok();
    let page = std::fs::read_to_string(&html).unwrap();
    let texts = svg_texts(chart_svg(&page, "time-vs-files-create"));
    for want in ["1", "10", "100", "1k", "10k"] {
        assert!(texts.iter().any(|t| t == want), "file count tick {want} missing: {texts:?}");
    }
    for want in ["1 ms", "10 ms", "100 ms"] {
        assert!(texts.iter().any(|t| t == want), "time tick {want} missing: {texts:?}");
    }
    // No tick of either axis is an unround figure.
    let unround = |t: &String| {
        let num = t.split(' ').next().unwrap_or("");
        num.contains('.') && num.parse::<f64>().is_ok()
    };
    assert!(!texts.iter().any(unround), "a tick with decimals: {texts:?}");
}
