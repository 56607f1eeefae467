//! Textures and materials: decoding each glTF texture's image once, within the texture budget
//! (a placeholder where that fails), and reading every material, with its texture transform and
//! VRM MToon parameters.

use super::budget::{self, Budget, Decision};
use super::source::check_uri;
use super::{label, texture, Loader};
use crate::avatar::{mtoon, AlphaMode, Material, Texture, TextureTransform};
use glam::Vec2;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::panic::{self, AssertUnwindSafe};

/// The texture extensions that name an image of their own, in the order they are preferred
/// over the plain `source` (which such files keep as an optional fallback).
const IMAGE_EXTENSIONS: [&str; 2] = ["EXT_texture_webp", "KHR_texture_basisu"];

impl Loader<'_> {
    /// Decodes every glTF texture from its image, in texture order, with its sampler. The image
    /// is the first that decodes of: the `EXT_texture_webp` image, the `KHR_texture_basisu`
    /// image, the plain `source`. A texture none of whose images decodes (unsupported encoding,
    /// missing file, corrupt data, too large, over the budget) is replaced by a 1×1 white
    /// placeholder with a warning: a wrong-coloured avatar is more useful on stream than none.
    ///
    /// Each image is decoded once, however many textures draw from it, and the textures share
    /// its pixels. Before any is decoded, every image's header is read and the decoded sizes
    /// are planned within the texture budget ([`super::LoadLimits`]); an image that does not
    /// fit is shrunk, with a warning naming it.
    pub(super) fn textures(&self) -> Vec<Texture> {
        let candidates: Vec<Vec<usize>> = self
            .document
            .textures()
            .map(|texture| self.image_candidates(&texture))
            .collect();
        // Every candidate image's declared size, read from its header alone.
        let mut sizes: HashMap<usize, Result<(u32, u32), String>> = HashMap::new();
        for &image in candidates.iter().flatten() {
            sizes.entry(image).or_insert_with(|| {
                let bytes = self.image_bytes(image)?;
                self.check_mime_type(image, &bytes)?;
                guarded(|| texture::declared_size(&bytes))
            });
        }
        // The images the textures are expected to draw from (each texture's first candidate
        // whose header reads), in the order of first use, planned into the budget.
        let mut expected = Vec::new();
        let mut seen = HashSet::new();
        for list in &candidates {
            let first = list
                .iter()
                .find_map(|&image| Some((image, *sizes.get(&image)?.as_ref().ok()?)));
            if let Some((image, (width, height))) = first {
                if seen.insert(image) {
                    expected.push((image, width, height));
                }
            }
        }
        let mut budget = Budget::plan(self.limits.texture_budget, &expected);
        let mut decoded: HashMap<usize, Result<Texture, String>> = HashMap::new();
        let mut textures = Vec::new();
        let json = self.document.as_json();
        for (texture, list) in self.document.textures().zip(&candidates) {
            let mut failures: Vec<String> = Vec::new();
            let mut chosen = None;
            for &image in list {
                let result = decoded
                    .entry(image)
                    .or_insert_with(|| self.decode_image(image, &sizes, &mut budget));
                match result {
                    Ok(done) => {
                        chosen = Some(done.clone());
                        break;
                    }
                    Err(reason) => failures.push(format!("{}: {reason}", self.image_label(image))),
                }
            }
            let reason = if failures.is_empty() {
                "the texture names no image".to_owned()
            } else {
                failures.join("; ")
            };
            let mut rgba = match chosen {
                Some(done) => {
                    if !failures.is_empty() {
                        tracing::warn!(
                            file = self.file,
                            texture = texture.index(),
                            %reason,
                            "texture falls back to another of its images"
                        );
                    }
                    done
                }
                None => {
                    tracing::warn!(
                        file = self.file,
                        texture = texture.index(),
                        %reason,
                        "texture replaced by a white placeholder"
                    );
                    texture::placeholder()
                }
            };
            let sampler = json
                .textures
                .get(texture.index())
                .and_then(|t| t.sampler)
                .and_then(|index| json.samplers.get(index.value()));
            rgba.sampler = texture::sampler(sampler);
            textures.push(rgba);
        }
        let images = decoded.values().filter(|r| r.is_ok()).count();
        if images > 0 {
            tracing::debug!(
                file = self.file,
                textures = textures.len(),
                images,
                decoded_mib = budget::mib(budget.kept()),
                budget_mib = budget::mib(budget.limit()),
                "textures decoded"
            );
        }
        textures
    }

    /// Refuses a PNG or JPEG in a buffer view without the `mimeType` glTF requires there (WebP
    /// and KTX2 images, which their extensions name, are told by their bytes alone).
    fn check_mime_type(&self, index: usize, bytes: &[u8]) -> Result<(), String> {
        let json = self.document.as_json().images.get(index);
        let unlabelled = json.is_some_and(|j| j.buffer_view.is_some() && j.mime_type.is_none());
        if unlabelled && texture::sniff(bytes) == texture::Encoding::Other {
            return Err("image in a buffer view has no mimeType".into());
        }
        Ok(())
    }

    /// `"name" (image 3)`, or `image 3` for an image without a name.
    fn image_label(&self, index: usize) -> String {
        let name = self
            .document
            .as_json()
            .images
            .get(index)
            .and_then(|image| image.name.as_deref());
        label("image", name, index)
    }

    /// The images a texture may be drawn from, most preferred first, without repeats: each
    /// image extension's `source` (when it is an index of an existing image), then the plain
    /// `source`.
    fn image_candidates(&self, texture: &gltf::Texture<'_>) -> Vec<usize> {
        let count = self.document.images().len();
        let mut candidates = Vec::new();
        for name in IMAGE_EXTENSIONS {
            let source = texture
                .extension_value(name)
                .and_then(|ext| ext.get("source"))
                .and_then(serde_json::Value::as_u64);
            match source {
                Some(index) if (index as usize) < count => candidates.push(index as usize),
                Some(index) => tracing::warn!(
                    file = self.file,
                    texture = texture.index(),
                    extension = name,
                    image = index,
                    "texture extension names an image the file does not have"
                ),
                None => {}
            }
        }
        if let Some(image) = texture.source() {
            candidates.push(image.index());
        }
        let mut seen = Vec::new();
        candidates.retain(|&image| {
            let first = !seen.contains(&image);
            seen.push(image);
            first
        });
        candidates
    }

    /// Decodes image `index` at the size the budget allows (its declared size is in `sizes`):
    /// WebP and KTX2 (told by their first bytes), PNG and JPEG. The decoders run under a panic
    /// guard of their own, so that a decoder bug on a hostile image costs that texture, not the
    /// avatar.
    fn decode_image(
        &self,
        index: usize,
        sizes: &HashMap<usize, Result<(u32, u32), String>>,
        budget: &mut Budget,
    ) -> Result<Texture, String> {
        let (width, height) = match sizes.get(&index) {
            Some(Ok(size)) => *size,
            Some(Err(reason)) => return Err(reason.clone()),
            None => return Err("its header was not read".into()),
        };
        let target = match budget.decide(index, width, height) {
            Decision::Full => None,
            Decision::Shrink { width, height } => Some((width, height)),
            Decision::Refuse(reason) => {
                budget.settle(index, None);
                return Err(reason);
            }
        };
        let result = self.image_bytes(index).and_then(|bytes| {
            let image = guarded(|| texture::decode(&bytes))?;
            if (image.width, image.height) != (width, height) {
                return Err(format!(
                    "it decodes to {}×{}, not the {width}×{height} its header declares",
                    image.width, image.height
                ));
            }
            match target {
                Some((w, h)) => guarded(|| image.shrunk(w, h)),
                None => Ok(image),
            }
        });
        budget.settle(index, result.as_ref().ok().map(|i| (i.width, i.height)));
        let image = result?;
        if target.is_some() {
            tracing::warn!(
                file = self.file,
                image = %self.image_label(index),
                declared = %format!("{width}×{height}"),
                kept = %format!("{}×{}", image.width, image.height),
                budget_mib = budget::mib(budget.limit()),
                "image shrunk to fit the decoded-texture budget; the avatar loads with it less \
                 sharp (raise render.texture_budget_mb to keep it whole)"
            );
        }
        Ok(image.into_texture())
    }

    /// The encoded bytes of image `index`, after checking its source in the JSON (the `gltf`
    /// crate's accessors unwrap what they find there): a buffer view inside its buffer, or a
    /// URI the importer can resolve (a data URI, or a file beside the glTF).
    fn image_bytes(&self, index: usize) -> Result<Cow<'_, [u8]>, String> {
        let json = self
            .document
            .as_json()
            .images
            .get(index)
            .ok_or_else(|| "image missing from the document".to_string())?;
        match (&json.buffer_view, &json.uri) {
            (Some(view), _) => {
                let view = self
                    .document
                    .views()
                    .nth(view.value())
                    .ok_or_else(|| "image buffer view does not exist".to_string())?;
                let buffer = self
                    .buffers
                    .get(view.buffer().index())
                    .map_or(&[][..], |data| &data[..]);
                view.offset()
                    .checked_add(view.length())
                    .and_then(|end| buffer.get(view.offset()..end))
                    .map(Cow::Borrowed)
                    .ok_or_else(|| {
                        format!(
                            "image buffer view {} runs past the end of its buffer",
                            view.index()
                        )
                    })
            }
            (None, Some(uri)) => {
                check_uri(uri, self.base)?;
                gltf::buffer::Data::from_source(gltf::buffer::Source::Uri(uri), self.base)
                    .map(|data| Cow::Owned(data.0))
                    .map_err(|e| e.to_string())
            }
            (None, None) => Err("image has neither a uri nor a bufferView".into()),
        }
    }

    /// Every material, in glTF order. Textures are per glTF texture, so a base colour texture's
    /// glTF index is its index into [`Avatar::textures`]. VRM MToon parameters (1.0 on the
    /// material, 0.x in the root `VRM` extension) are read here too.
    pub(super) fn materials(&self, texture_count: usize) -> Vec<Material> {
        let mut materials: Vec<Material> = self
            .document
            .materials()
            .map(|material| {
                let index = material.index().unwrap_or(0);
                let pbr = material.pbr_metallic_roughness();
                let mut base_color = pbr.base_color_factor();
                if base_color.iter().any(|c| !c.is_finite()) {
                    tracing::warn!(
                        file = self.file,
                        material = index,
                        "non-finite base colour factor replaced by white"
                    );
                    base_color = [1.0; 4];
                }
                let info = pbr.base_color_texture();
                let transform = info.as_ref().and_then(|info| info.texture_transform());
                let base_color_tex_coord = info.as_ref().map_or(0, |info| {
                    transform
                        .as_ref()
                        .and_then(|t| t.tex_coord())
                        .unwrap_or(info.tex_coord())
                });
                let base_color_transform = match &transform {
                    Some(t) => {
                        let read = TextureTransform {
                            offset: Vec2::from(t.offset()),
                            rotation: t.rotation(),
                            scale: Vec2::from(t.scale()),
                        };
                        if read.offset.is_finite()
                            && read.rotation.is_finite()
                            && read.scale.is_finite()
                        {
                            read
                        } else {
                            tracing::warn!(
                                file = self.file,
                                material = index,
                                "non-finite KHR_texture_transform ignored"
                            );
                            TextureTransform::IDENTITY
                        }
                    }
                    None => TextureTransform::IDENTITY,
                };
                let alpha_cutoff = material.alpha_cutoff().unwrap_or(0.5);
                let toon = material
                    .extension_value("VRMC_materials_mtoon")
                    .map(|ext| mtoon::from_vrmc(ext, texture_count));
                Material {
                    name: material.name().map(str::to_owned),
                    base_color,
                    base_color_texture: info.map(|info| info.texture().index()),
                    double_sided: material.double_sided(),
                    alpha_mode: match material.alpha_mode() {
                        gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
                        gltf::material::AlphaMode::Mask => AlphaMode::Mask,
                        gltf::material::AlphaMode::Blend => AlphaMode::Blend,
                    },
                    alpha_cutoff: if alpha_cutoff.is_finite() {
                        alpha_cutoff
                    } else {
                        0.5
                    },
                    base_color_tex_coord,
                    base_color_transform,
                    unlit: material.unlit(),
                    emissive: emissive_factor(material.emissive_factor()),
                    emissive_texture: material.emissive_texture().map(|t| t.texture().index()),
                    toon,
                }
            })
            .collect();
        if let Some(vrm) = self.document.extension_value("VRM") {
            let toon = mtoon::apply_vrm0(vrm, &mut materials, texture_count, self.file);
            tracing::debug!(
                file = self.file,
                materials = toon,
                "VRM 0.x MToon materials read"
            );
        }
        materials
    }
}

/// Runs an image decoder (or header reader) under a panic guard: a panic in it becomes an error
/// for that image.
fn guarded<T>(decode: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(decode)).unwrap_or_else(|payload| {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(format!("the image decoder failed: {detail}"))
    })
}

/// glTF's `emissiveFactor`, with a non-finite channel read as black.
fn emissive_factor(factor: [f32; 3]) -> [f32; 3] {
    factor.map(|c| if c.is_finite() { c } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::gltf_json;
    use super::*;
    use crate::avatar::load::load_slice;

    #[test]
    fn undecodable_textures_become_placeholders() {
        let body = r#""images":[{"uri":"data:image/png;base64,AAAA"}],"textures":[{"source":0}],
            "materials":[{"pbrMetallicRoughness":{"baseColorTexture":{"index":0}},"doubleSided":true}]"#;
        let avatar = load_slice(&gltf_json(&[0; 4], body), "bad-png").unwrap();
        assert_eq!(avatar.textures, vec![texture::placeholder()]);
        assert_eq!(avatar.materials[0].base_color_texture, Some(0));
        assert!(avatar.materials[0].double_sided);
    }
}
