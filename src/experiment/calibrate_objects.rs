//! What a calibration on an object store adds to the native ops' models: the time an
//! engine spends before its first request (`engine::object::connect` builds the client:
//! a runtime, two HTTP clients, the root certificates parsed), measured in this process,
//! which is the binary the check runs. It is CPU of this machine, not of the store, so it
//! is timed here without a store: the client is built for an address no request is sent
//! to, with keys that are no one's.

use crate::error::Result;
use crate::storage::object_client::ObjectClient;
use crate::storage::object_endpoint::{Keys, Reach, Secret};
use std::time::Instant;

/// How many times the client is built (the first, with cold caches, included: a check
/// command builds it once, in a fresh process).
pub const SETUP_RUNS: usize = 7;

/// Seconds to build an S3 client as the engines do, `runs` times.
pub fn client_setup_s(runs: usize) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let reach = Reach {
            endpoint: Some("http://127.0.0.1:9".into()),
            region: "us-east-1".into(),
            secret: Secret::Keys(Keys { access_key: "calibration".into(), secret: "calibration".into(), token: None }),
            netns: None,
            from_env: false,
            via: "the calibration's timing of a client".into(),
        };
        let t0 = Instant::now();
        let client = ObjectClient::reach(&reach, crate::storage::object_stack::BUCKET)?;
        out.push(t0.elapsed().as_secs_f64());
        drop(client);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_is_built_without_a_request() {
        let t = super::client_setup_s(2).unwrap();
        assert!(t.len() == 2 && t.iter().all(|s| *s > 0.0 && *s < 60.0), "{t:?}");
    }
}
