//! glTF JSON text, so that mutations change the document's structure rather than its binary
//! data: packed into a GLB whose BIN chunk is as long as the first buffer declares (at most
//! 1 MiB), zeros after a small fixed head of plausible vertex data. A first buffer with a data
//! URI is kept and the text loaded as it is; one naming a file has its URI dropped, the BIN
//! chunk standing for it. What loads goes through `facewire_fuzz::exercise`.

#![no_main]

use libfuzzer_sys::fuzz_target;

/// The largest BIN chunk made for a document.
const MAX_BIN: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut json = serde_json::from_str::<serde_json::Value>(text).ok();
    let first_buffer = json
        .as_mut()
        .and_then(|json| json.get_mut("buffers")?.get_mut(0)?.as_object_mut());
    let uri = first_buffer
        .as_ref()
        .and_then(|b| Some(b.get("uri")?.as_str()?.to_owned()));
    let declared = first_buffer
        .as_ref()
        .and_then(|b| b.get("byteLength")?.as_u64());
    let bytes = match (uri, first_buffer) {
        (Some(uri), _) if uri.starts_with("data:") => data.to_vec(),
        (uri, buffer) => {
            let mut text = data.to_vec();
            if let (Some(_), Some(buffer)) = (uri, buffer) {
                buffer.remove("uri");
                text = serde_json::to_vec(&json).expect("a value serialises");
            }
            let declared = declared.unwrap_or(0).min(MAX_BIN) as usize;
            let head = facewire_fuzz::fixed_bin();
            let mut bin = vec![0u8; declared];
            let n = head.len().min(declared);
            bin[..n].copy_from_slice(&head[..n]);
            facewire_fuzz::glb(&text, &bin)
        }
    };
    if let Ok(avatar) = facewire::avatar::load_slice_with(&bytes, "fuzz", &facewire_fuzz::LIMITS) {
        facewire_fuzz::exercise(avatar);
    }
});
