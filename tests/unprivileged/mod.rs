//! What another local user can do to the mounts and daemons the tool makes (issue 38):
//! tries as `nobody` (uid and gid 65534, no supplementary groups, no capabilities,
//! through setpriv), every try bounded in time. Used by tests/share.rs and
//! tests/device_class.rs; they run as root.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run `script` with bash as nobody, killed after `limit`: (exit code, stdout + stderr).
pub fn as_nobody(script: &str, limit: Duration) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let f = std::fs::File::create(&out).unwrap();
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "bash", "-c", script])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(f.try_clone().unwrap())
        .stderr(f)
        .spawn()
        .expect("setpriv (util-linux) and bash are needed to try as nobody");
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (code, std::fs::read_to_string(&out).unwrap_or_default())
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Every write nobody could make in `dir` (a mount point the tool made, whose parents
/// nobody may enter, so that only the mount itself stands in the way): create a file,
/// make a directory, append to, rename and remove a file of root's. Empty when nobody
/// changed nothing; root's file is checked afterwards as root.
pub fn writes_by_nobody(dir: &Path) -> Vec<String> {
    let root_file = dir.join("root-file");
    std::fs::write(&root_file, b"root's\n").unwrap();
    let d = q(dir);
    let script = format!(
        "cd {d} 2>/dev/null; \
         (: > {d}/nobody-file) 2>/dev/null && echo 'created a file'; \
         mkdir {d}/nobody-dir 2>/dev/null && echo 'made a directory'; \
         (echo x >> {d}/root-file) 2>/dev/null && echo \"appended to root's file\"; \
         mv {d}/root-file {d}/renamed 2>/dev/null && echo \"renamed root's file\"; \
         rm -f {d}/root-file 2>/dev/null; \
         true"
    );
    let (code, out) = as_nobody(&script, Duration::from_secs(30));
    assert!(code.is_some(), "the tries as nobody did not end within 30 s: {out}");
    let mut v: Vec<String> = out.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect();
    match std::fs::read(&root_file) {
        Ok(b) if b == b"root's\n" => {}
        Ok(b) => v.push(format!("root's file now holds {:?}", String::from_utf8_lossy(&b))),
        Err(e) => v.push(format!("root's file is gone: {e}")),
    }
    for left in ["nobody-file", "nobody-dir", "renamed"] {
        if std::fs::symlink_metadata(dir.join(left)).is_ok() {
            v.push(format!("{left} exists"));
        }
    }
    let _ = std::fs::remove_file(&root_file);
    v
}

/// The host's own addresses (IPv4, loopback first): where a port would be reachable.
pub fn host_addresses() -> Vec<String> {
    let mut v = vec!["127.0.0.1".to_string()];
    if let Ok(o) = Command::new("ip").args(["-o", "-4", "addr", "show"]).output() {
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            let mut w = l.split_whitespace();
            if let Some(a) = w.find(|x| *x == "inet").and(w.next()) {
                let a = a.split('/').next().unwrap_or("").to_string();
                if !a.is_empty() && !v.contains(&a) {
                    v.push(a);
                }
            }
        }
    }
    v
}

/// The TCP ports in LISTEN state in the network namespace of process `pid`.
pub fn listening_ports_of(pid: u32) -> Vec<u16> {
    let mut v = Vec::new();
    for f in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).unwrap_or_default();
        for l in text.lines().skip(1) {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // local_address is ADDR:PORT in hex; state 0A is LISTEN.
            if cols.len() > 3 && cols[3] == "0A" {
                if let Some(p) = cols[1].rsplit(':').next().and_then(|h| u16::from_str_radix(h, 16).ok()) {
                    if !v.contains(&p) {
                        v.push(p);
                    }
                }
            }
        }
    }
    v
}

/// Which of `ports` nobody can connect to, on any of the host's addresses.
pub fn reachable_by_nobody(ports: &[u16]) -> Vec<String> {
    let mut script = String::new();
    for a in host_addresses() {
        for p in ports {
            script += &format!("timeout 3 bash -c 'exec 3<>/dev/tcp/{a}/{p}' 2>/dev/null && echo '{a}:{p}'; ");
        }
    }
    script += "true";
    let (code, out) = as_nobody(&script, Duration::from_secs(60));
    assert!(code.is_some(), "the connection tries did not end within 60 s: {out}");
    out.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect()
}
