//! Class members: TypeScript-only modifiers, `?`/`!` markers, and members that are only types
//! (abstract, `declare`, overload signatures, index signatures).

use oxc_ast::ast::{
    AccessorProperty, MethodDefinition, MethodDefinitionType, PropertyDefinition,
    PropertyDefinitionType,
};
use oxc_ast_visit::walk;
use oxc_span::GetSpan;

use super::Stripper;

impl<'a> Stripper<'_> {
    pub(super) fn method(&mut self, m: &MethodDefinition<'a>) {
        if m.r#type == MethodDefinitionType::TSAbstractMethodDefinition || m.value.body.is_none() {
            self.blank_statement(m.span);
            return;
        }
        let key = m.key.span();
        self.blank_modifiers(m.span.start, key.start);
        if m.optional {
            let end = m
                .value
                .type_parameters
                .as_ref()
                .map(|t| t.span.start)
                .unwrap_or(m.value.params.span.start);
            self.blank_marker(key.end, end, b'?');
        }
        walk::walk_method_definition(self, m);
    }

    pub(super) fn property(&mut self, p: &PropertyDefinition<'a>) {
        if p.r#type == PropertyDefinitionType::TSAbstractPropertyDefinition || p.declare {
            self.blank_statement(p.span);
            return;
        }
        let key = p.key.span();
        self.blank_modifiers(p.span.start, key.start);
        if p.optional || p.definite {
            let end = p
                .type_annotation
                .as_ref()
                .map(|t| t.span.start)
                .or(p.value.as_ref().map(|v| v.span().start))
                .unwrap_or(p.span.end);
            self.blank_marker(key.end, end, if p.optional { b'?' } else { b'!' });
        }
        walk::walk_property_definition(self, p);
    }

    pub(super) fn accessor(&mut self, a: &AccessorProperty<'a>) {
        let key = a.key.span();
        self.blank_modifiers(a.span.start, key.start);
        if a.definite
            && let Some(t) = &a.type_annotation
        {
            self.blank_marker(key.end, t.span.start, b'!');
        }
        walk::walk_accessor_property(self, a);
    }
}
