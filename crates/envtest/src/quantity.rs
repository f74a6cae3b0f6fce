//! `resource.Quantity`: parsing with Go's rules and messages, the canonical
//! text Go writes back (`1000m` → `1`, `1024Mi` → `1Gi`, `0.5` → `500m`), and
//! comparison (QoS class, requests ≤ limits, CEL's `quantity` library).

/// Go's `ErrFormatWrong`.
pub(crate) const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// How the quantity was written; Go keeps the family when canonicalising.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// A parsed quantity, held in units of 10⁻⁹ (Go rounds finer values up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quantity {
    nanos: i128,
    format: Format,
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;

fn pow10(exp: u32) -> Option<i128> {
    10i128.checked_pow(exp)
}

impl Quantity {
    /// Parses as Go's `resource.ParseQuantity`.
    pub(crate) fn parse(text: &str) -> Result<Quantity, String> {
        if text.is_empty() {
            return Err(FORMAT_ERROR.to_string());
        }
        let bytes = text.as_bytes();
        let mut pos = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                pos = 1;
                true
            }
            Some(b'+') => {
                pos = 1;
                false
            }
            _ => false,
        };
        let num_start = pos;
        let mut seen_dot = false;
        while pos < bytes.len() && (bytes[pos].is_ascii_digit() || bytes[pos] == b'.') {
            if bytes[pos] == b'.' {
                if seen_dot {
                    return Err(FORMAT_ERROR.to_string());
                }
                seen_dot = true;
            }
            pos += 1;
        }
        let number = &text[num_start..pos];
        if number.is_empty() || number == "." {
            return Err(FORMAT_ERROR.to_string());
        }
        let suffix_start = pos;
        while pos < bytes.len() && b"eEinumkKMGTP".contains(&bytes[pos]) {
            pos += 1;
        }
        if pos < bytes.len() && (bytes[pos] == b'-' || bytes[pos] == b'+') {
            pos += 1;
        }
        if !bytes[pos..].iter().all(u8::is_ascii_digit) {
            return Err(FORMAT_ERROR.to_string());
        }
        let suffix = &text[suffix_start..];
        let (format, exp10, exp2): (Format, i32, u32) = match suffix {
            "" => (Format::DecimalSi, 0, 0),
            "n" => (Format::DecimalSi, -9, 0),
            "u" => (Format::DecimalSi, -6, 0),
            "m" => (Format::DecimalSi, -3, 0),
            "k" => (Format::DecimalSi, 3, 0),
            "M" => (Format::DecimalSi, 6, 0),
            "G" => (Format::DecimalSi, 9, 0),
            "T" => (Format::DecimalSi, 12, 0),
            "P" => (Format::DecimalSi, 15, 0),
            "E" => (Format::DecimalSi, 18, 0),
            "Ki" => (Format::BinarySi, 0, 10),
            "Mi" => (Format::BinarySi, 0, 20),
            "Gi" => (Format::BinarySi, 0, 30),
            "Ti" => (Format::BinarySi, 0, 40),
            "Pi" => (Format::BinarySi, 0, 50),
            "Ei" => (Format::BinarySi, 0, 60),
            s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
                let exp: i32 = s[1..]
                    .parse()
                    .map_err(|_| "unable to parse quantity's suffix".to_string())?;
                (Format::DecimalExponent, exp, 0)
            }
            _ => return Err("unable to parse quantity's suffix".to_string()),
        };
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        let digits: String = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        let mantissa: i128 = if digits.is_empty() {
            0
        } else if digits.len() > 36 {
            return Err("quantity is too large".to_string());
        } else {
            digits.parse().map_err(|_| FORMAT_ERROR.to_string())?
        };
        // value = mantissa × 10^(exp10 − frac digits) × 2^exp2, in nanos.
        let scale = exp10 - frac_part.len() as i32 + 9;
        let overflow = || "quantity is too large".to_string();
        let mut nanos = mantissa.checked_mul(1i128 << exp2).ok_or_else(overflow)?;
        if scale >= 0 {
            nanos = nanos
                .checked_mul(pow10(scale as u32).ok_or_else(overflow)?)
                .ok_or_else(overflow)?;
        } else {
            let div = pow10(scale.unsigned_abs()).unwrap_or(i128::MAX);
            // Finer than a nano: Go rounds up (away from zero).
            let rounded_up = nanos % div != 0;
            nanos = nanos / div + i128::from(rounded_up);
        }
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// The text Go serialises.
    pub(crate) fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySi
            && (self.nanos.abs() < 1024 * NANOS_PER_UNIT || self.nanos % NANOS_PER_UNIT != 0)
        {
            format = Format::DecimalSi;
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        if format == Format::BinarySi {
            let mut amount = magnitude / 1_000_000_000;
            let mut power = 0;
            while power < 6 && amount.is_multiple_of(1024) {
                amount /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{amount}{suffix}");
        }
        let mut amount = magnitude;
        let mut exponent: i32 = -9;
        while amount.is_multiple_of(10) {
            amount /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                amount *= 10;
                exponent -= 1;
            }
            2 => {
                amount *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let suffix = match (format, exponent) {
            (Format::DecimalExponent, 0) => String::new(),
            (Format::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 0) => String::new(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{sign}{amount}{suffix}")
    }

    /// The sum, in this quantity's format (a zero takes the other's, as
    /// Go's `Quantity.Add` does).
    pub(crate) fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos + other.nanos,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The difference, never below zero (Go's `SubtractWithNonNegativeResult`).
    pub(crate) fn sub_non_negative(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: (self.nanos - other.nanos).max(0),
            format: self.format,
        }
    }

    /// A whole number of units (object counts).
    pub(crate) fn count(n: i64) -> Quantity {
        Quantity {
            nanos: i128::from(n) * NANOS_PER_UNIT,
            format: Format::DecimalSi,
        }
    }

    /// The value in units of 10⁻⁹, for comparisons.
    pub(crate) fn nanos(&self) -> i128 {
        self.nanos
    }
}

/// Parses a quantity given as JSON (string or number); `None` when invalid.
pub(crate) fn from_json(value: &serde_json::Value) -> Option<Quantity> {
    match value {
        serde_json::Value::String(s) => Quantity::parse(s.trim()).ok(),
        serde_json::Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_else(|e| e)
    }

    #[test]
    fn canonical_forms_match_go() {
        assert_eq!(canon("100m"), "100m");
        assert_eq!(canon("64Mi"), "64Mi");
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1.5Gi"), "1536Mi");
        assert_eq!(canon("1000"), "1k");
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("512Ki"), "512Ki");
        assert_eq!(canon("100Ki"), "100Ki");
        assert_eq!(canon("0.0000000001"), "1n");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("-1.5"), "-1500m");
        assert_eq!(canon("1Ki"), "1Ki");
        assert_eq!(canon("0.5Ki"), "512");
    }

    #[test]
    fn rejects_what_go_rejects() {
        assert_eq!(canon("abc"), FORMAT_ERROR);
        assert_eq!(canon(""), FORMAT_ERROR);
        assert_eq!(canon("1K"), "unable to parse quantity's suffix");
        assert_eq!(canon("1.2.3"), FORMAT_ERROR);
    }

    #[test]
    fn compares_across_formats() {
        let a = Quantity::parse("1Gi").unwrap();
        let b = Quantity::parse("1073741824").unwrap();
        assert_eq!(a.nanos(), b.nanos());
        assert!(Quantity::parse("100m").unwrap().nanos() < Quantity::parse("1").unwrap().nanos());
    }
}
