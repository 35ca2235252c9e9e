//! Which browser origins a listener accepts: `server.http.allowedOrigins` entries matched against
//! an `Origin` header, the same way for the MCP endpoint and the approval API.
//!
//! An entry is `null` (matches `Origin: null`), `scheme://host:port` (that port),
//! `scheme://host:*` (any port) or `scheme://host` (the scheme's default port only — as a browser
//! serialises an origin on its default port without one: RFC 6454 §6.2). Schemes and hosts
//! compare case-insensitively.

/// One parsed origin: `None` port means the scheme's default.
#[derive(Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: Port,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Port {
    Exact(u16),
    Any,
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Parses `scheme://host[:port|:*]`: no path, query, user info or trailing slash.
fn parse(text: &str, wildcard: bool) -> Option<Origin> {
    let text = text.trim().to_ascii_lowercase();
    let (scheme, rest) = text.split_once("://")?;
    if scheme.is_empty() || rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    // An IPv6 host is bracketed: its colons are not the port's.
    let (host, port) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains(']') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None => Port::Exact(default_port(scheme)?),
        Some("*") if wildcard => Port::Any,
        Some(p) => Port::Exact(p.parse().ok()?),
    };
    Some(Origin {
        scheme: scheme.to_string(),
        host: host.to_string(),
        port,
    })
}

/// Whether `allowed` (a config entry) is well formed.
pub fn valid_allowed_origin(allowed: &str) -> bool {
    allowed == "null" || parse(allowed, true).is_some()
}

/// Whether an `Origin` header value matches one of `allowed`.
///
/// ```
/// use codemode_config::origin_allowed;
/// let allowed = ["https://app.example".to_string(), "http://localhost:*".to_string()];
/// assert!(origin_allowed("https://app.example", &allowed));
/// assert!(origin_allowed("https://app.example:443", &allowed));
/// assert!(!origin_allowed("https://app.example:8443", &allowed));
/// assert!(origin_allowed("http://localhost:5173", &allowed));
/// assert!(!origin_allowed("null", &allowed));
/// ```
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if origin.trim() == "null" {
        return allowed.iter().any(|a| a.trim() == "null");
    }
    let Some(origin) = parse(origin, false) else {
        return false;
    };
    allowed.iter().filter_map(|a| parse(a, true)).any(|a| {
        a.scheme == origin.scheme
            && a.host == origin.host
            && (a.port == Port::Any || a.port == origin.port)
    })
}

/// `allowed` as rmcp's origin check must be given it to mean what [`origin_allowed`] means:
/// rmcp 3.9 matches a port-less entry against any port, so each gets its default port
/// written out.
pub fn explicit_default_ports(allowed: &[String]) -> Vec<String> {
    allowed
        .iter()
        .map(|a| match parse(a, true) {
            Some(Origin {
                scheme,
                host,
                port: Port::Exact(port),
            }) => format!("{scheme}://{host}:{port}"),
            _ => a.trim().to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn matching_is_exact_about_scheme_host_and_port() {
        let allowed = list(&[
            "https://ok.example",
            "http://dev.example:8080",
            "https://any.example:*",
            "null",
        ]);
        for (origin, want) in [
            ("https://ok.example", true),
            ("HTTPS://OK.EXAMPLE", true),
            ("https://ok.example:443", true),
            ("https://ok.example:8443", false),
            ("http://ok.example", false),
            ("https://ok.example.evil", false),
            ("https://evil.ok.example", false),
            ("http://dev.example:8080", true),
            ("http://dev.example", false),
            ("https://any.example:1", true),
            ("https://any.example", true),
            ("null", true),
            ("", false),
            ("https://ok.example/", false),
            ("https://ok.example@evil.example", false),
            ("https://[::1]:443", false),
        ] {
            assert_eq!(origin_allowed(origin, &allowed), want, "{origin}");
        }
        assert!(origin_allowed(
            "https://[::1]",
            &list(&["https://[::1]:443"])
        ));
        assert!(!origin_allowed("null", &list(&["https://ok.example"])));
    }

    #[test]
    fn rmcp_gets_default_ports_written_out() {
        assert_eq!(
            explicit_default_ports(&list(&[
                "https://ok.example",
                "http://a:8080",
                "http://b:*",
                "null",
                "HTTP://C"
            ])),
            list(&[
                "https://ok.example:443",
                "http://a:8080",
                "http://b:*",
                "null",
                "http://c:80"
            ])
        );
    }

    #[test]
    fn entries_are_validated() {
        for (entry, ok) in [
            ("https://ok.example", true),
            ("https://ok.example:*", true),
            ("null", true),
            ("ok.example", false),
            ("https://ok.example/path", false),
            ("https://ok.example:99999", false),
            ("ftp://ok.example", false),
            ("https://", false),
        ] {
            assert_eq!(valid_allowed_origin(entry), ok, "{entry}");
        }
    }
}
