//! The image URL rule: what a room's cover and background (and a robot room's cover) may
//! point at. Every app in the room loads these addresses, so only web addresses of a plain
//! shape pass: `http` or `https`, a host name, an optional port, then printable ASCII. No
//! `javascript:` or `data:` URL, no credentials before the host, no address a browser would
//! read otherwise than it looks.

use crate::rejection::{Field, Rejection};

/// The longest image URL, in bytes (an image URL is ASCII: one byte per character).
pub const MAX_IMAGE_URL_BYTES: usize = Field::CoverUrl.max_chars() as usize;

/// The image URL rule as a regular expression, for the API's schema: the empty string (which
/// removes the image) or a URL [`check_image_url`] accepts, and nothing else (with the length
/// bound, [`MAX_IMAGE_URL_BYTES`], beside it).
///
/// `http://` or `https://` in lowercase; a host name of dot-separated labels of ASCII letters,
/// digits and `-`, none starting with `xn--` (so that no label is a Punycode name that reads as
/// other letters), the last starting with a letter (so that no host is an IPv4 address, which
/// the parser might read otherwise); an optional port 0 to 65535; then optionally a path,
/// query or fragment of printable ASCII without spaces (non-ASCII is percent-encoded).
pub const IMAGE_URL_PATTERN: &str = concat!(
    r"^(?:|https?://",
    // Labels then a dot; a label not starting with `xn--`, spelled without look-ahead (which
    // not every regular expression engine has): no `x`, or `x` then no `n`, or `xn` then no
    // `-`, or `xn-` then no `-`.
    r"(?:(?:[A-WYZa-wyz0-9-][A-Za-z0-9-]*|[Xx](?:[A-MO-Za-mo-z0-9-][A-Za-z0-9-]*)?",
    r"|[Xx][Nn](?:[A-Za-z0-9][A-Za-z0-9-]*)?|[Xx][Nn]-(?:[A-Za-z0-9][A-Za-z0-9-]*)?)\.)*",
    // The last label: the same, starting with a letter.
    r"(?:[A-WYZa-wyz][A-Za-z0-9-]*|[Xx](?:[A-MO-Za-mo-z0-9-][A-Za-z0-9-]*)?",
    r"|[Xx][Nn](?:[A-Za-z0-9][A-Za-z0-9-]*)?|[Xx][Nn]-(?:[A-Za-z0-9][A-Za-z0-9-]*)?)",
    r"(?::(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"(?:[/?#][!-~]*)?)$"
);

/// Checks a (non-empty) image URL of `field`: at most [`MAX_IMAGE_URL_BYTES`] bytes, of the
/// shape [`IMAGE_URL_PATTERN`] describes, and an absolute `http` or `https` URL with a host to
/// the WHATWG URL parser (the `url` crate, which parses as browsers do). Else
/// [`Rejection::InvalidUrl`] naming the field.
pub fn check_image_url(field: Field, url: &str) -> Result<(), Rejection> {
    let parses = || {
        url::Url::parse(url).is_ok_and(|parsed| {
            matches!(parsed.scheme(), "http" | "https") && parsed.host_str().is_some()
        })
    };
    if url.len() <= MAX_IMAGE_URL_BYTES && has_image_url_shape(url) && parses() {
        Ok(())
    } else {
        Err(Rejection::InvalidUrl { field })
    }
}

/// Whether `url` matches [`IMAGE_URL_PATTERN`] (but for the empty string), checked by hand.
fn has_image_url_shape(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if !tail.bytes().all(|b| (b'!'..=b'~').contains(&b)) {
        return false;
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if let Some(port) = port {
        let digits = (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit());
        let in_range = port.len() < 5
            || (!port.starts_with('0') && port.parse::<u32>().is_ok_and(|p| p <= 65_535));
        if !digits || !in_range {
            return false;
        }
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label
                .get(..4)
                .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
    };
    let last_ok = host
        .rsplit('.')
        .next()
        .and_then(|last| last.bytes().next())
        .is_some_and(|first| first.is_ascii_alphabetic());
    last_ok && host.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(url: &str) -> bool {
        check_image_url(Field::CoverUrl, url).is_ok()
    }

    #[test]
    fn plain_web_addresses_pass() {
        for url in [
            "https://img.example/cover.png",
            "http://cdn.example.com:8080/a/b.jpg?w=200&h=100#top",
            "https://A-1.Example/x%20y.png",
            "https://localhost",
            "https://img.example:65535/",
            "https://img.example:0",
            "https://img.example?v=2",
        ] {
            assert!(accepted(url), "{url}");
        }
        let longest = format!("https://img.example/{}", "a".repeat(2048 - 20));
        assert_eq!(longest.len(), MAX_IMAGE_URL_BYTES);
        assert!(accepted(&longest));
    }

    #[test]
    fn other_schemes_shapes_and_lengths_are_refused() {
        let too_long = format!("https://img.example/{}", "a".repeat(2048 - 19));
        for url in [
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "ftp://img.example/a.png",
            "HTTPS://img.example/a.png",
            "//img.example/a.png",
            "/relative/a.png",
            "https://",
            "https:///a.png",
            "https://user:pass@img.example/a.png",
            "https://10.0.0.1/a.png",
            "https://img.123/a.png",
            "https://xn--80ak6aa92e.com/a.png",
            "https://img..example/",
            "https://img.example./",
            "https://img.example:65536/",
            "https://img.example:08080/",
            "https://img.example:/",
            "https://[::1]/a.png",
            "https://img.example/a b.png",
            "https://img.example/\u{202E}gnp.exe",
            "https://img.example/caf\u{e9}.png",
            " https://img.example/a.png",
            "https://img.example/a.png\n",
            "https://img_example/a.png",
            "https://img.example\\a.png",
            &too_long,
        ] {
            assert_eq!(
                check_image_url(Field::BackgroundUrl, url),
                Err(Rejection::InvalidUrl {
                    field: Field::BackgroundUrl
                }),
                "{url:?}"
            );
        }
    }

    /// Every URL of the pattern's shape parses: the regular expression the schema publishes
    /// and the parser agree, so a client that keeps to the schema is never refused.
    #[test]
    fn every_url_of_the_shape_parses() {
        use proptest::prelude::*;
        let label = "[A-Za-z0-9-]{1,12}";
        let last = "[A-Za-z][A-Za-z0-9-]{0,12}";
        let shape =
            format!("https?://({label}\\.){{0,3}}{last}(:[1-9][0-9]{{0,3}})?([/?#][!-~]{{0,40}})?");
        proptest!(|(url in shape.as_str())| {
            let xn = url
                .split(['/', '.', ':'])
                .any(|label| label.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("xn--")));
            prop_assume!(!xn);
            prop_assert!(has_image_url_shape(&url), "{}", url);
            prop_assert!(accepted(&url), "{}", url);
        });
    }
}
