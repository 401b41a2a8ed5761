//! The processes behind a file share (`share:PROTO@rtt=…`, [`super::share`]): a server
//! bound to 127.0.0.1 exporting a managed file system (its own registry record, mounted
//! at its usual mount point), toxiproxy in front of it adding the round trip, and a FUSE
//! client mounted through the proxy. All of them run in the stack's own network namespace
//! ([`super::share_netns`]: loopback only, unreachable from the host and its other users);
//! the proxy runs as an unnamed uid of its own, the servers as root (sshd needs it to
//! chroot, smbd to serve root's files) but confined to the export.
//!
//! - `sftp`: a private sshd (own host key, own authorized key, own config, a free port,
//!   no PAM, no DNS) that grants root SFTP and nothing else: `ForceCommand internal-sftp`
//!   chrooted to the export (no shell, no forwarding, no tty); the client is sshfs with
//!   its default caches, given explicitly so the results record them.
//! - `smb`: a private smbd (own smb.conf, state directories and port; one share of the
//!   export for root, with a random password in the stack's own passdb: no guest access,
//!   as smbd would map a guest to root here; no symlink leads out of the export); the
//!   client is `rclone mount` with its smb back end
//!   (Debian 12 has no kernel CIFS client here), its caches set as a kernel CIFS mount's
//!   defaults (`actimeo=1`: attributes and directory entries for 1 s) and no file cache.
//! - The proxy is toxiproxy (<https://github.com/Shopify/toxiproxy>, v2.9.0, built with
//!   `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.9.0` and installed as
//!   `toxiproxy-server`): a latency toxic of `rtt` on the server-to-client stream (so a
//!   request and its reply take the whole round trip once; toxiproxy delays whole
//!   milliseconds, hence rtt in milliseconds) and, with `bw=`, a bandwidth toxic on both
//!   streams. Its proxy and toxics are made through its HTTP API on the namespace's
//!   127.0.0.1, which has no authentication: only the tool reaches it (from a thread in
//!   the namespace).
//!
//! Every file lives in the private directory `/run/manyfiles/share-<key>/` (0700),
//! recorded in the registry before anything starts, the namespace too (`DIR/netns`).
//! [`stop`] finds the stack's processes as those in that namespace, and (for a stack of
//! an older build, or started before it) those of its programs that name a path in DIR in
//! their argv (`-f DIR/sshd_config`, `-s DIR/smb.conf`, `-F DIR/ssh_config`,
//! `--config DIR/rclone.conf`) with their descendants (sshd's per-connection children
//! rename themselves), even after a kill -9 of the tool before any pid file. Daemons
//! start through `setsid -f` (a terminal's SIGINT reaches the tool, which tears them down).

use super::daemon::{self, end_processes, last_line, remove_private_dir, spawn_detached_with};
use super::kinds::KindRecord;
use super::registry::{Record, mounts_at};
use super::share::{Proto, ShareSpec};
use super::share_netns::{self as netns, Account};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The proxy's binary name (not packaged by Debian: see the module docs).
pub const PROXY: &str = "toxiproxy-server";
/// Where the proxy comes from, for the message when it is missing.
pub const PROXY_SOURCE: &str =
    "go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.9.0, then put the binary in PATH as toxiproxy-server";

/// Tools a protocol needs and their Debian packages (the proxy is checked apart).
pub fn tools(proto: Proto) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![("setsid", "util-linux"), ("fusermount3", "fuse3")];
    match proto {
        Proto::Sftp => {
            v.extend([("sshd", "openssh-server"), ("ssh", "openssh-client"), ("ssh-keygen", "openssh-client")]);
            v.push(("sshfs", "sshfs"));
        }
        Proto::Smb => v.extend([("smbd", "samba"), ("smbpasswd", "samba-common-bin"), ("rclone", "rclone")]),
    }
    v
}

/// Tools, Debian's sftp-server and FUSE for share `label` (its export is checked apart):
/// the first one missing, as one line naming its package.
pub fn preflight(label: &str, share: &ShareSpec, search_path: &std::ffi::OsStr) -> std::result::Result<(), String> {
    let mut need: Vec<(&str, String)> =
        tools(share.proto).into_iter().map(|(t, p)| (t, format!("install the Debian package {p}"))).collect();
    need.push((PROXY, PROXY_SOURCE.to_string()));
    for (tool, how) in need {
        if super::managed::find_in_path(tool, search_path).is_none() {
            return Err(format!("{label}: {tool} not found: {how}"));
        }
    }
    if !Path::new("/dev/fuse").exists() {
        return Err(format!("{label}: a share's client needs FUSE (no /dev/fuse); try `modprobe fuse`"));
    }
    Ok(())
}

/// What the results record about a share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareDetails {
    pub share: ShareSpec,
    /// Milliseconds toxiproxy's latency toxic holds the server-to-client stream.
    pub latency_toxic_ms: u64,
    /// Which stream carries the latency (the other has none).
    pub latency_stream: String,
    /// toxiproxy's bandwidth toxic rate (units of 1,000 B/s, both streams), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_toxic_rate: Option<u64>,
    /// Ports in the stack's own network namespace (none on the host's addresses).
    pub server_port: u16,
    pub proxy_port: u16,
    #[serde(default)]
    pub proxy_api_port: u16,
    /// Who runs what and what reaches it (README, "Security").
    #[serde(default)]
    pub confinement: String,
    pub server_command: Vec<String>,
    pub server_version: String,
    pub proxy_command: Vec<String>,
    pub proxy_version: String,
    pub client_command: Vec<String>,
    pub client_version: String,
    /// The client's attribute and directory caches, as set (and why).
    pub client_caches: String,
    /// How the exported file system was made.
    pub export: Box<super::managed::ManagedDetails>,
}

/// The private directory of share `key`.
pub fn dir_for(key: &str) -> PathBuf {
    super::registry::state_dir().join(format!("share-{key}"))
}

/// The source name of the client's mount (`manyfiles-share-<key>`), recorded as the
/// record's `fuse_source` so cleanup unmounts only it.
pub fn fsname(dir: &Path) -> String {
    format!("manyfiles-{}", dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default())
}

/// The record of a share's client mount (of the share kind: its cleanup stops the
/// stack); its export's record has `share_dir` too, and the export's kind.
pub fn is_client(rec: &Record) -> bool {
    matches!(rec.kind, KindRecord::Share(_))
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

pub(super) fn write_private(path: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::failed(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))
}

pub(super) fn mkdir(p: &Path, mode: u32) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(mode)
        .create(p)
        .map_err(|e| Error::failed(format!("cannot create {}: {e}", p.display())))
}

/// The first line of `argv`'s output that holds `word` (else the first line).
pub(super) fn tool_version(argv: &[&str], word: &str) -> String {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let (so, se) = crate::helper::run_output(&argv, crate::helper::DEFAULT_TIMEOUT);
    let lines: Vec<&str> = so.lines().chain(se.lines()).map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.iter().find(|l| l.contains(word)).or(lines.first()).unwrap_or(&"").to_string()
}

/// Does 127.0.0.1:`port` in the stack's namespace `ns` accept a connection (and, with
/// `banner`, send it)?
pub(super) fn accepts(ns: &Path, port: u16, banner: Option<&[u8]>) -> bool {
    netns::within(ns, || accepts_here(port, banner)).unwrap_or(false)
}

fn accepts_here(port: u16, banner: Option<&[u8]>) -> bool {
    let Ok(mut c) = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2)) else {
        return false;
    };
    let Some(want) = banner else { return true };
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 64];
    c.read(&mut buf).is_ok_and(|n| buf[..n].starts_with(want))
}

/// [`daemon::wait_ready`] for the stack's `what` (a process whose argv holds it).
pub(super) fn wait_ready(dir: &Path, what: &str, log: &Path, ready: impl Fn() -> bool) -> Result<()> {
    daemon::wait_ready(what, log, ready, || stack_pids(dir).iter().any(|(_, n)| n.contains(what)))
}

/// One request to toxiproxy's HTTP API in the stack's namespace `ns`; Ok(body) on a 2xx
/// status. Written by hand: a few JSON POSTs do not need an HTTP client crate.
fn api(ns: &Path, port: u16, method: &str, path: &str, body: &str) -> std::result::Result<String, String> {
    netns::within(ns, || api_here(port, method, path, body)).map_err(|e| e.to_string())?
}

fn api_here(port: u16, method: &str, path: &str, body: &str) -> std::result::Result<String, String> {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("toxiproxy API: {e}"))?;
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    c.write_all(req.as_bytes()).map_err(|e| format!("toxiproxy API: {e}"))?;
    let mut out = String::new();
    c.read_to_string(&mut out).map_err(|e| format!("toxiproxy API: {e}"))?;
    let status = out.split(' ').nth(1).unwrap_or("");
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.trim().to_string()).unwrap_or_default();
    if status.starts_with('2') { Ok(body) } else { Err(format!("toxiproxy API {method} {path}: {status} {body}")) }
}

/// Three different free ports on the loopback of the namespace `ns` (the server's, the
/// proxy's, the proxy's API's) of a `what` stack (a share, an object store).
pub(super) fn free_ports(ns: &Path, what: &str) -> Result<[u16; 3]> {
    netns::within(ns, || -> Result<[u16; 3]> {
        // Held together so the three differ.
        let held: Vec<std::net::TcpListener> = (0..3)
            .map(|_| std::net::TcpListener::bind(("127.0.0.1", 0)))
            .collect::<std::io::Result<_>>()
            .map_err(|e| Error::failed(format!("cannot find a free port in the {what}'s namespace: {e}")))?;
        let port = |i: usize| held[i].local_addr().map(|a| a.port()).unwrap_or(0);
        Ok([port(0), port(1), port(2)])
    })?
}

/// Start the server and the proxy for `share` exporting `export`'s mount (the caller
/// recorded `dir` first). The client is mounted apart ([`mount_client`]). On error, what
/// was started is left for [`stop`].
pub fn start(dir: &Path, share: &ShareSpec, export: &super::managed::ManagedFs, mp: &Path) -> Result<ShareDetails> {
    let export_dir = export.mount_point();
    mkdir(dir, 0o700)?;
    let ns = netns::file(dir);
    netns::create(&ns)?;
    let [server_port, proxy_port, api_port] = free_ports(&ns, "share")?;
    let account = netns::free_account()?;
    let (server_command, server_version, client_command, client_version, client_caches) = match share.proto {
        Proto::Sftp => {
            let server = start_sshd(dir, server_port, proxy_port, export_dir)?;
            let (client, caches) = sshfs_argv(dir, proxy_port, mp);
            (
                server,
                format!("sshd of {}", tool_version(&["ssh", "-V"], "OpenSSH")),
                client,
                tool_version(&["sshfs", "--version"], "SSHFS"),
                caches,
            )
        }
        Proto::Smb => {
            let server = start_smbd(dir, server_port, export_dir)?;
            let (client, caches) = rclone_argv(dir, proxy_port, mp)?;
            (
                server,
                tool_version(&["smbd", "--version"], "Version"),
                client,
                tool_version(&["rclone", "version"], "rclone"),
                caches,
            )
        }
    };
    let proxy_command =
        start_proxy(dir, (share.rtt_ms, share.toxic_rate()), account, server_port, proxy_port, api_port)?;
    let server = if share.proto == Proto::Sftp {
        "sshd as root, SFTP only (internal-sftp), chrooted to the export, no shell, tty or forwarding"
    } else {
        "smbd as root, one share of the export for root (password in the stack's passdb), no wide links"
    };
    Ok(ShareDetails {
        share: share.clone(),
        latency_toxic_ms: share.rtt_ms,
        latency_stream: "downstream (server to client)".into(),
        bandwidth_toxic_rate: share.toxic_rate(),
        server_port,
        proxy_port,
        proxy_api_port: api_port,
        confinement: format!(
            "own network namespace (loopback only, nothing on the host's addresses); {server}; \
             toxiproxy as uid {} gid {} (no account, no groups); client as root without allow_other",
            account.uid, account.gid
        ),
        server_command,
        server_version,
        proxy_command,
        proxy_version: format!("{} (built from v2.9.0 by go install)", tool_version(&[PROXY, "-version"], "version")),
        client_command,
        client_version,
        client_caches,
        export: Box::new(export.details().clone()),
    })
}

/// Start `argv` in the stack's namespace (as `account` when given), output to `log`.
pub(super) fn spawn(dir: &Path, argv: &[String], log: &Path, account: Option<Account>) -> Result<()> {
    let ns = std::sync::Arc::new(netns::open(&netns::file(dir))?);
    spawn_detached_with(argv, log, &[], netns::confine(ns, account))
}

/// toxiproxy as `account` (it cannot read the stack's directory: the proxy is made
/// through the API, not from a config file): `rtt_ms` server to client, `rate` (units of
/// 1,000 B/s) both ways. Also an object store's ([`super::object_stack`]).
pub(super) fn start_proxy(
    dir: &Path,
    (rtt_ms, rate): (u64, Option<u64>),
    account: Account,
    server: u16,
    listen: u16,
    api_port: u16,
) -> Result<Vec<String>> {
    let ns = netns::file(dir);
    let argv: Vec<String> = [PROXY, "-host", "127.0.0.1", "-port", &api_port.to_string()].map(String::from).into();
    let log = dir.join("toxiproxy.log");
    spawn(dir, &argv, &log, Some(account))?;
    wait_ready(dir, PROXY, &log, || accepts(&ns, api_port, None))?;
    let proxy =
        format!(r#"{{"name":"share","listen":"127.0.0.1:{listen}","upstream":"127.0.0.1:{server}","enabled":true}}"#);
    api(&ns, api_port, "POST", "/proxies", &proxy).map_err(Error::failed)?;
    wait_ready(dir, PROXY, &log, || accepts(&ns, listen, None))?;
    let mut toxics = Vec::new();
    if rtt_ms > 0 {
        toxics.push(format!(
            r#"{{"name":"rtt","type":"latency","stream":"downstream","toxicity":1.0,"attributes":{{"latency":{},"jitter":0}}}}"#,
            rtt_ms
        ));
    }
    if let Some(rate) = rate {
        for stream in ["upstream", "downstream"] {
            toxics.push(format!(
                r#"{{"name":"bw_{stream}","type":"bandwidth","stream":"{stream}","toxicity":1.0,"attributes":{{"rate":{rate}}}}}"#
            ));
        }
    }
    for t in &toxics {
        api(&ns, api_port, "POST", "/proxies/share/toxics", t).map_err(Error::failed)?;
    }
    Ok(argv)
}

fn keygen(path: &Path) -> Result<()> {
    let argv: Vec<String> =
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "manyfiles", "-f", &s(path)].map(String::from).into();
    crate::helper::run(&argv).map(|_| ()).map_err(|e| Error::failed(e.to_string()))
}

/// sshd for root's SFTP into `export` only: `ChrootDirectory` (sshd checks that every
/// component of it is root's and not writable by others, as a managed mount point is)
/// with `ForceCommand internal-sftp`, no shell, tty, forwarding or rc files.
fn start_sshd(dir: &Path, port: u16, proxy_port: u16, export: &Path) -> Result<Vec<String>> {
    keygen(&dir.join("host_key"))?;
    keygen(&dir.join("client_key"))?;
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| Error::failed(format!("{p}: {e}")));
    write_private(&dir.join("authorized_keys"), &read("client_key.pub")?)?;
    write_private(&dir.join("known_hosts"), &format!("[127.0.0.1]:{proxy_port} {}", read("host_key.pub")?))?;
    let d = s(dir);
    write_private(
        &dir.join("sshd_config"),
        &format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nUsePAM no\nUseDNS no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nAllowUsers root\nX11Forwarding no\n\
             AllowTcpForwarding no\nAllowStreamLocalForwarding no\nAllowAgentForwarding no\nPermitTunnel no\n\
             DisableForwarding yes\nPermitTTY no\nPermitUserRC no\nPermitUserEnvironment no\nPrintMotd no\n\
             Subsystem sftp internal-sftp\nChrootDirectory {}\nForceCommand internal-sftp\nLogLevel ERROR\n",
            export.display()
        ),
    )?;
    write_private(
        &dir.join("ssh_config"),
        &format!(
            "Host *\n  User root\n  IdentityFile {d}/client_key\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  \
             GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n"
        ),
    )?;
    // sshd refuses to start without its privilege separation directory, which Debian's
    // service makes at boot (systemd RuntimeDirectory); made here when missing, never removed.
    if !Path::new("/run/sshd").is_dir() {
        mkdir(Path::new("/run/sshd"), 0o755)?;
    }
    let sshd = super::managed::find_in_path("sshd", &std::env::var_os("PATH").unwrap_or_default())
        .map(|p| s(&p))
        .unwrap_or_else(|| "/usr/sbin/sshd".into());
    let argv: Vec<String> =
        [&sshd, "-D", "-f", &format!("{d}/sshd_config"), "-E", &format!("{d}/sshd.log")].map(String::from).into();
    let log = dir.join("sshd.out");
    spawn(dir, &argv, &log, None)?;
    let both = || format!("{}{}", last_line(&log), last_line(&dir.join("sshd.log")));
    let ns = netns::file(dir);
    wait_ready(dir, "sshd", &log, || accepts(&ns, port, Some(b"SSH-")))
        .map_err(|e| Error::failed(format!("{e} {}", both())))?;
    Ok(argv)
}

/// sshfs through the proxy, in the foreground of its own session, of the server's root
/// (the export: sshd chroots there). Its caches are sshfs 3.7's defaults, written out so
/// the results record them. No `allow_other`: only root reaches the mount.
fn sshfs_argv(dir: &Path, proxy_port: u16, mp: &Path) -> (Vec<String>, String) {
    let caches = "dir_cache=yes,dcache_timeout=20,entry_timeout=1,attr_timeout=1,negative_timeout=0";
    let opts = format!("fsname={},{caches}", fsname(dir));
    let argv = [
        "sshfs",
        "-f",
        "-F",
        &s(&dir.join("ssh_config")),
        "-p",
        &proxy_port.to_string(),
        "-o",
        &opts,
        "root@127.0.0.1:/",
        &s(mp),
    ]
    .map(String::from)
    .into();
    (argv, format!("sshfs defaults: {caches} (seconds)"))
}

/// Run `argv` with `input` on its stdin (secrets stay out of argv); Ok(stdout).
fn run_stdin(argv: &[&str], input: &str) -> Result<String> {
    use std::process::{Command, Stdio};
    let fail = |e: String| Error::failed(format!("`{}`: {e}", argv.join(" ")));
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    child.stdin.take().expect("piped").write_all(input.as_bytes()).map_err(|e| fail(e.to_string()))?;
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(fail(format!("{}: {}", out.status, err.lines().last().unwrap_or(""))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// 24 hex digits from the kernel's random source.
pub(super) fn password() -> Result<String> {
    let mut b = [0u8; 12];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::failed(format!("/dev/urandom: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn start_smbd(dir: &Path, port: u16, export: &Path) -> Result<Vec<String>> {
    let st = dir.join("state");
    mkdir(&st, 0o700)?;
    for sub in ["lock", "private", "cache", "pid", "ncalrpc"] {
        mkdir(&st.join(sub), 0o700)?;
    }
    let (d, t) = (s(dir), s(&st));
    write_private(
        &dir.join("smb.conf"),
        &format!(
            "[global]\n  interfaces = 127.0.0.1\n  bind interfaces only = yes\n  smb ports = {port}\n  disable netbios = yes\n  \
             server role = standalone server\n  lock directory = {t}/lock\n  state directory = {t}/lock\n  \
             cache directory = {t}/cache\n  private dir = {t}/private\n  pid directory = {t}/pid\n  \
             ncalrpc dir = {t}/ncalrpc\n  log file = {d}/smbd.log\n  logging = file\n  max log size = 1000\n  \
             load printers = no\n  printcap name = /dev/null\n  disable spoolss = yes\n  \
             passdb backend = tdbsam:{t}/private/passdb.tdb\n  server min protocol = SMB2_10\n  \
             hosts allow = 127.0.0.1\n  restrict anonymous = 2\n  map to guest = Never\n  \
             unix extensions = no\n  allow insecure wide links = no\n\
             [export]\n  path = {}\n  read only = no\n  valid users = root\n  wide links = no\n",
            export.display()
        ),
    )?;
    let pw = password()?;
    run_stdin(&["smbpasswd", "-c", &format!("{d}/smb.conf"), "-s", "-a", "root"], &format!("{pw}\n{pw}\n"))?;
    write_private(&dir.join("smb.password"), &pw)?;
    let argv: Vec<String> =
        ["smbd", "--foreground", "--no-process-group", "-s", &format!("{d}/smb.conf")].map(String::from).into();
    let log = dir.join("smbd.out");
    spawn(dir, &argv, &log, None)?;
    let ns = netns::file(dir);
    wait_ready(dir, "smbd", &log, || accepts(&ns, port, None))?;
    Ok(argv)
}

/// rclone mount of the share through the proxy, caches as a kernel CIFS mount's
/// defaults (`actimeo=1`, see the module docs). No `--allow-other`: only root reaches it.
fn rclone_argv(dir: &Path, proxy_port: u16, mp: &Path) -> Result<(Vec<String>, String)> {
    let conf = dir.join("rclone.conf");
    let pw =
        std::fs::read_to_string(dir.join("smb.password")).map_err(|e| Error::failed(format!("smb.password: {e}")))?;
    let obscured = run_stdin(&["rclone", "obscure", "-"], &pw)?;
    write_private(
        &conf,
        &format!("[server]\ntype = smb\nhost = 127.0.0.1\nport = {proxy_port}\nuser = root\npass = {obscured}\n"),
    )?;
    let caches = "--attr-timeout 1s --dir-cache-time 1s --poll-interval 0 --vfs-cache-mode off";
    let mut argv: Vec<String> =
        ["rclone", "--config", &s(&conf), "mount", "server:export", &s(mp)].map(String::from).into();
    argv.extend(["--devname".into(), fsname(dir), "--cache-dir".into(), s(&dir.join("rclone-cache"))]);
    argv.extend(["--log-file".into(), s(&dir.join("rclone.log"))]);
    argv.extend(caches.split(' ').map(String::from));
    Ok((argv, format!("as a kernel CIFS mount's defaults (actimeo=1), no file cache: {caches}")))
}

/// Mount the client (after [`start`], and again after every unmount by a refresh).
pub fn mount_client(dir: &Path, d: &ShareDetails, mp: &Path) -> Result<()> {
    let name = &d.client_command[0];
    let log = dir.join(format!("{name}.out"));
    spawn(dir, &d.client_command, &log, None)?;
    let want = d.share.proto.mountinfo_type();
    let mounted = || mounts_at(mp).last().is_some_and(|m| m.fs_type == want);
    let r = wait_ready(dir, name, &log, mounted);
    if let (Err(e), Proto::Smb) = (&r, d.share.proto) {
        return Err(Error::failed(format!("{e} {}", last_line(&dir.join("rclone.log")))));
    }
    r
}

/// The programs a share stack (or an object store's, [`super::object_stack`]) runs (the
/// names its processes start with).
const STACK_PROGRAMS: [&str; 11] = [
    "sshd",
    "sshfs",
    "ssh",
    "ssh-keygen",
    "sftp-server",
    "smbd",
    "smbpasswd",
    "rclone",
    PROXY,
    "s3fs",
    super::object_stack::SERVER,
];

/// The processes in the stack's namespace, the stack's programs whose argv names a path
/// in `dir`, and their descendants: (pid, argv).
pub(super) fn stack_pids(dir: &Path) -> Vec<(u32, String)> {
    let needle = format!("{}/", dir.display());
    let me = std::process::id();
    let in_ns = netns::identity(&netns::file(dir)).map(netns::pids_in).unwrap_or_default();
    let mut procs: Vec<(u32, u32, String)> = Vec::new(); // pid, ppid, argv
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse().ok()).unwrap_or(0);
        let argv: Vec<u8> = cmd.iter().map(|&b| if b == 0 { b' ' } else { b }).collect();
        procs.push((pid, ppid, String::from_utf8_lossy(&argv).trim().to_string()));
    }
    // Only the stack's own programs are matched by the path (a user's `tail -f` of a log
    // in DIR names it too, and is not ours); their descendants are (sshd's per-connection
    // children rename themselves, sshfs runs ssh).
    let ours = |argv: &str| {
        let first = argv.split_whitespace().next().unwrap_or("").trim_end_matches(':');
        let name = first.rsplit('/').next().unwrap_or(first);
        STACK_PROGRAMS.contains(&name)
    };
    let mut out: Vec<(u32, String)> = procs
        .iter()
        .filter(|p| p.0 != me && ((p.2.contains(&needle) && ours(&p.2)) || in_ns.contains(&p.0)))
        .map(|p| (p.0, p.2.clone()))
        .collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].0;
        for p in procs.iter().filter(|p| p.1 == parent && p.0 != me) {
            if !out.iter().any(|o| o.0 == p.0) {
                out.push((p.0, p.2.clone()));
            }
        }
        i += 1;
    }
    out
}

/// The stack's running processes (server, proxy, client), for CPU accounting.
pub fn daemon_pids(dir: &Path) -> Vec<u32> {
    stack_pids(dir).into_iter().map(|(p, _)| p).collect()
}

/// Stop every process of the stack in `dir`, unbind its namespace and remove the
/// directory; idempotent. The caller has unmounted the client (its record's mount); the
/// export is its own record.
pub fn stop(dir: &Path) -> std::result::Result<(), String> {
    end_processes(dir, || stack_pids(dir))?;
    netns::remove(&netns::file(dir))?;
    remove_private_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_argv() {
        let d = dir_for("20260101T000000Z-1-0");
        assert_eq!(d, Path::new("/run/manyfiles/share-20260101T000000Z-1-0"));
        assert_eq!(fsname(&d), "manyfiles-share-20260101T000000Z-1-0");
        let (a, caches) = sshfs_argv(&d, 4000, Path::new("/mnt/y"));
        let t = a.join(" ");
        assert!(t.contains(&format!("-F {}/ssh_config -p 4000", d.display())), "{t}");
        assert!(t.ends_with("root@127.0.0.1:/ /mnt/y"), "the export is the server's root (chroot): {t}");
        assert!(!t.contains("allow_other"), "{t}");
        assert!(caches.contains("dcache_timeout=20"));
        let mut r = own_record();
        assert!(!is_client(&r));
        r.share_dir = Some(d.clone());
        assert!(!is_client(&r), "the export's record");
        r.kind = KindRecord::Share(super::super::kinds::share::ShareRecord { fuse_source: fsname(&d) });
        assert!(is_client(&r));
    }

    fn own_record() -> Record {
        super::super::registry::own_record("share:sftp@rtt=1ms")
    }
}
