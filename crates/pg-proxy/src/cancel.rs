//! Cancel requests. Each session gets its own BackendKeyData from the proxy: the backend's
//! process id (what `pg_backend_pid()` says, so logs and drivers agree) with a secret key of
//! the proxy's (random, as long as the backend's). A client's CancelRequest, sent on a new
//! connection, names that pair; the proxy finds the session, opens a new connection to the
//! backend (TLS as `--pg-backend-sslmode` says) and sends the backend's own pair there.
//! A wrong or unknown key is dropped without an answer, as PostgreSQL does.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use ring::rand::{SecureRandom, SystemRandom};

/// The backend's key of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendKey {
    /// The backend's process id.
    pub pid: u32,
    /// The backend's secret key.
    pub secret: Vec<u8>,
}

/// A session's two secrets: the proxy's (given to the client) and the backend's.
type Secrets = (Vec<u8>, Vec<u8>);

/// Every live session's keys, by backend process id (unique among one server's sessions).
pub struct Keys {
    map: Mutex<HashMap<u32, Secrets>>,
    rng: SystemRandom,
}

impl Default for Keys {
    fn default() -> Self {
        Keys { map: Mutex::default(), rng: SystemRandom::new() }
    }
}

/// Removes its session's keys when dropped (the session ended).
pub struct Registered {
    keys: Arc<Keys>,
    pid: u32,
    secret: Vec<u8>,
}

impl Registered {
    /// The secret key the client is given.
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut map = self.keys.map.lock();
        if map.get(&self.pid).is_some_and(|(mine, _)| *mine == self.secret) {
            map.remove(&self.pid);
        }
    }
}

impl Keys {
    /// Registers a session whose backend sent `backend`; the proxy's secret for it comes
    /// back inside the guard. `None` if the system's random source failed.
    pub fn register(keys: &Arc<Keys>, backend: BackendKey) -> Option<Registered> {
        let mut secret = vec![0u8; backend.secret.len()];
        keys.rng.fill(&mut secret).ok()?;
        keys.map.lock().insert(backend.pid, (secret.clone(), backend.secret));
        Some(Registered { keys: keys.clone(), pid: backend.pid, secret })
    }

    /// The backend key behind a client's cancel request, if the secret matches.
    pub fn lookup(&self, pid: u32, secret: &[u8]) -> Option<BackendKey> {
        let map = self.map.lock();
        let (mine, theirs) = map.get(&pid)?;
        // Compared in constant time: the secret is all that stops cancel spoofing.
        let same = mine.len() == secret.len() && mine.iter().zip(secret).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        same.then(|| BackendKey { pid, secret: theirs.clone() })
    }

    /// Sessions registered.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_lookup_and_forget() {
        let keys = Arc::new(Keys::default());
        let reg = Keys::register(&keys, BackendKey { pid: 42, secret: vec![1, 2, 3, 4] }).unwrap();
        assert_eq!(reg.secret().len(), 4);
        let found = keys.lookup(42, reg.secret()).unwrap();
        assert_eq!(found, BackendKey { pid: 42, secret: vec![1, 2, 3, 4] });
        // The backend's own secret is not the proxy's (it never reaches the client).
        let mut wrong = reg.secret().to_vec();
        wrong[0] ^= 1;
        assert_eq!(keys.lookup(42, &wrong), None);
        assert_eq!(keys.lookup(43, reg.secret()), None);
        drop(reg);
        assert!(keys.is_empty());
    }
}
