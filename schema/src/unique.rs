//! Maps whose keys are given once: a key given twice in a scenario (`switches`, codelet
//! `models`, forced collective algorithms) is an error naming it, where a plain map would
//! keep the last value and drop the first without a word.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// Deserializes a map, refusing a key given twice (`#[serde(deserialize_with = ...)]`).
pub fn map<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Once<V>(PhantomData<V>);

    impl<'de, V: Deserialize<'de>> Visitor<'de> for Once<V> {
        type Value = BTreeMap<String, V>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map whose keys are given once")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((key, value)) = access.next_entry::<String, V>()? {
                if out.contains_key(&key) {
                    return Err(serde::de::Error::custom(format!(
                        "the key `{key}` is given twice"
                    )));
                }
                out.insert(key, value);
            }
            Ok(out)
        }
    }

    d.deserialize_map(Once(PhantomData))
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize, Debug)]
    struct S {
        #[serde(deserialize_with = "super::map")]
        m: std::collections::BTreeMap<String, bool>,
    }

    #[test]
    fn a_key_given_twice_is_refused_and_once_is_kept() {
        let s: S = ron::from_str(r#"(m: {"a": true, "b": false})"#).unwrap();
        assert_eq!(s.m.len(), 2);
        let err = ron::from_str::<S>(r#"(m: {"a": true, "a": false})"#).unwrap_err();
        assert!(
            err.to_string().contains("the key `a` is given twice"),
            "{err}"
        );
    }
}
