//! The object-store URLs the engines take: `s3://BUCKET[/PREFIX]` (Amazon S3's API) and
//! `azblob://CONTAINER[/PREFIX]` (Azure Blob Storage's), one type for both
//! ([`ObjectUrl`]: the provider, the bucket or container, the key prefix).

use crate::storage::object_stack::Provider;
use std::path::Path;

/// `s3://BUCKET/KEY…` or `azblob://CONTAINER/KEY…`: whose API, a bucket (a container)
/// and a key prefix (no leading `/`; empty: the whole bucket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    pub provider: Provider,
    /// The bucket (S3) or container (Azure Blob).
    pub bucket: String,
    /// As given, without a trailing `/`.
    pub prefix: String,
}

/// The URL schemes, one per provider (the provider's spec word: `s3`, `azblob`).
const PROVIDERS: [Provider; 2] = [Provider::S3, Provider::Azblob];

/// The provider whose scheme `text` starts with (`s3://…`, `azblob://…`), and the rest.
fn scheme_of(text: &str) -> Option<(Provider, &str)> {
    PROVIDERS.into_iter().find_map(|p| text.strip_prefix(p.name())?.strip_prefix("://").map(|rest| (p, rest)))
}

/// Is this argument an object-store URL (`s3://`, `azblob://`)?
pub fn is_url(p: &Path) -> bool {
    p.to_str().is_some_and(|s| scheme_of(s).is_some())
}

/// An S3 bucket name: 3 to 63 of a-z, 0-9, '-' and '.'.
fn ok_bucket(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
}

/// An Azure container name (Azure's rules): 3 to 63 of a-z, 0-9 and '-', starting and
/// ending with a letter or digit, no '--'.
fn ok_container(c: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (3..=63).contains(&c.len())
        && c.bytes().all(|b| alnum(b) || b == b'-')
        && c.bytes().next().is_some_and(alnum)
        && c.bytes().last().is_some_and(alnum)
        && !c.contains("--")
}

impl ObjectUrl {
    /// Parse `s3://BUCKET[/PREFIX]` or `azblob://CONTAINER[/PREFIX]`: the bucket or
    /// container by its provider's rules; a prefix's segments are never empty, `.` or
    /// `..`, nor hold control characters.
    pub fn parse(text: &str) -> std::result::Result<ObjectUrl, String> {
        let (provider, rest) = scheme_of(text).ok_or_else(|| format!("{text}: not an s3:// or azblob:// URL"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        match provider {
            Provider::S3 if !ok_bucket(bucket) => {
                return Err(format!("{text}: a bucket name is 3 to 63 of a-z, 0-9, '-' and '.'"));
            }
            Provider::Azblob if !ok_container(bucket) => {
                return Err(format!(
                    "{text}: a container name is 3 to 63 of a-z, 0-9 and '-', starts and ends with a letter or \
                     digit, and has no '--'"
                ));
            }
            _ => {}
        }
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        if !prefix.is_empty()
            && prefix.split('/').any(|s| s.is_empty() || s == "." || s == ".." || s.chars().any(char::is_control))
        {
            return Err(format!("{text}: a key prefix has no empty, '.' or '..' parts nor control characters"));
        }
        Ok(ObjectUrl { provider, bucket: bucket.to_string(), prefix: prefix.to_string() })
    }

    /// The prefix as a directory: `PREFIX/`, or empty for the whole bucket.
    pub fn dir_prefix(&self) -> String {
        if self.prefix.is_empty() { String::new() } else { format!("{}/", self.prefix) }
    }

    /// The key of `rel` (a `/`-separated path) below this prefix.
    pub fn key(&self, rel: &str) -> String {
        format!("{}{rel}", self.dir_prefix())
    }

    /// What the provider calls a bucket: `bucket`, `container`.
    pub fn bucket_word(&self) -> &'static str {
        match self.provider {
            Provider::S3 => "bucket",
            Provider::Azblob => "container",
        }
    }
}

impl std::fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}/{}", self.provider.name(), self.bucket, self.dir_prefix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_refuse_what_is_not_a_prefix() {
        let u = ObjectUrl::parse("s3://bucket-1/a/b/").unwrap();
        assert_eq!((u.bucket.as_str(), u.prefix.as_str(), u.dir_prefix()), ("bucket-1", "a/b", "a/b/".to_string()));
        assert_eq!(
            (u.provider, u.key("c/d"), u.to_string()),
            (Provider::S3, "a/b/c/d".into(), "s3://bucket-1/a/b/".into())
        );
        assert_eq!(ObjectUrl::parse("s3://bkt").unwrap().dir_prefix(), "");
        for bad in ["s3://", "s3://B/x", "s3://bk/a//b", "s3://bk/../x", "s3://bk/a/./b", "http://x/y", "s3:/bk/x"] {
            assert!(ObjectUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(is_url(Path::new("s3://b/x")) && !is_url(Path::new("./s3:/x")));
    }

    #[test]
    fn azblob_urls_follow_azure_container_rules() {
        let u = ObjectUrl::parse("azblob://my-container1/p/q/").unwrap();
        assert_eq!((u.provider, u.bucket.as_str(), u.prefix.as_str()), (Provider::Azblob, "my-container1", "p/q"));
        assert_eq!((u.to_string(), u.bucket_word()), ("azblob://my-container1/p/q/".into(), "container"));
        assert_eq!(ObjectUrl::parse("azblob://abc").unwrap().dir_prefix(), "");
        assert_eq!(
            ObjectUrl::parse(&"azblob://".replace("//", &format!("//{}", "a".repeat(63)))).unwrap().bucket.len(),
            63
        );
        for bad in [
            "azblob://",
            "azblob://ab",                           // too short
            &format!("azblob://{}", "a".repeat(64)), // too long
            "azblob://Abc",                          // upper case
            "azblob://a--b",                         // '--'
            "azblob://-ab",                          // starts with '-'
            "azblob://ab-",                          // ends with '-'
            "azblob://a.b.c",                        // '.': an S3 bucket's, not a container's
            "azblob://a_b",
            "azblob://abc/x//y",
            "azblob://abc/../y",
        ] {
            assert!(ObjectUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(
            is_url(Path::new("azblob://abc/x")) && !is_url(Path::new("azblob:/abc")) && !is_url(Path::new("az://abc"))
        );
    }
}
