//! [`query_audit_dir`]: the records of an audit directory that match a filter, in time order,
//! and their rendering as JSON Lines, JSON or CSV ([`format_records`]).

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use globset::{Glob, GlobMatcher};
use serde_json::{Map, Value};

use super::csv::AUDIT_CSV_COLUMNS;
use super::verify::audit_files;
use crate::parse_duration;

/// Which kind of record (`--event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditEvent {
    /// `tool_call` records.
    ToolCall,
    /// `eval` records.
    Eval,
    /// `access` records (a client's resource reads and prompt gets).
    Access,
    /// `sampling` records (an upstream's requests to sample the client's model).
    Sampling,
    /// `rule` records (remembered approvals created or revoked).
    Rule,
}

impl AuditEvent {
    /// The `event` field's value.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditEvent::ToolCall => "tool_call",
            AuditEvent::Eval => "eval",
            AuditEvent::Access => "access",
            AuditEvent::Sampling => "sampling",
            AuditEvent::Rule => "rule",
        }
    }
}

/// What to select; every filter set must match (a record lacking a filtered field does not).
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Records whose `ts` is at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Records whose `ts` is at or before this.
    pub until: Option<DateTime<Utc>>,
    /// Only this kind.
    pub event: Option<AuditEvent>,
    /// Only `tool_call` records whose `tool` matches this glob.
    pub tool: Option<GlobMatcher>,
    /// Only records with this `decision`.
    pub decision: Option<String>,
    /// Only records with this `caller`.
    pub caller: Option<String>,
    /// Only records with this `eval_id`.
    pub eval_id: Option<String>,
    /// Only records of this `risk` (`tool_call` records).
    pub risk: Option<crate::Risk>,
    /// Only records whose every named top-level field has the given value
    /// ([`where_field`](Self::where_field)).
    pub fields: Vec<(String, String)>,
}

impl AuditQuery {
    /// Sets [`tool`](Self::tool) from a glob (`fs__*`).
    ///
    /// # Errors
    ///
    /// When the glob does not compile.
    pub fn tool_glob(&mut self, glob: &str) -> Result<(), AuditQueryError> {
        let matcher = Glob::new(glob)
            .map_err(|e| AuditQueryError::Glob {
                glob: glob.to_string(),
                message: e.kind().to_string(),
            })?
            .compile_matcher();
        self.tool = Some(matcher);
        Ok(())
    }

    /// Sets [`risk`](Self::risk) from a level's name (`low`, `medium`, `high`, `critical`).
    ///
    /// # Errors
    ///
    /// When `level` names none.
    pub fn risk_level(&mut self, level: &str) -> Result<(), AuditQueryError> {
        self.risk = Some(
            crate::Risk::parse(level).ok_or_else(|| AuditQueryError::Risk {
                input: crate::neutralize(level),
            })?,
        );
        Ok(())
    }

    /// Adds a filter `FIELD=VALUE` to [`fields`](Self::fields): a record matches when its
    /// top-level field `FIELD` is there and its value, as text, is exactly `VALUE` — a string by
    /// its content, anything else as compact JSON (`call_id=2`, `ok=true`, `reason=null`,
    /// `caller_permissions=["a","b"]`, an object with its keys sorted). The first `=` ends the
    /// field's name.
    ///
    /// # Errors
    ///
    /// When `spec` has no `=` or names no field.
    pub fn where_field(&mut self, spec: &str) -> Result<(), AuditQueryError> {
        match spec.split_once('=') {
            Some((field, value)) if !field.is_empty() => {
                self.fields.push((field.to_string(), value.to_string()));
                Ok(())
            }
            _ => Err(AuditQueryError::Where {
                input: crate::neutralize(spec),
            }),
        }
    }

    fn fields_match(&self, rec: &Map<String, Value>) -> bool {
        self.fields.iter().all(|(name, want)| match rec.get(name) {
            Some(Value::String(s)) => s == want,
            Some(other) => serde_json::to_string(other).is_ok_and(|text| text == *want),
            None => false,
        })
    }

    fn matches(&self, rec: &Map<String, Value>, ts: Option<DateTime<Utc>>) -> bool {
        let field = |name: &str| rec.get(name).and_then(Value::as_str);
        let time_ok = match (self.since, self.until, ts) {
            (None, None, _) => true,
            (_, _, None) => false,
            (since, until, Some(t)) => since.is_none_or(|s| t >= s) && until.is_none_or(|u| t <= u),
        };
        let eval_id = || match rec.get("eval_id") {
            Some(Value::String(s)) => Some(s.clone()),
            // Records of older versions numbered evals.
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        time_ok
            && self
                .event
                .is_none_or(|e| field("event") == Some(e.as_str()))
            && self.tool.as_ref().is_none_or(|g| {
                field("event") == Some("tool_call") && field("tool").is_some_and(|t| g.is_match(t))
            })
            && self
                .decision
                .as_deref()
                .is_none_or(|d| field("decision") == Some(d))
            && self
                .caller
                .as_deref()
                .is_none_or(|c| field("caller") == Some(c))
            && self
                .eval_id
                .as_deref()
                .is_none_or(|id| eval_id().as_deref() == Some(id))
            && self.risk.is_none_or(|r| field("risk") == Some(r.as_str()))
            && self.fields_match(rec)
    }
}

/// A bad query or an unreadable directory.
#[derive(Debug, thiserror::Error)]
pub enum AuditQueryError {
    /// `--since`/`--until` is neither RFC 3339 nor a duration.
    #[error(
        "`{input}` is neither an RFC 3339 time (2024-05-01T12:00:00Z) nor a duration back from now (90m, 1h, 7d)"
    )]
    Time {
        /// The text given.
        input: String,
    },
    /// The `--tool` glob does not compile.
    #[error("invalid tool glob `{glob}`: {message}")]
    Glob {
        /// The glob.
        glob: String,
        /// Why.
        message: String,
    },
    /// `--risk` names no level.
    #[error("`{input}` is not a risk level: low, medium, high or critical")]
    Risk {
        /// The text given.
        input: String,
    },
    /// `--where` is not `FIELD=VALUE`.
    #[error("`{input}` is not FIELD=VALUE (e.g. stage=registry, call_id=2, reason=null)")]
    Where {
        /// The text given.
        input: String,
    },
    /// The directory or a file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// What could not be read.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

impl AuditQuery {
    /// `input` as a time: RFC 3339 (`2024-05-01T12:00:00Z`, any offset), or a duration back from
    /// `now` ([`parse_duration`]: `90m`, `1h`, `7d`).
    ///
    /// # Errors
    ///
    /// [`AuditQueryError::Time`] when it is neither.
    pub fn parse_time_bound(
        input: &str,
        now: SystemTime,
    ) -> Result<DateTime<Utc>, AuditQueryError> {
        let bad = || AuditQueryError::Time {
            input: input.to_string(),
        };
        if let Ok(t) = DateTime::parse_from_rfc3339(input.trim()) {
            return Ok(t.with_timezone(&Utc));
        }
        let back: Duration = parse_duration(input).map_err(|_| bad())?;
        // Through chrono's checked arithmetic: a duration past its range is an error, not a panic.
        let back = chrono::TimeDelta::from_std(back).map_err(|_| bad())?;
        DateTime::<Utc>::from(now.max(std::time::UNIX_EPOCH))
            .checked_sub_signed(back)
            .ok_or_else(bad)
    }
}

/// One selected record.
#[derive(Debug, Clone, PartialEq)]
pub struct QueriedRecord {
    /// The line as written.
    pub line: String,
    /// Its fields.
    pub fields: Map<String, Value>,
}

/// What [`AuditQuery::run`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryResult {
    /// The matching records, by `ts` (records of equal `ts` in file order).
    pub records: Vec<QueriedRecord>,
    /// Lines that are not JSON objects (`file`, 1-based line), skipped: `audit verify` says
    /// more.
    pub skipped: Vec<(PathBuf, u64)>,
}

impl AuditQuery {
    /// The records of the `*.jsonl` files of `dir` that match `query`, in time order across
    /// files. Reads the files as they are: it does not verify the chains
    /// ([`Verified::of_dir`](crate::Verified::of_dir) does).
    ///
    /// # Errors
    ///
    /// [`AuditQueryError::Io`] when `dir` or a file cannot be read.
    pub fn run(&self, dir: &Path) -> Result<QueryResult, AuditQueryError> {
        let query = self;
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AuditQueryError::Io { path, source }
        };
        let mut result = QueryResult::default();
        let mut found: Vec<(Option<DateTime<Utc>>, QueriedRecord)> = Vec::new();
        for file in audit_files(dir).map_err(io_err(dir))? {
            let text = std::fs::read(&file).map_err(io_err(&file))?;
            for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
                if raw.is_empty() {
                    continue;
                }
                let fields = match std::str::from_utf8(raw)
                    .ok()
                    .and_then(|l| serde_json::from_str::<Value>(l).ok())
                {
                    Some(Value::Object(map)) => map,
                    _ => {
                        result.skipped.push((file.clone(), i as u64 + 1));
                        continue;
                    }
                };
                let ts = fields
                    .get("ts")
                    .and_then(Value::as_str)
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.with_timezone(&Utc));
                if query.matches(&fields, ts) {
                    let line = String::from_utf8_lossy(raw).into_owned();
                    found.push((ts, QueriedRecord { line, fields }));
                }
            }
        }
        // Stable: equal times keep file order (files by name, lines in order); records without a
        // readable time come first.
        found.sort_by_key(|(ts, _)| *ts);
        result.records = found.into_iter().map(|(_, r)| r).collect();
        Ok(result)
    }
}

/// How [`AuditFormat::render`] renders records (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuditFormat {
    /// Each record's line as written, one per line (the default).
    #[default]
    Jsonl,
    /// One JSON array of the records, pretty-printed.
    Json,
    /// A header row of [`AuditFormat::CSV_COLUMNS`], then one row per record (RFC 4180 quoting; every
    /// cell [`neutralize`](crate::neutralize)d — control and invisible characters written as
    /// visible `\n`, `\u001b`-style escapes —, so no value can start a line of its own, drive
    /// a terminal or hide text; a string cell a spreadsheet would run as a formula — starting
    /// with `=`, `+`, `-`, `@`, a tab or a carriage return — gets a `'` in front).
    Csv,
}

impl AuditFormat {
    /// The columns of [`AuditFormat::Csv`], in order.
    pub const CSV_COLUMNS: &[&str] = AUDIT_CSV_COLUMNS;

    /// `records` rendered as `format`, ending with a newline (nothing at all for no JSON Lines
    /// records).
    pub fn render(self, records: &[QueriedRecord]) -> String {
        let format = self;
        match format {
            AuditFormat::Jsonl => records.iter().map(|r| format!("{}\n", r.line)).collect(),
            AuditFormat::Json => {
                let all: Vec<Value> = records
                    .iter()
                    .map(|r| Value::Object(r.fields.clone()))
                    .collect();
                let mut out = serde_json::to_string_pretty(&all).unwrap_or_else(|_| "[]".into());
                out.push('\n');
                out
            }
            AuditFormat::Csv => super::csv::render(records.iter().map(|r| &r.fields)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::csv::AUDIT_CSV_COLUMNS;
    use super::*;
    use serde_json::json;
    use std::time::UNIX_EPOCH;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("codemode-query-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn times() {
        let now = UNIX_EPOCH + Duration::from_secs(1_714_566_896); // 2024-05-01T12:34:56Z
        let cases = [
            ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00+00:00"),
            ("2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00+00:00"),
            ("1h", "2024-05-01T11:34:56+00:00"),
            ("7d", "2024-04-24T12:34:56+00:00"),
            ("1d12h", "2024-04-30T00:34:56+00:00"),
            ("90m", "2024-05-01T11:04:56+00:00"),
        ];
        for (input, want) in cases {
            assert_eq!(
                AuditQuery::parse_time_bound(input, now)
                    .unwrap()
                    .to_rfc3339(),
                want,
                "{input}"
            );
        }
        for bad in ["yesterday", "", "2024-05-01", "100000000000d"] {
            assert_eq!(
                AuditQuery::parse_time_bound(bad, now)
                    .unwrap_err()
                    .to_string(),
                format!(
                    "`{bad}` is neither an RFC 3339 time (2024-05-01T12:00:00Z) nor a duration back from now (90m, 1h, 7d)"
                )
            );
        }
    }

    /// `--risk` and `--where`: exact text of the field's value (a string's content, else
    /// compact JSON), every filter must hold, a record without the field never matches.
    #[test]
    fn risk_and_where_filters() {
        let d = dir("where");
        std::fs::write(
            d.join("2024-05-01.jsonl"),
            concat!(
                r#"{"ts":"2024-05-01T10:00:01.000Z","event":"tool_call","call_id":1,"risk":"critical","stage":"auth","reason":null,"caller_permissions":["a","b"],"metadata":{"z":1,"a":"x"}}"#,
                "\n",
                r#"{"ts":"2024-05-01T10:00:02.000Z","event":"tool_call","call_id":2,"risk":"low","stage":"registry","reason":"unknown_tool","caller_permissions":[]}"#,
                "\n",
                // Written before risk, stage and permissions were recorded.
                r#"{"ts":"2024-05-01T10:00:03.000Z","event":"tool_call","call_id":3,"reason":null}"#,
                "\n",
            ),
        )
        .unwrap();
        let run = |f: &dyn Fn(&mut AuditQuery)| -> Vec<u64> {
            let mut q = AuditQuery::default();
            f(&mut q);
            let found = q.run(&d).unwrap().records;
            found
                .iter()
                .map(|r| r.fields["call_id"].as_u64().unwrap())
                .collect()
        };
        let w = |specs: &'static [&'static str]| {
            move |q: &mut AuditQuery| specs.iter().for_each(|s| q.where_field(s).unwrap())
        };
        assert_eq!(run(&|q| q.risk_level("critical").unwrap()), [1]);
        assert_eq!(run(&|q| q.risk_level("medium").unwrap()), Vec::<u64>::new());
        assert_eq!(run(&w(&["stage=registry"])), [2]);
        assert_eq!(run(&w(&["reason=null"])), [1, 3]);
        assert_eq!(run(&w(&["reason=null", "risk=critical"])), [1]);
        assert_eq!(run(&w(&["call_id=2"])), [2]);
        assert_eq!(run(&w(&["caller_permissions=[\"a\",\"b\"]"])), [1]);
        assert_eq!(run(&w(&["caller_permissions=[]"])), [2]);
        // An object as compact JSON, its keys sorted.
        assert_eq!(run(&w(&["metadata={\"a\":\"x\",\"z\":1}"])), [1]);
        // The first `=` ends the name; the rest is the value, `=` included.
        assert_eq!(run(&w(&["reason==unknown_tool"])), Vec::<u64>::new());
        assert_eq!(
            run(&w(&["reason=unknown_tool", "stage=auth"])),
            Vec::<u64>::new()
        );
        let mut q = AuditQuery::default();
        for (bad, want) in [
            (
                "stage",
                "`stage` is not FIELD=VALUE (e.g. stage=registry, call_id=2, reason=null)",
            ),
            (
                "=x",
                "`=x` is not FIELD=VALUE (e.g. stage=registry, call_id=2, reason=null)",
            ),
        ] {
            assert_eq!(q.where_field(bad).unwrap_err().to_string(), want);
        }
        assert_eq!(
            q.risk_level("extreme\u{1b}").unwrap_err().to_string(),
            "`extreme\\u001b` is not a risk level: low, medium, high or critical"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn filters_order_and_formats() {
        let d = dir("filters");
        // Two files, written out of time order across them, one bad line.
        std::fs::write(
            d.join("2024-05-01.jsonl"),
            concat!(
                r#"{"ts":"2024-05-01T10:00:02.000Z","event":"tool_call","eval_id":"a-1","caller":"ci","tool":"fs__write","decision":"denied","hash":"h2"}"#,
                "\n",
                "not json\n",
                r#"{"ts":"2024-05-01T10:00:03.000Z","event":"eval","eval_id":"a-1","caller":"ci","ok":false,"error_kind":"cancelled"}"#,
                "\n",
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("2024-04-30.jsonl"),
            concat!(
                r#"{"ts":"2024-05-01T10:00:01.000Z","event":"tool_call","eval_id":"b-1","caller":"alice","tool":"fs__read","decision":"allowed","reason":"a, \"quoted\"\nline\u2066"}"#,
                "\n"
            ),
        )
        .unwrap();
        let run = |q: &AuditQuery| -> Vec<String> {
            q.run(&d)
                .unwrap()
                .records
                .iter()
                .map(|r| r.fields["ts"].as_str().unwrap()[17..19].to_string())
                .collect()
        };
        let all = AuditQuery::default().run(&d).unwrap();
        assert_eq!(all.skipped, [(d.join("2024-05-01.jsonl"), 2)]);
        assert_eq!(run(&AuditQuery::default()), ["01", "02", "03"]);
        let t = |s: &str| Some(AuditQuery::parse_time_bound(s, SystemTime::now()).unwrap());
        let mut q = AuditQuery {
            since: t("2024-05-01T10:00:02Z"),
            ..Default::default()
        };
        assert_eq!(run(&q), ["02", "03"]);
        q.until = t("2024-05-01T10:00:02.500Z");
        assert_eq!(run(&q), ["02"]);
        let q = |f: &dyn Fn(&mut AuditQuery)| {
            let mut q = AuditQuery::default();
            f(&mut q);
            run(&q)
        };
        assert_eq!(q(&|q| q.event = Some(AuditEvent::Eval)), ["03"]);
        assert_eq!(q(&|q| q.event = Some(AuditEvent::ToolCall)), ["01", "02"]);
        assert_eq!(q(&|q| q.tool_glob("fs__w*").unwrap()), ["02"]);
        assert_eq!(q(&|q| q.tool_glob("*").unwrap()), ["01", "02"]);
        assert_eq!(q(&|q| q.decision = Some("allowed".into())), ["01"]);
        assert_eq!(q(&|q| q.caller = Some("ci".into())), ["02", "03"]);
        assert_eq!(q(&|q| q.eval_id = Some("a-1".into())), ["02", "03"]);
        assert_eq!(q(&|q| q.since = t("1h")), Vec::<String>::new());
        assert_eq!(
            AuditQuery::default()
                .tool_glob("a[")
                .unwrap_err()
                .to_string(),
            "invalid tool glob `a[`: unclosed character class; missing ']'"
        );

        let mut q = AuditQuery::default();
        q.tool_glob("fs__*").unwrap();
        let recs = q.run(&d).unwrap().records;
        assert_eq!(
            AuditFormat::Jsonl.render(&recs),
            format!("{}\n{}\n", recs[0].line, recs[1].line)
        );
        let json: Value = serde_json::from_str(&AuditFormat::Json.render(&recs)).unwrap();
        assert_eq!(json[1]["hash"], json!("h2"));
        assert_eq!(json.as_array().unwrap().len(), 2);
        let csv = AuditFormat::Csv.render(&recs);
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows[0], AUDIT_CSV_COLUMNS.join(","));
        assert_eq!(
            rows[1],
            "2024-05-01T10:00:01.000Z,tool_call,b-1,,alice,,,fs__read,,,allowed,\"a, \"\"quoted\"\"\\nline\\u2066\",,,,,,,,,,,,,,,,,,,,,,,,,"
        );
        assert_eq!(
            rows[2],
            "2024-05-01T10:00:02.000Z,tool_call,a-1,,ci,,,fs__write,,,denied,,,,,,,,,,,,,,,,,,,,,,,,,,h2"
        );
        assert_eq!(rows.len(), 3);
        assert!(AuditQuery::default().run(&d.join("missing")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
