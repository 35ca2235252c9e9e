//! The policy sections read into plain typed values, for `codemode_policies` to convert into
//! its decision types (globs, JSON Pointers and what concerns several keys are checked there).
//! Each value is read through [`de::read`] into the schema's type, so the walk reports every
//! wrong value at its path, and the schema types stay this crate's.

mod evaluation;

pub use evaluation::{
    AccessRead, ApprovalDiffRead, ClassificationRead, EvaluationRead, ProfileRead, RiskPolicyRead,
    RuleRead, read_evaluation, read_profile,
};

use serde_json::Value;

use crate::de;
use crate::reader::{JsonPath, Reader};
use crate::schema::policies;
use crate::schema::values::Indexed;

/// One `outputs` rule as the file writes it, its values typed. A list holds `None` where an
/// element was wrong (its error recorded), so that each other element keeps its index; a value
/// that was wrong is `None` and [`Reader::reported`] at its path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputRuleRead {
    /// Where the rule is (`outputs[i]`).
    pub path: JsonPath,
    /// `tools`: the tool-name globs, unchecked.
    pub tools: Option<Vec<Option<String>>>,
    /// `mask`: JSON Pointers, unparsed.
    pub mask: Option<Vec<Option<String>>>,
    /// `redact`: JSON Pointers, unparsed.
    pub redact: Option<Vec<Option<String>>>,
    /// `allow`: JSON Pointers, unparsed.
    pub allow: Option<Vec<Option<String>>>,
    /// `strictSchema`.
    pub strict_schema: Option<bool>,
}

/// Reads one `outputs` rule, `v` at `path` (`outputs[i]`): `None` when it is no object (its
/// error recorded, as every wrong value's).
pub fn read_output_rule(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<OutputRuleRead> {
    let rule: policies::OutputRule = de::read(r, v, path)?;
    let list = |l: Option<Indexed<String>>| l.map(|l| l.0);
    Some(OutputRuleRead {
        path: path.clone(),
        tools: list(rule.tools),
        mask: list(rule.mask),
        redact: list(rule.redact),
        allow: list(rule.allow),
        strict_schema: rule.strict_schema,
    })
}
