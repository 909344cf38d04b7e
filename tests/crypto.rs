//! End-to-end check of the crypto suite: one quick run of the built
//! binary, shared by the tests below. Timings are never asserted; only
//! that every row ran (its round trip, known answer or signature check
//! passed before timing), its unit, its details and the findings.

mod common;

use std::sync::OnceLock;

use serde_json::Value;

/// The JSON document of `opcost run crypto --profile quick`, made once.
fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| common::run_doc(["run", "crypto", "--profile", "quick"]))
}

fn results() -> &'static [Value] {
    doc()["results"].as_array().expect("results is an array")
}

#[test]
fn every_row_passes_its_check_and_none_fails() {
    let skipped = doc()["skipped"].as_array().expect("skipped is an array");
    assert!(skipped.is_empty(), "skipped or failed rows: {skipped:?}");
    let ids: Vec<&str> = results()
        .iter()
        .map(|r| r["id"].as_str().expect("id"))
        .collect();
    for id in [
        "crypto.aes256gcm.encrypt/16KiB",
        "crypto.sha256/16KiB",
        "crypto.aes128gcm.encrypt/64B",
        "crypto.chacha20poly1305.encrypt/1KiB",
        "crypto.aes128ctr.encrypt/16KiB",
        "crypto.aes256ctr.encrypt/64B",
        "crypto.sha512/1KiB",
        "crypto.sha1/16KiB",
        "crypto.md5/64B",
        "crypto.blake3/16KiB",
        "crypto.ed25519.sign",
        "crypto.ed25519.verify",
        "crypto.x25519.keygen+derive",
        "crypto.ecdsap256.sign",
        "crypto.ecdsap256.verify",
        "crypto.rsa2048.sign",
        "crypto.rsa2048.verify",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    assert_eq!(ids.len(), 5 * 3 + 5 * 3 + 7, "{ids:?}");
}

#[test]
fn bulk_rows_are_bytes_per_second_and_public_key_rows_operations() {
    for r in results() {
        let id = r["id"].as_str().expect("id");
        assert_eq!(r["area"], "crypto", "{id}");
        let median = r["median"].as_f64().expect("median");
        assert!(median.is_finite() && median > 0.0, "{id}: {median}");
        let details = &r["details"];
        assert!(
            details["impl"].as_str().is_some_and(|s| !s.is_empty()),
            "{id}: {details}"
        );
        assert!(details["cpu_instructions"].is_string(), "{id}: {details}");
        assert!(
            r["params"]["implementation"].is_string() || r["unit"] == "ops/s",
            "{id}"
        );
        if r["unit"] == "B/s" {
            let bytes = r["params"]["bytes"].as_f64().expect("bytes");
            assert!([64.0, 1024.0, 16384.0].contains(&bytes), "{id}");
            assert_eq!(r["bytes_per_op"].as_f64(), Some(bytes), "{id}");
        } else {
            assert_eq!(r["unit"], "ops/s", "{id}");
            let op = id.rsplit('.').next().expect("an operation");
            assert!(["sign", "verify", "keygen+derive"].contains(&op), "{id}");
        }
    }
}

#[test]
fn findings_compare_aes_with_chacha_and_name_the_instructions() {
    let texts: Vec<&str> = common::findings_of(doc(), "crypto")
        .iter()
        .map(|f| f["text"].as_str().expect("text"))
        .collect();
    common::assert_one_says(&texts, &["ChaCha20-Poly1305", "AES-256-GCM"]);
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("CPU crypto instructions")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.starts_with("hashes at 16 KiB")),
        "{texts:?}"
    );
}
