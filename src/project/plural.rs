//! English plurals of kinds, as Kubernetes names resources (`Policy` →
//! `policies`, `Ingress` → `ingresses`, `Endpoints` stays `endpoints`).
//!
//! Only the last word of a CamelCase kind is inflected (`SalesPerson` →
//! `salespeople`, `ServiceCIDR` → `servicecidrs`). A table of the irregular
//! and uncountable words kinds are made of comes first, then the suffix
//! rules. The plural is recorded in PROJECT when the kind is created, so a
//! change here never renames an existing kind's resource.

/// Words whose plural follows no rule.
const IRREGULAR: &[(&str, &str)] = &[
    ("appendix", "appendices"),
    ("axis", "axes"),
    ("bacterium", "bacteria"),
    ("calf", "calves"),
    ("child", "children"),
    ("codex", "codices"),
    ("criterion", "criteria"),
    ("curriculum", "curricula"),
    ("datum", "data"),
    ("die", "dice"),
    ("echo", "echoes"),
    ("elf", "elves"),
    ("foot", "feet"),
    ("goose", "geese"),
    ("half", "halves"),
    ("hero", "heroes"),
    ("index", "indices"),
    ("knife", "knives"),
    ("leaf", "leaves"),
    ("life", "lives"),
    ("loaf", "loaves"),
    ("louse", "lice"),
    ("man", "men"),
    ("matrix", "matrices"),
    ("medium", "media"),
    ("memorandum", "memoranda"),
    ("mouse", "mice"),
    ("ox", "oxen"),
    ("person", "people"),
    ("phenomenon", "phenomena"),
    ("potato", "potatoes"),
    ("quiz", "quizzes"),
    ("self", "selves"),
    ("shelf", "shelves"),
    ("thief", "thieves"),
    ("tomato", "tomatoes"),
    ("tooth", "teeth"),
    ("veto", "vetoes"),
    ("vertex", "vertices"),
    ("volcano", "volcanoes"),
    ("wife", "wives"),
    ("wolf", "wolves"),
    ("woman", "women"),
];

/// Words that are their own plural.
const UNCOUNTABLE: &[&str] = &[
    "aircraft",
    "audio",
    "bison",
    "data",
    "deer",
    "equipment",
    "evidence",
    "feedback",
    "firmware",
    "fish",
    "furniture",
    "hardware",
    "information",
    "knowledge",
    "metadata",
    "middleware",
    "money",
    "moose",
    "music",
    "news",
    "police",
    "research",
    "rice",
    "series",
    "sheep",
    "software",
    "species",
    "staff",
    "traffic",
];

/// Words ending in `s` that take `-es` although most such words are
/// plurals already (`endpoints`, `metrics`).
const ES_AFTER_AS: &[&str] = &["alias", "atlas", "bias", "gas"];

/// The resource name of `kind`: lowercase and plural.
pub fn plural_of(kind: &str) -> String {
    let split = last_word_start(kind);
    let head = kind[..split].to_ascii_lowercase();
    let word = kind[split..].to_ascii_lowercase();
    format!("{head}{}", plural_of_word(&word))
}

/// Where the last word of a CamelCase name starts: at its last capital
/// that follows a lowercase letter or precedes one (`ServiceCIDR` → `CIDR`,
/// `CIDRBlock` → `Block`, `database` → everything).
fn last_word_start(name: &str) -> usize {
    let chars: Vec<(usize, char)> = name.char_indices().collect();
    for i in (1..chars.len()).rev() {
        let (at, c) = chars[i];
        if !c.is_ascii_uppercase() {
            continue;
        }
        let after_lower = chars[i - 1].1.is_ascii_lowercase() || chars[i - 1].1.is_ascii_digit();
        let before_lower = chars
            .get(i + 1)
            .is_some_and(|(_, n)| n.is_ascii_lowercase());
        if after_lower || before_lower {
            return at;
        }
    }
    0
}

/// The plural of one lowercase word.
fn plural_of_word(word: &str) -> String {
    if let Some((_, plural)) = IRREGULAR.iter().find(|(one, _)| *one == word) {
        return (*plural).to_owned();
    }
    if UNCOUNTABLE.contains(&word) {
        return word.to_owned();
    }
    let consonant_before = |suffix_len: usize| {
        word[..word.len() - suffix_len]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphabetic() && !"aeiou".contains(c))
    };
    if word.ends_with('s') {
        return if word.ends_with("sis") {
            format!("{}es", &word[..word.len() - 2])
        } else if word.ends_with("ss")
            || word.ends_with("us")
            || word.ends_with("ris")
            || ES_AFTER_AS.contains(&word)
        {
            format!("{word}es")
        } else {
            // Already a plural: `endpoints`, `metrics`, `settings`.
            word.to_owned()
        };
    }
    if ["x", "z", "ch", "sh"].iter().any(|s| word.ends_with(s)) {
        return format!("{word}es");
    }
    if word.ends_with('y') && consonant_before(1) {
        return format!("{}ies", &word[..word.len() - 1]);
    }
    format!("{word}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_english() {
        for (kind, plural) in [
            ("Policy", "policies"),
            ("Ingress", "ingresses"),
            ("Database", "databases"),
            ("Status", "statuses"),
            ("SidecarSet", "sidecarsets"),
            ("NetworkPolicy", "networkpolicies"),
            ("Deployment", "deployments"),
            ("Proxy", "proxies"),
            ("Gateway", "gateways"),
            ("Box", "boxes"),
            ("Match", "matches"),
            ("Leaf", "leaves"),
            ("Index", "indices"),
            ("Person", "people"),
            ("SalesPerson", "salespeople"),
            ("Human", "humans"),
            ("Memcached", "memcacheds"),
            ("Analysis", "analyses"),
            ("Alias", "aliases"),
            ("Metrics", "metrics"),
            ("Repo", "repos"),
            ("Hero", "heroes"),
            ("Belief", "beliefs"),
            ("ServiceCIDR", "servicecidrs"),
            ("CIDRBlock", "cidrblocks"),
            ("S3Bucket", "s3buckets"),
            ("Software", "software"),
            ("X", "xes"),
        ] {
            assert_eq!(plural_of(kind), plural, "plural of {kind}");
        }
    }

    #[test]
    fn every_built_in_kind_gets_its_kubernetes_plural() {
        for kind in opctl_envtest::builtin_kinds() {
            assert_eq!(plural_of(kind.kind), kind.plural, "plural of {}", kind.kind);
        }
    }
}
