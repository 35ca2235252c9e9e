//! [`ObservedTypes`]: what a profile's scripts have received from tools that declare no result
//! type, for `get_tools` and for the errors a script makes with such a result.

use std::sync::Arc;

use codemode_policies::{OutputPolicy, Profile, ResultObserver};
use codemode_upstream::UpstreamPool;
use codemode_upstream::catalog::ObservedType;
use serde_json::Value;

/// The result types one profile's scripts have seen, kept by the upstream pool (see
/// [`UpstreamPool::observe`]): as a [`ResultObserver`] of an eval it records what the script
/// received; [`of`](Self::of) reads them back.
///
/// A script's view of a tool's results is its profile and the `outputs` rules for the tool, so
/// observations are kept under both: a reload that changes what `outputs` removes starts the
/// tool's observations over instead of typing fields the script no longer receives.
#[derive(Debug, Clone)]
pub struct ObservedTypes {
    upstreams: UpstreamPool,
    /// The profile's name; empty without a profile.
    profile: String,
    outputs: Arc<OutputPolicy>,
}

impl ObservedTypes {
    /// The observations of scripts under `profile` (none: unrestricted scripts) whose results
    /// pass through `outputs`.
    pub fn new(
        upstreams: UpstreamPool,
        profile: Option<&Profile>,
        outputs: Arc<OutputPolicy>,
    ) -> Self {
        ObservedTypes {
            upstreams,
            profile: profile.map(|p| p.name().to_string()).unwrap_or_default(),
            outputs,
        }
    }

    /// The type observed for `tool`, if it declares none and has been called.
    pub fn of(&self, tool: &str) -> Option<ObservedType> {
        self.upstreams.observed_type(&self.view(tool), tool)
    }

    /// Under what the observations of `tool` are kept: the profile and the rules' digest.
    fn view(&self, tool: &str) -> String {
        format!("{}\0{:016x}", self.profile, self.outputs.fingerprint(tool))
    }

    /// The type of `tool`'s results on one line (`{ content: string }`): the one it declares,
    /// else the one observed.
    pub fn shape(&self, tool: &str) -> Option<String> {
        self.upstreams.result_shape(&self.view(tool), tool)
    }
}

impl ResultObserver for ObservedTypes {
    fn observe(&self, tool: &str, value: &Value) {
        self.upstreams.observe(&self.view(tool), tool, value);
    }
}
