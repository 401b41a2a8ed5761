//! An object store as a target (`--fs s3[@rtt=DUR][,bw=RATE][,on=FSSPEC]`): an S3 server
//! on loopback with one bucket, toxiproxy in front of it adding the round trip, and the
//! bucket mounted through s3fs (the POSIX route: every file op becomes S3 requests) at
//! the target's mount point. Built like a share ([`super::share_stack`]), whose helpers
//! it uses:
//!
//! - The server is `manyfiles-s3server` (tools/s3server in the source: gofakes3, MIT, with
//!   its s3bolt back end), storing the bucket in one bbolt database file on an export: a
//!   managed file system of its own record (`on=`, tmpfs by default), as a share's.
//!   MinIO is not used (AGPL). It runs as an unnamed uid of its own (no account, no
//!   groups, no new privileges), started in its data directory, which it alone may
//!   enter: it cannot reach the state directory (0700) above it. Its access key comes in
//!   its environment, never argv; it refuses every request whose Authorization header
//!   does not name that key (gofakes3 authenticates nothing; the signature is not
//!   checked: what keeps others out is the namespace).
//! - The proxy is toxiproxy as a second unnamed uid (latency server to client, as a
//!   share's).
//! - The client is s3fs (Debian's s3fs) as root without `allow_other`, its caches given
//!   explicitly (s3fs 1.90's documented defaults) so the results record them.
//! - All three run in the stack's own network namespace ([`super::share_netns`]: loopback
//!   only; nothing on the host's addresses). The endpoint `http://127.0.0.1:PORT` is the
//!   proxy's there: root reaches it with `nsenter --net=DIR/netns`.
//! - Fresh random credentials per stack, in `DIR/credentials` (AWS shared-credentials
//!   format, for the user's own tools) and `DIR/passwd-s3fs` (s3fs's), both 0600 in the
//!   private directory `/run/manyfiles/object-<key>/` (0700); never printed, never in
//!   the results. The directory and the namespace are recorded before anything starts;
//!   [`super::share_stack::stop`] ends its processes (those in the namespace), unbinds
//!   the namespace and removes the directory, as for a share.

use super::daemon;
use super::share_netns::{self as netns, Account};
use super::share_stack::{self as stack, PROXY, PROXY_SOURCE, accepts, mkdir, tool_version, write_private};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The server's binary name (built from tools/s3server: not packaged anywhere).
pub const SERVER: &str = "manyfiles-s3server";
/// Where the server comes from, for the message when it is missing.
pub const SERVER_SOURCE: &str = "build it from manyfiles' source: `cd tools/s3server && go build -o /usr/local/bin/manyfiles-s3server .` (Go >= 1.24; .ci/run does it)";
/// The one bucket a stack serves.
pub const BUCKET: &str = "manyfiles";
/// The client's caches, as given (s3fs 1.90's documented defaults, written out).
const CLIENT_CACHES: &str = "max_stat_cache_size=100000,stat_cache_expire=900";

/// Whose API an object store speaks (and whose list prices its requests get).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Amazon S3's API (`s3`): manyfiles-s3server, s3fs.
    #[default]
    S3,
    /// Azure Blob Storage's API (`azblob`): Azurite ([`super::azblob_stack`]), no FUSE client.
    Azblob,
}

impl Provider {
    /// The spec's word: `s3`, `azblob`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::S3 => "s3",
            Provider::Azblob => "azblob",
        }
    }

    /// Keys a LIST page holds at most (S3's ListObjectsV2: 1,000; Blob's List Blobs: 5,000).
    pub fn list_page(self) -> usize {
        match self {
            Provider::S3 => 1000,
            Provider::Azblob => 5000,
        }
    }

    /// Keys one batched delete takes (S3's DeleteObjects: 1,000; object_store 0.14 sends
    /// Blob Batch requests of 256 deletes, Azure's most).
    pub fn delete_batch(self) -> usize {
        match self {
            Provider::S3 => 1000,
            Provider::Azblob => 256,
        }
    }
}

/// An object store target: the network in front of the server and where it stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSpec {
    /// Whose API (an older result, without it, is S3's).
    #[serde(default)]
    pub provider: Provider,
    /// Round trip added by the proxy, milliseconds (0: the proxy adds nothing).
    pub rtt_ms: u64,
    /// Bytes per second each direction at most; None: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw: Option<u64>,
    /// The file system the server's database file sits on.
    pub export: super::fsspec::FsSpec,
}

const FORM: &str = "s3|azblob[@rtt=DUR][,bw=RATE][,on=FSSPEC]";

/// The provider `word` names (`s3`, `azblob`; any case).
fn provider_named(word: &str) -> Option<Provider> {
    [Provider::S3, Provider::Azblob].into_iter().find(|p| word.trim().eq_ignore_ascii_case(p.name()))
}

/// Does `text` name an object store (`s3`, `azblob`, either with `@…`)?
pub fn names_object_store(text: &str) -> bool {
    provider_named(text.split_once('@').map_or(text, |(p, _)| p)).is_some()
}

impl ObjectSpec {
    /// The whole spec text: `s3`, `azblob@rtt=1ms`, `s3@rtt=1ms,bw=10MiB/s,on=ext4@disk`.
    pub fn parse(text: &str) -> std::result::Result<ObjectSpec, String> {
        let (provider, rest) = match text.trim().split_once('@') {
            None => (provider_named(text), ""),
            Some((p, rest)) => (provider_named(p), rest),
        };
        let Some(provider) = provider else { return Err(format!("'{text}': expected {FORM}")) };
        let (params, on) = match rest.find("on=").filter(|&i| i == 0 || rest[..i].ends_with(',')) {
            Some(i) => (rest[..i].trim_end_matches(','), Some(&rest[i + 3..])),
            None => (rest, None),
        };
        let (mut rtt, mut bw) = (None, None);
        for pair in params.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| format!("'{text}': '{pair}' is not key=value ({FORM})"))?;
            match k.trim().to_ascii_lowercase().as_str() {
                "rtt" if rtt.is_none() => {
                    rtt = Some(super::share::parse_rtt_ms(v).map_err(|e| format!("'{text}': {e}"))?)
                }
                "bw" if bw.is_none() => bw = Some(super::share::parse_bw(v).map_err(|e| format!("'{text}': {e}"))?),
                "rtt" | "bw" => return Err(format!("'{text}': '{}' given twice", k.trim())),
                other => return Err(format!("'{text}': unknown object store parameter '{other}'; known: rtt, bw, on")),
            }
        }
        let export = match on {
            None => super::fsspec::FsSpec::parse("tmpfs")?,
            Some(s) => super::fsspec::FsSpec::parse(s).map_err(|e| format!("'{text}': on=: {e}"))?,
        };
        if export.share().is_some() || export.device().is_some() || export.object().is_some() {
            return Err(format!(
                "'{text}': on= names the file system the server stores on: not a share, an object store nor a real device"
            ));
        }
        Ok(ObjectSpec { provider, rtt_ms: rtt.unwrap_or(0), bw, export })
    }

    /// Canonical text (round-trips through [`parse`](Self::parse)).
    pub fn text(&self) -> String {
        let mut s = format!("{}@rtt={}ms", self.provider.name(), self.rtt_ms);
        if let Some(b) = self.bw {
            s.push_str(&format!(",bw={}", super::share::fmt_bw(b)));
        }
        if self.export.label() != "tmpfs@ram" {
            s.push_str(",on=");
            s.push_str(&self.export.label());
        }
        s
    }

    /// toxiproxy's bandwidth toxic rate (units of 1,000 bytes per second, at least 1).
    pub fn toxic_rate(&self) -> Option<u64> {
        self.bw.map(|b| (b / 1000).max(1))
    }
}

/// Tools, the server, the proxy and FUSE for object store `label`: the first one
/// missing, as one line naming how to get it.
pub fn preflight(label: &str, search_path: &std::ffi::OsStr) -> std::result::Result<(), String> {
    let mut need: Vec<(&str, String)> = [("setsid", "util-linux"), ("fusermount3", "fuse3"), ("s3fs", "s3fs")]
        .into_iter()
        .map(|(t, p)| (t, format!("install the Debian package {p}")))
        .collect();
    need.push((SERVER, SERVER_SOURCE.to_string()));
    need.push((PROXY, PROXY_SOURCE.to_string()));
    for (tool, how) in need {
        if super::managed::find_in_path(tool, search_path).is_none() {
            return Err(format!("{label}: {tool} not found: {how}"));
        }
    }
    if !Path::new("/dev/fuse").exists() {
        return Err(format!("{label}: s3fs needs FUSE (no /dev/fuse); try `modprobe fuse`"));
    }
    Ok(())
}

/// What the results record about an object store, S3 or Azure Blob (no credentials:
/// where they are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectDetails {
    pub object: ObjectSpec,
    /// The endpoint (the proxy's, in the stack's network namespace; a blob store's ends
    /// with its account: `http://127.0.0.1:PORT/manyfiles`).
    pub endpoint: String,
    /// The bucket (a blob store's container).
    pub bucket: String,
    /// The bucket as the engines name it (`s3://manyfiles/`, `azblob://manyfiles/`).
    pub url: String,
    /// The access key and secret (AWS shared-credentials format), or a blob store's
    /// connection string (account and key); 0600, root's.
    pub credentials_file: PathBuf,
    /// The stack's network namespace (`nsenter --net=FILE` reaches the endpoint).
    pub netns: PathBuf,
    pub latency_toxic_ms: u64,
    pub latency_stream: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_toxic_rate: Option<u64>,
    pub server_port: u16,
    pub proxy_port: u16,
    pub proxy_api_port: u16,
    /// The server's unnamed uid (= gid): it is restarted as it after every fresh export.
    pub server_uid: u32,
    /// Who runs what and what reaches it.
    pub confinement: String,
    pub server_command: Vec<String>,
    pub server_version: String,
    pub proxy_command: Vec<String>,
    pub proxy_version: String,
    pub client_command: Vec<String>,
    pub client_version: String,
    /// The client's caches, as set.
    pub client_caches: String,
    /// How the file system the server stores on was made.
    pub export: Box<super::managed::ManagedDetails>,
}

impl ObjectDetails {
    /// How to reach the store (what `mount` prints): its endpoint, bucket or container,
    /// where its credentials are (never the credentials), a command to try.
    pub fn reach_lines(&self) -> String {
        let (ns, cred, end, url) = (self.netns.display(), self.credentials_file.display(), &self.endpoint, &self.url);
        match self.object.provider {
            Provider::S3 => format!(
                "object store: endpoint {end} · bucket {} · {url} (the S3 server is in the stack's own network \
                 namespace)\ncredentials (access key and secret, AWS shared-credentials format, root's): {cred}\n\
                 reach it as root, e.g.: nsenter --net={ns} env AWS_SHARED_CREDENTIALS_FILE={cred} \
                 aws --endpoint-url {end} s3 ls {url}\n",
                self.bucket
            ),
            Provider::Azblob => format!(
                "blob store: endpoint {end} · account {} · container {} · {url} (Azurite, in the stack's own \
                 network namespace; no file view at the mount point: blobfuse2 is not installable)\n\
                 connection string (account key, root's): {cred}\n\
                 reach it as root, e.g.: nsenter --net={ns} az storage blob list --container-name {} \
                 --connection-string \"$(cat {cred})\"\n",
                super::azblob_stack::ACCOUNT,
                self.bucket,
                self.bucket
            ),
        }
    }
}

/// The private directory of object store `key`.
pub fn dir_for(key: &str) -> PathBuf {
    super::registry::state_dir().join(format!("object-{key}"))
}

/// The source name of the client's mount (`manyfiles-object-<key>`), recorded so
/// cleanup unmounts only it.
pub fn fsname(dir: &Path) -> String {
    stack::fsname(dir)
}

/// The type /proc/self/mountinfo shows for the client's mount.
pub const MOUNT_TYPE: &str = "fuse.s3fs";

/// `n` random bytes as hex digits, upper case (access keys) or lower (secrets).
pub(super) fn random_hex(n: usize, upper: bool) -> Result<String> {
    let mut s = String::new();
    while s.len() < 2 * n {
        s.push_str(&stack::password()?);
    }
    s.truncate(2 * n);
    Ok(if upper { s.to_ascii_uppercase() } else { s })
}

/// Start the server and the proxy storing on `export` (the caller recorded `dir`
/// first). The client is mounted apart ([`mount_client`]). On error, what was started is
/// left for [`super::share_stack::stop`].
pub fn start(dir: &Path, spec: &ObjectSpec, export: &super::managed::ManagedFs, mp: &Path) -> Result<ObjectDetails> {
    let secrets = |_proxy_port: u16| -> Result<PathBuf> {
        let (access, secret) = (format!("MF{}", random_hex(9, true)?), random_hex(20, false)?);
        let credentials = dir.join("credentials");
        write_private(
            &credentials,
            &format!("[default]\naws_access_key_id = {access}\naws_secret_access_key = {secret}\n"),
        )?;
        write_private(&dir.join("passwd-s3fs"), &format!("{access}:{secret}\n"))?;
        Ok(credentials)
    };
    let server = |account: Account, port: u16| start_server(dir, account, port, export.mount_point());
    let mut d = start_stack(dir, spec, export, secrets, server)?;
    d.client_command = s3fs_argv(dir, &d.endpoint, mp);
    d.client_version = tool_version(&["s3fs", "--version"], "V1");
    d.client_caches =
        format!("s3fs 1.90's documented defaults, given explicitly: {CLIENT_CACHES}; no local file cache");
    Ok(d)
}

/// What every provider's stack does alike (the caller recorded `dir` first): its private
/// directory, its namespace and three ports there, its secrets (`secrets(proxy_port)`
/// writes them and returns the file's path: before the server, which reads them), the
/// server as an unnamed uid (`server(account, port)` starts it and returns its argv) and
/// the proxy as another. The client's fields are left for the caller (none on Blob).
pub(super) fn start_stack(
    dir: &Path,
    spec: &ObjectSpec,
    export: &super::managed::ManagedFs,
    secrets: impl FnOnce(u16) -> Result<PathBuf>,
    server: impl FnOnce(Account, u16) -> Result<Vec<String>>,
) -> Result<ObjectDetails> {
    mkdir(dir, 0o700)?;
    let ns = netns::file(dir);
    netns::create(&ns)?;
    let [server_port, proxy_port, api_port] = stack::free_ports(&ns, "object store")?;
    let credentials = secrets(proxy_port)?;
    let account = netns::free_account()?;
    let server_command = server(account, server_port)?;
    let proxy = netns::free_account_besides(&[account.uid])?;
    let proxy_command =
        stack::start_proxy(dir, (spec.rtt_ms, spec.toxic_rate()), proxy, server_port, proxy_port, api_port)?;
    let blob = spec.provider == Provider::Azblob;
    let (name, version, refused, client) = match blob {
        false => (
            SERVER,
            tool_version(&[SERVER, "-version"], "gofakes3"),
            "they name the stack's access key",
            "s3fs as root without allow_other",
        ),
        true => (
            super::azblob_stack::SERVER,
            format!("Azurite {}", tool_version(&[super::azblob_stack::SERVER, "--version"], ".")),
            "signed with the stack's own account key",
            "no client mounted (the mount point is a tmpfs holding the run directories' markers)",
        ),
    };
    let endpoint = match blob {
        false => format!("http://127.0.0.1:{proxy_port}"),
        true => format!("http://127.0.0.1:{proxy_port}/{}", super::azblob_stack::ACCOUNT),
    };
    Ok(ObjectDetails {
        object: spec.clone(),
        endpoint,
        bucket: BUCKET.into(),
        url: format!("{}://{BUCKET}/", spec.provider.name()),
        credentials_file: credentials,
        netns: ns,
        latency_toxic_ms: spec.rtt_ms,
        latency_stream: "downstream (server to client)".into(),
        bandwidth_toxic_rate: spec.toxic_rate(),
        server_port,
        proxy_port,
        proxy_api_port: api_port,
        server_uid: account.uid,
        confinement: format!(
            "own network namespace (loopback only, nothing on the host's addresses); {name} as uid {0} gid {0} \
             (no account, no groups, no new privileges; only its data directory on the export), requests \
             refused unless {refused}; toxiproxy as uid {1} gid {1}; {client}",
            account.uid, proxy.uid
        ),
        server_command,
        server_version: version,
        proxy_command,
        proxy_version: format!("{} (built from v2.9.0 by go install)", tool_version(&[PROXY, "-version"], "version")),
        client_command: Vec::new(),
        client_version: "none: no FUSE client for Blob here (blobfuse2 is not installable)".into(),
        client_caches: "none".into(),
        export: Box::new(export.details().clone()),
    })
}

/// The server as `account`, in its data directory `EXPORT/s3` (made here, its own,
/// 0700), listening on `port` in the namespace; its access key from `DIR/passwd-s3fs`.
fn start_server(dir: &Path, account: Account, port: u16, export: &Path) -> Result<Vec<String>> {
    let passwd = std::fs::read_to_string(dir.join("passwd-s3fs"))
        .map_err(|e| Error::failed(format!("{}: {e}", dir.join("passwd-s3fs").display())))?;
    let access = passwd.split(':').next().unwrap_or("").to_string();
    let argv: Vec<String> =
        [SERVER, "-listen", &format!("127.0.0.1:{port}"), "-dir", ".", "-bucket", BUCKET].map(String::from).into();
    let data = export.join("s3");
    spawn_in_own_dir(dir, account, &data, &argv, &dir.join("s3server.log"), &[("MANYFILES_S3_ACCESS_KEY", &access)])?;
    let ns = netns::file(dir);
    stack::wait_ready(dir, SERVER, &dir.join("s3server.log"), || accepts(&ns, port, None))?;
    Ok(argv)
}

/// Start a stack's server `argv` as `account` in the namespace, in its data directory
/// `data` (made when missing, given to the account, 0700: it can reach nothing else of
/// the export, nor the state directory above), `env` added (a key: never in argv).
/// Also Azurite's ([`super::azblob_stack`]).
pub(super) fn spawn_in_own_dir(
    dir: &Path,
    account: Account,
    data: &Path,
    argv: &[String],
    log: &Path,
    env: &[(&str, &str)],
) -> Result<()> {
    if !data.is_dir() {
        mkdir(data, 0o700)?;
    }
    rustix::fs::chown(data, Some(rustix::fs::Uid::from_raw(account.uid)), Some(rustix::fs::Gid::from_raw(account.gid)))
        .map_err(|e| Error::failed(format!("cannot give {} to the server's uid: {e}", data.display())))?;
    let ns_file = std::sync::Arc::new(netns::open(&netns::file(dir))?);
    let mut confine = netns::confine(ns_file, Some(account));
    // Entered as root before the uid is dropped: the state directory above is 0700.
    let cwd = std::ffi::CString::new(data.as_os_str().as_bytes())
        .map_err(|_| Error::failed(format!("{}: a NUL in the path", data.display())))?;
    let pre_exec = move || {
        // SAFETY: chdir on a NUL-terminated path owned by the closure; a syscall only.
        if unsafe { libc::chdir(cwd.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        confine()
    };
    daemon::spawn_detached_with(argv, log, env, pre_exec)
}

/// s3fs of the bucket through the proxy, in the foreground of its own session, path-style
/// requests, its caches as [`CLIENT_CACHES`]. No `allow_other`: only root reaches it.
fn s3fs_argv(dir: &Path, endpoint: &str, mp: &Path) -> Vec<String> {
    let opts = format!(
        "url={endpoint},use_path_request_style,passwd_file={},fsname={},subtype=s3fs,dbglevel=warn,{CLIENT_CACHES}",
        dir.join("passwd-s3fs").display(),
        fsname(dir)
    );
    ["s3fs", BUCKET, &mp.display().to_string(), "-f", "-o", &opts].map(String::from).into()
}

/// Mount the client (after [`start`], and again after every fresh export).
pub fn mount_client(dir: &Path, d: &ObjectDetails, mp: &Path) -> Result<()> {
    let log = dir.join("s3fs.out");
    stack::spawn(dir, &d.client_command, &log, None)?;
    let mounted = || super::registry::mounts_at(mp).last().is_some_and(|m| m.fs_type == MOUNT_TYPE);
    stack::wait_ready(dir, "s3fs", &log, mounted)
}

/// Stop the server (the client is unmounted), so its export can be made afresh.
pub fn stop_server(dir: &Path) -> std::result::Result<(), String> {
    daemon::end_processes(dir, || {
        stack::stack_pids(dir).into_iter().filter(|(_, argv)| argv.starts_with(SERVER)).collect::<Vec<_>>()
    })
}

/// Start the server again on a fresh export, as it was (port, uid, key).
pub fn restart_server(dir: &Path, d: &ObjectDetails, export: &Path) -> Result<()> {
    start_server(dir, Account { uid: d.server_uid, gid: d.server_uid }, d.server_port, export).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_round_trip() {
        let s = ObjectSpec::parse("s3").unwrap();
        assert_eq!((s.rtt_ms, s.bw, s.export.label().as_str()), (0, None, "tmpfs@ram"));
        assert_eq!(s.text(), "s3@rtt=0ms");
        let s = ObjectSpec::parse("s3@rtt=1ms").unwrap();
        assert_eq!((s.rtt_ms, s.text().as_str()), (1, "s3@rtt=1ms"));
        let s = ObjectSpec::parse("S3@rtt=2ms,bw=10MiB/s,on=ext4@disk").unwrap();
        assert_eq!(s.text(), "s3@rtt=2ms,bw=10MiB/s,on=ext4@disk:/var/tmp");
        assert_eq!(ObjectSpec::parse(&s.text()).unwrap(), s);
        assert_eq!(s.toxic_rate(), Some(10485));
        let s = ObjectSpec::parse("azblob@rtt=1ms,on=ext4@disk").unwrap();
        assert_eq!((s.provider, s.rtt_ms), (Provider::Azblob, 1));
        assert_eq!(s.text(), "azblob@rtt=1ms,on=ext4@disk:/var/tmp");
        assert_eq!(ObjectSpec::parse(&s.text()).unwrap(), s);
        assert_eq!(ObjectSpec::parse("AZBLOB").unwrap().text(), "azblob@rtt=0ms");
        assert!(names_object_store("azblob@rtt=1ms") && names_object_store("s3") && !names_object_store("azure"));
        // A result written before providers: S3.
        let mut v = serde_json::to_value(&s).unwrap();
        assert_eq!(v.as_object_mut().unwrap().remove("provider"), Some(serde_json::json!("azblob")));
        let old: ObjectSpec = serde_json::from_value(v).unwrap();
        assert_eq!(old.provider, Provider::S3);
        for (bad, says) in [
            ("azblob@rtt=1ms,rtt=2ms", "twice"),
            ("s3@rtt=1.5ms", "whole milliseconds"),
            ("s3@rtt=1ms,rtt=2ms", "twice"),
            ("s3@lat=1ms", "unknown object store parameter"),
            ("s3@rtt=1ms,on=share:sftp@rtt=1ms", "not a share"),
            ("s3x", "expected"),
        ] {
            let e = ObjectSpec::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn names_and_argv() {
        let d = dir_for("20260101T000000Z-1-0");
        assert_eq!(d, Path::new("/run/manyfiles/object-20260101T000000Z-1-0"));
        assert_eq!(fsname(&d), "manyfiles-object-20260101T000000Z-1-0");
        let a = s3fs_argv(&d, "http://127.0.0.1:4000", Path::new("/mnt/y"));
        let t = a.join(" ");
        assert!(t.starts_with("s3fs manyfiles /mnt/y -f -o url=http://127.0.0.1:4000,use_path_request_style"), "{t}");
        assert!(t.contains(&format!("passwd_file={}/passwd-s3fs", d.display())), "{t}");
        assert!(!t.contains("allow_other"), "{t}");
        let k = random_hex(9, true).unwrap();
        assert!(k.len() == 18 && k.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
        assert_ne!(random_hex(20, false).unwrap(), random_hex(20, false).unwrap());
    }
}
