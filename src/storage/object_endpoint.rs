//! Where an `s3://BUCKET/PREFIX` the engines are given points: a [`Reach`] (endpoint,
//! region, where the credentials come from, the network namespace to join), found one
//! of two ways:
//!
//! - [`from_env`]: a user's own store, as the AWS tools find it: `AWS_ENDPOINT_URL_S3` /
//!   `AWS_ENDPOINT_URL` (none: AWS itself), `AWS_REGION` / `AWS_DEFAULT_REGION`, keys from
//!   `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), else from the
//!   shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`)
//!   under `AWS_PROFILE` (else `default`), else whatever object_store finds itself
//!   (instance metadata, web identity).
//! - [`from_mount`]: a stack `manyfiles mount s3… DIR` brought up: its record (found by
//!   where its mount is now, as `umount` finds it) names the stack's directory, which
//!   holds its credentials file and network namespace; the endpoint is the one its s3fs
//!   client was started with.
//!
//! A secret is read into memory only: never printed (the types' `Debug` hides it), never
//! written, never in an error.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Where the access key and secret come from.
#[derive(Clone)]
pub enum Secret {
    /// A stack's 0600 credentials file (AWS shared-credentials format, `[default]`).
    StackFile(PathBuf),
    /// Keys found in the environment or a shared credentials file.
    Keys(Keys),
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

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::StackFile(p) => write!(f, "StackFile({})", p.display()),
            Secret::Keys(_) => f.write_str("Keys(hidden)"),
            Secret::Ambient => f.write_str("Ambient"),
        }
    }
}

/// How to reach an S3 endpoint.
#[derive(Debug, Clone)]
pub struct Reach {
    /// `http(s)://HOST[:PORT]`; None: AWS's own endpoint for the region.
    pub endpoint: Option<String>,
    pub region: String,
    pub secret: Secret,
    /// Join this network namespace for every request (a mount's stack).
    pub netns: Option<PathBuf>,
    /// Take the rest of object_store's `AWS_*` settings from the environment (a user's
    /// store; never a stack's, whose client must not pick up a user's token).
    pub from_env: bool,
    /// For messages: `the environment (AWS_ENDPOINT_URL …)` or `the mount at DIR`.
    pub via: String,
}

/// The first non-empty value of these environment variables.
fn env_first(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty())).map(|v| v.trim().to_string())
}

/// An endpoint from the environment is an `http(s)://HOST[:PORT][/PATH]` URL without
/// user or password in it (those would be printed in messages and summaries; the
/// client would also panic on a URI it cannot send a request to).
fn check_endpoint(e: &str) -> Result<()> {
    let bad =
        |why: &str| Error::bad("AWS_ENDPOINT_URL", format!("{why} (an http:// or https:// URL of the S3 endpoint)"));
    let url = reqwest::Url::parse(e).map_err(|err| bad(&format!("not a URL: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(bad(&format!("{}: not an http(s) URL with a host", url.scheme())));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("it holds a user name or password: give keys as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"));
    }
    Ok(())
}

/// A user's own store, from the environment and the shared credentials file.
pub fn from_env() -> Result<Reach> {
    let endpoint = env_first(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]);
    let region = env_first(&["AWS_REGION", "AWS_DEFAULT_REGION"]).unwrap_or_else(|| "us-east-1".into());
    if let Some(e) = &endpoint {
        check_endpoint(e)?;
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
    Ok(Reach { endpoint, region, secret, netns: None, from_env: true, via })
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

/// The stack of the `manyfiles mount s3… DIR` mounted at `dir` now.
pub fn from_mount(dir: &Path) -> Result<Reach> {
    const FLAG: &str = "--s3-via";
    let abs = std::fs::canonicalize(dir).map_err(|e| Error::bad(FLAG, format!("{}: {e}", dir.display())))?;
    let all = super::registry::mounts();
    let stack = super::user_mount::persistent_records()
        .into_iter()
        .filter(|(_, r)| matches!(r.kind, super::kinds::KindRecord::Object(_)))
        .find(|(_, r)| super::user_mount::locate(r, &all).is_some_and(|m| m.mount_point == abs))
        .and_then(|(_, r)| r.share_dir)
        .ok_or_else(|| {
            Error::bad(
                FLAG,
                format!("{}: no `manyfiles mount s3…` is mounted there (see `manyfiles mount`)", abs.display()),
            )
        })?;
    let endpoint = stack_endpoint(&stack).ok_or_else(|| {
        Error::bad(
            FLAG,
            format!("{}: the object store's client is not running; its endpoint is unknown", abs.display()),
        )
    })?;
    Ok(Reach {
        endpoint: Some(endpoint),
        region: "us-east-1".into(),
        secret: Secret::StackFile(stack.join("credentials")),
        netns: Some(super::share_netns::file(&stack)),
        from_env: false,
        via: format!("the object store mounted at {}", abs.display()),
    })
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
