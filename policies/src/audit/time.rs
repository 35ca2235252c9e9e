//! RFC 3339 timestamps in UTC, as the audit records carry them.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};

/// `t` as RFC 3339 in UTC with milliseconds: `2024-05-01T12:34:56.789Z`. Times before 1970
/// are written as the epoch, so that every record's `ts` (and the day file it names) sorts
/// after the log's start; times past the calendar's end (year 262142, an expiry of a
/// `rememberFor` such as `"100000000d"`) as its last instant.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    // chrono's own conversion panics past its range.
    i64::try_from(since.as_secs())
        .ok()
        .and_then(|secs| DateTime::<Utc>::from_timestamp(secs, since.subsec_nanos()))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The current time, as [`rfc3339_utc`].
pub fn now_rfc3339() -> String {
    rfc3339_utc(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats() {
        let cases: &[(u64, u32, &str)] = &[
            (0, 0, "1970-01-01T00:00:00.000Z"),
            (951_782_400, 5, "2000-02-29T00:00:00.005Z"),
            (1_714_566_896, 789, "2024-05-01T12:34:56.789Z"),
            (1_735_689_599, 999, "2024-12-31T23:59:59.999Z"),
            (4_107_542_400, 0, "2100-03-01T00:00:00.000Z"),
            (253_402_300_799, 0, "9999-12-31T23:59:59.000Z"),
        ];
        for (secs, millis, want) in cases {
            let t =
                UNIX_EPOCH + Duration::from_secs(*secs) + Duration::from_millis(u64::from(*millis));
            assert_eq!(rfc3339_utc(t), *want);
        }
        // Sub-millisecond digits are cut, not rounded.
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_nanos(1_999_999)),
            "1970-01-01T00:00:00.001Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(now_rfc3339().len(), 24);
    }
}
