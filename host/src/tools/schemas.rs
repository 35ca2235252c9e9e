//! The compiled schemas of the tools scripts can call ([`ToolSchemas`]): the built-ins and the
//! upstream tools, compiled once per version of the tool list and shared by every eval on the
//! same [`UpstreamPool`] ([`UpstreamPool::compiled_schemas`]).

use std::collections::HashMap;
use std::sync::Arc;

use codemode_policies::{Class, SchemaSource, ToolSchemaSpec, ToolSchemas};
use codemode_upstream::UpstreamPool;
use codemode_upstream::catalog::ToolInfo;

use super::catalog;

/// The [`SchemaSource`] of a governed eval: the schemas of [`catalog`] (built-ins and
/// upstream tools) for the pool's current tool list.
pub struct CatalogSchemas {
    upstreams: UpstreamPool,
}

impl CatalogSchemas {
    /// The schemas of the tools of `upstreams` (and the built-ins).
    pub fn new(upstreams: UpstreamPool) -> Self {
        CatalogSchemas { upstreams }
    }
}

impl SchemaSource for CatalogSchemas {
    fn schemas(&self) -> Arc<ToolSchemas> {
        self.upstreams.compiled_schemas(|| {
            let tools = catalog(&self.upstreams);
            let annotated = annotated_classes(&self.upstreams);
            let (schemas, problems) = ToolSchemas::compile(tools.iter().map(|t| {
                ToolSchemaSpec {
                    name: &t.name,
                    input_schema: &t.input_schema,
                    output_schema: t.output_schema.as_ref(),
                    signature: ToolInfo::declarations(std::slice::from_ref(t))
                        .trim_end()
                        .to_string(),
                    annotated: annotated.get(&t.name).copied(),
                }
            }));
            (schemas, problems.iter().map(ToString::to_string).collect())
        })
    }
}

/// The class each tool's annotations say: the upstreams' tools that carry annotations, and
/// the built-ins that only read (discovery and `read_resource`). Command tools and
/// `hitl_request` carry none: they are write unless the config classifies them.
fn annotated_classes(upstreams: &UpstreamPool) -> HashMap<String, Class> {
    let mut out: HashMap<String, Class> = [
        super::SEARCH_TOOLS,
        super::GET_TOOLS,
        super::read_resource::TOOL_NAME,
    ]
    .into_iter()
    .map(|name| (name.to_string(), Class::Read))
    .collect();
    for (name, tool) in upstreams.tools() {
        if let Some(a) = &tool.annotations {
            out.insert(
                name,
                Class::from_annotations(a.read_only_hint, a.destructive_hint),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The built-ins' own schemas compile and are enforced.
    #[test]
    fn builtins_are_checked() {
        let schemas = CatalogSchemas::new(UpstreamPool::new()).schemas();
        for name in [
            super::super::SEARCH_TOOLS,
            super::super::GET_TOOLS,
            super::super::hitl::TOOL_NAME,
        ] {
            assert!(schemas.checks_arguments_of(name), "{name}");
        }
        let invalid = schemas
            .check_arguments("search_tools", &json!({"query": 3}))
            .unwrap_err();
        assert_eq!(invalid.errors[0].path, "/query");
        assert_eq!(invalid.errors[0].message, "expected string, got number (3)");
        assert!(
            invalid.signature.contains("search_tools(args: {"),
            "{}",
            invalid.signature
        );
        // Discovery only reads; `hitl_request` (like a command tool) has no annotations: write
        // unless the config classifies it.
        assert_eq!(schemas.annotated_class("search_tools"), Some(Class::Read));
        assert_eq!(schemas.annotated_class("read_resource"), Some(Class::Read));
        assert_eq!(schemas.annotated_class("hitl_request"), None);
        // Compiled once per tool-list version: the same `Arc` until the list changes.
        let source = CatalogSchemas::new(UpstreamPool::new());
        assert!(Arc::ptr_eq(&source.schemas(), &source.schemas()));
    }
}
