//! A user's own Azure Blob store (`azblob://CONTAINER/PREFIX` without `--s3-via`), from
//! the environment as Azure's tools read it:
//!
//! - `AZURE_STORAGE_CONNECTION_STRING` (`AccountName=…;AccountKey=…;BlobEndpoint=…` or
//!   `DefaultEndpointsProtocol=…;EndpointSuffix=…`; a `SharedAccessSignature=…` with a
//!   `BlobEndpoint=…` in place of the key; `UseDevelopmentStorage=true`: Azurite's
//!   well-known development account on `http://127.0.0.1:10000`);
//! - else `AZURE_STORAGE_ACCOUNT` (object_store's `AZURE_STORAGE_ACCOUNT_NAME`) and
//!   `AZURE_STORAGE_KEY` (`AZURE_STORAGE_ACCOUNT_KEY`, `AZURE_STORAGE_ACCESS_KEY`), the
//!   endpoint from `AZURE_STORAGE_BLOB_ENDPOINT` (`AZURE_STORAGE_ENDPOINT`; none: Azure's,
//!   `https://ACCOUNT.blob.core.windows.net`);
//! - an account without a key: object_store's `MicrosoftAzureBuilder::from_env` finds the
//!   rest (`AZURE_STORAGE_SAS_KEY`, a service principal's `AZURE_CLIENT_ID` …).
//!
//! Keys are held in memory only ([`Hidden`]); a message names the variable, never a value.

use super::object_endpoint::{Hidden, Reach, Secret, check_endpoint, env_first};
use super::object_stack::Provider;
use crate::error::{Error, Result};

/// Azurite's development account (public: Azure's documentation prints it).
const DEV_ACCOUNT: &str = "devstoreaccount1";
const DEV_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const DEV_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

const CONNECTION: &str = "AZURE_STORAGE_CONNECTION_STRING";

/// The value of `name` in a connection string (`Name=value;…`; names in any case).
fn field(text: &str, name: &str) -> Option<String> {
    text.trim()
        .split(';')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Account, endpoint and secret of a connection string; errors name the variable only.
fn from_connection_string(text: &str) -> Result<(String, Option<String>, Secret)> {
    let bad = |why: &str| Error::bad(CONNECTION, why.to_string());
    if field(text, "UseDevelopmentStorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok((DEV_ACCOUNT.into(), Some(DEV_ENDPOINT.into()), Secret::AzureKey(Hidden(DEV_KEY.into()))));
    }
    let endpoint = field(text, "BlobEndpoint").map(|e| e.trim_end_matches('/').to_string()).or_else(|| {
        let suffix = field(text, "EndpointSuffix")?;
        let proto = field(text, "DefaultEndpointsProtocol").unwrap_or_else(|| "https".into());
        Some(format!("{proto}://{}.blob.{suffix}", field(text, "AccountName")?))
    });
    let account = field(text, "AccountName").or_else(|| account_of_endpoint(endpoint.as_deref()?));
    let account = account.ok_or_else(|| bad("no AccountName in it (nor an Azure BlobEndpoint naming one)"))?;
    let secret = match (field(text, "AccountKey"), field(text, "SharedAccessSignature")) {
        (Some(k), _) => Secret::AzureKey(Hidden(k)),
        (None, Some(sas)) => Secret::AzureSas(Hidden(sas)),
        (None, None) => return Err(bad("neither AccountKey nor SharedAccessSignature in it")),
    };
    Ok((account, endpoint, secret))
}

/// `https://ACCOUNT.blob.core.windows.net` → `ACCOUNT`.
fn account_of_endpoint(e: &str) -> Option<String> {
    let host = reqwest::Url::parse(e).ok()?.host_str()?.to_string();
    let (account, rest) = host.split_once('.')?;
    rest.starts_with("blob.").then(|| account.to_string())
}

/// A user's Azure Blob store, from the environment.
pub fn from_env() -> Result<Reach> {
    let (account, endpoint, secret, via) = match env_first(&[CONNECTION]) {
        Some(text) => {
            let (a, e, s) = from_connection_string(&text)?;
            (a, e, s, CONNECTION.to_string())
        }
        None => {
            let account = env_first(&["AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCOUNT_NAME"]).ok_or_else(|| {
                Error::bad(
                    "azblob://",
                    "no Azure storage account in the environment: set AZURE_STORAGE_CONNECTION_STRING, or \
                     AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (+ AZURE_STORAGE_BLOB_ENDPOINT), or (copy, sync, rm, \
                     scan, pack, predict) --store-via DIR on a `manyfiles mount azblob… DIR`",
                )
            })?;
            let key = env_first(&["AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"]);
            let endpoint = env_first(&["AZURE_STORAGE_BLOB_ENDPOINT", "AZURE_STORAGE_ENDPOINT"]);
            let secret = key.map_or(Secret::Ambient, |k| Secret::AzureKey(Hidden(k)));
            let via = "AZURE_STORAGE_ACCOUNT".to_string();
            (account, endpoint.map(|e| e.trim_end_matches('/').to_string()), secret, via)
        }
    };
    if let Some(e) = &endpoint {
        check_endpoint(e, "AZURE_STORAGE_BLOB_ENDPOINT")?;
    }
    if !account.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) || account.is_empty() {
        return Err(Error::bad("AZURE_STORAGE_ACCOUNT", "an account name is lowercase letters and digits"));
    }
    if let Secret::AzureKey(k) = &secret
        && object_store::azure::AzureAccessKey::try_new(&k.0).is_err()
    {
        return Err(Error::bad("AZURE_STORAGE_KEY", "the account key is not base64 (as Azure's keys are)"));
    }
    let via = match &endpoint {
        Some(e) => format!("endpoint {e} from the environment, {via}"),
        None => format!("Azure Blob account {account}, {via} from the environment"),
    };
    Ok(Reach {
        provider: Provider::Azblob,
        endpoint,
        region: String::new(),
        account: Some(account),
        secret,
        netns: None,
        from_env: true,
        via,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_give_account_endpoint_and_a_hidden_key() {
        let (a, e, s) = from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=acct1;AccountKey=c2VjcmV0a2V5;BlobEndpoint=http://127.0.0.1:10000/acct1/;",
        )
        .unwrap();
        assert_eq!((a.as_str(), e.as_deref()), ("acct1", Some("http://127.0.0.1:10000/acct1")));
        assert_eq!(format!("{s:?}"), "AzureKey(hidden)");
        let (a, e, _) = from_connection_string(
            "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=eA==;EndpointSuffix=core.windows.net",
        )
        .unwrap();
        assert_eq!((a.as_str(), e.as_deref()), ("prod", Some("https://prod.blob.core.windows.net")));
        let (a, _, s) = from_connection_string(
            "BlobEndpoint=https://sasacct.blob.core.windows.net;SharedAccessSignature=sv=1&sig=zz",
        )
        .unwrap();
        assert_eq!((a.as_str(), format!("{s:?}")), ("sasacct", "AzureSas(hidden)".into()));
        let (a, e, _) = from_connection_string("UseDevelopmentStorage=true").unwrap();
        assert_eq!((a.as_str(), e.as_deref()), (DEV_ACCOUNT, Some(DEV_ENDPOINT)));
        let e = from_connection_string("AccountName=x;AccountKey=;").unwrap_err().to_string();
        assert!(e.contains("neither AccountKey"), "{e}");
        let e = from_connection_string("AccountKey=topsecret").unwrap_err().to_string();
        assert!(e.contains("no AccountName") && !e.contains("topsecret"), "{e}");
    }
}
