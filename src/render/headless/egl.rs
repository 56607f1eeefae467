//! The headless context's platform on Linux (and the BSDs): EGL's device platform, no X server
//! and no environment variables.
//!
//! EGL lists the machine's devices (`EGL_EXT_device_enumeration`). Mesa always adds a software
//! device (llvmpipe, marked by the `EGL_MESA_device_software` extension); GPUs come as their
//! own devices. The context is made on:
//!
//! - the software device first when `FACEWIRE_EGL_DEVICE=software` is set (reproducible
//!   snapshots on any machine);
//! - otherwise the first hardware device, in the order EGL lists them, with the software device
//!   as the fallback (and the only choice on a machine without a GPU).
//!
//! When a device fails (no driver access inside a container, no suitable config), the next one
//! is tried, with a warning naming the failure.

use glutin::api::egl::context::PossiblyCurrentContext;
use glutin::api::egl::device::Device;
use glutin::api::egl::display::Display;
use glutin::config::{Api, ConfigSurfaceTypes, ConfigTemplateBuilder};
use glutin::prelude::*;

use super::super::debug::{create_core_context, load_context, preferred_offscreen_config};
use super::super::RenderError;
use super::DEVICE_ENV;

/// The extension Mesa's software device advertises.
const SOFTWARE_EXTENSION: &str = "EGL_MESA_device_software";

/// An EGL context current without a surface, on one device.
pub(super) struct Platform {
    /// The EGL context (dropped before the display).
    context: PossiblyCurrentContext,
    /// The EGL display.
    _display: Display,
}

impl Platform {
    /// A context on the first usable device (see the module docs), its GL functions and a
    /// description of the device for logs.
    pub(super) fn create() -> Result<(Platform, glow::Context, String), RenderError> {
        let devices: Vec<Device> = Device::query_devices()
            .map_err(|source| RenderError::Platform {
                what: "querying EGL devices",
                source,
            })?
            .collect();
        let want_software = std::env::var(DEVICE_ENV)
            .map(|v| v.eq_ignore_ascii_case("software"))
            .unwrap_or(false);
        let software: Vec<bool> = devices
            .iter()
            .map(|d| d.extensions().contains(SOFTWARE_EXTENSION))
            .collect();
        let mut failures = Vec::new();
        for index in device_order(&software, want_software) {
            let device = &devices[index];
            let label = describe(device, index);
            match create_on_device(device) {
                Ok((display, context, gl)) => {
                    tracing::info!(device = %label, "headless EGL context created");
                    let platform = Platform {
                        context,
                        _display: display,
                    };
                    return Ok((platform, gl, label));
                }
                Err(e) => {
                    tracing::warn!(device = %label, error = %e, "EGL device unusable; trying the next one");
                    failures.push(format!("{label}: {e}"));
                }
            }
        }
        if failures.is_empty() {
            failures.push("EGL lists no devices".to_owned());
        }
        Err(RenderError::NoDevice(failures.join("; ")))
    }

    /// Makes the context current on the calling thread.
    pub(super) fn make_current(&self) -> Result<(), RenderError> {
        self.context
            .make_current_surfaceless()
            .map_err(|source| RenderError::Platform {
                what: "making the headless context current",
                source,
            })
    }

    /// Releases the context from the calling thread (before it is dropped).
    pub(super) fn release(&self) {
        if let Err(e) = self.context.make_not_current_in_place() {
            tracing::debug!(error = %e, "releasing the headless context failed");
        }
    }
}

/// The order in which devices are tried (see the module docs), given which of them are
/// software devices.
fn device_order(is_software: &[bool], want_software: bool) -> Vec<usize> {
    let (software, hardware): (Vec<usize>, Vec<usize>) =
        (0..is_software.len()).partition(|&i| is_software[i]);
    if want_software {
        software.into_iter().chain(hardware).collect()
    } else {
        hardware.into_iter().chain(software).collect()
    }
}

/// A short description of a device for logs.
fn describe(device: &Device, index: usize) -> String {
    let kind = if device.extensions().contains(SOFTWARE_EXTENSION) {
        "software"
    } else {
        "hardware"
    };
    let mut label = format!("#{index} {kind}");
    if let Some(name) = device.name().or(device.vendor()) {
        label.push_str(&format!(" {name}"));
    }
    if let Some(node) = device.drm_render_device_node_path() {
        label.push_str(&format!(" {}", node.display()));
    }
    label
}

/// Creates a display, a core context made current without a surface, and the loaded GL
/// functions on one device.
fn create_on_device(
    device: &Device,
) -> Result<(Display, PossiblyCurrentContext, glow::Context), RenderError> {
    let platform = |what: &'static str| move |source| RenderError::Platform { what, source };
    // SAFETY: no native display is passed, which is the documented precondition-free case.
    let display = unsafe { Display::with_device(device, None) }
        .map_err(platform("creating the EGL display"))?;
    let template = ConfigTemplateBuilder::new()
        .with_api(Api::OPENGL)
        .with_surface_type(ConfigSurfaceTypes::empty())
        .build();
    // SAFETY: the template is fully built; the display is initialised.
    let configs: Vec<_> = unsafe { display.find_configs(template) }
        .map_err(platform("listing EGL configs"))?
        .collect();
    let config = preferred_offscreen_config(&configs)
        .ok_or_else(|| RenderError::NoConfig("the EGL device offers no OpenGL config".into()))?;
    // SAFETY: the config belongs to this display; no window handle is involved.
    let not_current = unsafe { create_core_context(&display, &config, None) }?;
    let context = not_current
        .make_current_surfaceless()
        .map_err(platform("making the headless context current"))?;
    // SAFETY: the context is current on this thread and the loader is EGL's own.
    let gl = unsafe { load_context(|s| display.get_proc_address(s), "EGL device") }?;
    Ok((display, context, gl))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_devices_come_first_unless_software_is_asked_for() {
        assert_eq!(device_order(&[true], false), [0]);
        assert_eq!(device_order(&[true], true), [0]);
        assert_eq!(device_order(&[true, false, false], false), [1, 2, 0]);
        assert_eq!(device_order(&[false, true, false], true), [1, 0, 2]);
        assert_eq!(device_order(&[false], true), [0]);
        assert!(device_order(&[], false).is_empty());
    }
}
