//! An Azure Blob Storage target (`--fs azblob[@rtt=DUR][,bw=RATE][,on=FSSPEC]`): Azurite's
//! Blob service on loopback with one container, toxiproxy in front of it adding the round
//! trip, all in the stack's own network namespace, as an S3 store's
//! ([`super::object_stack`], whose spec, details and server start it shares):
//!
//! - The server is `azurite-blob` (Azurite, MIT, from the npm registry: `npm install -g
//!   azurite@3.35.0`; 3.36 and later ask for Node.js >= 21, Debian 12 has 18), storing in
//!   its data directory `EXPORT/azblob` on a managed file system of its own record (`on=`,
//!   tmpfs by default), as an unnamed uid of its own (no account, no groups, no new
//!   privileges) that can reach nothing above that directory.
//! - One storage account of the stack's own (`AZURITE_ACCOUNTS`, in the server's
//!   environment, never argv: Azurite's well-known development account is then off), with
//!   a fresh random key per stack, written with the endpoint as a connection string to
//!   `DIR/connection-string` (0600, in the stack's private directory); never printed,
//!   never in the results. The container is made once the server answers (and after every
//!   fresh export) by a Create Container request that `object_store` signs
//!   ([`super::object_client::create_container`]).
//! - No client is mounted: there is no FUSE route for Blob here (blobfuse2 is not
//!   packaged for Debian 12 nor on a registry this project reaches). The target's mount
//!   point is a small tmpfs of the stack's (source `manyfiles-object-<key>`) that holds
//!   only the run directories' markers: the tree's objects go to the container through
//!   the native ops (`obj:put` …), and file ops are refused on an azblob target.

use super::object_stack::{self, ObjectDetails, ObjectSpec};
use super::share_netns as netns;
use super::share_stack::{self as stack, PROXY, PROXY_SOURCE, accepts, write_private};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The server's program (Azurite's Blob service alone).
pub const SERVER: &str = "azurite-blob";
/// Where the server comes from, for the message when it is missing.
pub const SERVER_SOURCE: &str =
    "npm install -g azurite@3.35.0 (needs Node.js >= 18 and npm: the Debian packages nodejs and npm; .ci/run does it)";
/// The storage account a stack serves (its own: Azurite's development account is off);
/// its one container is named as an S3 store's bucket ([`object_stack::BUCKET`]).
pub const ACCOUNT: &str = "manyfiles";
/// The mount point's tmpfs (run directories' markers only).
const MOUNT_POINT_SIZE: &str = "size=4m,mode=0700";

/// Tools, the server and the proxy for blob store `label`: the first one missing, as one
/// line naming how to get it.
pub fn preflight(label: &str, search_path: &std::ffi::OsStr) -> std::result::Result<(), String> {
    if super::managed::find_in_path("setsid", search_path).is_none() {
        return Err(format!("{label}: setsid not found: install the Debian package util-linux"));
    }
    for (tool, how) in [(SERVER, SERVER_SOURCE), ("node", SERVER_SOURCE), (PROXY, PROXY_SOURCE)] {
        if super::managed::find_in_path(tool, search_path).is_none() {
            return Err(format!("{label}: {tool} not found: {how}"));
        }
    }
    Ok(())
}

/// `DefaultEndpointsProtocol=http;AccountName=…;AccountKey=…;BlobEndpoint=…;`: what
/// Azure's tools and SDKs take (reached from the stack's namespace).
fn connection_string(key: &str, endpoint: &str) -> String {
    format!("DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};BlobEndpoint={endpoint};\n")
}

/// Start the server and the proxy storing on `export` (the caller recorded `dir` first),
/// and make the container. On error, what was started is left for
/// [`super::share_stack::stop`].
pub fn start(dir: &Path, spec: &ObjectSpec, export: &super::managed::ManagedFs) -> Result<ObjectDetails> {
    let secrets = |proxy_port: u16| -> Result<PathBuf> {
        // 64 hex digits: valid base64 as Azure keys are (48 bytes once decoded), the same
        // bytes for Azurite and for object_store.
        let key = object_stack::random_hex(32, false)?;
        let credentials = dir.join("connection-string");
        let endpoint = format!("http://127.0.0.1:{proxy_port}/{ACCOUNT}");
        write_private(&credentials, &connection_string(&key, &endpoint))?;
        Ok(credentials)
    };
    let server = |account: netns::Account, port: u16| start_server(dir, account, port, export.mount_point());
    let d = object_stack::start_stack(dir, spec, export, secrets, server)?;
    super::object_client::create_container(&d)?;
    Ok(d)
}

/// Azurite's Blob service as `account`, in its data directory `EXPORT/azblob`, on `port`
/// in the namespace; its account and key (from `DIR/connection-string`) in its
/// environment. Ready when it answers.
fn start_server(dir: &Path, account: netns::Account, port: u16, export: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("connection-string"))
        .map_err(|e| Error::failed(format!("{}: {e}", dir.join("connection-string").display())))?;
    let key =
        field(&text, "AccountKey").ok_or_else(|| Error::failed("the blob store's connection string has no key"))?;
    let argv: Vec<String> = [
        SERVER,
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        &port.to_string(),
        "--location",
        ".",
        "--silent",
        "--skipApiVersionCheck",
        "--loose",
        "--disableProductStyleUrl",
        "--disableTelemetry",
        // Longer than the client's pooled connections live (reqwest: 90 s idle), so the
        // server never closes one the client is about to reuse (no retries here).
        "--blobKeepAliveTimeout",
        "120",
    ]
    .map(String::from)
    .into();
    let data = export.join("azblob");
    let log = dir.join("azurite.log");
    let accounts = format!("{ACCOUNT}:{key}");
    let home = data.display().to_string();
    object_stack::spawn_in_own_dir(
        dir,
        account,
        &data,
        &argv,
        &log,
        &[("AZURITE_ACCOUNTS", &accounts), ("HOME", &home)],
    )?;
    let ns = netns::file(dir);
    stack::wait_ready(dir, SERVER, &log, || accepts(&ns, port, None))?;
    Ok(argv)
}

/// The value of `name` in a connection string (`Name=value;…`).
pub fn field(text: &str, name: &str) -> Option<String> {
    text.trim().split(';').filter_map(|p| p.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
}

/// Mount the tmpfs that stands at the mount point (run directories' markers only).
pub fn mount_point_argv(source: &str, mp: &Path) -> Vec<String> {
    ["mount", "-t", "tmpfs", "-o", MOUNT_POINT_SIZE, source, &mp.display().to_string()].map(String::from).into()
}

/// Why file op `op` cannot run on blob store `label` (one line, for `--ops`).
pub fn no_files(op: &str, label: &str) -> String {
    format!(
        "{op} works on files: {label} has no file-system route (no FUSE client for Blob here: blobfuse2 is not \
         installable); time its native requests with --ops obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch"
    )
}

/// Stop the server, so its export can be made afresh.
pub fn stop_server(dir: &Path) -> std::result::Result<(), String> {
    super::daemon::end_processes(dir, || {
        stack::stack_pids(dir).into_iter().filter(|(_, argv)| argv.contains(SERVER)).collect::<Vec<_>>()
    })
}

/// Start the server again on a fresh export, as it was (port, uid, key), and make the
/// container again.
pub fn restart_server(dir: &Path, d: &ObjectDetails, export: &Path) -> Result<()> {
    start_server(dir, netns::Account { uid: d.server_uid, gid: d.server_uid }, d.server_port, export)?;
    super::object_client::create_container(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_hold_account_key_and_endpoint() {
        let c = connection_string("00ff", "http://127.0.0.1:4000/manyfiles");
        assert_eq!(field(&c, "AccountName").as_deref(), Some(ACCOUNT));
        assert_eq!(field(&c, "AccountKey").as_deref(), Some("00ff"));
        assert_eq!(field(&c, "BlobEndpoint").as_deref(), Some("http://127.0.0.1:4000/manyfiles"));
        assert_eq!(field(&c, "QueueEndpoint"), None);
        let a = mount_point_argv("manyfiles-object-k", Path::new("/mnt/y")).join(" ");
        assert_eq!(a, "mount -t tmpfs -o size=4m,mode=0700 manyfiles-object-k /mnt/y");
    }
}
