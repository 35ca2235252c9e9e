//! The `durable` section's tests.

use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::{Config, ConfigErrorKind};

#[test]
fn the_default_is_a_local_store_in_the_state_directory() {
    let c = Config::from_json_str("{}").unwrap();
    assert_eq!(c.durable, DurableConfig::default());
    assert_eq!(c.durable.store, StoreLocation::Local);
    assert_eq!(c.durable.dir, default_state_dir());
    assert_eq!(c.durable.key_env, "CODEMODE_STATE_KEY");
    assert_eq!(c.durable.suspend_to_store_after, Duration::from_secs(5));
    assert!(c.durable.fsync);
    assert_eq!(c.durable.max_parked_bytes, 4 << 30);
    // The tests run with HOME set, so there is always a default.
    assert!(c.durable.dir.is_some());
}

#[test]
fn every_key_is_read() {
    let c = Config::from_json_str(
        r#"{"durable": {"store": "redis://app:pw@127.0.0.1:6390/3", "dir": "/var/lib/codemode",
            "keyEnv": "MY_KEY", "suspendToStoreAfterSeconds": 0.5, "fsync": false,
            "maxParkedBytes": "64MiB"}}"#,
    )
    .unwrap();
    let StoreLocation::Redis(url) = &c.durable.store else {
        panic!("{:?}", c.durable.store)
    };
    assert_eq!(url.to_string(), "redis://app:***@127.0.0.1:6390/3");
    assert_eq!(
        format!("{url:?}"),
        "RedisUrl(redis://app:***@127.0.0.1:6390/3)"
    );
    assert_eq!(url.as_secret_str(), "redis://app:pw@127.0.0.1:6390/3");
    assert_eq!(url.db(), 3);
    assert_eq!(url.redact("auth failed for pw"), "auth failed for ***");
    assert_eq!(c.durable.dir, Some(PathBuf::from("/var/lib/codemode")));
    assert_eq!(c.durable.key_env, "MY_KEY");
    assert_eq!(c.durable.suspend_to_store_after, Duration::from_millis(500));
    assert!(!c.durable.fsync);
    assert_eq!(c.durable.max_parked_bytes, 64 << 20);
    let local = Config::from_json_str(
        r#"{"durable": {"store": "local", "suspendToStoreAfterSeconds": 0}}"#,
    )
    .unwrap();
    assert_eq!(local.durable.store, StoreLocation::Local);
    assert_eq!(local.durable.suspend_to_store_after, Duration::ZERO);
}

#[test]
fn redis_urls_default_port_and_database_and_take_env_references() {
    let c = Config::from_json_str_with_env(
        r#"{"durable": {"store": "redis://:${REDIS_PASSWORD}@redis"}}"#,
        |name| (name == "REDIS_PASSWORD").then(|| "hunter2".to_string()),
    )
    .unwrap();
    let StoreLocation::Redis(url) = &c.durable.store else {
        panic!()
    };
    assert_eq!(url.to_string(), "redis://:***@redis:6379/0");
    assert_eq!(url.as_secret_str(), "redis://:hunter2@redis");
    assert_eq!(
        RedisUrl::parse("redis://[::1]:7000").unwrap().to_string(),
        "redis://[::1]:7000/0"
    );
    assert_eq!(
        RedisUrl::parse("redis://u@h/").unwrap().to_string(),
        "redis://u@h:6379/0"
    );
}

#[test]
fn bad_values_name_their_path_and_never_the_password() {
    let cases = [
        (
            r#"{"durable": []}"#,
            "durable",
            ConfigErrorKind::WrongType,
            "expected an object, found an array",
        ),
        (
            r#"{"durable": {"stor": "local"}}"#,
            "durable.stor",
            ConfigErrorKind::UnknownKey,
            "unknown key `stor` (did you mean `store`?); allowed keys: `store`, `dir`, `keyEnv`, `suspendToStoreAfterSeconds`, `fsync`, `maxParkedBytes`",
        ),
        (
            r#"{"durable": {"store": 1}}"#,
            "durable.store",
            ConfigErrorKind::WrongType,
            "expected a string, found a number (1)",
        ),
        (
            r#"{"durable": {"store": "memory"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "expected \"local\" or a URL such as \"redis://HOST:PORT/DB\", found a string (\"memory\")",
        ),
        (
            r#"{"durable": {"store": "http://u:hunter2@h/0"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "`http://u:hunter2@h/0`: the scheme is `http`; expected `redis://HOST:PORT/DB` (or \"local\")",
        ),
        (
            r#"{"durable": {"store": "rediss://h"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "`rediss://h`: TLS (`rediss://`) is not supported; reach Redis over a private network or a TLS tunnel and write `redis://`",
        ),
        (
            r#"{"durable": {"store": "redis://h/x"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "`redis://h/x`: the path must be a database number such as `/0`, found `/x`",
        ),
        (
            r#"{"durable": {"store": "redis://h:99999/0"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "`redis://h:99999/0`: not a URL: invalid port number",
        ),
        (
            r#"{"durable": {"store": "redis://h/0?protocol=resp3"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "`redis://h/0?protocol=resp3`: query parameters and fragments are not supported",
        ),
        (
            r#"{"durable": {"store": "redis://"}}"#,
            "durable.store",
            ConfigErrorKind::InvalidValue,
            "`redis://`: the URL names no host",
        ),
        (
            r#"{"durable": {"store": "redis://:${NOPE_UNSET_PW}@h"}}"#,
            "durable.store",
            ConfigErrorKind::MissingEnv,
            "the environment variable `NOPE_UNSET_PW` is not set (referenced as `${NOPE_UNSET_PW}`); set it, or give a default: `${NOPE_UNSET_PW:-value}`",
        ),
        (
            r#"{"durable": {"dir": ""}}"#,
            "durable.dir",
            ConfigErrorKind::InvalidValue,
            "the directory is empty; leave `dir` out for the default state directory",
        ),
        (
            r#"{"durable": {"keyEnv": ""}}"#,
            "durable.keyEnv",
            ConfigErrorKind::InvalidValue,
            "the variable name is empty; leave `keyEnv` out for `CODEMODE_STATE_KEY`",
        ),
        (
            r#"{"durable": {"keyEnv": "A=B"}}"#,
            "durable.keyEnv",
            ConfigErrorKind::InvalidValue,
            "`A=B` cannot be an environment variable's name (it holds `=` or NUL)",
        ),
        (
            r#"{"durable": {"suspendToStoreAfterSeconds": -1}}"#,
            "durable.suspendToStoreAfterSeconds",
            ConfigErrorKind::InvalidValue,
            "expected a number of seconds, at least 0, found a number (-1)",
        ),
        (
            r#"{"durable": {"suspendToStoreAfterSeconds": 1e300}}"#,
            "durable.suspendToStoreAfterSeconds",
            ConfigErrorKind::InvalidValue,
            "too large",
        ),
        (
            r#"{"durable": {"suspendToStoreAfterSeconds": "5s"}}"#,
            "durable.suspendToStoreAfterSeconds",
            ConfigErrorKind::WrongType,
            "expected a number of seconds, found a string (\"5s\")",
        ),
        (
            r#"{"durable": {"fsync": "yes"}}"#,
            "durable.fsync",
            ConfigErrorKind::WrongType,
            "expected a boolean, found a string (\"yes\")",
        ),
    ];
    for (json, path, kind, message) in cases {
        let errors = Config::from_json_str(json).unwrap_err().errors;
        assert_eq!(errors.len(), 1, "{json}: {errors:?}");
        assert_eq!(
            (errors[0].path(), errors[0].kind(), errors[0].message()),
            (path, kind, message),
            "{json}"
        );
    }
    let errors =
        Config::from_json_str_with_env(r#"{"durable": {"store": "redis://u:${PW}@h/x"}}"#, |_| {
            Some("hunter2".to_string())
        })
        .unwrap_err();
    assert!(!errors.to_string().contains("hunter2"), "{errors}");
}

#[test]
fn every_problem_of_the_section_is_reported_at_once() {
    let json = r#"{"durable": {"store": "memory", "dir": "", "keyEnv": "A=B",
        "suspendToStoreAfterSeconds": -1, "fsync": "yes", "maxParkedBytes": 0}}"#;
    let errors = Config::from_json_str(json).unwrap_err().errors;
    let got: Vec<(&str, ConfigErrorKind, &str)> = errors
        .iter()
        .map(|e| (e.path(), e.kind(), e.message()))
        .collect();
    use ConfigErrorKind::*;
    assert_eq!(
        got,
        [
            (
                "durable.suspendToStoreAfterSeconds",
                InvalidValue,
                "expected a number of seconds, at least 0, found a number (-1)"
            ),
            (
                "durable.fsync",
                WrongType,
                "expected a boolean, found a string (\"yes\")"
            ),
            (
                "durable.maxParkedBytes",
                InvalidValue,
                "must be greater than zero"
            ),
            (
                "durable.store",
                InvalidValue,
                "expected \"local\" or a URL such as \"redis://HOST:PORT/DB\", found a string (\"memory\")"
            ),
            (
                "durable.dir",
                InvalidValue,
                "the directory is empty; leave `dir` out for the default state directory"
            ),
            (
                "durable.keyEnv",
                InvalidValue,
                "`A=B` cannot be an environment variable's name (it holds `=` or NUL)"
            ),
        ]
    );
}
