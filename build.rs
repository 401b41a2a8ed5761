//! Records which git commit the binary was built from (for `--version` and the
//! provenance in results files): `MANYFILES_BUILT_FROM` = "commit <hash> (<date>)", or
//! "not from git" when built outside a git checkout (a tarball) or without git.
//! Reruns when HEAD moves (a commit, a checkout) or a source changes, so the recorded
//! commit stays true; a build from a tree whose sources differ from that commit says so
//! (", with uncommitted changes"): its results did not come from the commit alone.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    // Only this project's own checkout counts (not a git repository around a tarball).
    let from_git = if Path::new(&dir).join(".git").exists() {
        let commit = git(&["-C", &dir, "rev-parse", "HEAD"]);
        let date = git(&["-C", &dir, "log", "-1", "--format=%cs"]);
        // HEAD itself, the branch it points to, and packed refs: any of them moves on a commit.
        // (Only existing files: cargo reruns on every build for a missing one.)
        let branch = git(&["-C", &dir, "symbolic-ref", "-q", "HEAD"]);
        for p in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
            if let Some(path) = git(&["-C", &dir, "rev-parse", "--path-format=absolute", "--git-path", p]) {
                if Path::new(&path).exists() {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
        }
        // What the binary is built from: a change to any of these since the commit makes
        // the build "with uncommitted changes". (A directory is scanned whole by cargo.)
        let sources = ["src", "build.rs", "Cargo.toml", "Cargo.lock", "assets"];
        for p in sources {
            if Path::new(&dir).join(p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
        // --no-optional-locks: a build never writes the index (a user's git may be running).
        let status = Command::new("git")
            .args(["--no-optional-locks", "-C", &dir, "status", "--porcelain", "--"])
            .args(sources)
            .output()
            .ok()
            .filter(|o| o.status.success());
        let dirty = status.is_some_and(|o| !o.stdout.is_empty());
        commit.zip(date).map(|(c, d)| (c, d, dirty))
    } else {
        None
    };
    let built_from = match from_git {
        Some((commit, date, false)) => format!("commit {commit} ({date})"),
        Some((commit, date, true)) => format!("commit {commit} ({date}), with uncommitted changes"),
        None => "not from git".to_string(),
    };
    println!("cargo:rustc-env=MANYFILES_BUILT_FROM={built_from}");
}
