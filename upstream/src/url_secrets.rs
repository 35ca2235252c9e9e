//! What of an upstream's URL never reaches a message: its user info, query and fragment.

/// `message` with the secret-bearing parts of `url` — user info, query and fragment, where
/// `${VAR}` substitutions usually put tokens — replaced by `…`: the message reaches logs, the
/// eval tools' descriptions and `search_tools` answers.
pub(crate) fn without_url_secrets(message: &str, url: &str) -> String {
    let mut out = message.to_string();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@')
        && !userinfo.is_empty()
    {
        out = out.replace(userinfo, "…");
    }
    if let Some(i) = url.find(['?', '#']) {
        let tail = &url[i + 1..];
        if !tail.is_empty() {
            out = out.replace(tail, "…");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::without_url_secrets;

    #[test]
    fn user_info_query_and_fragment_never_reach_a_message() {
        let url = "https://user:pa55@api.example/mcp?key=sk-live-1#frag";
        let message =
            format!("the MCP handshake with {url} failed: error sending request for url ({url})");
        let shown = without_url_secrets(&message, url);
        assert_eq!(
            shown,
            "the MCP handshake with https://…@api.example/mcp?… failed: error sending request for url (https://…@api.example/mcp?…)"
        );
        assert_eq!(
            without_url_secrets("failed: http://h/mcp", "http://h/mcp"),
            "failed: http://h/mcp"
        );
    }
}
