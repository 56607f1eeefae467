//! VRM look-at: how a gaze turns an avatar's eyes, by its eye bones or by its look expressions,
//! through four range maps (inner, outer, up, down) that the avatar's author set.
//!
//! VRM 0.x keeps it in `firstPerson` (`lookAtTypeName`, `lookAtHorizontalInner` ... with
//! `xRange` in degrees of gaze and `yRange` in degrees of eye turn or expression weight; the
//! curve is read as the straight line it is in almost every file); VRM 1.0 in `lookAt` (`type`,
//! `rangeMapHorizontalInner` ... with `inputMaxValue` and `outputScale`).

use serde_json::{Map, Value};

/// How the avatar looks around.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookAtKind {
    /// The eye bones turn.
    Bone,
    /// The lookLeft, lookRight, lookUp and lookDown expressions are weighted.
    Expression,
}

/// One range map: a gaze angle up to `input_max_degrees` maps linearly onto 0 to
/// `output_scale` (degrees of eye turn for [`LookAtKind::Bone`], expression weight for
/// [`LookAtKind::Expression`]); larger angles stay at `output_scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeMap {
    /// The gaze angle, in degrees, at which the output is full.
    pub input_max_degrees: f32,
    /// The full output.
    pub output_scale: f32,
}

impl RangeMap {
    /// The output for a gaze of `degrees` (its sign is ignored).
    pub fn map(&self, degrees: f32) -> f32 {
        if self.input_max_degrees.is_nan() || self.input_max_degrees <= 0.0 || !degrees.is_finite()
        {
            return 0.0;
        }
        (degrees.abs() / self.input_max_degrees).min(1.0) * self.output_scale
    }
}

/// An avatar's look-at settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LookAt {
    /// Bones or expressions.
    pub kind: LookAtKind,
    /// An eye turning towards the nose.
    pub horizontal_inner: RangeMap,
    /// An eye turning away from the nose (for expressions: both sideways looks).
    pub horizontal_outer: RangeMap,
    /// Looking down.
    pub vertical_down: RangeMap,
    /// Looking up.
    pub vertical_up: RangeMap,
}

/// The largest eye turn a bone range map may ask for, in degrees.
const MAX_EYE_DEGREES: f32 = 90.0;

/// The largest output scale of an expression range map. Above 1 the weight reaches 1 before the
/// map's input angle (files exported with bone-like values do this); the weight itself never
/// passes 1.
const MAX_EXPRESSION_SCALE: f32 = 100.0;

/// The spec's default range map for `kind`: 90 degrees of gaze to 10 degrees of eye turn, or to
/// full weight.
fn default_map(kind: LookAtKind) -> RangeMap {
    RangeMap {
        input_max_degrees: 90.0,
        output_scale: match kind {
            LookAtKind::Bone => 10.0,
            LookAtKind::Expression => 1.0,
        },
    }
}

/// A range map from `object[key]`'s `input` and `output` numbers; missing or unusable values
/// take the defaults for `kind`, and the output is kept in range.
fn range_map(
    object: &Map<String, Value>,
    key: &str,
    (input, output): (&str, &str),
    kind: LookAtKind,
) -> RangeMap {
    let default = default_map(kind);
    let map = object.get(key).and_then(Value::as_object);
    let number = |name: &str| {
        map.and_then(|m| m.get(name))
            .and_then(Value::as_f64)
            .map(|v| v as f32)
            .filter(|v| v.is_finite())
    };
    let max_output = match kind {
        LookAtKind::Bone => MAX_EYE_DEGREES,
        LookAtKind::Expression => MAX_EXPRESSION_SCALE,
    };
    RangeMap {
        input_max_degrees: number(input)
            .filter(|v| *v > 0.0)
            .unwrap_or(default.input_max_degrees),
        output_scale: number(output).map_or(default.output_scale, |v| v.clamp(0.0, max_output)),
    }
}

/// Reads VRM 0.x `firstPerson`; `None` when it names no look-at type.
pub fn read_v0(first_person: &Map<String, Value>) -> Option<LookAt> {
    let kind = match first_person.get("lookAtTypeName")?.as_str()? {
        "Bone" => LookAtKind::Bone,
        "BlendShape" => LookAtKind::Expression,
        _ => return None,
    };
    let map = |key| range_map(first_person, key, ("xRange", "yRange"), kind);
    Some(LookAt {
        kind,
        horizontal_inner: map("lookAtHorizontalInner"),
        horizontal_outer: map("lookAtHorizontalOuter"),
        vertical_down: map("lookAtVerticalDown"),
        vertical_up: map("lookAtVerticalUp"),
    })
}

/// Reads VRM 1.0 `lookAt`; `None` when it names no type.
pub fn read_v1(look_at: &Map<String, Value>) -> Option<LookAt> {
    let kind = match look_at.get("type")?.as_str()? {
        "bone" => LookAtKind::Bone,
        "expression" => LookAtKind::Expression,
        _ => return None,
    };
    let map = |key| range_map(look_at, key, ("inputMaxValue", "outputScale"), kind);
    Some(LookAt {
        kind,
        horizontal_inner: map("rangeMapHorizontalInner"),
        horizontal_outer: map("rangeMapHorizontalOuter"),
        vertical_down: map("rangeMapVerticalDown"),
        vertical_up: map("rangeMapVerticalUp"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn range_maps_are_linear_up_to_their_input_and_flat_beyond() {
        let m = RangeMap {
            input_max_degrees: 30.0,
            output_scale: 12.0,
        };
        assert_eq!(m.map(15.0), 6.0);
        assert_eq!(m.map(-15.0), 6.0);
        assert_eq!(m.map(60.0), 12.0);
        assert_eq!(m.map(f32::NAN), 0.0);
        let broken = RangeMap {
            input_max_degrees: 0.0,
            output_scale: 1.0,
        };
        assert_eq!(broken.map(10.0), 0.0);
    }

    #[test]
    fn vrm0_first_person_reads_type_and_ranges() {
        let fp = object(
            r#"{"lookAtTypeName":"Bone",
                "lookAtHorizontalInner":{"curve":[0,0,0,1,1,1,1,0],"xRange":90,"yRange":8},
                "lookAtHorizontalOuter":{"xRange":90,"yRange":12},
                "lookAtVerticalDown":{"xRange":45,"yRange":"ten"},
                "lookAtVerticalUp":{"xRange":-1,"yRange":500}}"#,
        );
        let look = read_v0(&fp).unwrap();
        assert_eq!(look.kind, LookAtKind::Bone);
        assert_eq!(look.horizontal_inner.output_scale, 8.0);
        assert_eq!(look.horizontal_outer.output_scale, 12.0);
        assert_eq!(look.vertical_down.input_max_degrees, 45.0);
        assert_eq!(
            look.vertical_down.output_scale, 10.0,
            "a bad value takes the default"
        );
        assert_eq!(look.vertical_up.input_max_degrees, 90.0);
        assert_eq!(look.vertical_up.output_scale, MAX_EYE_DEGREES);
        let shapes = read_v0(&object(r#"{"lookAtTypeName":"BlendShape"}"#)).unwrap();
        assert_eq!(shapes.kind, LookAtKind::Expression);
        assert_eq!(shapes.vertical_up.output_scale, 1.0);
        assert!(read_v0(&object(r#"{"lookAtTypeName":"Wiggle"}"#)).is_none());
        assert!(read_v0(&object("{}")).is_none());
    }

    #[test]
    fn vrm1_look_at_reads_type_and_ranges() {
        let look = read_v1(&object(
            r#"{"type":"expression","offsetFromHeadBone":[0,0.06,0],
                "rangeMapHorizontalOuter":{"inputMaxValue":60,"outputScale":0.8},
                "rangeMapVerticalUp":{"inputMaxValue":40,"outputScale":2}}"#,
        ))
        .unwrap();
        assert_eq!(look.kind, LookAtKind::Expression);
        assert_eq!(
            look.horizontal_outer,
            RangeMap {
                input_max_degrees: 60.0,
                output_scale: 0.8
            }
        );
        assert_eq!(look.vertical_up.output_scale, 2.0);
        assert_eq!(look.horizontal_inner, default_map(LookAtKind::Expression));
        let bone = read_v1(&object(r#"{"type":"bone"}"#)).unwrap();
        assert_eq!(bone.vertical_down, default_map(LookAtKind::Bone));
    }
}
