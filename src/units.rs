//! Parsing and printing of sizes, counts and durations.
//!
//! Suffixes follow dd(1): `k`, `K`, `KiB` are 1024; `kB`, `KB` are 1000 (and so on for
//! M, G, T). A bare number is bytes. Fractions are allowed with a unit (`1.5M`) and rounded
//! down; a bare fractional byte count, a count that is not whole (`16.5`) and a negative
//! value are refused.

/// Parse a byte size such as `64MiB`, `1k`, `4096`, `1.5G`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("must not be negative: '{s}'"));
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("'{s}' is not a size (expected a number with an optional unit such as 4k, 64MiB, 1G)"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a size: bad number '{num}'"))?;
    let mult: f64 = match suffix.trim() {
        "" | "b" | "B" => 1.0,
        "k" | "K" | "KiB" | "Ki" | "kiB" => 1024.0,
        "kB" | "KB" => 1e3,
        "m" | "M" | "MiB" | "Mi" => 1024.0 * 1024.0,
        "MB" => 1e6,
        "g" | "G" | "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        "GB" => 1e9,
        "t" | "T" | "TiB" | "Ti" => 1024f64.powi(4),
        "TB" => 1e12,
        other => {
            return Err(format!(
                "'{s}' has an unknown unit '{other}' (use k, M, G, T for powers of 1024 or kB, MB, GB, TB for powers of 1000)"
            ));
        }
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes > u64::MAX as f64 / 2.0 {
        return Err(format!("'{s}' is too large"));
    }
    if bytes.fract() != 0.0 && suffix.trim().is_empty() {
        return Err(format!("must be a whole number of bytes: '{s}'"));
    }
    Ok(bytes as u64)
}

/// Parse a count such as `65536`, `64k` (= 65,536) or `1M`; the same suffixes as sizes.
/// A count must come out whole (`1.5k` is 1,536; `16.5` is refused).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let whole = || format!("must be a whole number: '{s}'");
    let n = parse_size(s).map_err(|e| {
        if e.starts_with("must be a whole number") { whole() } else { e.replace("is not a size", "is not a count") }
    })?;
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: f64 = match parse_size(&format!("1{suffix}")) {
        Ok(m) => m as f64,
        Err(_) => 1.0,
    };
    if num.parse::<f64>().is_ok_and(|v| (v * mult).fract() != 0.0) {
        return Err(whole());
    }
    Ok(n)
}

/// `1048576` → `1 MiB`, `1536` → `1.5 KiB`, `100` → `100 B`.
pub fn fmt_size(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || (v - v.round()).abs() < 1e-9 {
        format!("{} {}", v.round(), UNITS[u])
    } else {
        format!("{} {}", sig3(v), UNITS[u])
    }
}

/// A size that reads back as the same number: the largest binary unit that divides it
/// (`4 KiB`), else bytes (`4097 B`).
pub fn exact_size(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b != 0 && b % (1u64 << shift) == 0 {
            return format!("{} {unit}", b >> shift);
        }
    }
    format!("{b} B")
}

/// Seconds in the unit that keeps 3 significant digits readable: `0.0031` → `3.10 ms`.
pub fn fmt_secs(s: f64) -> String {
    let a = s.abs();
    if a == 0.0 {
        "0 s".into()
    } else if a < 1e-6 {
        format!("{} ns", sig3(s * 1e9))
    } else if a < 1e-3 {
        format!("{} µs", sig3(s * 1e6))
    } else if a < 1.0 {
        format!("{} ms", sig3(s * 1e3))
    } else {
        format!("{} s", sig3(s))
    }
}

/// A value with 3 significant digits (no exponent).
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// Rate with a unit: `12345.6` → `12.3 k/s`.
pub fn fmt_rate(per_s: f64, unit: &str) -> String {
    if per_s >= 1e9 {
        format!("{} G{unit}/s", sig3(per_s / 1e9))
    } else if per_s >= 1e6 {
        format!("{} M{unit}/s", sig3(per_s / 1e6))
    } else if per_s >= 1e3 {
        format!("{} k{unit}/s", sig3(per_s / 1e3))
    } else {
        format!("{} {unit}/s", sig3(per_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1k").unwrap(), 1024);
        assert_eq!(parse_size("1K").unwrap(), 1024);
        assert_eq!(parse_size("1KiB").unwrap(), 1024);
        assert_eq!(parse_size("1kB").unwrap(), 1000);
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("1.5M").unwrap(), 3 << 19);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size(" 8 k ").unwrap(), 8192);
    }

    #[test]
    fn sizes_reject() {
        for bad in ["12XB", "", "k", "-1", "1..2k", "abc", "1e999", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad} should be rejected");
        }
        assert!(parse_size("12XB").unwrap_err().contains("unknown unit 'XB'"));
    }

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("64k").unwrap(), 65536);
        assert!(parse_count("x").unwrap_err().contains("not a count"));
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_size(1024.0), "1 KiB");
        assert_eq!(fmt_size(64.0 * 1048576.0), "64 MiB");
        assert_eq!(fmt_size(1536.0), "1.50 KiB");
        assert_eq!(fmt_size(75326.0), "73.6 KiB");
        assert_eq!(fmt_size(100.0), "100 B");
        assert_eq!(fmt_secs(0.0031), "3.10 ms");
        assert_eq!(fmt_secs(12.345), "12.3 s");
        assert_eq!(fmt_rate(12345.6, "files"), "12.3 kfiles/s");
    }
}
