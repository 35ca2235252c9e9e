//! For tests: the answers given to a parked eval's asks (as the approval API records them),
//! taken by ask id when the eval resumes.

use std::sync::Mutex;

use codemode_runtime::BoxFuture;

use super::{Decided, Decisions};

/// Answers given while an eval was parked, by ask id.
#[derive(Default)]
pub(crate) struct Given(pub(crate) Mutex<Vec<(String, Decided)>>);

impl Decisions for Given {
    fn take(&self, id: &str) -> BoxFuture<'_, Option<Decided>> {
        let mut given = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let found = given
            .iter()
            .position(|(i, _)| i == id)
            .map(|i| given.remove(i).1);
        Box::pin(async move { found })
    }
}
