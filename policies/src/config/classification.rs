//! `evaluation.classification` and `evaluation.localAllowDestructive`: the tools' classes
//! ([`Classification`]).

use serde_json::Value;

use super::evaluation::read_globs;
use crate::profile::GlobList;
use crate::{Class, Classification};
use codemode_config::{JsonPath, Reader};

/// Reads `classification` (`{"read"?: [globs], "write"?: [globs], "destructive"?: [globs]}`;
/// another key, such as a misspelt class, is an unknown-key error naming the three) and
/// `localAllowDestructive` (a boolean, default `true`) of the `evaluation` object at `path`.
pub(crate) fn read_classification(
    r: &mut Reader,
    classes: Option<&Value>,
    local: Option<&Value>,
    path: &JsonPath,
) -> Classification {
    let local_allow = local
        .and_then(|v| r.bool(v, &path.key("localAllowDestructive")))
        .unwrap_or(true);
    let mut globs: [GlobList; 3] = Default::default();
    if let Some(v) = classes {
        let cpath = path.key("classification");
        let keys = codemode_config::policy_keys::classification();
        if let Some(map) = r.object(v, &cpath, keys) {
            for class in Class::ALL {
                if let Some(v) = map.get(class.as_str())
                    && let Some(list) = read_globs(r, v, &cpath.key(class.as_str()))
                {
                    globs[class as usize] = list;
                }
            }
        }
    }
    Classification::new(globs, local_allow)
}
