//! Where an object-store URL the engines are given (`s3://BUCKET/PREFIX`,
//! `azblob://CONTAINER/PREFIX`) points: a [`Reach`] (whose API, endpoint, region, where
//! the credentials come from, the network namespace to join), found one of two ways:
//!
//! - [`from_env`]: a user's own store. S3 as the AWS tools find it: `AWS_ENDPOINT_URL_S3` /
//!   `AWS_ENDPOINT_URL` (none: AWS itself), `AWS_REGION` / `AWS_DEFAULT_REGION`, keys from
//!   `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), else from the
//!   shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`)
//!   under `AWS_PROFILE` (else `default`), else whatever object_store finds itself
//!   (instance metadata, web identity). Azure Blob as Azure's tools find it
//!   ([`super::object_endpoint_azure`]): `AZURE_STORAGE_CONNECTION_STRING`, else
//!   `AZURE_STORAGE_ACCOUNT` + `AZURE_STORAGE_KEY` (+ `AZURE_STORAGE_BLOB_ENDPOINT`), and
//!   object_store's own `AZURE_STORAGE_*` names.
//! - [`from_mount`]: a stack `manyfiles mount s3… DIR` or `mount azblob… DIR` brought up:
//!   its record (found by where its mount is now, as `umount` finds it) names the stack's
//!   directory, which holds its credentials file (an S3 store's) or connection string (a
//!   blob store's) and network namespace; an S3 store's endpoint is the one its s3fs
//!   client was started with, a blob store's the one in its connection string.
//!
//! A secret is read into memory only: never printed (the types' `Debug` hides it), never
//! written, never in an error.

use super::object_stack::Provider;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Where the access key and secret come from.
#[derive(Clone)]
pub enum Secret {
    /// A stack's 0600 credentials file (AWS shared-credentials format, `[default]`).
    StackFile(PathBuf),
    /// A blob stack's 0600 connection string (account and key).
    StackConnectionString(PathBuf),
    /// Keys found in the environment or a shared credentials file.
    Keys(Keys),
    /// An Azure storage account's key (base64), from the environment.
    AzureKey(Hidden),
    /// An Azure shared access signature (`sv=…&sig=…`), from a connection string.
    AzureSas(Hidden),
    /// None found: object_store's own chain (instance metadata, web identity …).
    Ambient,
}

/// An access key, its secret and a session token.
#[derive(Clone)]
pub struct Keys {
    pub access_key: String,
    pub secret: String,
    pub token: Option<String>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(hidden)")
    }
}

/// A secret string whose `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Hidden(pub String);

impl std::fmt::Debug for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hidden")
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::StackFile(p) => write!(f, "StackFile({})", p.display()),
            Secret::StackConnectionString(p) => write!(f, "StackConnectionString({})", p.display()),
            Secret::Keys(_) => f.write_str("Keys(hidden)"),
            Secret::AzureKey(_) => f.write_str("AzureKey(hidden)"),
            Secret::AzureSas(_) => f.write_str("AzureSas(hidden)"),
            Secret::Ambient => f.write_str("Ambient"),
        }
    }
}

/// How to reach an object store's endpoint.
#[derive(Debug, Clone)]
pub struct Reach {
    /// Whose API: S3's or Azure Blob's.
    pub provider: Provider,
    /// `http(s)://HOST[:PORT]` (a blob store's may end with its account, path style:
    /// `http://127.0.0.1:10000/ACCOUNT`); None: AWS's own endpoint for the region, or
    /// Azure's for the account (`https://ACCOUNT.blob.core.windows.net`).
    pub endpoint: Option<String>,
    /// S3's region (unused on Azure Blob).
    pub region: String,
    /// Azure Blob's storage account (not a secret; None on S3, or for a stack's, whose
    /// connection string names it).
    pub account: Option<String>,
    pub secret: Secret,
    /// Join this network namespace for every request (a mount's stack).
    pub netns: Option<PathBuf>,
    /// Take the rest of object_store's `AWS_*` (`AZURE_*`) settings from the environment
    /// (a user's store; never a stack's, whose client must not pick up a user's token).
    pub from_env: bool,
    /// For messages: `the environment (AWS_ENDPOINT_URL …)` or `the mount at DIR`.
    pub via: String,
}

/// The first non-empty value of these environment variables.
pub(super) fn env_first(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty())).map(|v| v.trim().to_string())
}

/// An endpoint from the environment is an `http(s)://HOST[:PORT][/PATH]` URL without
/// user or password in it (those would be printed in messages and summaries; the
/// client would also panic on a URI it cannot send a request to).
pub(super) fn check_endpoint(e: &str, var: &str) -> Result<()> {
    let bad = |why: &str| Error::bad(var, format!("{why} (an http:// or https:// URL of the endpoint)"));
    let url = reqwest::Url::parse(e).map_err(|err| bad(&format!("not a URL: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(bad(&format!("{}: not an http(s) URL with a host", url.scheme())));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("it holds a user name or password: give the keys in their own variables"));
    }
    Ok(())
}

/// A user's own store of `provider`'s, from the environment (and on S3 the shared
/// credentials file).
pub fn from_env(provider: Provider) -> Result<Reach> {
    match provider {
        Provider::S3 => s3_from_env(),
        Provider::Azblob => super::object_endpoint_azure::from_env(),
    }
}

/// A user's own S3 store, from the environment and the shared credentials file.
fn s3_from_env() -> Result<Reach> {
    let endpoint = env_first(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]);
    let region = env_first(&["AWS_REGION", "AWS_DEFAULT_REGION"]).unwrap_or_else(|| "us-east-1".into());
    if let Some(e) = &endpoint {
        check_endpoint(e, "AWS_ENDPOINT_URL")?;
    }
    if region.is_empty() || !region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return Err(Error::bad("AWS_REGION", format!("{region:?} is not a region name (e.g. us-east-1)")));
    }
    let secret = match (env_first(&["AWS_ACCESS_KEY_ID"]), env_first(&["AWS_SECRET_ACCESS_KEY"])) {
        (Some(access_key), Some(secret)) => {
            Secret::Keys(Keys { access_key, secret, token: env_first(&["AWS_SESSION_TOKEN"]) })
        }
        _ => match shared_credentials_file() {
            Some(file) if file.exists() => {
                let profile = env_first(&["AWS_PROFILE", "AWS_DEFAULT_PROFILE"]).unwrap_or_else(|| "default".into());
                Secret::Keys(profile_keys(&file, &profile)?)
            }
            _ => Secret::Ambient,
        },
    };
    let via = match &endpoint {
        Some(e) => format!("endpoint {e} from the environment"),
        None => format!("AWS S3 in {region} (no AWS_ENDPOINT_URL)"),
    };
    Ok(Reach { provider: Provider::S3, endpoint, region, account: None, secret, netns: None, from_env: true, via })
}

/// `AWS_SHARED_CREDENTIALS_FILE`, else `$HOME/.aws/credentials`.
fn shared_credentials_file() -> Option<PathBuf> {
    if let Some(f) = env_first(&["AWS_SHARED_CREDENTIALS_FILE"]) {
        return Some(PathBuf::from(f));
    }
    env_first(&["HOME"]).map(|h| Path::new(&h).join(".aws/credentials"))
}

/// The keys of `[profile]` in a shared credentials file (INI: `key = value` lines under
/// `[name]` headers; `#` and `;` comments).
pub fn profile_keys(file: &Path, profile: &str) -> Result<Keys> {
    let text = crate::fs::input::read_bounded(file, 1 << 20)
        .map_err(|e| Error::bad("credentials", format!("cannot read the shared credentials file: {e}")))?;
    let (mut section, mut keys) = (String::new(), std::collections::HashMap::new());
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().trim_start_matches("profile ").trim().to_string();
            continue;
        }
        if section == profile
            && let Some((k, v)) = line.split_once('=')
        {
            keys.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let mut take = |k: &str| keys.remove(k).filter(|v| !v.is_empty());
    match (take("aws_access_key_id"), take("aws_secret_access_key")) {
        (Some(access_key), Some(secret)) => Ok(Keys { access_key, secret, token: take("aws_session_token") }),
        _ => Err(Error::bad(
            "credentials",
            format!("{}: profile [{profile}] has no aws_access_key_id and aws_secret_access_key", file.display()),
        )),
    }
}

/// The option that names a mount's directory (`--store-via` is its other name).
const FLAG: &str = "--s3-via";

/// The stack of the `manyfiles mount s3… DIR` or `mount azblob… DIR` mounted at `dir`
/// now, for URLs of `provider`'s: a stack of the other provider's is refused (exit 2).
pub fn from_mount(dir: &Path, provider: Provider) -> Result<Reach> {
    let abs = std::fs::canonicalize(dir).map_err(|e| Error::bad(FLAG, format!("{}: {e}", dir.display())))?;
    let (stack, serves) = stack_at(&abs).ok_or_else(|| {
        Error::bad(
            FLAG,
            format!(
                "{}: no `manyfiles mount {}…` is mounted there (see `manyfiles mount`)",
                abs.display(),
                provider.name()
            ),
        )
    })?;
    if serves != provider {
        return Err(Error::bad(
            FLAG,
            format!(
                "{}: the store mounted there is `{}` (its URLs are {}://…): {}:// URLs need a `manyfiles mount {}…`",
                abs.display(),
                serves.name(),
                serves.name(),
                provider.name(),
                provider.name()
            ),
        ));
    }
    let (endpoint, secret) = match provider {
        Provider::S3 => (stack_endpoint(&stack), Secret::StackFile(stack.join("credentials"))),
        Provider::Azblob => {
            (blob_stack_endpoint(&stack), Secret::StackConnectionString(stack.join("connection-string")))
        }
    };
    let endpoint = endpoint.ok_or_else(|| {
        Error::bad(FLAG, format!("{}: the object store is not running; its endpoint is unknown", abs.display()))
    })?;
    Ok(Reach {
        provider,
        endpoint: Some(endpoint),
        region: "us-east-1".into(),
        account: None,
        secret,
        netns: Some(super::share_netns::file(&stack)),
        from_env: false,
        via: format!("the object store mounted at {}", abs.display()),
    })
}

/// The stack directory and provider of the `manyfiles mount s3…`/`azblob…` mounted at
/// `abs` (canonical) now.
fn stack_at(abs: &Path) -> Option<(PathBuf, Provider)> {
    use super::kinds::KindRecord;
    let all = super::registry::mounts();
    super::user_mount::persistent_records()
        .into_iter()
        .filter_map(|(_, r)| match r.kind {
            KindRecord::Object(_) => Some((Provider::S3, r)),
            KindRecord::Azblob(_) => Some((Provider::Azblob, r)),
            _ => None,
        })
        .find(|(_, r)| super::user_mount::locate(r, &all).is_some_and(|m| m.mount_point == abs))
        .and_then(|(p, r)| Some((r.share_dir?, p)))
}

/// Is a `manyfiles mount` of an object store mounted at `dir` now? (Its store, and
/// every object in it, goes when it is taken down.)
pub fn store_mounted_at(dir: &Path) -> bool {
    std::fs::canonicalize(dir).ok().is_some_and(|abs| stack_at(&abs).is_some())
}

/// A blob stack's endpoint, from its connection string (`BlobEndpoint=…`), while its
/// server runs.
fn blob_stack_endpoint(stack: &Path) -> Option<String> {
    let running =
        super::share_stack::stack_pids(stack).into_iter().any(|(_, argv)| argv.contains(super::azblob_stack::SERVER));
    let text = std::fs::read_to_string(stack.join("connection-string")).ok()?;
    let e = super::azblob_stack::field(&text, "BlobEndpoint")?;
    (running && e.starts_with("http")).then_some(e)
}

/// The endpoint the stack's s3fs was started with (`-o url=ENDPOINT,…`).
fn stack_endpoint(stack: &Path) -> Option<String> {
    super::share_stack::stack_pids(stack).into_iter().find_map(|(_, argv)| {
        let first = argv.split_whitespace().next()?;
        (first.rsplit('/').next() == Some("s3fs")).then_some(())?;
        endpoint_in(&argv)
    })
}

/// `url=…` in an s3fs command line's options.
fn endpoint_in(argv: &str) -> Option<String> {
    argv.split([' ', ','])
        .find_map(|w| w.strip_prefix("url="))
        .map(str::to_string)
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_read_and_secrets_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("credentials");
        std::fs::write(
            &f,
            "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = defsecret\n\n\
             # a comment\n[work]\naws_access_key_id=AKWORK\naws_secret_access_key = worksecret\naws_session_token = tok\n",
        )
        .unwrap();
        let k = profile_keys(&f, "work").unwrap();
        assert_eq!(
            (k.access_key.as_str(), k.secret.as_str(), k.token.as_deref()),
            ("AKWORK", "worksecret", Some("tok"))
        );
        let d = profile_keys(&f, "default").unwrap();
        assert_eq!((d.access_key.as_str(), d.token.as_deref()), ("AKDEF", None));
        assert_eq!(format!("{d:?} {:?}", Secret::Keys(k)), "Keys(hidden) Keys(hidden)");
        let e = profile_keys(&f, "absent").unwrap_err().to_string();
        assert!(e.contains("[absent]") && !e.contains("secret ="), "{e}");
    }

    #[test]
    fn the_endpoint_is_found_in_s3fs_options() {
        let argv = "s3fs manyfiles /mnt/x -f -o url=http://127.0.0.1:40123,use_path_request_style,passwd_file=/run/p";
        assert_eq!(endpoint_in(argv).as_deref(), Some("http://127.0.0.1:40123"));
        assert_eq!(endpoint_in("s3fs manyfiles /mnt/x -f"), None);
    }
}
