//! A camera frame to RGB, the step before the tracker: a 640x480 frame as a USB camera sends it
//! (Motion JPEG without Huffman tables, YUYV) or as Windows and macOS cameras often do (NV12).
//! With the tracker's own time (`benches/webcam.py`) it makes the camera frame's way to its
//! weights.
//!
//! Run with `taskset -c 0 cargo bench --bench camera`; figures are recorded in BENCHMARKS.md.

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use facewire::webcam::camera::{PixelLayout, RawFrame};

const WIDTH: u32 = 640;
const HEIGHT: u32 = 480;

/// A 640x480 picture with detail at several scales (a webcam's picture is not flat), as RGB.
fn picture() -> Vec<u8> {
    let mut rgb = Vec::with_capacity((WIDTH * HEIGHT * 3) as usize);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let (fx, fy) = (x as f32, y as f32);
            let shade = 0.5 + 0.25 * (fx * 0.02).sin() * (fy * 0.03).cos();
            let grain = (((x * 7919 + y * 104_729) % 97) as f32 / 97.0 - 0.5) * 0.12;
            let fine = 0.1 * (fx * 0.4 + fy * 0.25).sin();
            let v = (shade + grain + fine).clamp(0.0, 1.0);
            rgb.extend_from_slice(&[
                (v * 235.0) as u8,
                (v * 190.0 + 20.0) as u8,
                (v * 160.0 + 30.0) as u8,
            ]);
        }
    }
    rgb
}

/// The picture as a USB camera's Motion JPEG frame: quality 85, Huffman tables left out.
fn mjpeg(rgb: &[u8]) -> Vec<u8> {
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85)
        .encode(rgb, WIDTH, HEIGHT, image::ExtendedColorType::Rgb8)
        .unwrap();
    let mut out = jpeg[..2].to_vec();
    let mut i = 2;
    while jpeg[i + 1] != 0xDA {
        let length = usize::from(u16::from_be_bytes([jpeg[i + 2], jpeg[i + 3]]));
        if jpeg[i + 1] != 0xC4 {
            out.extend_from_slice(&jpeg[i..i + 2 + length]);
        }
        i += 2 + length;
    }
    out.extend_from_slice(&jpeg[i..]);
    out
}

fn frame(layout: PixelLayout, data: Vec<u8>) -> RawFrame {
    RawFrame {
        layout,
        width: WIDTH,
        height: HEIGHT,
        stride: 0,
        data,
    }
}

fn decoding(c: &mut Criterion) {
    let rgb = picture();
    let jpeg = frame(PixelLayout::Mjpeg, mjpeg(&rgb));
    eprintln!("Motion JPEG frame: {} bytes", jpeg.data.len());
    // The luma and chroma bytes' values do not change the conversion's time.
    let yuyv = frame(
        PixelLayout::Yuyv,
        rgb[..(WIDTH * HEIGHT * 2) as usize].to_vec(),
    );
    let nv12 = frame(
        PixelLayout::Nv12,
        rgb[..(WIDTH * HEIGHT * 3 / 2) as usize].to_vec(),
    );
    let mut group = c.benchmark_group("camera frame to RGB, 640x480");
    group.bench_function("Motion JPEG", |b| {
        b.iter(|| black_box(&jpeg).decode().unwrap())
    });
    group.bench_function("YUYV", |b| b.iter(|| black_box(&yuyv).decode().unwrap()));
    group.bench_function("NV12", |b| b.iter(|| black_box(&nv12).decode().unwrap()));
    group.finish();
}

criterion_group!(benches, decoding);
criterion_main!(benches);
