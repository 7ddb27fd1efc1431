//! [`InMemoryProgress`]: a [`ProgressHandle`] over shared memory.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use provkit_machines::cloud::{MachineProgress, ProgressChange, ProgressError, ProgressHandle};

#[derive(Debug, Default)]
struct Stored {
    progress: MachineProgress,
    writes: u64,
}

/// A [`ProgressHandle`] keeping one machine's progress in memory. Clones share the record, so
/// a clone kept by a test plays the API server: it survives the "crash" of everything else
/// (see [`CrashSwitch`](super::CrashSwitch)).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_machines::cloud::ProgressHandle;
/// use provkit_testing::machines::InMemoryProgress;
/// let server = InMemoryProgress::default();
/// let handle = server.clone();
/// handle.set_instance_id("i-1").await.unwrap();
/// handle.set_instance_id("i-1").await.unwrap(); // no change: no write
/// assert_eq!(server.snapshot().instance_id.as_deref(), Some("i-1"));
/// assert_eq!(server.writes(), 1);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct InMemoryProgress {
    stored: Arc<Mutex<Stored>>,
}

impl InMemoryProgress {
    fn lock(&self) -> MutexGuard<'_, Stored> {
        self.stored.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The stored record.
    ///
    /// ```
    /// assert!(provkit_testing::machines::InMemoryProgress::default().snapshot().is_empty());
    /// ```
    #[must_use]
    pub fn snapshot(&self) -> MachineProgress {
        self.lock().progress.clone()
    }

    /// Number of writes that changed the record.
    ///
    /// ```
    /// assert_eq!(provkit_testing::machines::InMemoryProgress::default().writes(), 0);
    /// ```
    #[must_use]
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }
}

#[async_trait::async_trait]
impl ProgressHandle for InMemoryProgress {
    async fn load(&self) -> Result<MachineProgress, ProgressError> {
        Ok(self.snapshot())
    }

    async fn update<'c>(
        &self,
        change: ProgressChange<'c>,
    ) -> Result<MachineProgress, ProgressError> {
        let mut s = self.lock();
        let mut next = s.progress.clone();
        change.apply(&mut next);
        if next != s.progress {
            s.progress = next;
            s.writes += 1;
        }
        Ok(s.progress.clone())
    }
}
