//! The compiled schemas of a pool's tools ([`ToolSchemas`]), kept with the pool so that every
//! eval on the same [`UpstreamPool`](crate::UpstreamPool) shares one compilation per version of
//! its tool list. What is compiled (the upstream tools and the built-ins beside them) is the
//! caller's to say.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use codemode_policies::ToolSchemas;

/// The last compiled [`ToolSchemas`] and the tool-list version it was compiled for; the
/// schema problems already logged (each is logged once, not at every recompilation).
#[derive(Default)]
pub(crate) struct SchemaCache {
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    compiled: Option<(u64, Arc<ToolSchemas>)>,
    reported: HashSet<String>,
}

impl SchemaCache {
    /// The schemas compiled for tool-list `version`; compiled with `compile` (which also
    /// returns the schema problems found) when the cached ones are for another version. Each
    /// problem is logged once.
    pub(crate) fn get_or_compile(
        &self,
        version: u64,
        compile: impl FnOnce() -> (ToolSchemas, Vec<String>),
    ) -> Arc<ToolSchemas> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((v, schemas)) = &state.compiled
            && *v == version
        {
            return schemas.clone();
        }
        let (schemas, problems) = compile();
        for text in problems {
            if state.reported.insert(text.clone()) {
                tracing::warn!("{text}");
            }
        }
        let schemas = Arc::new(schemas);
        state.compiled = Some((version, schemas.clone()));
        schemas
    }
}

impl std::fmt::Debug for SchemaCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaCache").finish_non_exhaustive()
    }
}
