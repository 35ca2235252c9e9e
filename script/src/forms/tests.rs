use codemode_runtime::ErrorKind;

use super::*;
use crate::normalize_with_preview;

#[track_caller]
fn ok(code: &str) -> String {
    match normalize(code) {
        Ok(c) => c.into_owned(),
        Err(e) => panic!("{code:?}: {e}"),
    }
}

#[track_caller]
fn err(code: &str) -> (u32, u32, String) {
    match normalize(code) {
        Ok(c) => panic!("{code:?} normalised to {c:?}"),
        Err(e) => (e.line, e.column, e.message),
    }
}

/// Every type construct, stripped: exact text, and the same characters at the same places
/// (every line break where it was, the same number of characters).
#[test]
fn typescript_is_blanked_in_place() {
    let cases: &[(&str, &str)] = &[
        ("let x: number = 1;", "let x         = 1;"),
        (
            "const f = (a: string, b?: number): string => a;",
            "const f = (a        , b                 ) => a;",
        ),
        (
            "function f<T extends object>(x: T, ...rest: any[]): T { return x; }",
            "function f                  (x   , ...rest       )    { return x; }",
        ),
        (
            "interface A { x: number }\nreturn 1;",
            ";                        \nreturn 1;",
        ),
        (
            "type A = { x: number };\nreturn 1;",
            ";                      \nreturn 1;",
        ),
        // The `;` left in a blanked statement keeps `1` and `[1]` apart (no `1[1]`).
        (
            "let a = 1\ntype T = number\n[1].length",
            "let a = 1\n;              \n[1].length",
        ),
        ("return (x as any).y;", "return (x       ).y;"),
        ("return x satisfies A;", "return x            ;"),
        ("return x!.y!;", "return x .y ;"),
        ("return f<string>(1);", "return f        (1);"),
        (
            "return await codemode.search_tools<Hit[]>({query: 'x'});",
            "return await codemode.search_tools       ({query: 'x'});",
        ),
        (
            "return new Map<string, number>();",
            "return new Map                ();",
        ),
        ("const m = f<T>;", "const m = f   ;"),
        ("let x!: number;", "let x         ;"),
        (
            "declare const y: number;\nreturn 1;",
            ";                       \nreturn 1;",
        ),
        (
            "declare function g(): void;\nreturn 1;",
            ";                          \nreturn 1;",
        ),
        (
            "import type { A } from 'a';\nreturn 1;",
            ";                          \nreturn 1;",
        ),
        (
            "export type { A };\nreturn 1;",
            ";                 \nreturn 1;",
        ),
        (
            "export interface X {}\nreturn 1;",
            ";                    \nreturn 1;",
        ),
        (
            "function f(this: Window, a: number) {}",
            "function f(              a        ) {}",
        ),
        ("function f(this: Window) {}", "function f(            ) {}"),
        // An overload signature.
        (
            "function o(a: string): void;\nfunction o(a: any) {}",
            ";                           \nfunction o(a     ) {}",
        ),
        (
            "class C<T> extends B<T> implements I, J<T> {\n  private x?: number;\n  \
             public readonly y!: string;\n  static z: number = 1;\n  declare w: string;\n  \
             [k: string]: any;\n  protected m?(a: T): void {}\n  override n(): void {}\n  \
             o(): void;\n  o(a?: any) {}\n}",
            "class C    extends B                       {\n          x         ;\n                  \
             y         ;\n  static z         = 1;\n  ;                 \n  ;                \n            \
             m (a   )       {}\n           n()       {}\n  ;         \n  o(a      ) {}\n}",
        ),
        (
            "abstract class A {\n  abstract m(): void;\n  abstract p: number;\n}",
            "         class A {\n  ;                  \n  ;                  \n}",
        ),
        ("const g = <T,>(x: T) => x;", "const g = (    x   ) => x;"),
        // `return` + a line break + `(` would return nothing: the `(` moves up to where `<` was.
        ("return <T>\n(x: T) => x;", "return (  \n x   ) => x;"),
        // A line break between `)` and `=>` is a syntax error: the `)` moves down.
        (
            "const h = async (x: number):\n  Promise<number> => x;",
            "const h = async (x          \n                ) => x;",
        ),
        ("const v = <any>w;", "const v =      w;"),
        // `b as T` then `(c)` on the next line: two statements in TypeScript, kept two.
        ("let a = b as T\n(c)", "let a = b    ;\n(c)"),
        (
            "let t: `a${string}` | 'é' = 'é';",
            "let t                     = 'é';",
        ),
        (
            "const p = (x: string): x is 'a' => x === 'a';",
            "const p = (x                  ) => x === 'a';",
        ),
        (
            "import { type A, b } from 'm';",
            "import {         b } from 'm';",
        ),
        (
            "let y = (v as unknown as number[]).length;",
            "let y = (v                       ).length;",
        ),
        (
            "for (const k of ks as string[]) {}",
            "for (const k of ks            ) {}",
        ),
        (
            "try { f(); } catch (e: unknown) { (e as Error).message; }",
            "try { f(); } catch (e         ) { (e         ).message; }",
        ),
    ];
    for (code, want) in cases {
        let got = ok(code);
        assert_eq!(&got, want, "{code:?}");
        let breaks = |s: &str| -> Vec<(usize, char)> {
            s.chars()
                .enumerate()
                .filter(|(_, c)| matches!(c, '\n' | '\r'))
                .collect()
        };
        assert_eq!(got.chars().count(), code.chars().count(), "{code:?}");
        assert_eq!(breaks(&got), breaks(code), "{code:?}");
    }
}

#[test]
fn export_default_becomes_an_expression_whose_value_is_called() {
    let cases: &[(&str, &str)] = &[
        (
            "export default async () => { return 1; }",
            ";0,            async () => { return 1; }",
        ),
        (
            "export default async function main(): Promise<number> { return 1; }",
            ";0,            async function main()                  { return 1; }",
        ),
        (
            "export default async function () { return 2; }",
            ";0,            async function () { return 2; }",
        ),
        (
            "const k = 1;\nexport default async () => k;",
            "const k = 1;\n;0,            async () => k;",
        ),
    ];
    for (code, want) in cases {
        assert_eq!(&ok(code), want, "{code:?}");
    }
}

/// Plain JavaScript comes back borrowed: the very same bytes, no copy.
#[test]
fn plain_javascript_passes_through_untouched() {
    for code in [
        "return 1 + 1;",
        "async () => { return await codemode.search_tools({query: 'x'}); }",
        "const a = 1 < 2, b = 3 > 1;\nreturn [a, b];",
        "const o = {};\nconst b = 2;\nconst c = o.list.length;",
        "for await (const x of xs) {}",
        "return `\n```\n`;",
        "",
    ] {
        assert!(
            matches!(normalize(code), Ok(Cow::Borrowed(c)) if std::ptr::eq(c, code)),
            "{code:?}"
        );
    }
    // Longer than a parse on the calling thread takes: parsed on a parse thread (on a copy),
    // and still the caller's own code that comes back.
    let long = format!("const a = [{}];\nreturn a.length;", "1, ".repeat(400));
    assert!(long.len() > crate::preview::ON_THIS_THREAD_BYTES);
    assert!(matches!(normalize(&long), Ok(Cow::Borrowed(c)) if std::ptr::eq(c, long.as_str())));
    let (script, preview) = crate::normalize_with_preview(&long).unwrap();
    assert!(matches!(script, Cow::Borrowed(c) if std::ptr::eq(c, long.as_str())));
    assert_eq!(preview, crate::extract_tool_calls(&long));
    // A JavaScript syntax error goes to the sandbox unchanged (it reports it).
    assert!(matches!(normalize("return (1;"), Ok(Cow::Borrowed(_))));
    // Under a ```js fence, `f<a>(b)` keeps its JavaScript meaning (two comparisons).
    assert_eq!(ok("```js\nreturn f<a>(b);\n```"), "\nreturn f<a>(b);\n");
}

#[test]
fn fences_of_each_language_are_unwrapped_to_empty_lines() {
    for tag in [
        "",
        "js",
        "javascript",
        "ts",
        "typescript",
        "JS",
        "TypeScript",
        "mjs",
        "mts",
    ] {
        let code = format!("```{tag}\nreturn 1;\n```");
        assert_eq!(ok(&code), "\nreturn 1;\n", "{tag}");
    }
    // Whitespace around the block and CRLF line breaks are kept.
    assert_eq!(
        ok("\n  ```ts\r\nconst a: number = 1;\r\nreturn a;\r\n```\r\n\n"),
        "\n\r\nconst a         = 1;\r\nreturn a;\r\n\r\n\n"
    );
    assert_eq!(
        ok("```ts\nexport default async (): Promise<number> => 1;\n```\n"),
        "\n;0,            async (                 ) => 1;\n\n"
    );
}

#[test]
fn fence_problems_are_errors_at_their_line() {
    let cases: &[(&str, (u32, u32, &str))] = &[
        (
            "```python\nprint(1)\n```",
            (
                1,
                1,
                "a ```python fenced block: codemode runs JavaScript or TypeScript (```js, ```ts, or a bare ```)",
            ),
        ),
        (
            "\n```js\nreturn 1;",
            (
                2,
                1,
                "the ``` fence opened here is never closed: end the code with a ``` line",
            ),
        ),
        (
            "```js\nreturn 1;\n```\n\n```js\nreturn 2;\n```",
            (
                5,
                1,
                "a second fenced code block: send one script (one block, or the code alone)",
            ),
        ),
        (
            "```js\nreturn 1;\n```\nThis returns one.",
            (4, 1, "text after the fenced code block: send only the code"),
        ),
    ];
    for (code, (line, column, message)) in cases {
        assert_eq!(err(code), (*line, *column, message.to_string()), "{code:?}");
    }
}

#[test]
fn typescript_that_needs_a_transform_is_an_error_naming_it() {
    let cases: &[(&str, (u32, u32, &str))] = &[
        (
            "const a = 1;\n  enum Color { Red }",
            (
                2,
                3,
                "TypeScript `enum` needs more than type stripping: use an object (`const Color = { Red: \"red\" }`)",
            ),
        ),
        (
            "const enum E { A }",
            (
                1,
                1,
                "TypeScript `enum` needs more than type stripping: use an object (`const Color = { Red: \"red\" }`)",
            ),
        ),
        (
            "\nnamespace N { export const x = 1; }",
            (
                2,
                1,
                "TypeScript `namespace` needs more than type stripping: use an object or plain functions",
            ),
        ),
        (
            "class P {\n  constructor(private x: number) {}\n}",
            (
                2,
                15,
                "TypeScript parameter properties (`constructor(private x)`) need more than type stripping: declare the field and assign it in the constructor",
            ),
        ),
        (
            "@sealed class D {}",
            (
                1,
                1,
                "decorators need more than type stripping: call the function on the value instead",
            ),
        ),
        (
            "import fs = require('fs');",
            (
                1,
                1,
                "TypeScript `import … = …` needs more than type stripping: use `const`",
            ),
        ),
        (
            "```ts\nexport = 1;\n```",
            (
                2,
                1,
                "TypeScript `export =` needs more than type stripping: end the script with the value, or `return` it",
            ),
        ),
    ];
    for (code, (line, column, message)) in cases {
        assert_eq!(err(code), (*line, *column, message.to_string()), "{code:?}");
    }
    // A `declare`d one is types only: blanked.
    assert_eq!(
        ok("declare enum E { A }\nreturn 1;"),
        ";                   \nreturn 1;"
    );
}

/// A TypeScript syntax error is reported where oxc finds it, in the user's text (the fence
/// line counts).
#[test]
fn typescript_syntax_errors_are_placed_in_the_users_text() {
    let (line, column, message) = err("```ts\nconst a: number = 1;\nconst b: string = ;\n```");
    assert_eq!((line, column), (3, 19));
    assert_eq!(message, "Unexpected token");
}

/// The preview finds calls in every form, at their places in the text as written.
#[test]
fn the_preview_reads_the_same_forms() {
    let code = "```ts\ninterface Hit { id: string }\nconst hits = await codemode.search_tools<Hit[]>({query: 'x'}) as Hit[];\n\
                export default async (): Promise<number> => (await codemode.get_tools({names: []})).length;\n```";
    let p = crate::extract_tool_calls(code);
    assert_eq!(p.parse_error, None);
    let calls: Vec<_> = p
        .calls
        .iter()
        .map(|c| (c.tool.as_deref().unwrap(), c.line, c.column))
        .collect();
    assert_eq!(calls, [("search_tools", 3, 20), ("get_tools", 4, 52)]);
    let p = crate::extract_tool_calls("enum E { A }");
    assert_eq!(p.parse_error.map(|e| (e.line, e.column)), Some((1, 1)));
}

#[test]
fn a_script_error_is_the_sandbox_syntax_shape() {
    let e = ScriptError::at(4, 2, "Unexpected token").to_eval_error();
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(e.message, "SyntaxError: Unexpected token");
    assert_eq!((e.line, e.column, e.stack), (Some(4), Some(2), None));
}

/// One thread for both: the same script and the same preview as the two calls apart.
#[test]
fn normalize_with_preview_agrees_with_the_two_calls() {
    for code in [
        "return await codemode.a__x({});",
        "```ts\nconst r: number = await codemode.a__x<number>({});\nreturn r as number;\n```",
        "export default async () => codemode['b-c']({});",
        "enum E { A }",
        "return (1;",
    ] {
        let (script, preview) = match normalize_with_preview(code) {
            Ok(v) => v,
            Err(e) => {
                assert_eq!(normalize(code), Err(e), "{code:?}");
                continue;
            }
        };
        assert_eq!(Ok(script), normalize(code), "{code:?}");
        assert_eq!(preview, crate::extract_tool_calls(code), "{code:?}");
    }
}

/// Found by the `preview` fuzz target: oxc's TypeScript parser took 8 GB and 40 s on these 363
/// bytes (39 `<`). Past `MAX_TS_ANGLE_BRACKETS` the code is read as JavaScript only: here it is
/// not valid JavaScript either, so it goes to the sandbox as written.
#[test]
fn many_angle_brackets_are_not_parsed_as_typescript() {
    let input = include_bytes!("../../../fuzz/corpus/preview/ts-parser-exponential-memory.js");
    let code = String::from_utf8_lossy(input).into_owned();
    assert!(code.matches('<').count() > super::MAX_TS_ANGLE_BRACKETS);
    assert_eq!(super::normalize(&code).unwrap(), code.as_str());
    // Valid JavaScript with many comparisons is unchanged, and `export default` still works.
    let js = "const a = [1, 2];\n".to_string()
        + &"a[0] < a[1];\n".repeat(30)
        + "export default async () => 1";
    let out = super::normalize(&js).unwrap();
    assert_eq!(out.len(), js.len());
    assert!(
        out.ends_with("async () => 1") && !out.contains("export"),
        "{out}"
    );
}
