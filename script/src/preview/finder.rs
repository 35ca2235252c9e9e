//! The AST visitor behind [`super::extract_tool_calls`].

use std::cell::Cell;
use std::collections::HashMap;

use oxc_ast::ast::{
    BindingPattern, CallExpression, ChainElement, ComputedMemberExpression, Expression, Function,
    FunctionType, IdentifierReference, StaticMemberExpression, VariableDeclarator,
};
use oxc_ast_visit::{Visit, walk};
use oxc_syntax::scope::{ScopeFlags, ScopeId};

/// A call site, before positions are turned into lines and columns.
pub(crate) struct Hit {
    /// `None`: dynamic.
    pub(crate) tool: Option<String>,
    pub(crate) offset: u32,
}

/// What a name refers to, as far as we can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    /// The `codemode` object itself (the global, or an alias of it).
    Object,
    /// A tool function: `const { x } = codemode` or `const f = codemode.x`.
    Tool(String),
    /// Something else (shadows outer bindings of the same name).
    Other,
}

const GLOBAL: &str = "codemode";

/// Globals that run code from a string: the calls that code makes cannot be seen, so every
/// use of them is a dynamic entry.
const EVALUATORS: [&str; 2] = ["eval", "Function"];

/// Names of the global object, through which `codemode` is reachable under a computed name
/// (`globalThis["code" + "mode"]`).
const GLOBAL_OBJECTS: [&str; 4] = ["globalThis", "self", "window", "global"];

pub(crate) struct Finder {
    pub(crate) hits: Vec<Hit>,
    /// Innermost last. Names not bound anywhere resolve to the globals (`codemode` → Object).
    scopes: Vec<HashMap<String, Binding>>,
}

impl Default for Finder {
    fn default() -> Self {
        Finder {
            hits: Vec::new(),
            scopes: vec![HashMap::new()],
        }
    }
}

impl Finder {
    fn resolve(&self, name: &str) -> Option<&Binding> {
        for scope in self.scopes.iter().rev() {
            if let Some(b) = scope.get(name) {
                return Some(b);
            }
        }
        (name == GLOBAL).then_some(&Binding::Object)
    }

    fn bind(&mut self, name: &str, binding: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), binding);
        }
    }

    fn push(&mut self, tool: Option<&str>, offset: u32) {
        self.hits.push(Hit {
            tool: tool.map(str::to_string),
            offset,
        });
    }

    /// Whether `e` (parentheses aside) is a name for the `codemode` object: one bound to it,
    /// or `codemode` read off the global object (`globalThis.codemode`,
    /// `globalThis["codemode"]`).
    fn is_object(&self, e: &Expression<'_>) -> bool {
        match e.without_parentheses() {
            Expression::Identifier(id) => self.resolve(id.name.as_str()) == Some(&Binding::Object),
            Expression::StaticMemberExpression(m) => {
                m.property.name == GLOBAL && self.is_global_object(&m.object)
            }
            Expression::ComputedMemberExpression(m) => {
                static_key(m).as_deref() == Some(GLOBAL) && self.is_global_object(&m.object)
            }
            _ => false,
        }
    }

    /// Whether `e` (parentheses aside) is the global object: `this` (a script's top level is
    /// a function called without a receiver) or one of [`GLOBAL_OBJECTS`] not shadowed.
    fn is_global_object(&self, e: &Expression<'_>) -> bool {
        match e.without_parentheses() {
            Expression::ThisExpression(_) => true,
            Expression::Identifier(id) => self.is_unbound_global(id.name.as_str(), &GLOBAL_OBJECTS),
            _ => false,
        }
    }

    /// Whether `name` is one of `globals` and no local binding shadows it.
    fn is_unbound_global(&self, name: &str, globals: &[&str]) -> bool {
        globals.contains(&name) && self.resolve(name).is_none()
    }
}

/// The name in `codemode["x"]` or ``codemode[`x`]``; `None` when computed at run time.
fn static_key(m: &ComputedMemberExpression<'_>) -> Option<String> {
    match &m.expression {
        Expression::StringLiteral(s) => Some(s.value.as_str().to_string()),
        Expression::TemplateLiteral(t) if t.expressions.is_empty() && t.quasis.len() == 1 => {
            t.quasis[0].value.cooked.map(|c| c.as_str().to_string())
        }
        _ => None,
    }
}

/// A callee or initialiser with parentheses and an optional chain around a member access
/// removed: `(codemode?.x)` → `codemode?.x`.
fn unwrap_callee<'e, 'a>(e: &'e Expression<'a>) -> Callee<'e, 'a> {
    match e.without_parentheses() {
        Expression::StaticMemberExpression(m) => Callee::Static(m),
        Expression::ComputedMemberExpression(m) => Callee::Computed(m),
        Expression::Identifier(id) => Callee::Ident(id),
        Expression::ChainExpression(c) => match &c.expression {
            ChainElement::StaticMemberExpression(m) => Callee::Static(m),
            ChainElement::ComputedMemberExpression(m) => Callee::Computed(m),
            _ => Callee::Other,
        },
        _ => Callee::Other,
    }
}

enum Callee<'e, 'a> {
    Static(&'e StaticMemberExpression<'a>),
    Computed(&'e ComputedMemberExpression<'a>),
    Ident(&'e IdentifierReference<'a>),
    Other,
}

impl<'a> Finder {
    /// Records a reference to a member of the `codemode` object, if `callee` is one, and
    /// visits what is left of it (a computed key). Returns `false` if it is not one.
    fn member_site(&mut self, callee: &Callee<'_, 'a>, offset: u32) -> bool {
        match callee {
            Callee::Static(m) if self.is_object(&m.object) => {
                self.push(Some(m.property.name.as_str()), offset);
                true
            }
            Callee::Computed(m) if self.is_object(&m.object) => {
                let key = static_key(m);
                self.push(key.as_deref(), offset);
                if key.is_none() {
                    self.visit_expression(&m.expression);
                }
                true
            }
            _ => false,
        }
    }

    /// Binds the names of `const <pattern> = codemode`: each key becomes a tool, a rest
    /// element another alias of the object.
    fn bind_destructuring(&mut self, pattern: &BindingPattern<'a>, alias_site: u32) {
        match pattern {
            BindingPattern::BindingIdentifier(id) => {
                self.bind(id.name.as_str(), Binding::Object);
                self.push(None, alias_site);
            }
            BindingPattern::ObjectPattern(obj) => {
                for prop in &obj.properties {
                    let target = match &prop.value {
                        BindingPattern::BindingIdentifier(id) => Some(id),
                        BindingPattern::AssignmentPattern(a) => match &a.left {
                            BindingPattern::BindingIdentifier(id) => Some(id),
                            _ => None,
                        },
                        _ => None,
                    };
                    match (prop.key.static_name(), target) {
                        (Some(key), Some(id)) => {
                            self.bind(id.name.as_str(), Binding::Tool(key.into_owned()));
                        }
                        (None, _) => self.push(None, prop.span.start),
                        // Nested patterns take properties of a tool function: not tool calls.
                        _ => {}
                    }
                }
                if let Some(rest) = &obj.rest {
                    self.bind_destructuring(&rest.argument, rest.span.start);
                }
            }
            // An array pattern (`const [a] = codemode`): the object escapes.
            _ => self.push(None, alias_site),
        }
    }
}

impl<'a> Visit<'a> for Finder {
    fn enter_scope(&mut self, _flags: ScopeFlags, _scope_id: &Cell<Option<ScopeId>>) {
        self.scopes.push(HashMap::new());
    }

    fn leave_scope(&mut self) {
        self.scopes.pop();
    }

    fn visit_binding_identifier(&mut self, id: &oxc_ast::ast::BindingIdentifier<'a>) {
        self.bind(id.name.as_str(), Binding::Other);
    }

    fn visit_function(&mut self, f: &Function<'a>, flags: ScopeFlags) {
        // A declaration's name belongs to the enclosing scope (the walk binds it inside).
        if f.r#type == FunctionType::FunctionDeclaration
            && let Some(id) = &f.id
        {
            self.bind(id.name.as_str(), Binding::Other);
        }
        walk::walk_function(self, f, flags);
    }

    fn visit_class(&mut self, class: &oxc_ast::ast::Class<'a>) {
        if let Some(id) = &class.id {
            self.bind(id.name.as_str(), Binding::Other);
        }
        walk::walk_class(self, class);
    }

    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        let callee = unwrap_callee(&call.callee);
        let recognised = match &callee {
            Callee::Ident(id) => match self.resolve(id.name.as_str()) {
                Some(Binding::Tool(tool)) => {
                    let tool = tool.clone();
                    self.push(Some(&tool), call.span.start);
                    true
                }
                _ => false,
            },
            _ => self.member_site(&callee, call.span.start),
        };
        if recognised {
            self.visit_arguments(&call.arguments);
        } else {
            walk::walk_call_expression(self, call);
        }
    }

    fn visit_static_member_expression(&mut self, m: &StaticMemberExpression<'a>) {
        if self.member_site(&Callee::Static(m), m.span.start) {
            return;
        }
        if self.is_global_object(&m.object) {
            // `globalThis.codemode` not called through: the object escapes; `globalThis.eval`
            // runs code. Any other property of the global object (`globalThis.JSON`) is no
            // call site.
            let name = m.property.name.as_str();
            if name == GLOBAL || EVALUATORS.contains(&name) {
                self.push(None, m.span.start);
            }
            return;
        }
        // `f.constructor` reaches `Function` (or `AsyncFunction`) without naming it.
        if m.property.name == "constructor" {
            self.push(None, m.span.start);
        }
        walk::walk_static_member_expression(self, m);
    }

    fn visit_computed_member_expression(&mut self, m: &ComputedMemberExpression<'a>) {
        if self.member_site(&Callee::Computed(m), m.span.start) {
            return;
        }
        if self.is_global_object(&m.object) {
            match static_key(m).as_deref() {
                Some(name) if name == GLOBAL || EVALUATORS.contains(&name) => {
                    self.push(None, m.span.start);
                }
                Some(_) => {}
                // `globalThis["code" + "mode"]`: any global, `codemode` included.
                None => {
                    self.push(None, m.span.start);
                    self.visit_expression(&m.expression);
                }
            }
            return;
        }
        if static_key(m).as_deref() == Some("constructor") {
            self.push(None, m.span.start);
        }
        walk::walk_computed_member_expression(self, m);
    }

    /// A bare use of the object (it escapes: dynamic) or of a tool function (reported as that
    /// tool). Uses as a callee or member object never get here.
    /// `eval`, `Function` and the global object's names (not shadowed) are dynamic entries
    /// too: code run from a string, or `codemode` looked up under a computed name.
    fn visit_identifier_reference(&mut self, id: &IdentifierReference<'a>) {
        let name = id.name.as_str();
        match self.resolve(name) {
            Some(Binding::Object) => self.push(None, id.span.start),
            Some(Binding::Tool(tool)) => {
                let tool = tool.clone();
                self.push(Some(&tool), id.span.start);
            }
            None if EVALUATORS.contains(&name) || GLOBAL_OBJECTS.contains(&name) => {
                self.push(None, id.span.start);
            }
            _ => {}
        }
    }

    fn visit_variable_declarator(&mut self, decl: &VariableDeclarator<'a>) {
        let Some(init) = &decl.init else {
            walk::walk_variable_declarator(self, decl);
            return;
        };
        // Visit the pattern first (defaults, computed keys, shadowing), then bind on top.
        if self.is_object(init) {
            self.visit_binding_pattern(&decl.id);
            self.bind_destructuring(&decl.id, init.span_start());
            return;
        }
        match unwrap_callee(init) {
            Callee::Static(m)
                if self.is_object(&m.object)
                    && let BindingPattern::BindingIdentifier(id) = &decl.id =>
            {
                self.visit_binding_pattern(&decl.id);
                self.bind(
                    id.name.as_str(),
                    Binding::Tool(m.property.name.as_str().to_string()),
                );
            }
            Callee::Computed(m)
                if self.is_object(&m.object)
                    && let Some(key) = static_key(m)
                    && let BindingPattern::BindingIdentifier(id) = &decl.id =>
            {
                self.visit_binding_pattern(&decl.id);
                self.bind(id.name.as_str(), Binding::Tool(key));
            }
            _ => walk::walk_variable_declarator(self, decl),
        }
    }
}

/// `GetSpan` without importing the trait everywhere.
trait SpanStart {
    fn span_start(&self) -> u32;
}

impl SpanStart for Expression<'_> {
    fn span_start(&self) -> u32 {
        oxc_span::GetSpan::span(self).start
    }
}
