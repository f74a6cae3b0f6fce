//! Base64 as Go's `encoding/base64.StdEncoding` decodes `[]byte` JSON fields:
//! padding required, `\r` and `\n` skipped, non-zero trailing bits accepted,
//! and errors reported as the offset Go's `CorruptInputError` carries.

use base64::Engine;

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn is_newline(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

/// Decodes `s`; `Err(offset)` is Go's `illegal base64 data at input byte <offset>`.
pub(crate) fn decode(s: &str) -> Result<Vec<u8>, usize> {
    let src = s.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        let mut buf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_error = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // Padding is mandatory: an incomplete quantum is corrupt.
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = sextet(c) {
                buf[j] = v;
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && is_newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                trailing_error = Some(si);
            }
            dlen = j;
            break;
        }
        let val = (u32::from(buf[0]) << 18)
            | (u32::from(buf[1]) << 12)
            | (u32::from(buf[2]) << 6)
            | u32::from(buf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        match dlen {
            4 => out.extend_from_slice(&bytes),
            3 => out.extend_from_slice(&bytes[..2]),
            2 => out.push(bytes[0]),
            _ => {}
        }
        if let Some(offset) = trailing_error {
            return Err(offset);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
    Ok(out)
}

/// Standard padded encoding, as Go writes `[]byte` fields.
pub(crate) fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_go_offsets() {
        assert_eq!(decode("not base64!"), Err(3));
        assert_eq!(decode("YWJ"), Err(0));
        assert_eq!(decode("YQ="), Err(3));
        assert_eq!(decode("Y==="), Err(1));
        assert_eq!(decode("YQ==YQ=="), Err(4));
    }

    #[test]
    fn decodes_like_go() {
        assert_eq!(decode("YWJj").unwrap(), b"abc");
        assert_eq!(decode("YQ==").unwrap(), b"a");
        assert_eq!(decode("YWI=").unwrap(), b"ab");
        assert_eq!(decode("YW\nJj").unwrap(), b"abc");
        // Go's StdEncoding is not strict about the unused bits.
        assert_eq!(decode("YR==").unwrap(), b"a");
        assert_eq!(decode("").unwrap(), b"");
    }
}
