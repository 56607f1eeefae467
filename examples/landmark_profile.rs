//! Where the landmark network's time goes: runs MediaPipe's Face Mesh V2 (as facewire loads it,
//! its PRelu nodes unfolded; `--as-shipped` leaves them) on a 256x256 input 50 times on this
//! thread and prints the time per kind of operation that tract's optimiser left, the largest
//! first, with the network's total.
//!
//! Run with `taskset -c 0 cargo run --release --example landmark_profile [-- --as-shipped]`; the
//! figures are in BENCHMARKS.md.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use facewire::webcam::model::{unfold_prelu, LANDMARKS_ONNX, LANDMARK_SIDE};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::{eval, SimpleState};

fn main() -> TractResult<()> {
    let side = LANDMARK_SIDE;
    let onnx = tract_onnx::onnx();
    let mut proto = onnx.proto_model_for_read(&mut &LANDMARKS_ONNX[..])?;
    if std::env::args().all(|a| a != "--as-shipped") {
        unfold_prelu(&mut proto).map_err(|e| anyhow::anyhow!(e))?;
    }
    let plan = onnx
        .model_for_proto_model(&proto)?
        .with_input_fact(0, f32::fact([1, side, side, 3]).into())?
        .into_optimized()?
        .into_runnable()?;
    let input: Tensor = tract_ndarray::Array4::from_shape_fn((1, side, side, 3), |(_, y, x, c)| {
        ((x * 7 + y * 13 + c * 29) % 255) as f32 / 255.0
    })
    .into();
    let mut by_op: HashMap<String, (Duration, usize)> = HashMap::new();
    let runs = 50;
    let mut total = Duration::ZERO;
    for run in 0..runs + 5 {
        let mut state = SimpleState::new(&plan)?;
        let started = Instant::now();
        let mut times: Vec<(String, Duration)> = Vec::new();
        state.run_plan_with_eval(
            tvec!(input.clone().into()),
            |ctx, op_state, node, inputs| {
                let began = Instant::now();
                let out = eval(ctx, op_state, node, inputs);
                times.push((node.op().name().to_string(), began.elapsed()));
                out
            },
        )?;
        // The first runs warm the caches and are left out.
        if run >= 5 {
            total += started.elapsed();
            for (op, t) in times {
                let entry = by_op.entry(op).or_default();
                entry.0 += t;
                entry.1 += 1;
            }
        }
    }
    let mut rows: Vec<_> = by_op.into_iter().collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1 .0));
    let per_run = |d: Duration| d.as_secs_f64() * 1e3 / runs as f64;
    println!(
        "landmark network, {runs} runs: {:.2} ms a run",
        per_run(total)
    );
    println!(
        "{:<28} {:>9} {:>7} {:>6}",
        "operation", "ms a run", "share", "nodes"
    );
    for (op, (t, n)) in rows {
        println!(
            "{op:<28} {:>9.2} {:>6.1}% {:>6}",
            per_run(t),
            100.0 * t.as_secs_f64() / total.as_secs_f64(),
            n / runs
        );
    }
    Ok(())
}
