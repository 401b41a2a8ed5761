//! Calibrations on object stores beyond the managed one's (`experiment::calibrate`):
//!
//! - [`client_setup_s`]: the time an engine spends before its first request
//!   (`engine::object::connect` builds the client: a runtime, two HTTP clients, the root
//!   certificates parsed), measured in this process, which is the binary the check runs.
//!   It is CPU of this machine, not of the store, so it is timed without a store: the
//!   client is built for an address no request is sent to, with keys that are no one's.
//! - [`run_on_url`]: `predict --on s3://BUCKET/PREFIX` (`azblob://…`), a store the tool did not make
//!   (the environment's endpoint and keys, or a `manyfiles mount`'s stack): the native
//!   ops over the calibration's trees under a prefix of its own below PREFIX
//!   (`manyfiles-calibration-PID[-N]/`, used only when nothing is there yet), a fresh
//!   client per trial as a check command has, runs interleaved in blocks until the
//!   budget is spent (at least [`MIN_RUNS`], at most [`MAX_RUNS`] each), every object it
//!   put deleted by the trial and whatever a failure left under its prefix deleted at
//!   the end — only objects that carry its mark (`storage::object_owner`): no other key
//!   is touched. While it runs the prefix is claimed for `cleanup`
//!   (`user_store::Claim`), so a kill -9's leftovers can be deleted the same way.

use crate::engine::object::ObjectUrl;
use crate::error::{Error, Result};
use crate::measure::progress::Progress;
use crate::measure::provenance::Provenance;
use crate::results::{ExperimentInfo, Measurement, ResultSet, Until};
use crate::storage::TargetInfo;
use crate::storage::object_client::{ObjectClient, Retries};
use crate::storage::object_endpoint::{Hidden, Keys, Reach, Secret};
use crate::storage::object_owner::Owner;
use crate::storage::object_stack::Provider;
use crate::tree::Prepared;
use crate::tree::inventory::Inventory;
use std::time::Instant;

/// Runs of every tree at least (3 blocks of 2: an interval across blocks) and at most.
pub const MIN_RUNS: u32 = 6;
pub const MAX_RUNS: u32 = 12;

/// How many times the client is built (the first, with cold caches, included: a check
/// command builds it once, in a fresh process).
pub const SETUP_RUNS: usize = 7;

/// Seconds to build `provider`'s client (S3's, Azure Blob's) as the engines do, `runs`
/// times.
pub fn client_setup_s(provider: Provider, runs: usize) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (account, secret) = match provider {
            Provider::S3 => {
                let keys = Keys { access_key: "calibration".into(), secret: "calibration".into(), token: None };
                (None, Secret::Keys(keys))
            }
            // A key that is no one's, base64 as Azure's are.
            Provider::Azblob => (Some("calibration".into()), Secret::AzureKey(Hidden("Y2FsaWJyYXRpb24=".into()))),
        };
        let reach = Reach {
            provider,
            endpoint: Some("http://127.0.0.1:9".into()),
            region: "us-east-1".into(),
            account,
            secret,
            netns: None,
            from_env: false,
            via: "the calibration's timing of a client".into(),
        };
        let t0 = Instant::now();
        let client = ObjectClient::reach(&reach, crate::storage::object_stack::BUCKET, Retries::Never)?;
        out.push(t0.elapsed().as_secs_f64());
        drop(client);
    }
    Ok(out)
}

/// A calibration on a store at `url` (reached by `reach`): the native ops at `in_flight`
/// requests at once over trees drawn like `inv`, within `max_time_s`; the results with
/// their fitted models.
pub fn run_on_url(
    reach: &Reach,
    (url, via): (&ObjectUrl, Option<&std::path::Path>),
    inv: &Inventory,
    (limits, in_flight, max_time_s): (super::calibrate::Limits, usize, f64),
    (quiet, command_line): (bool, Vec<String>),
) -> Result<ResultSet> {
    crate::signals::install();
    let trees: Vec<Prepared> =
        super::calibrate::design(inv, limits, 1)?.iter().map(|t| Prepared::new(&t.spec, false)).collect();
    let (first, _) = crate::engine::object::connect(reach, url, Retries::Never)?;
    let prefix = own_prefix(&first, url)?;
    let claim = super::user_store::Claim::register(url, reach, &prefix, (None, via))?;
    let ops = crate::results::predict_objects::CALIBRATION_OPS.map(String::from).to_vec();
    let experiment = ExperimentInfo {
        name: "calibrate".into(),
        ops: ops.clone(),
        runs: MAX_RUNS,
        warmup: 0,
        threads: in_flight,
        portion_files: 10_000,
        order: "interleaved".into(),
        create: Default::default(),
        caches: crate::storage::cache::CacheMode::Warm,
        until: Until::Returned,
        adaptive: None,
        side_trees: Vec::new(),
    };
    let target = url_target(url);
    let mut rs = ResultSet::new(Provenance::collect(command_line), experiment, vec![target]);
    let progress = Progress::new(quiet);
    progress.start(Some(std::time::Duration::from_secs_f64(max_time_s)), Some(MAX_RUNS as u64 * trees.len() as u64));
    let (t0, mut order) = (Instant::now(), 0u64);
    let mut failed: Option<Error> = None;
    'runs: for run in 1..=MAX_RUNS {
        if run > MIN_RUNS && t0.elapsed().as_secs_f64() > max_time_s {
            break;
        }
        for (ti, tree) in trees.iter().enumerate() {
            progress.message(format!("calibration run {run} · tree {} of {}", ti + 1, trees.len()));
            let on = (reach, url, &claim.owner);
            let done = match trial(on, &format!("{prefix}t{ti}-r{run}/"), tree, (in_flight, &ops, &progress)) {
                Ok(done) => done,
                Err(e) => {
                    failed = Some(e);
                    break 'runs;
                }
            };
            for (op, result) in done {
                rs.measurements.push(measurement(&rs.targets[0].id, op, tree, (run, order), result));
                order += 1;
            }
            if crate::signals::pending() != 0 {
                break 'runs;
            }
        }
    }
    progress.finish();
    sweep(&first, url, &prefix, &claim.owner);
    drop(claim);
    if let Some(e) = failed {
        return Err(e);
    }
    if crate::signals::pending() != 0 {
        return Err(Error::Interrupted { signal: crate::signals::pending() });
    }
    rs.complete = true;
    rs.derive();
    Ok(rs)
}

/// `PREFIX/manyfiles-calibration-PID[-N]/`: the first with no key below it.
fn own_prefix(client: &ObjectClient, url: &ObjectUrl) -> Result<String> {
    let hidden = Progress::hidden();
    for n in 0..100u32 {
        let name = match n {
            0 => format!("manyfiles-calibration-{}", std::process::id()),
            n => format!("manyfiles-calibration-{}-{n}", std::process::id()),
        };
        let candidate = format!("{}/", url.key(&name));
        // Its raw name, no slash: a sibling `NAME-1/` would be listed too, and skipped.
        if crate::engine::object::list_all(client, candidate.trim_end_matches('/'), &hidden)?.is_empty() {
            return Ok(candidate);
        }
    }
    Err(Error::failed(format!("{url}: no free manyfiles-calibration-… prefix below it")))
}

/// One trial: a fresh client, the ops over `tree` under `prefix` (its objects deleted by
/// the last op); each phase priced at its provider's list prices.
fn trial(
    (reach, url, owner): (&Reach, &ObjectUrl, &Owner),
    prefix: &str,
    tree: &Prepared,
    (in_flight, ops, progress): (usize, &[String], &Progress),
) -> Result<Vec<(String, crate::measure::PhaseResult)>> {
    let client = ObjectClient::reach(reach, &url.bucket, Retries::Never)?;
    let run = crate::ops::object::Run::new(&client, prefix.to_string(), tree, in_flight, 10_000, progress)
        .owned_by(Some(owner));
    let (mut phases, failed) = crate::ops::object::run_trial(&run, ops, &mut |f| f());
    let prices = crate::results::prices::PriceTable::list_prices(url.provider);
    for (_, r) in &mut phases {
        r.cost = r.requests.as_ref().map(|q| prices.cost(q));
        if let Some(f) = r.failed.clone().or(r.first_error.clone()) {
            return Err(Error::failed(format!("calibration on {url}: {f}")));
        }
    }
    match failed {
        Some(why) => Err(Error::failed(format!("calibration on {url}: {why}"))),
        None => Ok(phases),
    }
}

/// Delete what the calibration wrote and left below its own prefix (a trial that
/// failed): only objects that carry its mark; say how many others remain.
fn sweep(client: &ObjectClient, url: &ObjectUrl, prefix: &str, owner: &Owner) {
    let at = format!("{}://{}/{prefix}", url.provider.name(), url.bucket);
    match crate::storage::object_owner::sweep_owned(client, prefix, Some(owner)) {
        Ok(s) if s.left > 0 => {
            eprintln!("manyfiles: {} object(s) remain below {at} that this run did not write; left as they are", s.left)
        }
        Ok(_) => {}
        Err(e) => eprintln!("manyfiles: could not delete all of the calibration's objects below {at}: {e}"),
    }
}

/// The store as the results name it: `s3://BUCKET/PREFIX/` (`azblob://…`; its kind the
/// provider's name). Block size 1, as the
/// ladder's bucket target (`user_store`): the result schema wants at least 1, and a saved
/// calibration with 0 would be refused when read back.
fn url_target(url: &ObjectUrl) -> TargetInfo {
    let (text, kind) = (url.to_string(), url.provider.name());
    TargetInfo { block_size: 1, ..TargetInfo::unmounted("t0", kind, &text, kind, &text) }
}

fn measurement(
    target: &str,
    op: String,
    tree: &Prepared,
    (run, order): (u32, u64),
    result: crate::measure::PhaseResult,
) -> Measurement {
    Measurement {
        experiment: "calibrate".into(),
        target: target.to_string(),
        op,
        tree: tree.spec.clone(),
        tree_key: tree.spec.key(),
        tree_files: tree.spec.files,
        tree_bytes: tree.total_bytes,
        tree_dirs: tree.plan.dirs.len() as u64 - 1,
        run,
        order,
        block: Some(crate::analysis::blocks::block_of_run(run)),
        at_s: None,
        result,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_is_built_without_a_request() {
        for p in [super::Provider::S3, super::Provider::Azblob] {
            let t = super::client_setup_s(p, 2).unwrap();
            assert!(t.len() == 2 && t.iter().all(|s| *s > 0.0 && *s < 60.0), "{p:?}: {t:?}");
        }
    }
}
