//! Glob lists as the policy sections give them, made [`GlobList`]s: the globs a walk has
//! checked already, and the `tools` of a rule (of `outputs` or of a profile), which the
//! conversion checks.

use crate::ConfigErrorKind;
use crate::profile::GlobList;
use codemode_config::{JsonPath, Reader};

/// Globs each of which `codemode_config` has compiled already, compiled as one set: what can
/// still fail (the set as a whole) is an error at the list's `path`.
pub(super) fn glob_list(r: &mut Reader, globs: Vec<String>, path: &JsonPath) -> Option<GlobList> {
    match GlobList::new(globs) {
        Ok(list) => Some(list),
        Err(errors) => {
            for (_, msg) in errors {
                r.error(path, ConfigErrorKind::InvalidGlob, msg);
            }
            None
        }
    }
}

/// A rule's `tools` (read by `codemode_config`, a wrong element `None` where it stood):
/// required, at least one glob, each valid. `what` says what they select, for the error when
/// the key is missing; given with a wrong value, it is not also missing.
pub(super) fn rule_tools(
    r: &mut Reader,
    tools: Option<Vec<Option<String>>>,
    rule: &JsonPath,
    what: &str,
) -> Option<GlobList> {
    let at = rule.key("tools");
    match tools {
        Some(list) if list.is_empty() => {
            r.error(
                &at,
                ConfigErrorKind::InvalidValue,
                "needs at least one glob (e.g. \"server__*\")",
            );
            None
        }
        Some(list) => check_globs(r, list, &at),
        None if r.reported(&at) => None,
        None => {
            r.error(
                rule,
                ConfigErrorKind::MissingField,
                format!("missing `tools` ({what})"),
            );
            None
        }
    }
}

/// Globs read as strings, a wrong element `None` where it stood; each bad glob is an error at
/// its index.
fn check_globs(r: &mut Reader, list: Vec<Option<String>>, path: &JsonPath) -> Option<GlobList> {
    let (paths, globs): (Vec<JsonPath>, Vec<String>) = list
        .into_iter()
        .enumerate()
        .filter_map(|(i, glob)| Some((path.index(i), glob?)))
        .unzip();
    match GlobList::new(globs) {
        Ok(list) => Some(list),
        Err(errors) => {
            for (i, msg) in errors {
                r.error(&paths[i], ConfigErrorKind::InvalidGlob, msg);
            }
            None
        }
    }
}
