//! The native route to an object-store target (`--fs s3…`, `--fs azblob…`): an S3 or an
//! Azure Blob client on the `object_store` crate (request signing, paging and batching
//! are its, not ours) talking to the stack's endpoint ([`super::object_stack`],
//! [`super::azblob_stack`]) with the stack's own credentials. One client type for both
//! ([`ObjectClient`]: the store behind `dyn Store`), one counting HTTP layer.
//!
//! - The endpoint lives in the stack's network namespace only, so the client runs on a
//!   small tokio runtime of its own whose threads join that namespace before they run
//!   anything (`on_thread_start`); every request is spawned onto it, so the sockets are
//!   the namespace's and only this process reaches the endpoint. A thread that could not
//!   join fails every request (never a connection on the host's loopback).
//! - Credentials are read from the stack's 0600 file into the client and go nowhere
//!   else: not printed, not in errors (the client's `Debug` shows none), not in results.
//! - Every HTTP request the client sends is counted by kind ([`RequestCounts`]) in an
//!   HTTP-layer wrapper, so a LIST page (S3's `list-type=2`, Blob's `comp=list`), a
//!   DeleteObjects or Blob Batch request (`comp=batch`) and a retry each count as the one
//!   request the server saw (and a provider bills).
//! - Retries are a parameter of how a client is built ([`Retries`]): none for the
//!   measurements (ladder, ops, calibrate, pack: a failed request is an error of the
//!   phase, not a hidden second request), object_store's own retries with backoff for
//!   the engines (copy, sync, rm, scan: a store that drops a connection or answers 5xx
//!   or 429 now and then must not fail a run). Every attempt is counted, and the ones
//!   that failed (HTTP 5xx or 429, or no answer: a reset, a timeout, a body cut off)
//!   also as `failed`. With retries on, an answer other than an object's data (a LIST
//!   page, a DeleteObjects result) is read whole inside the counting layer, so a
//!   connection cut mid-body is a failed attempt object_store sends again (it retries a
//!   GET's body itself, but not a LIST page's).

use super::object_stack::{ObjectDetails, Provider};
use crate::error::{Error, Result};
use crate::measure::RequestCounts;
use object_store::aws::AmazonS3Builder;
use object_store::azure::{AzureAccessKey, AzureAuthorizer, AzureCredential, MicrosoftAzureBuilder};
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody, HttpResponse, HttpService,
};
use object_store::list::PaginatedListStore;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The runtime's worker threads: requests are I/O; the in-flight count is set per phase.
const WORKERS: usize = 2;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A request's longest (one PUT or GET of a whole ladder's single file included).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// How a client answers a failed request: the one parameter that tells an engine's
/// client from a measurement's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retries {
    /// Never sent again: the ladder, ops, calibrate and pack measure requests (their
    /// counts and times are the result), so a failed one is an error of the phase.
    Never,
    /// object_store's retries: what it deems retryable (HTTP 5xx, 429, 408; a connection
    /// refused, reset or cut off; a timeout of a safe or idempotent request) sent again
    /// up to [`ENGINE_RETRIES`] times, after 100 ms, then twice as long each time (with
    /// jitter), at most 4 s. The engines' (copy, sync, rm, scan).
    Backoff,
}

/// How many times an engine's client sends a failed request again.
pub const ENGINE_RETRIES: usize = 5;

impl Retries {
    /// object_store's retry settings for it.
    pub fn config(self) -> RetryConfig {
        match self {
            Retries::Never => RetryConfig { max_retries: 0, retry_timeout: REQUEST_TIMEOUT, ..Default::default() },
            Retries::Backoff => RetryConfig {
                max_retries: ENGINE_RETRIES,
                retry_timeout: REQUEST_TIMEOUT,
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(4),
                    base: 2.0,
                },
            },
        }
    }
}

/// What the native ops ask of a store: its requests and its LIST pages (S3's and
/// Azure Blob's clients both).
pub trait Store: ObjectStore + PaginatedListStore {}

impl<T: ObjectStore + PaginatedListStore> Store for T {}

/// A client for one object-store target, alive for one trial (a fresh export restarts
/// the server; a fresh client starts with no stale pooled connection).
pub struct ObjectClient {
    /// Whose API it speaks.
    pub provider: Provider,
    /// The bucket (container); batched deletes as DeleteObjects (Blob Batch).
    pub store: Arc<dyn Store>,
    /// The same bucket, a request per delete: on S3 with bulk delete off, one
    /// `DELETE /key`; on Blob (object_store 0.14 sends every delete in a Blob Batch
    /// request) the same store, a batch of one.
    pub single_delete: Arc<dyn Store>,
    counter: Arc<Counter>,
    /// The endpoint, for messages (no credentials in it).
    pub endpoint: String,
    /// Last: dropped after the clients whose connections it drives.
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for ObjectClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObjectClient({})", self.endpoint)
    }
}

/// Requests sent so far, by kind (atomics: requests run on every runtime thread).
#[derive(Debug, Default)]
struct Counter {
    put: AtomicU64,
    get: AtomicU64,
    head: AtomicU64,
    list: AtomicU64,
    delete: AtomicU64,
    delete_objects: AtomicU64,
    post: AtomicU64,
    other: AtomicU64,
    /// Attempts that failed (counted with their kind above too).
    failed: AtomicU64,
}

impl Counter {
    /// One request by its method and query: S3's (`list-type=2`: a LIST page; `POST
    /// ?delete`: DeleteObjects; any other POST: a multipart upload's start or completion)
    /// or Blob's (`comp=list`: a List Blobs page; `comp=batch`: a Blob Batch, counted with
    /// DeleteObjects; a multipart upload's Put Block and Put Block List are PUTs).
    fn count(&self, method: &str, query: &str) {
        let has = |k: &str| query.split('&').any(|p| p == k || p.starts_with(&format!("{k}=")));
        let comp = |v: &str| query.split('&').any(|p| p == format!("comp={v}"));
        let c = match method {
            "PUT" => &self.put,
            "GET" if has("list-type") || comp("list") => &self.list,
            "GET" => &self.get,
            "HEAD" => &self.head,
            "DELETE" => &self.delete,
            "POST" if has("delete") || comp("batch") => &self.delete_objects,
            "POST" => &self.post,
            _ => &self.other,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// One attempt failed.
    fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> RequestCounts {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RequestCounts {
            put: l(&self.put),
            get: l(&self.get),
            head: l(&self.head),
            list: l(&self.list),
            delete: l(&self.delete),
            delete_objects: l(&self.delete_objects),
            post: l(&self.post),
            other: l(&self.other),
            failed: l(&self.failed),
        }
    }
}

/// The HTTP client object_store uses, counting what it sends and what failed; refuses to
/// send anything when a runtime thread is outside the stack's namespace.
#[derive(Debug)]
struct Counting {
    inner: HttpClient,
    counter: Arc<Counter>,
    outside: Arc<AtomicBool>,
    /// Retries are on: read every answer but an object's data whole here (module docs).
    whole: bool,
}

/// Did the server answer as a failure object_store may send again (5xx, 429)?
fn failed_status(status: u16) -> bool {
    status >= 500 || status == 429
}

/// Is this request a batched delete (S3's DeleteObjects, `POST ?delete`; Blob Batch,
/// `POST ?comp=batch`)? Deleting the same keys again leaves the same end state (a key
/// already gone is no error on S3; the engines count Azure's `BlobNotFound` as gone),
/// though object_store does not mark the POST idempotent and so retries it after a
/// reset or a timeout only when told the request was not sent ([`resendable`]).
fn batch_delete(method: &str, query: &str) -> bool {
    method == "POST" && query.split('&').any(|p| p == "delete" || p.starts_with("delete=") || p == "comp=batch")
}

/// A batched delete's reset or timeout as an error object_store sends again (its
/// `Request` kind: "not sent"; see [`batch_delete`]); any other error as it is.
fn resendable(e: HttpError) -> HttpError {
    match e.kind() {
        HttpErrorKind::Interrupted | HttpErrorKind::Timeout => HttpError::new(HttpErrorKind::Request, e),
        _ => e,
    }
}

/// An S3 answer of 200 whose body says it failed (`InternalError`, `SlowDown`: a
/// CopyObject or DeleteObjects answered 200 and failed), as object_store tells them.
fn error_in_body(b: &[u8]) -> bool {
    let has = |w: &[u8]| b.windows(w.len()).any(|x| x == w);
    has(b"InternalError") || has(b"SlowDown")
}

/// Is this request a GET of an object's data (streamed to the caller, retried by
/// object_store mid-body itself), not a LIST page?
fn object_data(method: &str, query: &str) -> bool {
    method == "GET" && !query.split('&').any(|p| p.starts_with("list-type") || p == "comp=list")
}

#[async_trait::async_trait]
impl HttpService for Counting {
    async fn call(&self, req: HttpRequest) -> std::result::Result<HttpResponse, HttpError> {
        if self.outside.load(Ordering::SeqCst) {
            return Err(HttpError::new(
                HttpErrorKind::Connect,
                std::io::Error::other("a client thread is not in the object store's network namespace"),
            ));
        }
        // What the answer's handling needs from the request, taken before it is sent (no
        // copy of the method or query a request).
        let method = req.method().clone();
        let query = req.uri().query().unwrap_or("");
        self.counter.count(method.as_str(), query);
        let again = self.whole && batch_delete(method.as_str(), query);
        let whole = self.whole && !object_data(method.as_str(), query);
        let answer = match self.inner.execute(req).await {
            Ok(a) => a,
            Err(e) => {
                self.counter.failed();
                return Err(if again { resendable(e) } else { e });
            }
        };
        if failed_status(answer.status().as_u16()) {
            self.counter.failed();
        }
        let (parts, body) = answer.into_parts();
        if whole {
            // A body cut off is this attempt's failure, which object_store retries.
            return match body.bytes().await {
                Ok(b) => {
                    if matches!(method.as_str(), "PUT" | "POST") && parts.status.is_success() && error_in_body(&b) {
                        // S3's 200 that failed (object_store retries it as a 5xx).
                        self.counter.failed();
                    }
                    Ok(HttpResponse::from_parts(parts, b.into()))
                }
                Err(e) => {
                    self.counter.failed();
                    Err(if again { resendable(e) } else { e })
                }
            };
        }
        // An object's data, streamed: a body cut off counts as a failed attempt.
        let counter = self.counter.clone();
        let body = http_body_util::BodyExt::map_err(body, move |e| {
            counter.failed();
            e
        });
        Ok(HttpResponse::from_parts(parts, object_store::client::HttpResponseBody::new(body)))
    }
}

#[derive(Debug)]
struct CountingConnector {
    counter: Arc<Counter>,
    outside: Arc<AtomicBool>,
    retries: Retries,
}

impl HttpConnector for CountingConnector {
    /// reqwest of our own making: no proxy from the environment (the endpoint is on the
    /// namespace's loopback), HTTP/1.1 with kept-alive connections.
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| object_store::Error::Generic { store: "object store", source: Box::new(e) })?;
        let inner = HttpClient::new(client);
        let whole = self.retries != Retries::Never;
        Ok(HttpClient::new(Counting { inner, counter: self.counter.clone(), outside: self.outside.clone(), whole }))
    }
}

/// The access key and secret of a stack's credentials file (AWS shared-credentials
/// format, as [`super::object_stack::start`] writes it).
fn read_credentials(file: &Path) -> Result<(String, String)> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::failed(format!("cannot read the object store's credentials {}: {e}", file.display())))?;
    let value = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    match (value("aws_access_key_id"), value("aws_secret_access_key")) {
        (Some(k), Some(s)) => Ok((k, s)),
        _ => Err(Error::failed(format!("{}: no access key and secret in it", file.display()))),
    }
}

/// The account name and key of a blob store's connection-string file (as
/// [`super::azblob_stack::start`] writes it).
fn read_connection_string(file: &Path) -> Result<(String, String)> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        Error::failed(format!("cannot read the blob store's connection string {}: {e}", file.display()))
    })?;
    let value = |k: &str| super::azblob_stack::field(&text, k).filter(|v| !v.is_empty());
    match (value("AccountName"), value("AccountKey")) {
        (Some(a), Some(k)) => Ok((a, k)),
        _ => Err(Error::failed(format!("{}: no account name and key in it", file.display()))),
    }
}

/// The S3 bucket of `d` twice: DeleteObjects for batches, and bulk delete off.
fn s3_stores(d: &ObjectDetails, connector: impl Fn() -> CountingConnector) -> Result<(Arc<dyn Store>, Arc<dyn Store>)> {
    let (key, secret) = read_credentials(&d.credentials_file)?;
    let options = ClientOptions::new().with_allow_http(true);
    let builder = |single: bool| -> Result<Arc<dyn Store>> {
        let c = connector();
        let s3 = AmazonS3Builder::new()
            .with_endpoint(&d.endpoint)
            .with_bucket_name(&d.bucket)
            .with_region("us-east-1")
            .with_access_key_id(&key)
            .with_secret_access_key(&secret)
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false)
            .with_client_options(options.clone())
            .with_retry(c.retries.config())
            .with_disable_bulk_delete(single)
            .with_http_connector(c)
            .build()
            // object_store's builder errors name settings, never their values.
            .map_err(|e| Error::failed(format!("object store client for {}: {e}", d.endpoint)))?;
        Ok(Arc::new(s3))
    };
    Ok((builder(false)?, builder(true)?))
}

/// The blob container of `d`, through the endpoint (`http://HOST:PORT/ACCOUNT`, path
/// style, as Azurite serves it) with the stack's account key.
fn azure_store(d: &ObjectDetails, connector: CountingConnector) -> Result<object_store::azure::MicrosoftAzure> {
    let (account, key) = read_connection_string(&d.credentials_file)?;
    MicrosoftAzureBuilder::new()
        .with_endpoint(d.endpoint.clone())
        .with_account(account)
        .with_access_key(key)
        .with_container_name(&d.bucket)
        .with_allow_http(true)
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .with_retry(connector.retries.config())
        .with_http_connector(connector)
        .build()
        .map_err(|e| Error::failed(format!("blob store client for {}: {e}", d.endpoint)))
}

/// Make the container of the blob store `d` (Create Container, signed by object_store's
/// [`AzureAuthorizer`]: object_store has no call for it); one that exists is fine.
pub fn create_container(d: &ObjectDetails) -> Result<()> {
    let fail = |e: String| Error::failed(format!("cannot make the container {} at {}: {e}", d.bucket, d.endpoint));
    let (account, key) = read_connection_string(&d.credentials_file)?;
    let outside = Arc::new(AtomicBool::new(false));
    let runtime = runtime_in(&d.netns, outside.clone())?;
    let connector = CountingConnector { counter: Arc::new(Counter::default()), outside, retries: Retries::Never };
    let client = connector.connect(&ClientOptions::new().with_allow_http(true)).map_err(|e| fail(e.to_string()))?;
    let mut req = HttpRequest::new(HttpRequestBody::empty());
    *req.method_mut() = "PUT".parse().map_err(|_| fail("bad method".into()))?;
    *req.uri_mut() =
        format!("{}/{}?restype=container", d.endpoint, d.bucket).parse().map_err(|_| fail("bad URL".into()))?;
    req.headers_mut().insert("content-length", "0".parse().map_err(|_| fail("bad header".into()))?);
    let credential = AzureCredential::AccessKey(AzureAccessKey::try_new(&key).map_err(|e| fail(e.to_string()))?);
    AzureAuthorizer::new(&credential, &account).try_authorize(&mut req).map_err(|e| fail(e.to_string()))?;
    let answer = runtime.block_on(runtime.spawn(async move { client.execute(req).await }));
    let status = match answer {
        Ok(Ok(r)) => r.status().as_u16(),
        Ok(Err(e)) => return Err(fail(e.to_string())),
        Err(e) => return Err(fail(format!("request task: {e}"))),
    };
    // 201 Created; 409: it exists (ContainerAlreadyExists).
    match status {
        201 | 409 => Ok(()),
        s => Err(fail(format!("HTTP status {s}"))),
    }
}

/// A runtime whose threads join the network namespace at `ns` before they run a task;
/// `outside` is set if one could not.
fn runtime_in(ns: &Path, outside: Arc<AtomicBool>) -> Result<tokio::runtime::Runtime> {
    let file = Arc::new(super::share_netns::open(ns)?);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("manyfiles-obj")
        .enable_all()
        .on_thread_start(move || {
            // SAFETY: setns on an open nsfs fd; only the calling (new) thread moves.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                outside.store(true, Ordering::SeqCst);
            }
        })
        .build()
        .map_err(|e| Error::failed(format!("cannot start the object store client's runtime: {e}")))
}

impl ObjectClient {
    /// A client of the stack `d` describes (its provider, endpoint, bucket or container,
    /// credentials file and network namespace), retrying as `retries` says.
    pub fn connect(d: &ObjectDetails, retries: Retries) -> Result<ObjectClient> {
        let outside = Arc::new(AtomicBool::new(false));
        let runtime = runtime_in(&d.netns, outside.clone())?;
        let counter = Arc::new(Counter::default());
        let connector = || CountingConnector { counter: counter.clone(), outside: outside.clone(), retries };
        let provider = d.object.provider;
        let (store, single_delete) = match provider {
            Provider::S3 => s3_stores(d, connector)?,
            Provider::Azblob => {
                let store: Arc<dyn Store> = Arc::new(azure_store(d, connector())?);
                (store.clone(), store)
            }
        };
        if outside.load(Ordering::SeqCst) {
            return Err(Error::failed("the object store client could not join the stack's network namespace"));
        }
        Ok(ObjectClient { provider, runtime, store, single_delete, counter, endpoint: d.endpoint.clone() })
    }

    /// Requests sent so far, by kind; a phase's are the difference around it.
    pub fn requests(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    /// The runtime's handle: futures spawned on it run on the namespace's threads.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime.handle()
    }

    /// Run `f` to completion from this thread (its own bookkeeping); whatever it spawns
    /// on [`handle`](Self::handle) does the I/O in the namespace.
    pub fn block_on<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(f)
    }
}

/// A runtime for a client outside any stack: requests go out from this process's own
/// network namespace.
fn runtime_here() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("manyfiles-s3")
        .enable_all()
        .build()
        .map_err(|e| Error::failed(format!("cannot start the object store client's runtime: {e}")))
}

impl ObjectClient {
    /// A client of `bucket` (an Azure container) where `r` says (a user's endpoint from
    /// the environment, or a `manyfiles mount`'s stack, whose namespace its threads
    /// join), in `r.provider`'s API, counting requests as [`connect`](Self::connect)'s.
    /// No secret goes into a message. `retries`: the engines' [`Retries::Backoff`], the
    /// measurements' [`Retries::Never`].
    pub fn reach(r: &super::object_endpoint::Reach, bucket: &str, retries: Retries) -> Result<ObjectClient> {
        let outside = Arc::new(AtomicBool::new(false));
        let runtime = match &r.netns {
            Some(ns) => runtime_in(ns, outside.clone())?,
            None => runtime_here()?,
        };
        let counter = Arc::new(Counter::default());
        let connector = || CountingConnector { counter: counter.clone(), outside: outside.clone(), retries };
        let (store, single_delete, endpoint) = match r.provider {
            Provider::S3 => {
                let (store, single) = reach_s3(r, bucket, connector)?;
                (store, single, r.endpoint.clone().unwrap_or_else(|| format!("AWS S3 ({})", r.region)))
            }
            Provider::Azblob => {
                let (store, endpoint) = reach_azure(r, bucket, connector())?;
                let store: Arc<dyn Store> = Arc::new(store);
                (store.clone(), store, endpoint)
            }
        };
        if outside.load(Ordering::SeqCst) {
            return Err(Error::failed("the object store client could not join the stack's network namespace"));
        }
        Ok(ObjectClient { provider: r.provider, runtime, store, single_delete, counter, endpoint })
    }
}

/// The S3 bucket `r` names twice: DeleteObjects for batches, and bulk delete off.
fn reach_s3(
    r: &super::object_endpoint::Reach,
    bucket: &str,
    connector: impl Fn() -> CountingConnector,
) -> Result<(Arc<dyn Store>, Arc<dyn Store>)> {
    use super::object_endpoint::Secret;
    let keys = match &r.secret {
        Secret::StackFile(f) => Some((read_credentials(f)?, None)),
        Secret::Keys(k) => Some(((k.access_key.clone(), k.secret.clone()), k.token.clone())),
        Secret::Ambient => None,
        _ => return Err(Error::failed("an S3 store reached with Azure credentials")),
    };
    let http = r.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
    let builder = |single: bool| -> Result<Arc<dyn Store>> {
        let mut b = if r.from_env { AmazonS3Builder::from_env() } else { AmazonS3Builder::new() };
        b = b.with_bucket_name(bucket).with_region(&r.region);
        if let Some(e) = &r.endpoint {
            b = b.with_endpoint(e).with_virtual_hosted_style_request(false);
        }
        if let Some(((key, secret), token)) = &keys {
            b = b.with_access_key_id(key).with_secret_access_key(secret);
            if let Some(t) = token {
                b = b.with_token(t);
            }
        }
        let c = connector();
        let s3 = b
            .with_allow_http(http)
            .with_client_options(ClientOptions::new().with_allow_http(http))
            .with_retry(c.retries.config())
            .with_disable_bulk_delete(single)
            .with_http_connector(c)
            .build()
            .map_err(|e| Error::bad(format!("s3://{bucket}"), format!("object store client ({}): {e}", r.via)))?;
        Ok(Arc::new(s3))
    };
    Ok((builder(false)?, builder(true)?))
}

/// The Azure container `r` names (object_store's `MicrosoftAzureBuilder`: its signing,
/// paging and Blob Batch deletes), and its endpoint for messages.
fn reach_azure(
    r: &super::object_endpoint::Reach,
    container: &str,
    connector: CountingConnector,
) -> Result<(object_store::azure::MicrosoftAzure, String)> {
    use super::object_endpoint::Secret;
    use object_store::azure::AzureConfigKey;
    let mut b = if r.from_env { MicrosoftAzureBuilder::from_env() } else { MicrosoftAzureBuilder::new() };
    let account = match &r.secret {
        Secret::StackConnectionString(f) => {
            let (account, key) = read_connection_string(f)?;
            b = b.with_access_key(key);
            account
        }
        Secret::AzureKey(k) => {
            b = b.with_access_key(&k.0);
            r.account.clone().unwrap_or_default()
        }
        Secret::AzureSas(sas) => {
            b = b.with_config(AzureConfigKey::SasKey, &sas.0);
            r.account.clone().unwrap_or_default()
        }
        Secret::Ambient => r.account.clone().unwrap_or_default(),
        Secret::StackFile(_) | Secret::Keys(_) => {
            return Err(Error::failed("an Azure Blob store reached with S3 credentials"));
        }
    };
    let endpoint = r.endpoint.clone().unwrap_or_else(|| format!("https://{account}.blob.core.windows.net"));
    let http = endpoint.starts_with("http://");
    let store = b
        .with_account(&account)
        .with_endpoint(endpoint.clone())
        .with_container_name(container)
        .with_allow_http(http)
        .with_client_options(ClientOptions::new().with_allow_http(http))
        .with_retry(connector.retries.config())
        .with_http_connector(connector)
        .build()
        // object_store's builder errors name settings (and the endpoint), never a key.
        .map_err(|e| Error::bad(format!("azblob://{container}"), format!("blob store client ({}): {e}", r.via)))?;
    Ok((store, endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_kind() {
        let c = Counter::default();
        for (m, q) in [
            ("PUT", ""),
            ("PUT", ""),
            ("GET", ""),
            ("GET", "list-type=2&prefix=a%2F"),
            ("GET", "prefix=x&list-type=2&continuation-token=abc"),
            ("HEAD", ""),
            ("DELETE", ""),
            ("POST", "delete"),
            ("POST", "uploads"),
            ("POST", "uploadId=abc"),
            ("GET", "restype=container&comp=list&prefix=a%2F&maxresults=5000"),
            ("POST", "restype=container&comp=batch"),
            ("GET", "comp=tags"),
            ("OPTIONS", ""),
        ] {
            c.count(m, q);
        }
        let s = c.snapshot();
        let got = (s.put, s.get, s.list, s.head, s.delete, s.delete_objects, s.post, s.other);
        assert_eq!(got, (2, 2, 3, 1, 1, 2, 2, 1), "{s:?}");
        assert_eq!(s.total(), 14);
    }

    /// A server on loopback that answers every request as `answer` says (after reading
    /// its head), counting the requests it read.
    fn server(answer: &'static [u8]) -> (u16, Arc<AtomicU64>) {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(AtomicU64::new(0));
        let n = seen.clone();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && c.read(&mut b).is_ok_and(|k| k == 1) {
                    head.push(b[0]);
                }
                n.fetch_add(1, Ordering::SeqCst);
                let _ = c.write_all(answer);
            }
        });
        (port, seen)
    }

    /// One LIST page (`delete`: one DeleteObjects of one key) of a bucket on a server
    /// answering `answer`, by a client built with `retries`: the requests the server
    /// read, and the client's counts.
    fn attempts(answer: &'static [u8], retries: Retries, delete: bool) -> (u64, RequestCounts) {
        use super::super::object_endpoint::{Keys, Reach, Secret};
        use futures_util::StreamExt;
        let (port, seen) = server(answer);
        let reach = Reach {
            provider: Provider::S3,
            endpoint: Some(format!("http://127.0.0.1:{port}")),
            region: "us-east-1".into(),
            account: None,
            secret: Secret::Keys(Keys { access_key: "k".into(), secret: "s".into(), token: None }),
            netns: None,
            from_env: false,
            via: "a test".into(),
        };
        let client = ObjectClient::reach(&reach, "b", retries).unwrap();
        let store = client.store.clone();
        let failed = client.block_on(client.handle().spawn(async move {
            if delete {
                let keys = futures_util::stream::iter([Ok(object_store::path::Path::from("p/k"))]).boxed();
                store.delete_stream(keys).collect::<Vec<_>>().await.iter().any(|r| r.is_err())
            } else {
                let opts = object_store::list::PaginatedListOptions::default();
                store.list_paginated(Some("p/"), opts).await.is_err()
            }
        }));
        assert!(failed.unwrap(), "{} succeeded", String::from_utf8_lossy(answer));
        (seen.load(Ordering::SeqCst), client.requests())
    }

    #[test]
    fn a_measurements_client_sends_each_request_once_an_engines_retries() {
        assert_eq!(Retries::Never.config().max_retries, 0);
        assert_eq!(Retries::Backoff.config().max_retries, ENGINE_RETRIES);
        let busy: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        // An answer cut off mid-body (object_store itself retries no LIST body).
        let cut: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n<?xml";
        let gone: &[u8] = b"";
        // LIST pages; DeleteObjects, a POST object_store does not retry after a reset.
        for (answer, delete) in [(busy, false), (cut, false), (gone, false), (cut, true), (gone, true)] {
            let what = format!("{} (DeleteObjects {delete})", String::from_utf8_lossy(answer));
            let (seen, c) = attempts(answer, Retries::Never, delete);
            assert_eq!((seen, c.list + c.delete_objects, c.failed), (1, 1, 1), "{what}: {c:?}");
            let all = 1 + ENGINE_RETRIES as u64;
            let (seen, c) = attempts(answer, Retries::Backoff, delete);
            assert_eq!((seen, c.list + c.delete_objects, c.failed), (all, all, all), "{what}: {c:?}");
        }
        // S3's 200 that failed, which object_store sends again: each counted as failed.
        let internal: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 41\r\nConnection: close\r\n\r\n<Error><Code>InternalError</Code></Error>";
        let (seen, c) = attempts(internal, Retries::Backoff, true);
        let all = 1 + ENGINE_RETRIES as u64;
        assert_eq!((seen, c.delete_objects, c.failed), (all, all, all), "{c:?}");
    }

    #[test]
    fn credentials_are_read_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("credentials");
        std::fs::write(&f, "[default]\naws_access_key_id = MFABC\naws_secret_access_key = s3cr3tvalue\n").unwrap();
        assert_eq!(read_credentials(&f).unwrap(), ("MFABC".into(), "s3cr3tvalue".into()));
        std::fs::write(&f, "[default]\naws_access_key_id = MFABC\n").unwrap();
        let e = read_credentials(&f).unwrap_err().to_string();
        assert!(e.contains("no access key and secret") && !e.contains("MFABC"), "{e}");
        let c = dir.path().join("connection-string");
        std::fs::write(&c, "DefaultEndpointsProtocol=http;AccountName=manyfiles;AccountKey=00ff;BlobEndpoint=x;\n")
            .unwrap();
        assert_eq!(read_connection_string(&c).unwrap(), ("manyfiles".into(), "00ff".into()));
        std::fs::write(&c, "AccountName=manyfiles;AccountKey=;").unwrap();
        assert!(read_connection_string(&c).unwrap_err().to_string().contains("no account name and key"));
    }
}
