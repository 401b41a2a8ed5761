//! Tests of the cost model fit: exact and noisy ladders, clamped and unresolved
//! coefficients, the directory-size term, old JSON, and the coverage of the intervals
//! by simulation.

use super::*;

const A: f64 = 3e-3; // s/file
const B: f64 = 1e-9; // s/byte
const MIB64: f64 = 64.0 * 1024.0 * 1024.0;

fn rel(got: f64, want: f64) -> f64 {
    ((got - want) / want).abs()
}

/// Ladder: 64 MiB split into 1, 4, 16, ..., 65536 files.
fn ladder_files() -> Vec<f64> {
    (0..9).map(|k| 4f64.powi(k)).collect()
}

fn exact(files: f64, bytes: f64) -> Point {
    Point { dirs: 0.0, dir_sq: 0.0, files, bytes, seconds: A * files + B * bytes }
}

/// Deterministic multiplicative noise in [1 − amp, 1 + amp] (an LCG; no
/// rand crate).
fn noise(state: &mut u64, amp: f64) -> f64 {
    *state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    let unit = (*state >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    1.0 + amp * (2.0 * unit - 1.0)
}

#[test]
fn recovers_exact_ladder() {
    let pts: Vec<Point> = ladder_files().into_iter().map(|f| exact(f, MIB64)).collect();
    let m = fit(&pts).expect("fit");
    assert!(rel(m.per_file_s, A) < 1e-9, "a={}", m.per_file_s);
    assert!(rel(m.per_byte_s, B) < 1e-9, "b={}", m.per_byte_s);
    assert_eq!(m.n, 9);
    assert_eq!(m.weighting, "fitted");
    assert_eq!(m.constrained, vec!["per_dir".to_string(), "per_dir_entry".to_string(), "per_run".to_string()]);
    assert!((m.r2 - 1.0).abs() < 1e-9, "r2={}", m.r2);
    assert!(rel(m.bandwidth_bytes_per_s.expect("b > 0"), 1e9) < 1e-9);
    // break-even = a/b = 3 MB
    assert!(rel(m.break_even_bytes.expect("b > 0"), A / B) < 1e-9);
    assert!(rel(m.break_even_bytes.expect("b > 0"), 3e6) < 1e-9);
    // Exact data: residuals are rounding only.
    assert!(m.per_file_se < 1e-9 * A && m.per_byte_se < 1e-9 * B);
}

#[test]
fn recovers_exact_varying_bytes() {
    let sizes = [0.0, 512.0, 4096.0, 65_536.0, 1_048_576.0, 16_777_216.0];
    let mut pts = Vec::new();
    for (i, f) in ladder_files().into_iter().enumerate() {
        pts.push(exact(f, f * sizes[i % sizes.len()]));
    }
    let m = fit(&pts).expect("fit");
    assert!(rel(m.per_file_s, A) < 1e-9, "a={}", m.per_file_s);
    assert!(rel(m.per_byte_s, B) < 1e-9, "b={}", m.per_byte_s);
    assert_eq!(m.constrained, vec!["per_dir".to_string(), "per_dir_entry".to_string(), "per_run".to_string()]);
}

/// A per-run constant (issue 27: thread start, the durable phase's syncfs) is found
/// where bytes vary apart from files, and kept out where the data cannot tell it from
/// the per-byte cost (a ladder of one total: bytes constant).
#[test]
fn recovers_a_per_run_constant() {
    const K: f64 = 0.02;
    let sizes = [512.0, 4096.0, 65_536.0, 1_048_576.0];
    let mut state = 11;
    let mut pts = Vec::new();
    for (i, f) in ladder_files().into_iter().enumerate() {
        for j in 0..2 {
            let bytes = f * sizes[(i + j) % sizes.len()];
            let seconds = (A * f + B * bytes + K) * noise(&mut state, 0.01);
            pts.push(Point { files: f, bytes, dirs: 0.0, dir_sq: 0.0, seconds });
        }
    }
    let m = fit(&pts).expect("fit");
    assert!(!m.constrained.contains(&"per_run".to_string()), "{m:?}");
    assert!(rel(m.per_run_s, K) < 0.05, "k={}", m.per_run_s);
    assert!(rel(m.per_file_s, A) < 0.05, "a={}", m.per_file_s);
    let iv = m.interval95(4).unwrap();
    assert!(iv[0] <= K && K <= iv[1], "{iv:?}");
    assert!(rel(m.seconds(1.0, 512.0, 0.0, 0.0), A + B * 512.0 + K) < 0.05);
    // One total: b·bytes is the constant; k is not kept beside it.
    let pts: Vec<Point> =
        ladder_files().into_iter().map(|f| Point { seconds: A * f + B * MIB64 + K, ..exact(f, MIB64) }).collect();
    let m = fit(&pts).expect("fit");
    let at = |f: f64| m.seconds(f, MIB64, 0.0, 0.0);
    for f in ladder_files() {
        assert!(rel(at(f), A * f + B * MIB64 + K) < 1e-6, "{f}");
    }
    assert!(m.per_byte_s == 0.0 || m.per_run_s == 0.0, "{m:?}");
}

#[test]
fn noisy_ladder_within_a_few_percent() {
    let mut state = 42;
    let pts: Vec<Point> = ladder_files()
        .into_iter()
        .flat_map(|f| [f, f, f]) // 3 repetitions per rung
        .map(|f| {
            let p = exact(f, MIB64);
            Point { seconds: p.seconds * noise(&mut state, 0.03), ..p }
        })
        .collect();
    let m = fit(&pts).expect("fit");
    assert_eq!(m.n, 27);
    assert!(rel(m.per_file_s, A) < 0.05, "a={}", m.per_file_s);
    assert!(rel(m.per_byte_s, B) < 0.05, "b={}", m.per_byte_s);
    assert!(m.per_file_se > 0.0 && m.per_byte_se > 0.0);
    // The true values are within a few standard errors.
    assert!((m.per_file_s - A).abs() < 4.0 * m.per_file_se);
    assert!((m.per_byte_s - B).abs() < 4.0 * m.per_byte_se);
    assert!(m.r2 > 0.99 && m.r2 <= 1.0, "r2={}", m.r2);
    let json = serde_json::to_string(&m).expect("serializable");
    let back: CostModel = serde_json::from_str(&json).expect("round trip");
    assert_eq!(back, m);
}

#[test]
fn clamps_negative_per_byte() {
    // Generated with a = 0.01, b = −1e-6: the unconstrained fit has b < 0.
    let pts: Vec<Point> = [(10.0, 1000.0), (20.0, 5000.0), (30.0, 20_000.0), (40.0, 2000.0)]
        .into_iter()
        .map(|(files, bytes)| Point { dirs: 0.0, dir_sq: 0.0, files, bytes, seconds: 0.01 * files - 1e-6 * bytes })
        .collect();
    let m = fit(&pts).expect("fit");
    assert_eq!(
        m.constrained,
        vec!["per_byte".to_string(), "per_dir".to_string(), "per_dir_entry".to_string(), "per_run".to_string()]
    );
    assert_eq!(m.per_byte_s, 0.0);
    assert_eq!(m.per_byte_se, 0.0);
    assert!(m.per_file_s > 0.0);
    assert!(m.per_file_se > 0.0);
    assert!(m.bandwidth_bytes_per_s.is_none());
    assert!(m.break_even_bytes.is_none());
    // Weights 1/fitted² (IRLS): the single-variable fit ends at a = mean(s/f), not at
    // Σ(f/s)/Σ(f/s)² (1/observed², which leans towards the cells that came out fast).
    let mean = pts.iter().map(|p| p.seconds / p.files).sum::<f64>() / pts.len() as f64;
    assert!(rel(m.per_file_s, mean) < 1e-9, "{} vs {mean}", m.per_file_s);
    let (s, ss) = pts.iter().fold((0.0, 0.0), |(s, ss), p| {
        let u = p.files / p.seconds;
        (s + u, ss + u * u)
    });
    assert!(rel(m.per_file_s, s / ss) > 1e-3, "the observed weighting's answer");
}

#[test]
fn clamps_negative_per_file() {
    // Generated with a = −1e-4, b = 1e-8.
    let pts: Vec<Point> = [(1.0, 1e6), (100.0, 2e6), (10.0, 5e6), (1000.0, 4e7)]
        .into_iter()
        .map(|(files, bytes)| Point { dirs: 0.0, dir_sq: 0.0, files, bytes, seconds: -1e-4 * files + 1e-8 * bytes })
        .collect();
    let m = fit(&pts).expect("fit");
    assert_eq!(
        m.constrained,
        vec!["per_file".to_string(), "per_dir".to_string(), "per_dir_entry".to_string(), "per_run".to_string()]
    );
    assert_eq!(m.per_file_s, 0.0);
    assert!(m.per_byte_s > 0.0);
    assert_eq!(m.break_even_bytes, Some(0.0));
}

#[test]
fn singular_falls_back_to_single_variable() {
    // bytes = 1000·files everywhere: a and b cannot be separated.
    let pts: Vec<Point> = [1.0, 4.0, 16.0, 64.0]
        .into_iter()
        .map(|f| Point { dirs: 0.0, dir_sq: 0.0, files: f, bytes: 1000.0 * f, seconds: 2e-3 * f })
        .collect();
    let m = fit(&pts).expect("fit");
    assert_eq!(m.constrained.len(), 4);
    // Either explanation reproduces the times exactly.
    let t = |p: &Point| m.per_file_s * p.files + m.per_byte_s * p.bytes;
    for p in &pts {
        assert!(rel(t(p), p.seconds) < 1e-12);
    }

    // All bytes zero: only per_file can be estimated.
    let pts: Vec<Point> = [1.0, 2.0, 3.0]
        .into_iter()
        .map(|f| Point { dirs: 0.0, dir_sq: 0.0, files: f, bytes: 0.0, seconds: 0.5 * f })
        .collect();
    let m = fit(&pts).expect("fit");
    assert_eq!(
        m.constrained,
        vec!["per_byte".to_string(), "per_dir".to_string(), "per_dir_entry".to_string(), "per_run".to_string()]
    );
    assert!(rel(m.per_file_s, 0.5) < 1e-12);
}

#[test]
fn drops_invalid_points_and_rejects_too_few() {
    let mut pts: Vec<Point> = ladder_files().into_iter().map(|f| exact(f, MIB64)).collect();
    pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: 0.0 });
    pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: -1.0 });
    pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: f64::NAN });
    pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: f64::INFINITY });
    pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: f64::NAN, bytes: 1.0, seconds: 1.0 });
    let m = fit(&pts).expect("fit");
    assert_eq!(m.n, 9);
    assert!(rel(m.per_file_s, A) < 1e-9);

    assert!(fit(&[]).is_none());
    assert!(fit(&[exact(1.0, MIB64)]).is_none());
    assert!(
        fit(&[exact(1.0, MIB64), Point { dirs: 0.0, dir_sq: 0.0, files: 4.0, bytes: MIB64, seconds: 0.0 }]).is_none()
    );
    let zero = Point { dirs: 0.0, dir_sq: 0.0, files: 0.0, bytes: 0.0, seconds: 1.0 };
    assert!(fit(&[zero, zero]).is_none());
}

#[test]
fn two_points_have_zero_se() {
    // n == p: exact fit, no residual degrees of freedom -> se documented as 0.
    let m = fit(&[exact(1.0, MIB64), exact(1024.0, MIB64)]).expect("fit");
    assert!(rel(m.per_file_s, A) < 1e-9);
    assert!(rel(m.per_byte_s, B) < 1e-9);
    assert_eq!(m.per_file_se, 0.0);
    assert_eq!(m.per_byte_se, 0.0);
}

#[test]
fn recovers_a_b_c_within_one_percent() {
    // a = 3 ms/file, b = 1 ns/byte, c = 20 ms/dir; files, bytes and dirs vary independently.
    const C: f64 = 2e-2;
    let mut pts = Vec::new();
    let mut state = 7;
    for (i, f) in ladder_files().into_iter().enumerate() {
        for (j, per_dir) in [10.0, 100.0, 1000.0].into_iter().enumerate() {
            let dirs = (f / per_dir).ceil() + (i + j) as f64 % 3.0;
            let bytes = MIB64 / (1 + (i + 2 * j) % 5) as f64;
            let seconds = (A * f + B * bytes + C * dirs) * noise(&mut state, 0.002);
            pts.push(Point { files: f, bytes, dirs, dir_sq: 0.0, seconds });
        }
    }
    let m = fit(&pts).expect("fit");
    assert_eq!(m.constrained, vec!["per_dir_entry".to_string(), "per_run".to_string()]);
    assert!(rel(m.per_file_s, A) < 0.01, "a={}", m.per_file_s);
    assert!(rel(m.per_byte_s, B) < 0.01, "b={}", m.per_byte_s);
    assert!(rel(m.per_dir_s, C) < 0.01, "c={}", m.per_dir_s);
    assert!(m.per_dir_se > 0.0 && m.df == pts.len() - 3);
    assert_eq!(m.residuals.len(), pts.len());
    assert!(m.residuals.iter().all(|r| r.abs() < 0.01));
    // Prediction: the formula, and an interval around it.
    let p = m.predict(5000.0, 1e9, 50.0, 0.0);
    let want = m.per_file_s * 5000.0 + m.per_byte_s * 1e9 + m.per_dir_s * 50.0;
    assert!(rel(p.seconds, want) < 1e-12);
    let [lo, hi] = p.interval95.expect("df > 0");
    assert!(lo < p.seconds && p.seconds < hi && (hi - lo) / p.seconds < 0.05, "{lo} {hi}");
    let json = serde_json::to_string(&m).expect("serializable");
    assert_eq!(serde_json::from_str::<CostModel>(&json).expect("round trip"), m);
}

#[test]
fn dirs_never_take_the_per_file_cost_s_place() {
    // dirs = files/5 + 1 exactly, times from a alone: {b, c} would fit as well as {a, b}.
    let pts: Vec<Point> =
        ladder_files().into_iter().map(|f| Point { dirs: (f / 5.0).ceil() + 1.0, ..exact(f, MIB64) }).collect();
    let m = fit(&pts).expect("fit");
    assert!(m.per_file_s > 0.0, "{m:?}");
    assert!(m.per_dir_s == 0.0 || !m.constrained.contains(&"per_file".to_string()), "{m:?}");
}

#[test]
fn dirs_in_step_with_files_are_not_fitted() {
    // dirs = files/1000 + 1 with noise: c cannot be told apart from a.
    let mut state = 3;
    let pts: Vec<Point> = ladder_files()
        .into_iter()
        .flat_map(|f| [f, f, f])
        .map(|f| {
            let p = exact(f, MIB64);
            Point { dirs: (f / 1000.0).ceil() + 1.0, seconds: p.seconds * noise(&mut state, 0.05), ..p }
        })
        .collect();
    let m = fit(&pts).expect("fit");
    assert!(m.constrained.contains(&"per_dir".to_string()), "{m:?}");
    assert_eq!(m.per_dir_s, 0.0);
    assert!(rel(m.per_file_s, A) < 0.1, "a={}", m.per_file_s);
}

/// Standard normal draw (Box–Muller on the LCG).
fn normal(state: &mut u64) -> f64 {
    let u1 = ((noise(state, 1.0) - 0.0) / 2.0).max(1e-12); // (0, 1)
    let u2 = noise(state, 1.0) / 2.0;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A flat ladder (every file in one directory, so Σn² = files²) of 64 MiB over
/// `rungs`, `runs` runs per rung, times `truth(files)` × cell effect × run noise
/// (both lognormal).
fn flat_ladder(
    state: &mut u64,
    rungs: &[f64],
    runs: usize,
    cell_sd: f64,
    run_sd: f64,
    truth: impl Fn(f64) -> f64,
) -> Vec<Point> {
    let mut pts = Vec::new();
    for &f in rungs {
        let u = (cell_sd * normal(state)).exp();
        for _ in 0..runs {
            let e = (run_sd * normal(state)).exp();
            pts.push(Point { files: f, bytes: MIB64, dirs: 1.0, dir_sq: f * f, seconds: truth(f) * u * e });
        }
    }
    pts
}

fn step2_rungs() -> Vec<f64> {
    (0..17).map(|k| 2f64.powi(k)).collect()
}

#[test]
fn quadratic_directory_cost_is_recovered() {
    // exFAT-like: 20 µs per file, 1 GB/s, and 1 ns per (file, file already there) pair:
    // at 65,536 files in one directory the quadratic term is 4.3 s against 1.3 s.
    const D: f64 = 1e-9;
    let truth = |f: f64| 2e-5 * f + B * MIB64 + D * f * f;
    let mut state = 11;
    let pts = flat_ladder(&mut state, &step2_rungs(), 3, 0.03, 0.03, truth);
    let m = fit(&pts).expect("fit");
    assert!(!m.constrained.contains(&"per_dir_entry".to_string()), "{m:?}");
    assert!(rel(m.per_dir_entry_s, D) < 0.1, "d={}", m.per_dir_entry_s);
    assert!(rel(m.per_file_s, 2e-5) < 0.2, "a={}", m.per_file_s);
    assert!(m.aicc_dir_entry.unwrap() < m.aicc_plain.unwrap());
    // Every rung fitted within 20% (the plain model misses the top rungs by far more).
    for p in &pts {
        let fitted = m.seconds(p.files, p.bytes, p.dirs, p.dir_sq);
        assert!(rel(fitted, p.seconds) < 0.2, "{} files: {fitted} vs {}", p.files, p.seconds);
    }
    // Predictions use Σn²: 65,536 files in 64 directories of 1,024 cost far less
    // than in one.
    let flat = m.predict(65536.0, MIB64, 1.0, 65536.0 * 65536.0).seconds;
    let split = m.predict(65536.0, MIB64, 65.0, 64.0 * 1024.0 * 1024.0).seconds;
    assert!(flat > 3.0 * split, "{flat} {split}");
}

#[test]
fn linear_file_system_rejects_the_directory_size_term() {
    // ext4-like: cost linear in files whatever the directory size; 5% cell and run noise.
    let mut rejected = 0;
    for seed in 0..50u64 {
        let mut state = 1000 + seed;
        let pts = flat_ladder(&mut state, &ladder_files(), 3, 0.05, 0.05, |f| A * f + B * MIB64);
        let m = fit(&pts).expect("fit");
        if m.per_dir_entry_s == 0.0 {
            rejected += 1;
        } else {
            // When kept by chance it must be negligible: < 10% of the time at the top rung.
            let f = 65536.0;
            assert!(m.per_dir_entry_s * f * f < 0.1 * (A * f + B * MIB64), "{m:?}");
        }
        assert!(rel(m.per_file_s, A) < 0.2, "a={}", m.per_file_s);
    }
    assert!(rejected >= 45, "rejected in {rejected} of 50");
}

#[test]
fn files_per_dir_give_dir_sq() {
    assert_eq!(dir_sq_of([(3, 2), (1, 1)]), 19.0);
}

#[test]
fn old_model_json_loads_and_predicts() {
    // A model as written before cells and the directory-size term (3×3 covariance).
    let old = r#"{"per_file_s":3e-3,"per_file_se":1e-4,"per_byte_s":1e-9,"per_byte_se":1e-11,
        "per_dir_s":0.0,"per_dir_se":0.0,"covariance":[[1e-8,0,0],[0,1e-22,0],[0,0,0]],
        "residual_sd":0.05,"df":25,"residuals":[0.01,-0.01],"r2":0.99,"n":27,"weighting":"relative",
        "bandwidth_bytes_per_s":1e9,"break_even_bytes":3e6,"constrained":["per_dir"]}"#;
    let m: CostModel = serde_json::from_str(old).expect("old model loads");
    assert_eq!(m.interval_method, "points");
    assert_eq!(m.per_dir_entry_s, 0.0);
    assert_eq!(m.cells, 0);
    let p = m.predict(1000.0, 1e6, 1.0, 1e6);
    assert!(rel(p.seconds, 3.0 + 1e-3) < 1e-12);
    let [lo, hi] = p.interval95.expect("df > 0");
    assert!(lo < p.seconds && p.seconds < hi);
    // Even older: no covariance at all.
    let older = r#"{"per_file_s":3e-3,"per_file_se":1e-4,"per_byte_s":1e-9,"per_byte_se":1e-11,
        "r2":0.99,"n":27,"weighting":"relative","bandwidth_bytes_per_s":1e9,"break_even_bytes":3e6,
        "constrained":[]}"#;
    let m: CostModel = serde_json::from_str(older).expect("older model loads");
    assert!(m.covariance.is_empty() && m.predict(1.0, 0.0, 0.0, 0.0).interval95.is_none());
}

/// Simulated ladders with a known model, a cell-level random effect and lognormal
/// run noise: how often the 95% interval of a covers the truth, and how often
/// the 95% prediction interval covers a new tree's median time.
fn coverage(sims: usize, seed: u64) -> (f64, f64, f64) {
    let a = 4e-6;
    let truth = |f: f64| a * f + B * MIB64;
    let (mut cover_a, mut cover_pred, mut width) = (0usize, 0usize, 0.0);
    let mut state = seed;
    for _ in 0..sims {
        let pts = flat_ladder(&mut state, &ladder_files(), 3, 0.08, 0.05, truth);
        // Σn² plays no part here: the model is the plain one.
        let pts: Vec<Point> = pts.into_iter().map(|p| Point { dir_sq: 0.0, ..p }).collect();
        let m = fit(&pts).expect("fit");
        let [lo, hi] = m.interval95(0).expect("df > 0");
        cover_a += usize::from(lo <= a && a <= hi);
        // A new tree between the rungs, measured 3 times (its median).
        let f = 4f64.powf(1.0 + 7.0 * noise(&mut state, 1.0) / 2.0);
        let u = (0.08 * normal(&mut state)).exp();
        let mut runs: Vec<f64> = (0..3).map(|_| truth(f) * u * (0.05 * normal(&mut state)).exp()).collect();
        runs.sort_by(f64::total_cmp);
        let p = m.predict(f, MIB64, 1.0, 0.0);
        let [plo, phi] = p.interval95.expect("df > 0");
        cover_pred += usize::from(plo <= runs[1] && runs[1] <= phi);
        width += (phi / p.seconds).ln() / sims as f64;
    }
    (cover_a as f64 / sims as f64, cover_pred as f64 / sims as f64, width)
}

#[test]
fn coverage_of_coefficient_and_prediction_intervals() {
    // 600 simulations (~1 s in a debug build): the binomial s.d. of a 95% coverage
    // is 0.9 points, so 93–97% is ± 2.2 s.d.
    let (ca, cp, w) = coverage(600, 20_261_123);
    eprintln!("coverage: a {ca}, prediction {cp}, mean log half-width {w}");
    assert!((0.93..=0.97).contains(&ca), "coefficient coverage {ca}");
    assert!((0.93..=0.975).contains(&cp), "prediction coverage {cp} (mean half-width {w})");
}

/// 10 × 300 simulations (each fit refits every fold with its reweighting and term
/// selection: ~20 s in a debug build); `--nocapture` shows the coverage per seed.
#[test]
fn coverage_over_seeds() {
    for seed in 0..10 {
        let (ca, cp, w) = coverage(300, seed);
        eprintln!("seed {seed}: a {ca}, prediction {cp}, mean log half-width {w}");
    }
}

#[test]
fn points_from_one_cell_are_one_row() {
    // 3 runs of each of 9 rungs: 9 cells, df = 9 − 2.
    let mut state = 5;
    let pts = flat_ladder(&mut state, &ladder_files(), 3, 0.02, 0.02, |f| A * f + B * MIB64);
    let m = fit(&pts).expect("fit");
    assert_eq!((m.n, m.cells, m.df), (27, 9, 7));
    assert_eq!(m.cv_log_errors.len(), 9);
    assert!(m.cv_log_sd > 0.0 && m.cv_log_sd < 0.1, "{}", m.cv_log_sd);
    assert_eq!(m.interval_method, "cells");
}

/// (files, bytes, dirs, Σn²) of a tree of `f` files, `f·size` bytes, `f/per_dir` equal
/// directories.
fn shaped(f: f64, size: f64, per_dir: f64) -> [f64; COVARIATES] {
    let dirs = (f / per_dir).max(1.0);
    [f, f * size, dirs, dirs * (f / dirs).powi(2)]
}

/// The calibration design of `experiment/calibrate.rs` around a tree of 3,000 files of
/// 10 kB in directories of 8.6 files: three scales, files per directory ×4 and ÷4,
/// bytes per file ×4 and ÷4, the full size with files per directory ×4 and the smallest
/// with ÷4 (each direction held by two cells, so leaving one out keeps it resolved).
fn calibration_design() -> Vec<[f64; COVARIATES]> {
    let (f, size, per_dir) = (3000.0, 1e4, 3000.0 / 350.0);
    let mid = 1.0 / 8f64.sqrt();
    vec![
        shaped(f / 8.0, size, per_dir),
        shaped(f * mid, size, per_dir),
        shaped(f, size, per_dir),
        shaped(f * mid, size, per_dir * 4.0),
        shaped(f * mid, size, per_dir / 4.0),
        shaped(f * mid, size * 4.0, per_dir),
        shaped(f * mid, size / 4.0, per_dir),
        shaped(f, size, per_dir * 4.0),
        shaped(f / 8.0, size, per_dir / 4.0),
    ]
}

/// Known costs: 50 µs per file, 2 ns per byte, 1 ms per directory, 20 µs per n².
fn known(g: &[f64; COVARIATES]) -> f64 {
    5e-5 * g[0] + 2e-9 * g[1] + 1e-3 * g[2] + 2e-5 * g[3]
}

/// How often the interval for the median of `ahead` future runs of a new tree inside
/// the design holds that median; and the mean log half-width. 5 runs per cell, run noise
/// `run_sd` (lognormal), cell effects `cell_sd`; 95% intervals.
fn run_coverage(sims: usize, seed: u64, run_sd: f64, cell_sd: f64, ahead: u32) -> (f64, f64) {
    run_coverage_at(sims, seed, (run_sd, cell_sd), ahead, 0.95)
}

/// [`run_coverage`] with intervals at `level`.
fn run_coverage_at(sims: usize, seed: u64, (run_sd, cell_sd): (f64, f64), ahead: u32, level: f64) -> (f64, f64) {
    let mut state = seed;
    let (mut covered, mut width) = (0usize, 0.0);
    for _ in 0..sims {
        let mut pts = Vec::new();
        for g in calibration_design() {
            let u = (cell_sd * normal(&mut state)).exp();
            for _ in 0..5 {
                let e = (run_sd * normal(&mut state)).exp();
                pts.push(Point { files: g[0], bytes: g[1], dirs: g[2], dir_sq: g[3], seconds: known(&g) * u * e });
            }
        }
        let m = fit(&pts).expect("fit");
        // A new tree inside: 0.4–1× the files, 0.5–2× the file size, 0.5–2× per directory.
        let r = |s: &mut u64| noise(s, 1.0) / 2.0; // [0, 1)
        let g = shaped(3000.0 * (0.4 + 0.6 * r(&mut state)), 1e4 * 4f64.powf(r(&mut state) - 0.5), {
            8.57 * 4f64.powf(r(&mut state) - 0.5)
        });
        let u = (cell_sd * normal(&mut state)).exp();
        let mut runs: Vec<f64> = (0..ahead).map(|_| known(&g) * u * (run_sd * normal(&mut state)).exp()).collect();
        runs.sort_by(f64::total_cmp);
        let seen = crate::analysis::stats::median(&runs);
        let p = m.predict_runs(g[0], g[1], g[2], g[3], ahead, level);
        let [lo, hi] = p.interval95.expect("interval");
        assert!(lo <= p.seconds && p.seconds <= hi);
        covered += usize::from(lo <= seen && seen <= hi);
        width += (hi / p.seconds).ln() / sims as f64;
    }
    (covered as f64 / sims as f64, width)
}

#[test]
fn single_run_interval_covers_a_new_run() {
    // 10% run noise, no cell effect: a single future run is inside at least 90% of the
    // time (binomial s.d. at 95% over 500: 1 point), and the interval is not so wide
    // that it says nothing. A known model would give ×1.22. With 9 cells, t on 5 df
    // for all of it and the corner cells' leverage counted as misfit it was about ×1.8
    // (coverage near 99%); with the leverage taken out of the left-out errors and t on
    // the Welch–Satterthwaite df (issue 40, session 26): ×1.40 at 97.2% — the bound
    // below fails if the interval widens back.
    let (c, w) = run_coverage(500, 27, 0.10, 0.0, 1);
    eprintln!("single run, 10% noise: coverage {c}, mean log half-width {w}");
    assert!(c >= 0.90, "coverage {c} (half-width {w})");
    assert!(w < 1.5f64.ln(), "half-width {w}");
    // With cell effects (5%) on top: still at least 90%.
    let (c, w) = run_coverage(500, 28, 0.10, 0.05, 1);
    eprintln!("single run, 10% noise + 5% cell effect: coverage {c}, half-width {w}");
    assert!(c >= 0.90, "coverage {c} (half-width {w})");
}

#[test]
fn a_90_percent_interval_is_narrower_and_covers_about_90_percent() {
    // `predict --level 90`: the same parts with t at 90%. Same simulations as the 95%
    // one above (same seed): narrower by about t(90%)/t(95%) ≈ 0.82, and it still holds a
    // new run at least 85% of the time (binomial s.d. at 90% over 500: 1.3 points).
    let (c95, w95) = run_coverage(500, 27, 0.10, 0.0, 1);
    let (c90, w90) = run_coverage_at(500, 27, (0.10, 0.0), 1, 0.90);
    eprintln!("single run, 10% noise: 95% → {c95} ±{w95}; 90% → {c90} ±{w90}");
    assert!(c90 >= 0.85 && c90 <= c95, "coverage at 90%: {c90} (at 95%: {c95})");
    let ratio = w90 / w95;
    assert!(ratio > 0.75 && ratio < 0.88, "90% against 95% half-width: {ratio}");
}

#[test]
fn median_of_k_runs_gets_a_narrower_interval_that_still_covers() {
    let (c1, w1) = run_coverage(300, 31, 0.10, 0.0, 1);
    let (c5, w5) = run_coverage(300, 31, 0.10, 0.0, 5);
    eprintln!("1 run: {c1} ±{w1}; median of 5: {c5} ±{w5}");
    assert!(c5 >= 0.90, "coverage of the median of 5: {c5}");
    assert!(w5 < w1, "median of 5 ({w5}) is not narrower than one run ({w1})");
}

#[test]
fn fitted_weights_remove_the_low_bias() {
    // One column, 20% noise: 1/observed² weighting leans low (E[1/s²]-weighted mean of
    // per-file times); 1/fitted² lands on the mean.
    let mut state = 99;
    let (mut irls, mut observed) = (0.0, 0.0);
    let sims = 200;
    for _ in 0..sims {
        let pts: Vec<Point> = (1..=8)
            .map(|k| {
                let f = 100.0 * k as f64;
                Point {
                    files: f,
                    bytes: 0.0,
                    dirs: 0.0,
                    dir_sq: 0.0,
                    seconds: 1e-3 * f * (1.0 + 0.2 * normal(&mut state)),
                }
            })
            .collect();
        irls += fit(&pts).expect("fit").per_file_s / 1e-3 / sims as f64;
        let (s, ss) =
            pts.iter().fold((0.0, 0.0), |(s, ss), p| (s + p.files / p.seconds, ss + (p.files / p.seconds).powi(2)));
        observed += s / ss / 1e-3 / sims as f64;
    }
    eprintln!("mean a/a_true: fitted weights {irls}, observed weights {observed}");
    assert!((irls - 1.0).abs() < 0.01, "{irls}");
    assert!(observed < 0.97, "{observed}");
}

#[test]
fn reach_is_quiet_inside_and_ranks_far_directories_first() {
    let cells = calibration_design();
    let m_cells: Vec<[f64; COVARIATES]> = cells.clone();
    // Inside: between the cells, and exactly at one.
    for g in [shaped(2000.0, 1e4, 8.57), shaped(1500.0, 2e4, 15.0), cells[2]] {
        let r = reach::reach(&m_cells, g).expect("cells");
        assert!(!r.outside, "{g:?}: {r:?}");
        assert_eq!(r.explain(), "");
    }
    // 1.05× the largest tree: past the edge, but within the 10% spared.
    let r = reach::reach(&m_cells, shaped(3150.0, 1e4, 8.57)).unwrap();
    assert!(!r.outside, "{r:?}");
    // 70× the directories (files per directory 1/70): flagged, named, and farther than
    // a tree 3× the files.
    let most_dirs = cells.iter().map(|g| g[2]).fold(0.0, f64::max);
    let far = reach::reach(&m_cells, [3000.0, 3e7, 70.0 * most_dirs, 3000.0]).unwrap();
    assert!(far.outside, "{far:?}");
    assert_eq!(far.beyond[0].0, "directories");
    assert!((far.beyond[0].1 - 70.0).abs() < 1.0, "{far:?}");
    let why = far.explain();
    assert!(why.starts_with("70") && why.contains("× the calibrated range on directories"), "{why}");
    let bigger = reach::reach(&m_cells, shaped(9000.0, 1e4, 8.57)).unwrap();
    assert!(bigger.outside && bigger.distance_ratio < far.distance_ratio, "{bigger:?} vs {far:?}");
}

/// (files, bytes, dirs, Σn²) of the cells of a default `ladder --to 4096`: 64 MiB in 1,
/// 4 … 4,096 files in leaves filled to 1,000 files, the bandwidth's side rungs (16 MiB in
/// 1 and 64 files) and the flat side rungs (32 MiB in one folder of 2,048 and 4,096).
fn ladder_4096_design() -> Vec<[f64; COVARIATES]> {
    let mib = 1048576.0;
    let nested = |n: f64, total: f64| {
        let (full, rest) = ((n / 1000.0).floor(), n % 1000.0);
        if n <= 1000.0 { [n, total, 0.0, n * n] } else { [n, total, full + 1.0, full * 1e6 + rest * rest] }
    };
    let mut v: Vec<[f64; COVARIATES]> = (0..7).map(|k| nested(4f64.powi(k), 64.0 * mib)).collect();
    v.extend([nested(1.0, 16.0 * mib), nested(64.0, 16.0 * mib)]);
    v.extend([2048.0, 4096.0].map(|n| [n, 32.0 * mib, 0.0, n * n]));
    v
}

/// `runs` runs of every cell of `design`, times `truth` × a cell effect × run noise (both
/// lognormal, `sd` each).
fn simulate(
    state: &mut u64,
    design: &[[f64; COVARIATES]],
    sd: f64,
    truth: impl Fn(&[f64; COVARIATES]) -> f64,
) -> Vec<Point> {
    let mut pts = Vec::new();
    for g in design {
        let u = (sd * normal(state)).exp();
        for _ in 0..6 {
            let seconds = truth(g) * u * (sd * normal(state)).exp();
            pts.push(Point { files: g[0], bytes: g[1], dirs: g[2], dir_sq: g[3], seconds });
        }
    }
    pts
}

/// exFAT-like (BENCHMARKS.md "Directory-size term"): 33 µs a file, 200 MB/s, 20 ms a run,
/// 25 ns per pair of files in one folder.
fn exfat_like(g: &[f64; COVARIATES]) -> f64 {
    33e-6 * g[0] + 5e-9 * g[1] + 25e-9 * g[3] + 0.02
}

/// ext4-like: 66 µs a file, 740 MB/s, 20 ms a run, no directory-size cost.
fn ext4_like(g: &[f64; COVARIATES]) -> f64 {
    66e-6 * g[0] + 1.35e-9 * g[1] + 0.02
}

#[test]
fn the_ladders_flat_side_rungs_resolve_a_real_directory_size_cost() {
    use super::dir_cost::{DirCost, dir_cost};
    for seed in 0..20u64 {
        let mut state = 500 + seed;
        let m = fit(&simulate(&mut state, &ladder_4096_design(), 0.05, exfat_like)).expect("fit");
        let [lo, hi] = m.interval95(3).expect("an interval");
        assert!(lo > 0.0 && lo <= 25e-9 && 25e-9 <= hi * 1.05, "seed {seed}: d in [{lo}, {hi}]: {m:?}");
        let c = m.per_dir_entry_check.as_ref().expect("checked");
        assert!(c.chosen && c.left_out_with < c.left_out_without, "{c:?}");
        let Some(DirCost::Found { folders, .. }) = dir_cost(&m) else { panic!("seed {seed}: {:?}", dir_cost(&m)) };
        // One folder of 4,096 against ten of 410 by the true costs: 0.59 s against 0.18 s.
        let truth = exfat_like(&[4096.0, 64.0 * 1048576.0, 0.0, 4096.0 * 4096.0])
            / exfat_like(&[4096.0, 64.0 * 1048576.0, 10.0, 10.0 * 409.6 * 409.6]);
        let [rlo, rhi] = folders.interval.expect("an interval");
        assert!(rlo > 1.0 && rlo <= truth * 1.05 && truth <= rhi * 1.05, "seed {seed}: {truth} in {folders:?}");
    }
}

#[test]
fn no_directory_size_cost_is_found_where_there_is_none() {
    use super::dir_cost::{DirCost, dir_cost};
    // 5% cell and run noise: d is never found (chance may put it beyond 2 s.e. in a few
    // per cent of fits); 1%: the flat rungs pin it down, d ≈ 0 in most fits.
    for (sd, zero_at_least) in [(0.05, 0), (0.01, 30)] {
        let (mut found, mut zero) = (0, 0);
        for seed in 0..40u64 {
            let mut state = 900 + seed;
            let m = fit(&simulate(&mut state, &ladder_4096_design(), sd, ext4_like)).expect("fit");
            match dir_cost(&m).expect("folder sizes known") {
                DirCost::Found { .. } => found += 1,
                DirCost::Zero { .. } => zero += 1,
                DirCost::Unresolved { why } => {
                    assert!(why.contains("interval reaches") || why.contains("no better"), "{why}")
                }
            }
            assert!(rel(m.per_file_s, 66e-6) < 0.25, "seed {seed}: a = {}", m.per_file_s);
        }
        eprintln!("noise {sd}: d found in {found} of 40, ≈ 0 in {zero}");
        assert!(found <= 2, "noise {sd}: d found in {found} of 40");
        assert!(zero >= zero_at_least, "noise {sd}: d ≈ 0 in {zero} of 40");
    }
}

/// Issue 40: exFAT's read paid 61 ms a run and the fit put it in the directory cost (the
/// larger rungs have directories). A per-run constant stays k; a directory cost stays c.
#[test]
fn per_run_and_per_directory_costs_do_not_take_each_others_place() {
    let with_k = |g: &[f64; COVARIATES]| 30e-6 * g[0] + 2e-9 * g[1] + 0.06;
    let (mut k_kept, mut c_for_k) = (0, 0);
    for seed in 0..20u64 {
        let mut state = 1300 + seed;
        let m = fit(&simulate(&mut state, &ladder_4096_design(), 0.05, with_k)).expect("fit");
        k_kept += usize::from(m.per_run_s > 0.0);
        c_for_k += usize::from(m.per_dir_s > 0.0);
    }
    assert!(k_kept >= 19 && c_for_k <= 1, "k kept {k_kept} of 20, c in its place {c_for_k}");
    // The calibration's design (directories ×4 and ÷4 at one file count): a directory
    // cost without a per-run constant.
    let with_c = |g: &[f64; COVARIATES]| 5e-5 * g[0] + 2e-9 * g[1] + 1e-3 * g[2];
    let (mut c_kept, mut k_for_c) = (0, 0);
    for seed in 0..20u64 {
        let mut state = 1700 + seed;
        let m = fit(&simulate(&mut state, &calibration_design(), 0.05, with_c)).expect("fit");
        c_kept += usize::from(m.per_dir_s > 0.0);
        k_for_c += usize::from(m.per_run_s > 0.0);
    }
    assert!(c_kept >= 18 && k_for_c <= 2, "c kept {c_kept} of 20, k in its place {k_for_c}");
}
