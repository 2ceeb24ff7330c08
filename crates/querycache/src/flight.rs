//! Singleflight: identical concurrent misses share one backend query.

use std::sync::Arc;

use tokio::sync::watch;

/// The outcome of a leader's query: the reply to replay, or None (go to the backend).
pub(crate) type Outcome = Option<Arc<[u8]>>;

/// One in-flight miss.
pub(crate) struct Flight {
    pub key: Box<[u8]>,
    /// Table versions (and the global epoch) when the leader started.
    pub versions: Vec<u64>,
    pub tx: watch::Sender<Option<Outcome>>,
}

impl Flight {
    pub fn new(key: &[u8], versions: Vec<u64>) -> Flight {
        Flight { key: key.into(), versions, tx: watch::channel(None).0 }
    }
}

/// A follower of an identical in-flight miss.
pub struct Waiter {
    pub(crate) rx: watch::Receiver<Option<Outcome>>,
}

impl Waiter {
    /// Wait for the leader: its reply bytes (replay them verbatim), or None when the
    /// leader's reply was not cacheable or the leader went away (query the backend).
    pub async fn wait(mut self) -> Option<Arc<[u8]>> {
        match self.rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().flatten(),
            Err(_) => None,
        }
    }
}
