//! [`result_use`]: which tool's result a failing member access was made on, so that a
//! `TypeError` can name the tool and the value's shape instead of only "not a function".

use oxc_allocator::Allocator;
use oxc_ast::ast::{BindingPattern, Expression, StaticMemberExpression, VariableDeclarator};
use oxc_ast_visit::{Visit, walk};
use oxc_span::GetSpan;

use super::lines::LineIndex;
use super::{on_parse_stack, parse};

/// The longest expression [`ResultUse::expression`] quotes, in characters.
const MAX_EXPRESSION_CHARS: usize = 80;

/// A member access on a name that holds a tool's awaited result:
/// `r.content.split` where `const r = await codemode.files__read_text_file(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultUse {
    /// The member expression as written (at most 80 characters), e.g. `r.content.split`.
    pub expression: String,
    /// The name holding the result, e.g. `r`.
    pub name: String,
    /// The tool whose result it holds.
    pub tool: String,
}

/// The member access whose property starts at `line`:`column` (1-based, characters: where
/// the sandbox places a `TypeError` on `a.b` — at `b`), if the name it starts from was declared
/// as `const|let|var name = await codemode.<tool>(…)` before it. Best effort: declarations
/// are matched by name and position, not by scope, and a destructured result is not followed.
/// `None` also for code that does not parse.
///
/// # Example
///
/// ```
/// use codemode_script::result_use;
/// let code = "const r = await codemode.fs__read({path: 'a'});\nreturn r.split('\\n');";
/// let used = result_use(code, 2, 10).unwrap();
/// assert_eq!((used.expression.as_str(), used.name.as_str(), used.tool.as_str()),
///            ("r.split", "r", "fs__read"));
/// ```
pub fn result_use(code: &str, line: u32, column: u32) -> Option<ResultUse> {
    let uses = match on_parse_stack(code, all_uses) {
        Ok(Ok(uses)) => uses,
        _ => return None,
    };
    uses.into_iter()
        .find(|u| u.at == (line, column))
        .map(|u| u.found)
}

struct Located {
    /// Where the property starts.
    at: (u32, u32),
    found: ResultUse,
}

/// Every member access on a name holding a tool's result, with where its property starts.
fn all_uses(code: &str) -> Vec<Located> {
    let allocator = Allocator::default();
    let ret = parse(&allocator, code);
    if ret.diagnostics.has_errors() {
        return Vec::new();
    }
    let mut finder = Uses {
        code,
        results: Vec::new(),
        uses: Vec::new(),
    };
    finder.visit_program(&ret.program);
    let lines = LineIndex::new(code);
    finder
        .uses
        .into_iter()
        .map(|(offset, found)| Located {
            at: lines.line_column(offset),
            found,
        })
        .collect()
}

struct Uses<'s> {
    code: &'s str,
    /// `(name, tool, where the declaration ends)`, in source order.
    results: Vec<(String, String, u32)>,
    /// `(the property's offset, the use)`.
    uses: Vec<(u32, ResultUse)>,
}

/// `codemode.<tool>(…)` or `codemode["<tool>"](…)` awaited: the tool.
fn awaited_tool(init: &Expression<'_>) -> Option<String> {
    let Expression::AwaitExpression(awaited) = init.without_parentheses() else {
        return None;
    };
    let Expression::CallExpression(call) = awaited.argument.without_parentheses() else {
        return None;
    };
    match call.callee.without_parentheses() {
        Expression::StaticMemberExpression(m) if is_codemode(&m.object) => {
            Some(m.property.name.to_string())
        }
        Expression::ComputedMemberExpression(m) if is_codemode(&m.object) => match &m.expression {
            Expression::StringLiteral(s) => Some(s.value.to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn is_codemode(e: &Expression<'_>) -> bool {
    matches!(e.without_parentheses(), Expression::Identifier(id) if id.name == "codemode")
}

/// The name a chain of member accesses starts from: `r` of `r.a[0].b`. A call in the chain
/// (`r.filter(…).x`) ends it: the value is no longer the result.
fn root_name<'a>(mut e: &'a Expression<'a>) -> Option<&'a str> {
    loop {
        match e.without_parentheses() {
            Expression::StaticMemberExpression(m) => e = &m.object,
            Expression::ComputedMemberExpression(m) => e = &m.object,
            Expression::Identifier(id) => return Some(id.name.as_str()),
            _ => return None,
        }
    }
}

impl<'a> Visit<'a> for Uses<'_> {
    fn visit_variable_declarator(&mut self, decl: &VariableDeclarator<'a>) {
        walk::walk_variable_declarator(self, decl);
        if let (BindingPattern::BindingIdentifier(id), Some(init)) = (&decl.id, &decl.init)
            && let Some(tool) = awaited_tool(init)
        {
            self.results
                .push((id.name.to_string(), tool, decl.span.end));
        }
    }

    fn visit_static_member_expression(&mut self, m: &StaticMemberExpression<'a>) {
        walk::walk_static_member_expression(self, m);
        let Some(name) = root_name(&m.object) else {
            return;
        };
        let start = m.span().start;
        // The latest declaration of the name before this use.
        let Some((_, tool, _)) = self
            .results
            .iter()
            .rev()
            .find(|(n, _, end)| n == name && *end <= start)
        else {
            return;
        };
        let span = m.span();
        let text = self
            .code
            .get(span.start as usize..span.end as usize)
            .unwrap_or_default();
        let expression: String = match text.char_indices().nth(MAX_EXPRESSION_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_string(),
        };
        self.uses.push((
            m.property.span.start,
            ResultUse {
                expression,
                name: name.to_string(),
                tool: tool.clone(),
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(code: &str, line: u32, column: u32) -> Option<(String, String, String)> {
        result_use(code, line, column).map(|u| (u.expression, u.name, u.tool))
    }

    fn some(expression: &str, name: &str, tool: &str) -> Option<(String, String, String)> {
        Some((expression.into(), name.into(), tool.into()))
    }

    #[test]
    fn finds_the_result_a_failing_access_was_made_on() {
        let code = "const r = await codemode.fs__read({path: 'a'});\n\
                    const n = r.content.split('x');\n\
                    let s = await (codemode[\"t-x\"]({}));\n\
                    return s.map(x => x);";
        // `r.content.split`: the sandbox points at `split`, or at `content`.
        assert_eq!(at(code, 2, 21), some("r.content.split", "r", "fs__read"));
        assert_eq!(at(code, 2, 13), some("r.content", "r", "fs__read"));
        assert_eq!(at(code, 4, 10), some("s.map", "s", "t-x"));
        assert_eq!(
            at("const r = await codemode.t({});\nr[0].x.y;", 2, 8),
            some("r[0].x.y", "r", "t")
        );
        // A call in between: the value is not the result any more.
        assert_eq!(at("const r = await codemode.t({});\nr.f().y;", 2, 7), None);
        // Not a property's start, or the name is not a result.
        assert_eq!(at(code, 2, 11), None);
        assert_eq!(at("const r = {};\nr.x.y;", 2, 5), None);
        // A promise (no await) is not a result: the unawaited-call warning covers it.
        assert_eq!(at("const r = codemode.a({});\nr.x.y;", 2, 5), None);
        // Used before it was declared: another `r`.
        assert_eq!(at("r.x;\nconst r = await codemode.a({});", 1, 3), None);
        assert_eq!(at("not js (", 1, 1), None);
    }

    #[test]
    fn a_long_expression_is_cut() {
        let long = "a".repeat(100);
        let code = format!("const r = await codemode.t({{}});\nr.{long}.x;");
        let used = result_use(&code, 2, 104).unwrap();
        assert_eq!(used.expression.chars().count(), MAX_EXPRESSION_CHARS + 1);
        assert!(used.expression.ends_with('…'));
    }
}
