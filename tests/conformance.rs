//! glTF 2.0 conformance of the loader: every fixture model against values read from its files
//! by an independent reader, the extension policy (required versus only used),
//! `KHR_mesh_quantization`'s component types, `EXT_meshopt_compression`'s modes and filters on
//! GLBs built here with meshoptimizer's own encoder, and bounds that hold a full expression.

use facewire::avatar::{self, Aabb, Avatar, AvatarError, Mesh, MorphTarget, Node, Pose, Primitive};
use facewire::render::headless::HeadlessContext;
use facewire::render::{Camera, DrawTarget, MorphMode, Renderer};
use glam::{Vec2, Vec3};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Every fixture model against values read by hand.
//
// The tables below were printed once by `tests/gltf_reference.py` (Python, only `json` and
// `struct`; run it by hand to table a new fixture): it decodes each accessor from the glTF 2.0 specification (byteOffset, byteStride,
// component type, normalisation, sparse substitution), independently of facewire and of the
// `gltf` crate. Vertices are numbered as facewire loads them: a primitive without NORMAL is
// flat-shaded, so its loaded vertex k is the file's vertex `indices[k]`. Samples are the vertex
// each target moves most in each attribute (the first such) and the middle vertex, skipped for
// an attribute that is zero everywhere; every attribute also has the sum of the absolute values
// of all its components (in f64, vertex by vertex), which checks every decoded value at once.
// Base positions are sampled only where they come from a sparse accessor. f32 values are printed
// as the shortest decimals that read back as the same f32, so they compare exactly.
// ---------------------------------------------------------------------------------------------

/// Which per-vertex values a row of a table checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attr {
    /// The primitive's own positions (the row's target index is unused).
    Base,
    /// A target's position deltas.
    Position,
    /// A target's normal deltas.
    Normal,
    /// A target's tangent deltas.
    Tangent,
}
use Attr::{Base, Normal, Position, Tangent};

/// A sampled value: (mesh, primitive, target, attribute, vertex as loaded, value).
type Sample = (usize, usize, usize, Attr, usize, [f32; 3]);

/// What one fixture must load as.
struct Expected {
    /// The file, under the fixtures folder.
    path: &'static str,
    /// How many meshes.
    meshes: usize,
    /// Per mesh: (mesh, triangle primitives, target names).
    mesh_rows: &'static [(usize, usize, &'static [&'static str])],
    /// Per primitive: (mesh, primitive, vertices as loaded, targets).
    prim_rows: &'static [(usize, usize, usize, usize)],
    /// Sampled values.
    samples: &'static [Sample],
    /// (mesh, primitive, target, attribute, sum of |component| over every vertex).
    sums: &'static [(usize, usize, usize, Attr, f64)],
}

const ANIMATED_MORPH_CUBE: Expected = Expected {
    path: "gltf/khronos/AnimatedMorphCube/glTF/AnimatedMorphCube.gltf",
    meshes: 1,
    mesh_rows: &[(0, 1, &["", ""])],
    prim_rows: &[(0, 0, 24, 2)],
    samples: &[
        (0, 0, 0, Position, 2, [0.0, 0.01893253, 0.0]),
        (0, 0, 0, Position, 12, [0.0, 0.01893253, 0.0]),
        (0, 0, 1, Position, 5, [0.0, 0.019890836, 0.0]),
        (0, 0, 1, Position, 12, [0.0, 0.0, 0.0]),
        (0, 0, 1, Normal, 12, [0.0, 0.2909608, -0.7051691]),
    ],
    sums: &[
        (0, 0, 0, Position, 0.22719036228954792),
        (0, 0, 0, Normal, 0.0),
        (0, 0, 0, Tangent, 0.0),
        (0, 0, 1, Position, 0.11934501305222511),
        (0, 0, 1, Normal, 3.9845194816589355),
        (0, 0, 1, Tangent, 0.0),
    ],
};

const ANIMATED_MORPH_SPHERE: Expected = Expected {
    path: "gltf/khronos/AnimatedMorphSphere/glTF/AnimatedMorphSphere.gltf",
    meshes: 1,
    mesh_rows: &[(0, 1, &["", ""])],
    prim_rows: &[(0, 0, 1876, 2)],
    samples: &[
        (0, 0, 0, Position, 938, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            0,
            Position,
            1017,
            [-0.012571493, -0.013720157, 0.0076466775],
        ),
        (0, 0, 1, Position, 938, [0.0, 0.0, 0.0]),
        (0, 0, 1, Position, 1210, [0.008781092, 0.0, 0.0]),
    ],
    sums: &[
        (0, 0, 0, Position, 18.426762271232292),
        (0, 0, 0, Normal, 0.0),
        (0, 0, 0, Tangent, 0.0),
        (0, 0, 1, Position, 7.086339199977374),
        (0, 0, 1, Normal, 0.0),
        (0, 0, 1, Tangent, 0.0),
    ],
};

const MORPH_PRIMITIVES_TEST: Expected = Expected {
    path: "gltf/khronos/MorphPrimitivesTest/glTF/MorphPrimitivesTest.gltf",
    meshes: 1,
    mesh_rows: &[(0, 2, &[""])],
    prim_rows: &[(0, 0, 21, 1), (0, 1, 9, 1)],
    samples: &[
        (0, 0, 0, Position, 10, [0.0, 0.0, 0.0]),
        (0, 0, 0, Position, 13, [0.0, 0.2, 0.0]),
        (0, 1, 0, Position, 4, [0.0, 0.0, 0.0]),
        (0, 1, 0, Position, 5, [0.0, 0.2, 0.0]),
    ],
    sums: &[
        (0, 0, 0, Position, 1.600000023841858),
        (0, 1, 0, Position, 0.800000011920929),
    ],
};

const MORPH_STRESS_TEST: Expected = Expected {
    path: "gltf/khronos/MorphStressTest/glTF/MorphStressTest.gltf",
    meshes: 1,
    mesh_rows: &[(
        0,
        2,
        &[
            "Key 1", "Key 2", "Key 3", "Key 4", "Key 5", "Key 6", "Key 7", "Key 8",
        ],
    )],
    prim_rows: &[(0, 0, 24, 8), (0, 1, 1504, 8)],
    samples: &[
        (0, 1, 0, Position, 27, [0.049999952, 1.0, 0.0]),
        (0, 1, 0, Position, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            0,
            Normal,
            168,
            [-0.0019440651, 0.017678894, 8.5160136e-05],
        ),
        (0, 1, 0, Normal, 752, [0.0, 0.0, 0.0]),
        (0, 1, 1, Position, 215, [0.049999952, 1.0, 0.0]),
        (0, 1, 1, Position, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            1,
            Normal,
            315,
            [-0.0019435883, 0.017678976, -8.970499e-05],
        ),
        (0, 1, 1, Normal, 752, [0.0, 0.0, 0.0]),
        (0, 1, 2, Position, 403, [0.050000012, 1.0, 0.0]),
        (0, 1, 2, Position, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            2,
            Normal,
            503,
            [-0.0019435883, 0.017678998, -8.908659e-05],
        ),
        (0, 1, 2, Normal, 752, [0.0, 0.0, 0.0]),
        (0, 1, 3, Position, 591, [0.050000012, 1.0, 0.0]),
        (0, 1, 3, Position, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            3,
            Normal,
            732,
            [-0.0019437075, 0.017678946, 8.8468194e-05],
        ),
        (0, 1, 3, Normal, 752, [0.0, 0.0, 0.0]),
        (0, 1, 4, Position, 752, [0.0, 0.0, 0.0]),
        (0, 1, 4, Position, 877, [-0.050000012, 1.0, 0.0]),
        (0, 1, 4, Normal, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            4,
            Normal,
            879,
            [-0.0019437075, 0.017678961, -8.8609755e-05],
        ),
        (0, 1, 5, Position, 752, [0.0, 0.0, 0.0]),
        (0, 1, 5, Position, 967, [0.050000012, 1.0, 0.0]),
        (0, 1, 5, Normal, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            5,
            Normal,
            1021,
            [0.0019438267, 0.017678954, 8.839369e-05],
        ),
        (0, 1, 6, Position, 752, [0.0, 0.0, 0.0]),
        (0, 1, 6, Position, 1155, [0.049999952, 1.0, 0.0]),
        (0, 1, 6, Normal, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            6,
            Normal,
            1209,
            [0.0019436479, 0.017678984, 8.8483095e-05],
        ),
        (0, 1, 7, Position, 752, [0.0, 0.0, 0.0]),
        (0, 1, 7, Position, 1343, [0.049999952, 1.0, 0.0]),
        (0, 1, 7, Normal, 752, [0.0, 0.0, 0.0]),
        (
            0,
            1,
            7,
            Normal,
            1345,
            [0.0019438863, 0.01767888, -8.704513e-05],
        ),
    ],
    sums: &[
        (0, 0, 0, Position, 0.0),
        (0, 0, 0, Normal, 0.0),
        (0, 0, 1, Position, 0.0),
        (0, 0, 1, Normal, 0.0),
        (0, 0, 2, Position, 0.0),
        (0, 0, 2, Normal, 0.0),
        (0, 0, 3, Position, 0.0),
        (0, 0, 3, Normal, 0.0),
        (0, 0, 4, Position, 0.0),
        (0, 0, 4, Normal, 0.0),
        (0, 0, 5, Position, 0.0),
        (0, 0, 5, Normal, 0.0),
        (0, 0, 6, Position, 0.0),
        (0, 0, 6, Normal, 0.0),
        (0, 0, 7, Position, 0.0),
        (0, 0, 7, Normal, 0.0),
        (0, 1, 0, Position, 98.69999504089355),
        (0, 1, 0, Normal, 0.5486869663000107),
        (0, 1, 1, Position, 98.69999504089355),
        (0, 1, 1, Normal, 0.5486626476049423),
        (0, 1, 2, Position, 98.70000064373016),
        (0, 1, 2, Normal, 0.5486890077590942),
        (0, 1, 3, Position, 98.7000000178814),
        (0, 1, 3, Normal, 0.5486436113715172),
        (0, 1, 4, Position, 98.69999986886978),
        (0, 1, 4, Normal, 0.5486448481678963),
        (0, 1, 5, Position, 98.70000064373016),
        (0, 1, 5, Normal, 0.5486814826726913),
        (0, 1, 6, Position, 98.69999504089355),
        (0, 1, 6, Normal, 0.5486473217606544),
        (0, 1, 7, Position, 98.69999504089355),
        (0, 1, 7, Normal, 0.5486701726913452),
    ],
};

const SIMPLE_MORPH: Expected = Expected {
    path: "gltf/khronos/SimpleMorph/glTF/SimpleMorph.gltf",
    meshes: 1,
    mesh_rows: &[(0, 1, &["", ""])],
    prim_rows: &[(0, 0, 3, 2)],
    samples: &[
        (0, 0, 0, Position, 1, [0.0, 0.0, 0.0]),
        (0, 0, 0, Position, 2, [-1.0, 1.0, 0.0]),
        (0, 0, 1, Position, 1, [0.0, 0.0, 0.0]),
        (0, 0, 1, Position, 2, [1.0, 1.0, 0.0]),
    ],
    sums: &[(0, 0, 0, Position, 2.0), (0, 0, 1, Position, 2.0)],
};

const SIMPLE_SPARSE_ACCESSOR: Expected = Expected {
    path: "gltf/khronos/SimpleSparseAccessor/glTF-Embedded/SimpleSparseAccessor.gltf",
    meshes: 1,
    mesh_rows: &[(0, 1, &[])],
    prim_rows: &[(0, 0, 36, 0)],
    samples: &[
        (0, 0, 0, Base, 0, [0.0, 0.0, 0.0]),
        (0, 0, 0, Base, 18, [3.0, 0.0, 0.0]),
        (0, 0, 0, Base, 25, [5.0, 4.0, 0.0]),
        (0, 0, 0, Base, 35, [6.0, 1.0, 0.0]),
    ],
    sums: &[(0, 0, 0, Base, 144.0)],
};

const ROBOT_EXPRESSIVE: Expected = Expected {
    path: "gltf/RobotExpressive/RobotExpressive.glb",
    meshes: 19,
    mesh_rows: &[
        (0, 1, &[]),
        (1, 1, &[]),
        (2, 1, &[]),
        (3, 1, &["Angry", "Surprised", "Sad"]),
        (4, 1, &["Angry", "Surprised", "Sad"]),
        (5, 1, &["Angry", "Surprised", "Sad"]),
        (6, 1, &[]),
        (7, 1, &[]),
        (8, 1, &[]),
        (9, 1, &[]),
        (10, 1, &[]),
        (11, 1, &[]),
        (12, 1, &[]),
        (13, 1, &[]),
        (14, 1, &[]),
        (15, 1, &[]),
        (16, 1, &[]),
        (17, 1, &[]),
        (18, 1, &[]),
    ],
    prim_rows: &[
        (0, 0, 64, 0),
        (1, 0, 568, 0),
        (2, 0, 1344, 0),
        (3, 0, 302, 3),
        (4, 0, 876, 3),
        (5, 0, 564, 3),
        (6, 0, 232, 0),
        (7, 0, 296, 0),
        (8, 0, 232, 0),
        (9, 0, 284, 0),
        (10, 0, 270, 0),
        (11, 0, 370, 0),
        (12, 0, 270, 0),
        (13, 0, 370, 0),
        (14, 0, 64, 0),
        (15, 0, 256, 0),
        (16, 0, 298, 0),
        (17, 0, 256, 0),
        (18, 0, 298, 0),
    ],
    samples: &[
        (
            5,
            0,
            0,
            Position,
            29,
            [0.0004942152, 0.0002040267, -0.001567524],
        ),
        (
            5,
            0,
            0,
            Position,
            282,
            [2.4422705e-05, -2.8355122e-05, 0.0004944603],
        ),
        (
            5,
            0,
            1,
            Position,
            25,
            [0.00041528657, -0.0002215755, 0.004530667],
        ),
        (
            5,
            0,
            1,
            Position,
            282,
            [-1.5108883e-05, 1.7541051e-05, -0.00030588565],
        ),
        (
            5,
            0,
            2,
            Position,
            64,
            [0.00010478258, -0.00012165368, 0.0021214276],
        ),
        (
            5,
            0,
            2,
            Position,
            282,
            [6.2331856e-05, -7.236779e-05, 0.0012619698],
        ),
    ],
    sums: &[
        (0, 0, 0, Base, 0.49146689290137147),
        (1, 0, 0, Base, 6.974654617741487),
        (2, 0, 0, Base, 17.095496380398803),
        (3, 0, 0, Position, 0.0),
        (3, 0, 1, Position, 0.0),
        (3, 0, 2, Position, 0.0),
        (4, 0, 0, Position, 0.0),
        (4, 0, 1, Position, 0.0),
        (4, 0, 2, Position, 0.0),
        (5, 0, 0, Position, 0.3855949061870092),
        (5, 0, 1, Position, 0.38190536727358904),
        (5, 0, 2, Position, 0.47489163100226506),
        (6, 0, 0, Base, 0.5328536211745813),
        (7, 0, 0, Base, 4.009332682334389),
        (8, 0, 0, Base, 0.5328536211745813),
        (9, 0, 0, Base, 4.684862844947254),
        (10, 0, 0, Base, 1.0549549081622194),
        (11, 0, 0, Base, 1.8147791561911362),
        (12, 0, 0, Base, 1.0549549081622194),
        (13, 0, 0, Base, 1.8147791561911362),
        (14, 0, 0, Base, 0.49146689290137147),
        (15, 0, 0, Base, 6.9002360814999975),
        (16, 0, 0, Base, 9.34185516985599),
        (17, 0, 0, Base, 6.9002360814999975),
        (18, 0, 0, Base, 9.34185516985599),
    ],
};

/// Every table, for the check that each fixture file has one.
const FIXTURES: [&Expected; 7] = [
    &ANIMATED_MORPH_CUBE,
    &ANIMATED_MORPH_SPHERE,
    &MORPH_PRIMITIVES_TEST,
    &MORPH_STRESS_TEST,
    &SIMPLE_MORPH,
    &SIMPLE_SPARSE_ACCESSOR,
    &ROBOT_EXPRESSIVE,
];

/// The VRM fixtures (GLB with the VRM extensions), read by the same script:
/// `python3 tests/gltf_reference.py ../shared/fixtures vrm/... NAME`.
const VRM_GODETTE_VRM_V4: Expected = Expected {
    path: "vrm/godot-vrm/Godette_vrm_v4.vrm",
    meshes: 2,
    mesh_rows: &[
        (
            0,
            1,
            &[
                "HideHairBalls",
                "HdieEarRings",
                "HideBlush",
                "blink_left",
                "blink_right",
                "ah",
                "ih",
                "uu",
                "ee",
                "oh",
                "look_up",
                "look_down",
                "look_left",
                "look_right",
                "angled_eyebrows",
            ],
        ),
        (1, 3, &[]),
    ],
    prim_rows: &[
        (0, 0, 630, 15),
        (1, 0, 2479, 0),
        (1, 1, 2479, 0),
        (1, 2, 2479, 0),
    ],
    samples: &[
        (
            0,
            0,
            0,
            Position,
            178,
            [0.10300193, -0.08741379, -0.15552509],
        ),
        (0, 0, 0, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            0,
            Normal,
            116,
            [-0.0043932498, 0.00013148785, -0.00086438656],
        ),
        (0, 0, 0, Normal, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            1,
            Position,
            303,
            [0.17628108, -0.0056586266, -0.005106217],
        ),
        (
            0,
            0,
            1,
            Position,
            315,
            [-0.16713835, 7.1525574e-07, 8.2328916e-07],
        ),
        (
            0,
            0,
            1,
            Normal,
            314,
            [-0.008575201, 0.002596736, -0.00323987],
        ),
        (
            0,
            0,
            1,
            Normal,
            315,
            [-0.0030826628, 0.0015783906, -0.00070518255],
        ),
        (0, 0, 2, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            2,
            Position,
            323,
            [0.13985777, 0.020548463, 0.101272166],
        ),
        (0, 0, 2, Normal, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            2,
            Normal,
            319,
            [-0.0035878122, -1.2467912e-05, 0.001922965],
        ),
        (0, 0, 3, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            3,
            Position,
            541,
            [0.023366421, -0.0623945, 0.013439938],
        ),
        (0, 0, 3, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 3, Normal, 539, [0.76118016, 0.839201, 1.581958]),
        (0, 0, 4, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            4,
            Position,
            574,
            [-0.018857434, -0.062402844, 0.013348624],
        ),
        (0, 0, 4, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 4, Normal, 572, [-0.821646, 0.9807435, 1.459311]),
        (
            0,
            0,
            5,
            Position,
            111,
            [-0.0076421257, -0.010670245, 0.009665981],
        ),
        (0, 0, 5, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 5, Normal, 112, [-0.2509449, 0.091047764, 0.065199375]),
        (0, 0, 5, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 6, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            6,
            Position,
            599,
            [-0.0104875695, 0.006044507, -0.0072855502],
        ),
        (0, 0, 6, Normal, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            6,
            Normal,
            614,
            [-0.25850534, 0.15892965, -0.013655126],
        ),
        (
            0,
            0,
            7,
            Position,
            114,
            [0.0049119536, -0.006346345, 0.00525634],
        ),
        (0, 0, 7, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 7, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 7, Normal, 626, [0.3039698, 0.12038571, 0.08507165]),
        (
            0,
            0,
            8,
            Position,
            112,
            [-0.004525125, -0.002733469, 0.0033644885],
        ),
        (0, 0, 8, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 8, Normal, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            8,
            Normal,
            610,
            [-0.0028384775, 0.02259159, -0.030138671],
        ),
        (
            0,
            0,
            9,
            Position,
            111,
            [0.00016055256, -0.012251198, 0.016475067],
        ),
        (0, 0, 9, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 9, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 9, Normal, 615, [-0.36211383, 0.15806311, 0.10944304]),
        (0, 0, 10, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 10, Position, 332, [0.0, 0.01577735, 0.0]),
        (0, 0, 10, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 10, Normal, 371, [0.22958098, 0.80570513, 0.3289619]),
        (0, 0, 11, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            11,
            Position,
            541,
            [0.009346567, -0.034838557, 0.0053759813],
        ),
        (0, 0, 11, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 11, Normal, 572, [-1.0427724, 0.6529213, 1.5693029]),
        (0, 0, 12, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 12, Position, 433, [-0.014970519, 0.0, 0.011313006]),
        (0, 0, 12, Normal, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            12,
            Normal,
            347,
            [-0.102784425, -5.2154064e-08, 0.04710418],
        ),
        (0, 0, 13, Position, 315, [0.0, 0.0, 0.0]),
        (0, 0, 13, Position, 476, [0.014970526, 0.0, 0.011313409]),
        (0, 0, 13, Normal, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            13,
            Normal,
            394,
            [0.10278964, -2.130866e-06, 0.04708934],
        ),
        (0, 0, 14, Position, 315, [0.0, 0.0, 0.0]),
        (
            0,
            0,
            14,
            Position,
            596,
            [-0.0029626861, 0.020587087, -0.01881504],
        ),
        (0, 0, 14, Normal, 315, [0.0, 0.0, 0.0]),
        (0, 0, 14, Normal, 588, [0.20965195, 0.41311687, -0.14000839]),
    ],
    sums: &[
        (0, 0, 0, Position, 38.375424983845015),
        (0, 0, 0, Normal, 0.23571507334338548),
        (0, 0, 1, Position, 3.548343466798542),
        (0, 0, 1, Normal, 0.08774170326171316),
        (0, 0, 2, Position, 3.4239482807170134),
        (0, 0, 2, Normal, 0.05801967130457797),
        (0, 0, 3, Position, 3.767170589620946),
        (0, 0, 3, Normal, 73.65728144673733),
        (0, 0, 4, Position, 3.7046197841118556),
        (0, 0, 4, Normal, 75.27853556675939),
        (0, 0, 5, Position, 0.6372807474981528),
        (0, 0, 5, Normal, 6.532064546641777),
        (0, 0, 6, Position, 0.5505381464899983),
        (0, 0, 6, Normal, 8.486747041989148),
        (0, 0, 7, Position, 0.3073196540644858),
        (0, 0, 7, Normal, 7.941961553663063),
        (0, 0, 8, Position, 0.23716580343898386),
        (0, 0, 8, Normal, 1.9132099790622874),
        (0, 0, 9, Position, 0.4834195719740819),
        (0, 0, 9, Normal, 10.36909375816569),
        (0, 0, 10, Position, 2.662113398517249),
        (0, 0, 10, Normal, 5.644508613740186),
        (0, 0, 11, Position, 4.007011976296781),
        (0, 0, 11, Normal, 64.81738327117739),
        (0, 0, 12, Position, 4.399105631018756),
        (0, 0, 12, Normal, 26.00645156996427),
        (0, 0, 13, Position, 4.399105290154694),
        (0, 0, 13, Normal, 26.00698374072192),
        (0, 0, 14, Position, 0.5575241707265377),
        (0, 0, 14, Normal, 8.9770268201828),
        (1, 0, 0, Base, 2313.212223168447),
        (1, 1, 0, Base, 2313.212223168447),
        (1, 2, 0, Base, 2313.212223168447),
    ],
};

const VRM_EXPRESSION_MIGRATION: Expected = Expected {
    path: "vrm/vrm-addon-for-blender/expression_migration.vrm",
    meshes: 2,
    mesh_rows: &[(0, 1, &["Key1"]), (1, 1, &["Key10", "Key11"])],
    prim_rows: &[(0, 0, 3, 1), (1, 0, 3, 2)],
    samples: &[
        (1, 0, 0, Position, 1, [0.0, 1.0, 0.0]),
        (1, 0, 1, Position, 1, [0.0, 0.0, 0.0]),
        (1, 0, 1, Position, 2, [-1.0, 0.0, 0.0]),
    ],
    sums: &[
        (0, 0, 0, Position, 0.0),
        (0, 0, 0, Normal, 0.0),
        (1, 0, 0, Position, 1.0),
        (1, 0, 0, Normal, 0.0),
        (1, 0, 1, Position, 1.0),
        (1, 0, 1, Normal, 0.0),
    ],
};

const VRM_MODIFIER_SHAPEKEY_VRM0: Expected = Expected {
    path: "vrm/vrm-addon-for-blender/modifier_shapekey_vrm0.vrm",
    meshes: 1,
    mesh_rows: &[(0, 1, &["A"])],
    prim_rows: &[(0, 0, 3, 1)],
    samples: &[
        (0, 0, 0, Position, 1, [0.0, 0.0, 0.0]),
        (0, 0, 0, Position, 2, [-1.0, 0.0, 0.0]),
        (0, 0, 0, Normal, 1, [2.9802322e-08, 1.2940196e-05, 0.0]),
        (0, 0, 0, Normal, 2, [0.40829808, -0.038882613, 0.07800245]),
    ],
    sums: &[
        (0, 0, 0, Position, 1.0),
        (0, 0, 0, Normal, 0.5251961130495552),
    ],
};

const VRM_MODIFIER_SHAPEKEY_VRM1: Expected = Expected {
    path: "vrm/vrm-addon-for-blender/modifier_shapekey_vrm1.vrm",
    meshes: 1,
    mesh_rows: &[(0, 1, &["A"])],
    prim_rows: &[(0, 0, 3, 1)],
    samples: &[
        (0, 0, 0, Position, 1, [0.0, 0.0, 0.0]),
        (0, 0, 0, Position, 2, [1.0, 0.0, 0.0]),
        (
            0,
            0,
            0,
            Normal,
            1,
            [-0.044296622, -0.19400819, 1.0430813e-05],
        ),
        (0, 0, 0, Normal, 2, [0.31621325, -0.13100037, 1.0251999e-05]),
    ],
    sums: &[
        (0, 0, 0, Position, 1.0),
        (0, 0, 0, Normal, 0.685539111495018),
    ],
};

const VRM_POSE_ROTATION_SCALE_SHAPE_KEY_SKINNED: Expected = Expected {
    path: "vrm/vrm-addon-for-blender/pose_rotation_scale_shape_key_skinned.vrm",
    meshes: 1,
    mesh_rows: &[(0, 1, &["A"])],
    prim_rows: &[(0, 0, 3, 1)],
    samples: &[
        (0, 0, 0, Position, 1, [0.0, -1.1920929e-07, -4.2632564e-14]),
        (0, 0, 0, Position, 2, [0.5, 0.0, -1.4801952e-07]),
        (0, 0, 0, Normal, 0, [2.842171e-14, -1.1920929e-07, 0.0]),
        (0, 0, 0, Normal, 1, [2.842171e-14, -1.1920929e-07, 0.0]),
    ],
    sums: &[
        (0, 0, 0, Position, 0.5000002672288559),
        (0, 0, 0, Normal, 3.5762795391747204e-07),
    ],
};

const VRM_SIMPLE_MORPH: Expected = Expected {
    path: "vrm/vrm-addon-for-blender/simple_morph.vrm",
    meshes: 1,
    mesh_rows: &[(0, 1, &["A"])],
    prim_rows: &[(0, 0, 3, 1)],
    samples: &[
        (0, 0, 0, Position, 1, [0.0, 1.0, 5.5178425e-08]),
        (0, 0, 0, Normal, 0, [-5.5178425e-08, 0.0, 0.0]),
        (0, 0, 0, Normal, 1, [-5.5178425e-08, 0.0, 0.0]),
    ],
    sums: &[
        (0, 0, 0, Position, 1.0000000551784254),
        (0, 0, 0, Normal, 1.6553527615315033e-07),
    ],
};

const VRM_CRYPTOVOXELS: Expected = Expected {
    path: "vrm/vrm-samples/cryptovoxels.vrm",
    meshes: 1,
    mesh_rows: &[(0, 1, &[])],
    prim_rows: &[(0, 0, 2727, 0)],
    samples: &[],
    sums: &[(0, 0, 0, Base, 2783.7127245637676)],
};

const VRM_VRMC_MATERIALS_MTOON_UV_ANIMATION_TEST: Expected = Expected {
    path: "vrm/vrm-specification/VRMC_materials_mtoon_UV_Animation_Test/VRMC_materials_mtoon_UV_Animation_Test.vrm",
    meshes: 3,
    mesh_rows: &[(0, 1, &[]), (1, 1, &[]), (2, 1, &[])],
    prim_rows: &[(0, 0, 4, 0), (1, 0, 4, 0), (2, 0, 4, 0)],
    samples: &[
    ],
    sums: &[
        (0, 0, 0, Base, 1.5999999046325684),
        (1, 0, 0, Base, 1.5999999046325684),
        (2, 0, 0, Base, 1.5999999046325684),
    ],
};

const VRM_VRMC_VRM_EXPRESSIONS_ISBINARY_OVERRIDDEN: Expected = Expected {
    path: "vrm/vrm-specification/VRMC_vrm_expressions_isBinary_Overridden/VRMC_vrm_expressions_isBinary_Overridden.vrm",
    meshes: 4,
    mesh_rows: &[(0, 1, &[]), (1, 1, &[]), (2, 1, &[]), (3, 1, &[])],
    prim_rows: &[(0, 0, 4, 0), (1, 0, 4, 0), (2, 0, 4, 0), (3, 0, 4, 0)],
    samples: &[
    ],
    sums: &[
        (0, 0, 0, Base, 8.0),
        (1, 0, 0, Base, 8.0),
        (2, 0, 0, Base, 8.0),
        (3, 0, 0, Base, 8.0),
    ],
};

const VRM_VRMC_VRM_EXPRESSIONS_ISBINARY_OVERRIDES: Expected = Expected {
    path: "vrm/vrm-specification/VRMC_vrm_expressions_isBinary_Overrides/VRMC_vrm_expressions_isBinary_Overrides.vrm",
    meshes: 4,
    mesh_rows: &[(0, 1, &[]), (1, 1, &[]), (2, 1, &[]), (3, 1, &[])],
    prim_rows: &[(0, 0, 4, 0), (1, 0, 4, 0), (2, 0, 4, 0), (3, 0, 4, 0)],
    samples: &[
    ],
    sums: &[
        (0, 0, 0, Base, 8.0),
        (1, 0, 0, Base, 8.0),
        (2, 0, 0, Base, 8.0),
        (3, 0, 0, Base, 8.0),
    ],
};

const VRM_FIXTURES: [&Expected; 10] = [
    &VRM_GODETTE_VRM_V4,
    &VRM_EXPRESSION_MIGRATION,
    &VRM_MODIFIER_SHAPEKEY_VRM0,
    &VRM_MODIFIER_SHAPEKEY_VRM1,
    &VRM_POSE_ROTATION_SCALE_SHAPE_KEY_SKINNED,
    &VRM_SIMPLE_MORPH,
    &VRM_CRYPTOVOXELS,
    &VRM_VRMC_MATERIALS_MTOON_UV_ANIMATION_TEST,
    &VRM_VRMC_VRM_EXPRESSIONS_ISBINARY_OVERRIDDEN,
    &VRM_VRMC_VRM_EXPRESSIONS_ISBINARY_OVERRIDES,
];

/// The values a table row reads from a loaded avatar.
fn values(avatar: &Avatar, mesh: usize, prim: usize, target: usize, attr: Attr) -> Vec<Vec3> {
    let p = &avatar.meshes[mesh].primitives[prim];
    match attr {
        Base => p.positions.clone(),
        Position => p.targets[target].positions.to_vec(),
        Normal => p.targets[target].normals.to_vec(),
        Tangent => p.targets[target].tangents.to_vec(),
    }
}

/// Loads `expected`'s fixture and checks every row of its table.
fn check_fixture(expected: &Expected) {
    let Some(dir) = crate::support::fixtures("glTF conformance tables") else {
        return;
    };
    let what = expected.path;
    let avatar = avatar::load(&dir.join(what)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.meshes.len(), expected.meshes, "{what}: meshes");
    assert_eq!(expected.mesh_rows.len(), expected.meshes, "{what}: table");
    for &(m, primitives, names) in expected.mesh_rows {
        let mesh: &Mesh = &avatar.meshes[m];
        assert_eq!(
            mesh.primitives.len(),
            primitives,
            "{what}: mesh {m} primitives"
        );
        assert_eq!(mesh.target_names, names, "{what}: mesh {m} target names");
        assert_eq!(mesh.target_count(), names.len(), "{what}: mesh {m} targets");
    }
    let prim_count: usize = avatar.meshes.iter().map(|m| m.primitives.len()).sum();
    assert_eq!(expected.prim_rows.len(), prim_count, "{what}: table");
    for &(m, p, vertices, targets) in expected.prim_rows {
        let prim = &avatar.meshes[m].primitives[p];
        assert_eq!(
            prim.positions.len(),
            vertices,
            "{what}: mesh {m} primitive {p} vertices"
        );
        assert_eq!(
            prim.targets.len(),
            targets,
            "{what}: mesh {m} primitive {p} targets"
        );
        for (t, target) in prim.targets.iter().enumerate() {
            assert_eq!(
                target.positions.len(),
                vertices,
                "{what}: {m}/{p} target {t}"
            );
        }
    }
    for &(m, p, t, attr, v, value) in expected.samples {
        let got = values(&avatar, m, p, t, attr)[v];
        assert_eq!(
            got.to_array(),
            value,
            "{what}: mesh {m} primitive {p} target {t} {attr:?} vertex {v}"
        );
    }
    for &(m, p, t, attr, sum) in expected.sums {
        let got = values(&avatar, m, p, t, attr);
        assert_eq!(got.len(), avatar.meshes[m].primitives[p].positions.len());
        let total: f64 = got
            .iter()
            .flat_map(|v| v.to_array())
            .map(|c| f64::from(c).abs())
            .sum();
        assert!(
            (total - sum).abs() <= 1e-9 * sum.max(1.0),
            "{what}: mesh {m} primitive {p} target {t} {attr:?}: sum {total}, expected {sum}"
        );
    }
}

#[test]
fn animated_morph_cube_matches_the_hand_read_values() {
    check_fixture(&ANIMATED_MORPH_CUBE);
}

#[test]
fn animated_morph_sphere_matches_the_hand_read_values() {
    check_fixture(&ANIMATED_MORPH_SPHERE);
}

#[test]
fn morph_primitives_test_matches_the_hand_read_values() {
    check_fixture(&MORPH_PRIMITIVES_TEST);
}

#[test]
fn morph_stress_test_matches_the_hand_read_values() {
    check_fixture(&MORPH_STRESS_TEST);
}

#[test]
fn simple_morph_matches_the_hand_read_values() {
    check_fixture(&SIMPLE_MORPH);
}

#[test]
fn simple_sparse_accessor_matches_the_hand_read_values() {
    check_fixture(&SIMPLE_SPARSE_ACCESSOR);
}

#[test]
fn robot_expressive_matches_the_hand_read_values() {
    check_fixture(&ROBOT_EXPRESSIVE);
}

#[test]
fn every_vrm_fixture_matches_the_hand_read_values() {
    for expected in VRM_FIXTURES {
        check_fixture(expected);
    }
}

#[test]
fn every_gltf_fixture_has_a_table() {
    let Some(dir) = crate::support::fixtures("glTF conformance tables") else {
        return;
    };
    let mut found = Vec::new();
    let mut stack = vec![dir.join("gltf"), dir.join("vrm")];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "gltf" || e == "glb" || e == "vrm")
            {
                let relative = path.strip_prefix(&dir).unwrap();
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    let mut tabled: Vec<String> = FIXTURES
        .iter()
        .chain(VRM_FIXTURES.iter())
        .map(|e| e.path.to_owned())
        .collect();
    tabled.sort();
    assert_eq!(found, tabled);
}

// ---------------------------------------------------------------------------------------------
// GLBs built here: a small document builder over one binary chunk.
// ---------------------------------------------------------------------------------------------

/// glTF component types.
const BYTE: u32 = 5120;
const UNSIGNED_BYTE: u32 = 5121;
const SHORT: u32 = 5122;
const UNSIGNED_SHORT: u32 = 5123;
const UNSIGNED_INT: u32 = 5125;
const FLOAT: u32 = 5126;

/// Packs a JSON document and BIN bytes into a GLB.
fn glb(json: &Value, bin: &[u8]) -> Vec<u8> {
    crate::support::glb(&serde_json::to_vec(json).unwrap(), bin)
}

/// A document under construction: buffer views and accessors over buffer 0 (the BIN chunk).
#[derive(Default)]
struct Doc {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl Doc {
    /// Appends `bytes`, 4-byte aligned, as a buffer view; returns its index.
    fn view(&mut self, bytes: &[u8], stride: Option<usize>) -> usize {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let mut view =
            json!({"buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len()});
        if let Some(stride) = stride {
            view["byteStride"] = stride.into();
        }
        self.bin.extend_from_slice(bytes);
        self.views.push(view);
        self.views.len() - 1
    }

    /// Adds an accessor; returns its index.
    fn accessor(&mut self, accessor: Value) -> usize {
        self.accessors.push(accessor);
        self.accessors.len() - 1
    }

    /// The GLB of a one-node scene drawing `primitive`, with `top` merged into the root object.
    fn glb(&self, primitive: Value, top: Value) -> Vec<u8> {
        let mut root = json!({
            "asset": {"version": "2.0"},
            "scene": 0,
            "scenes": [{"nodes": [0]}],
            "nodes": [{"mesh": 0}],
            "meshes": [{"primitives": [primitive]}],
            "buffers": [{"byteLength": self.bin.len().next_multiple_of(4)}],
            "bufferViews": self.views,
            "accessors": self.accessors,
        });
        if let Value::Object(extra) = top {
            for (key, value) in extra {
                root[key] = value;
            }
        }
        glb(&root, &self.bin)
    }
}

/// One triangle with float positions (and indices 0, 1, 2 implied).
fn triangle(doc: &mut Doc) -> usize {
    let bytes: Vec<u8> = [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let view = doc.view(&bytes, None);
    doc.accessor(
        json!({"bufferView": view, "componentType": FLOAT, "count": 3, "type": "VEC3",
        "min": [0, 0, 0], "max": [1, 1, 0]}),
    )
}

// ---------------------------------------------------------------------------------------------
// Extensions: required versus only used.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_required_unsupported_extension_is_refused_by_name() {
    let mut doc = Doc::default();
    let position = triangle(&mut doc);
    let primitive = json!({"attributes": {"POSITION": position}});
    for required in [
        vec!["KHR_draco_mesh_compression"],
        vec!["KHR_mesh_quantization", "KHR_materials_variants"],
        // The `gltf` crate itself knows this one, but facewire does not draw lights.
        vec!["KHR_lights_punctual"],
    ] {
        let bytes = doc.glb(
            primitive.clone(),
            json!({"extensionsUsed": required, "extensionsRequired": required}),
        );
        let error = avatar::load_slice(&bytes, "needs-more.glb").unwrap_err();
        let name = *required.last().unwrap();
        assert!(
            matches!(&error, AvatarError::UnsupportedExtension { extension, .. } if extension == name),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with("needs-more.glb: ") && message.contains(name),
            "{message}"
        );
        assert!(!message.contains("Unsupported extension"), "{message}");
    }
}

#[test]
fn supported_extensions_may_be_required() {
    let mut doc = Doc::default();
    let position = triangle(&mut doc);
    let primitive = json!({"attributes": {"POSITION": position}});
    let all = [
        "KHR_mesh_quantization",
        "EXT_meshopt_compression",
        "KHR_texture_transform",
        "KHR_materials_unlit",
        "VRM",
        "VRMC_vrm",
    ];
    let bytes = doc.glb(
        primitive,
        json!({"extensionsUsed": all, "extensionsRequired": all}),
    );
    let avatar = avatar::load_slice(&bytes, "required.glb").unwrap();
    assert_eq!(avatar.meshes[0].primitives[0].positions.len(), 3);
}

#[test]
fn an_unknown_optional_extension_is_skipped_with_one_warning() {
    let mut doc = Doc::default();
    let position = triangle(&mut doc);
    let primitive = json!({"attributes": {"POSITION": position},
        "extensions": {"KHR_materials_variants": {"mappings": []}}});
    let bytes = doc.glb(
        primitive,
        json!({
            "extensionsUsed": ["KHR_materials_variants", "KHR_texture_transform",
                "KHR_materials_variants", "EXT_lights_image_based"],
            "extensions": {"EXT_lights_image_based": {"lights": []}}
        }),
    );
    let (avatar, warnings) =
        crate::support::warnings_during(|| avatar::load_slice(&bytes, "optional.glb"));
    let avatar = avatar.unwrap();
    assert_eq!(avatar.meshes[0].primitives[0].positions.len(), 3);
    for name in ["KHR_materials_variants", "EXT_lights_image_based"] {
        let about: Vec<&String> = warnings.iter().filter(|l| l.contains(name)).collect();
        assert_eq!(about.len(), 1, "{name}: {warnings:#?}");
        assert!(about[0].contains("optional.glb"), "{}", about[0]);
    }
    assert!(
        !warnings.iter().any(|l| l.contains("KHR_texture_transform")),
        "{warnings:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// KHR_mesh_quantization.
// ---------------------------------------------------------------------------------------------

/// A component layout: glTF component type and whether it is normalised.
type Layout = (u32, bool);

/// Nine raw values per component type, extremes first, for three VEC3 (or VEC2) elements.
fn raw_values(component: u32) -> [f64; 9] {
    match component {
        BYTE => [-128.0, -127.0, 127.0, 0.0, 64.0, -64.0, 1.0, -1.0, 100.0],
        UNSIGNED_BYTE => [0.0, 255.0, 128.0, 1.0, 254.0, 64.0, 200.0, 7.0, 99.0],
        SHORT => [
            -32768.0, -32767.0, 32767.0, 0.0, 16384.0, -1.0, 1.0, -20000.0, 12345.0,
        ],
        UNSIGNED_SHORT => [
            0.0, 65535.0, 32768.0, 1.0, 65534.0, 40000.0, 7.0, 12345.0, 54321.0,
        ],
        _ => [0.5, -1.25, 3.0, 0.0, 2.5, -0.75, 1e-3, 7.0, -4.0],
    }
}

/// The value KHR_mesh_quantization's table says a stored component decodes to, computed in f64.
fn dequantized(raw: f64, (component, normalized): Layout) -> f32 {
    let value = match (component, normalized) {
        (BYTE, true) => (raw / 127.0).max(-1.0),
        (UNSIGNED_BYTE, true) => raw / 255.0,
        (SHORT, true) => (raw / 32767.0).max(-1.0),
        (UNSIGNED_SHORT, true) => raw / 65535.0,
        _ => raw,
    };
    value as f32
}

/// Adds an accessor of `width`-component elements in `layout`, holding the layout's first
/// `3 * width` raw values, each element padded to 4 bytes as the extension requires.
fn quantized_accessor(doc: &mut Doc, layout: Layout, width: usize, kind: &str) -> usize {
    let (component, normalized) = layout;
    let size = match component {
        BYTE | UNSIGNED_BYTE => 1,
        SHORT | UNSIGNED_SHORT => 2,
        _ => 4,
    };
    let stride = (size * width).next_multiple_of(4);
    let raw = raw_values(component);
    let mut bytes = vec![0u8; 3 * stride];
    for e in 0..3 {
        for c in 0..width {
            let v = raw[e * width + c];
            let at = e * stride + c * size;
            let encoded: Vec<u8> = match component {
                BYTE => (v as i8).to_le_bytes().to_vec(),
                UNSIGNED_BYTE => (v as u8).to_le_bytes().to_vec(),
                SHORT => (v as i16).to_le_bytes().to_vec(),
                UNSIGNED_SHORT => (v as u16).to_le_bytes().to_vec(),
                UNSIGNED_INT => (v as u32).to_le_bytes().to_vec(),
                _ => (v as f32).to_le_bytes().to_vec(),
            };
            bytes[at..at + size].copy_from_slice(&encoded);
        }
    }
    let view = doc.view(&bytes, Some(stride));
    let mut accessor = json!({"bufferView": view, "componentType": component, "count": 3,
        "type": kind, "normalized": normalized});
    if kind == "VEC3" {
        accessor["min"] = json!([-1e6, -1e6, -1e6]);
        accessor["max"] = json!([1e6, 1e6, 1e6]);
    }
    doc.accessor(accessor)
}

/// What each attribute may be stored as, from the extension's two tables.
const POSITIONS: [Layout; 9] = [
    (FLOAT, false),
    (BYTE, false),
    (BYTE, true),
    (UNSIGNED_BYTE, false),
    (UNSIGNED_BYTE, true),
    (SHORT, false),
    (SHORT, true),
    (UNSIGNED_SHORT, false),
    (UNSIGNED_SHORT, true),
];
const DIRECTIONS: [Layout; 3] = [(FLOAT, false), (BYTE, true), (SHORT, true)];
const POSITION_DELTAS: [Layout; 5] = [
    (FLOAT, false),
    (BYTE, false),
    (BYTE, true),
    (SHORT, false),
    (SHORT, true),
];

/// A triangle whose POSITION, NORMAL, TEXCOORD_0 and one target's POSITION, NORMAL and TANGENT
/// use the given layouts.
fn quantized_triangle(layouts: [Layout; 6]) -> Vec<u8> {
    let mut doc = Doc::default();
    let [position, normal, uv, dp, dn, dt] = layouts;
    let position = quantized_accessor(&mut doc, position, 3, "VEC3");
    let normal = quantized_accessor(&mut doc, normal, 3, "VEC3");
    let uv = quantized_accessor(&mut doc, uv, 2, "VEC2");
    let dp = quantized_accessor(&mut doc, dp, 3, "VEC3");
    let dn = quantized_accessor(&mut doc, dn, 3, "VEC3");
    let dt = quantized_accessor(&mut doc, dt, 3, "VEC3");
    doc.glb(
        json!({"attributes": {"POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv},
            "targets": [{"POSITION": dp, "NORMAL": dn, "TANGENT": dt}]}),
        json!({"extensionsUsed": ["KHR_mesh_quantization"],
            "extensionsRequired": ["KHR_mesh_quantization"]}),
    )
}

/// The three VEC3 values a layout's accessor decodes to, by the extension's formulas.
fn expected_vec3(layout: Layout) -> Vec<Vec3> {
    let raw = raw_values(layout.0);
    (0..3)
        .map(|e| Vec3::from_array([0, 1, 2].map(|c| dequantized(raw[e * 3 + c], layout))))
        .collect()
}

fn assert_close_vec3(got: &[Vec3], expected: &[Vec3], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}");
    for (g, e) in got.iter().zip(expected) {
        assert!(
            (*g - *e).abs().max_element() <= 1e-6 * e.abs().max_element().max(1.0),
            "{what}: {g} vs {e}"
        );
    }
}

#[test]
fn quantized_attributes_decode_by_the_extension_tables() {
    // Every allowed layout of every attribute appears at least once across these nine files.
    for i in 0..9 {
        let layouts = [
            POSITIONS[i],
            DIRECTIONS[i % 3],
            POSITIONS[(i + 4) % 9],
            POSITION_DELTAS[i % 5],
            DIRECTIONS[(i + 1) % 3],
            DIRECTIONS[(i + 2) % 3],
        ];
        let what = format!("{layouts:?}");
        let avatar = avatar::load_slice(&quantized_triangle(layouts), &what)
            .unwrap_or_else(|e| panic!("{e}"));
        let prim = &avatar.meshes[0].primitives[0];
        assert_close_vec3(&prim.positions, &expected_vec3(layouts[0]), &what);
        assert_close_vec3(&prim.normals, &expected_vec3(layouts[1]), &what);
        let raw = raw_values(layouts[2].0);
        let uvs: Vec<Vec2> = (0..3)
            .map(|e| Vec2::from_array([0, 1].map(|c| dequantized(raw[e * 2 + c], layouts[2]))))
            .collect();
        for (g, e) in prim.uvs.iter().zip(&uvs) {
            assert!((*g - *e).abs().max_element() <= 1e-6 * e.abs().max_element().max(1.0));
        }
        let target = &prim.targets[0];
        assert_close_vec3(
            &target.positions.to_vec(),
            &expected_vec3(layouts[3]),
            &what,
        );
        assert_close_vec3(&target.normals.to_vec(), &expected_vec3(layouts[4]), &what);
        assert_close_vec3(&target.tangents.to_vec(), &expected_vec3(layouts[5]), &what);
    }
    // The signed minimum clamps to -1: -128 / 127 and -32768 / 32767 both decode to exactly -1.
    let avatar = avatar::load_slice(
        &quantized_triangle([
            (BYTE, true),
            (BYTE, true),
            (SHORT, true),
            (SHORT, true),
            (SHORT, true),
            (BYTE, true),
        ]),
        "clamp",
    )
    .unwrap();
    let prim = &avatar.meshes[0].primitives[0];
    assert_eq!(prim.positions[0].x, -1.0);
    assert_eq!(prim.positions[0].y, -1.0);
    assert_eq!(prim.targets[0].positions[0].x, -1.0);
    assert_eq!(prim.uvs[0].x, -1.0);
}

#[test]
fn layouts_outside_the_extension_tables_are_errors() {
    let ok = [
        (FLOAT, false),
        (FLOAT, false),
        (FLOAT, false),
        (FLOAT, false),
        (FLOAT, false),
        (FLOAT, false),
    ];
    let cases: [(usize, Layout, &str); 7] = [
        (0, (UNSIGNED_INT, false), "POSITION"),
        (1, (UNSIGNED_BYTE, true), "NORMAL"),
        (1, (BYTE, false), "NORMAL"),
        (2, (UNSIGNED_INT, false), "TEXCOORD_0"),
        (3, (UNSIGNED_SHORT, true), "target 0 POSITION"),
        (4, (SHORT, false), "target 0 NORMAL"),
        (5, (UNSIGNED_BYTE, true), "target 0 TANGENT"),
    ];
    for (slot, layout, usage) in cases {
        let mut layouts = ok;
        layouts[slot] = layout;
        let error = avatar::load_slice(&quantized_triangle(layouts), "bad-layout").unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, AvatarError::Accessor { .. }), "{message}");
        assert!(
            message.contains(usage) && message.contains("not valid here"),
            "{usage}: {message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// EXT_meshopt_compression, on GLBs compressed here with meshoptimizer's own encoder (the
// `meshopt` crate) and its filter encoders.
// ---------------------------------------------------------------------------------------------

/// The source mesh: a bumpy 6 × 7 grid (42 vertices, past two 16-vertex codec groups) with
/// smooth normals, UVs, and one target that puffs it along the normals.
struct Grid {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    uvs: Vec<[f32; 2]>,
    indices: Vec<u32>,
    deltas: Vec<[f32; 3]>,
    delta_normals: Vec<[f32; 3]>,
}

fn grid() -> Grid {
    let (w, h) = (6, 7);
    let mut g = Grid {
        positions: Vec::new(),
        normals: Vec::new(),
        uvs: Vec::new(),
        indices: Vec::new(),
        deltas: Vec::new(),
        delta_normals: Vec::new(),
    };
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f32, y as f32);
            let z = 0.05 * fx.sin() * fy.cos();
            g.positions.push([fx * 0.1 - 0.25, fy * 0.1 + 1.2, z]);
            let n =
                Vec3::new(-0.5 * fx.cos() * fy.cos(), 0.5 * fx.sin() * fy.sin(), 1.0).normalize();
            g.normals.push(n.to_array());
            g.uvs.push([fx / (w - 1) as f32, fy / (h - 1) as f32]);
            g.deltas.push((n * 0.02 * (1.0 + fx * 0.1)).to_array());
            g.delta_normals
                .push([0.1 * fx.cos(), -0.2 * fy.sin(), 0.05]);
        }
    }
    for y in 0..h - 1 {
        for x in 0..w - 1 {
            let a = (y * w + x) as u32;
            let (b, c, d) = (a + 1, a + w as u32 + 1, a + w as u32);
            g.indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    g
}

/// Which encodings a compressed GLB uses.
#[derive(Debug, Clone, Copy)]
struct Encoding {
    /// Octahedral normal bits: 8 (bytes, stride 4) or 16 (shorts, stride 8).
    normal_bits: u32,
    /// TRIANGLES with 16-bit indices, or INDICES with 32-bit ones.
    triangles: bool,
}

/// A compressed view: where its bytes are in the BIN chunk, for the corruption test.
struct Stream {
    offset: usize,
    length: usize,
}

/// Signed normalised quantization, as the extension specifies it: `round(f * max)`.
fn snorm<const N: usize>(v: [f32; N], max: f32) -> [i32; N] {
    v.map(|c| (c.clamp(-1.0, 1.0) * max).round() as i32)
}

/// Builds the grid as a GLB whose every vertex and index view is meshopt-compressed, its
/// uncompressed views in a fallback buffer (index 1) with no data; `fallback_uri` gives that
/// buffer a URI (which in-memory loading could not resolve, had it to be read).
fn compressed_glb(
    g: &Grid,
    encoding: Encoding,
    fallback_uri: Option<&str>,
) -> (Vec<u8>, Vec<Stream>) {
    let n = g.positions.len();
    let mut bin: Vec<u8> = Vec::new();
    let mut fallback_len = 0usize;
    let mut views: Vec<Value> = Vec::new();
    let mut streams = Vec::new();
    let mut add = |encoded: Vec<u8>,
                   count: usize,
                   stride: usize,
                   mode: &str,
                   filter: &str,
                   vertex: bool| {
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        let offset = bin.len();
        bin.extend_from_slice(&encoded);
        streams.push(Stream {
            offset,
            length: encoded.len(),
        });
        let mut view = json!({"buffer": 1, "byteOffset": fallback_len, "byteLength": count * stride,
            "extensions": {"EXT_meshopt_compression": {"buffer": 0, "byteOffset": offset,
                "byteLength": encoded.len(), "byteStride": stride, "count": count,
                "mode": mode, "filter": filter}}});
        if vertex {
            view["byteStride"] = stride.into();
        }
        fallback_len = (fallback_len + count * stride).next_multiple_of(4);
        views.push(view);
        views.len() - 1
    };

    // Positions: floats through the exponential filter, 15-bit mantissas sharing an exponent.
    let filtered =
        meshopt::encode_filter_exp(&g.positions, 15, meshopt::EncodeExpMode::SharedVector);
    let positions = add(
        meshopt::encode_vertex_buffer(&filtered).unwrap(),
        n,
        12,
        "ATTRIBUTES",
        "EXPONENTIAL",
        true,
    );
    // Normals: octahedral, as normalised bytes or shorts.
    let unit: Vec<[f32; 4]> = g.normals.iter().map(|v| [v[0], v[1], v[2], 0.0]).collect();
    let (normals, normal_type) = if encoding.normal_bits == 8 {
        let oct: Vec<[i8; 4]> = meshopt::encode_filter_oct(&unit, 8);
        (
            add(
                meshopt::encode_vertex_buffer(&oct).unwrap(),
                n,
                4,
                "ATTRIBUTES",
                "OCTAHEDRAL",
                true,
            ),
            BYTE,
        )
    } else {
        let oct: Vec<[i16; 4]> = meshopt::encode_filter_oct(&unit, 16);
        (
            add(
                meshopt::encode_vertex_buffer(&oct).unwrap(),
                n,
                8,
                "ATTRIBUTES",
                "OCTAHEDRAL",
                true,
            ),
            SHORT,
        )
    };
    // UVs: normalised unsigned shorts, unfiltered.
    let uvs: Vec<[u16; 2]> = g
        .uvs
        .iter()
        .map(|uv| uv.map(|c| (c * 65535.0).round() as u16))
        .collect();
    let uvs = add(
        meshopt::encode_vertex_buffer(&uvs).unwrap(),
        n,
        4,
        "ATTRIBUTES",
        "NONE",
        true,
    );
    // Target deltas: positions as normalised shorts (padded to 8 bytes), normals as normalised
    // bytes, unfiltered.
    let deltas: Vec<[i16; 4]> = g
        .deltas
        .iter()
        .map(|d| {
            let q = snorm(*d, 32767.0);
            [q[0] as i16, q[1] as i16, q[2] as i16, 0]
        })
        .collect();
    let deltas = add(
        meshopt::encode_vertex_buffer(&deltas).unwrap(),
        n,
        8,
        "ATTRIBUTES",
        "NONE",
        true,
    );
    let delta_normals: Vec<[i8; 4]> = g
        .delta_normals
        .iter()
        .map(|d| {
            let q = snorm(*d, 127.0);
            [q[0] as i8, q[1] as i8, q[2] as i8, 0]
        })
        .collect();
    let delta_normals = add(
        meshopt::encode_vertex_buffer(&delta_normals).unwrap(),
        n,
        4,
        "ATTRIBUTES",
        "NONE",
        true,
    );
    let (indices, index_type) = if encoding.triangles {
        let encoded = meshopt::encode_index_buffer(&g.indices, n).unwrap();
        (
            add(encoded, g.indices.len(), 2, "TRIANGLES", "NONE", false),
            UNSIGNED_SHORT,
        )
    } else {
        let encoded = meshopt::encode_index_sequence(&g.indices, n).unwrap();
        (
            add(encoded, g.indices.len(), 4, "INDICES", "NONE", false),
            UNSIGNED_INT,
        )
    };

    let mut fallback = json!({"byteLength": fallback_len,
        "extensions": {"EXT_meshopt_compression": {"fallback": true}}});
    if let Some(uri) = fallback_uri {
        fallback["uri"] = uri.into();
    }
    let min = [-1.0, 0.0, -1.0];
    let max = [1.0, 2.0, 1.0];
    let root = json!({
        "asset": {"version": "2.0"},
        "extensionsUsed": ["EXT_meshopt_compression", "KHR_mesh_quantization"],
        "extensionsRequired": ["EXT_meshopt_compression", "KHR_mesh_quantization"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"extras": {"targetNames": ["puff"]}, "primitives": [{
            "attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2},
            "indices": 5,
            "targets": [{"POSITION": 3, "NORMAL": 4}]}]}],
        "buffers": [{"byteLength": bin.len().next_multiple_of(4)}, fallback],
        "bufferViews": views,
        "accessors": [
            {"bufferView": positions, "componentType": FLOAT, "count": n, "type": "VEC3", "min": min, "max": max},
            {"bufferView": normals, "componentType": normal_type, "normalized": true, "count": n, "type": "VEC3"},
            {"bufferView": uvs, "componentType": UNSIGNED_SHORT, "normalized": true, "count": n, "type": "VEC2"},
            {"bufferView": deltas, "componentType": SHORT, "normalized": true, "count": n, "type": "VEC3"},
            {"bufferView": delta_normals, "componentType": BYTE, "normalized": true, "count": n, "type": "VEC3"},
            {"bufferView": indices, "componentType": index_type, "count": g.indices.len(), "type": "SCALAR"}
        ]
    });
    (glb(&root, &bin), streams)
}

/// The largest componentwise difference between decoded and original vectors.
fn worst(got: &[Vec3], original: &[[f32; 3]]) -> f32 {
    assert_eq!(got.len(), original.len());
    got.iter()
        .zip(original)
        .map(|(g, o)| (*g - Vec3::from_array(*o)).abs().max_element())
        .fold(0.0, f32::max)
}

#[test]
fn meshopt_compressed_views_decode_within_each_filters_precision() {
    let g = grid();
    for (encoding, normal_tolerance) in [
        // Octahedral with K bits is exact to about 1 / 2^(K-1) per component before the
        // result is stored as normalised bytes or shorts.
        (
            Encoding {
                normal_bits: 8,
                triangles: true,
            },
            0.03,
        ),
        (
            Encoding {
                normal_bits: 16,
                triangles: false,
            },
            2e-4,
        ),
    ] {
        let (bytes, _) = compressed_glb(&g, encoding, None);
        let what = format!("{encoding:?}");
        let avatar = avatar::load_slice(&bytes, &what).unwrap_or_else(|e| panic!("{e}"));
        let mesh = &avatar.meshes[0];
        assert_eq!(mesh.target_names, vec!["puff"]);
        let prim = &mesh.primitives[0];
        if encoding.triangles {
            // The triangle codec may start a triangle at another corner; the winding and the
            // triangle order are kept.
            assert_eq!(prim.indices.len(), g.indices.len());
            for (got, original) in prim.indices.chunks(3).zip(g.indices.chunks(3)) {
                let same = (0..3).any(|r| (0..3).all(|k| got[(k + r) % 3] == original[k]));
                assert!(same, "{what}: triangle {got:?} vs {original:?}");
            }
        } else {
            assert_eq!(
                prim.indices, g.indices,
                "{what}: index sequences are lossless"
            );
        }
        // Exponential, 15-bit mantissas sharing the vector's exponent: relative to the largest
        // component (about 1.8 here), within 2^-14.
        let position_error = worst(&prim.positions, &g.positions);
        assert!(
            position_error <= 1.8 * 2f32.powi(-14),
            "{what}: positions off by {position_error}"
        );
        let normal_error = worst(&prim.normals, &g.normals);
        assert!(
            normal_error <= normal_tolerance,
            "{what}: normals off by {normal_error}"
        );
        eprintln!("{what}: positions within {position_error:e}, normals within {normal_error:e}");
        for (uv, original) in prim.uvs.iter().zip(&g.uvs) {
            // Unfiltered u16: exactly the quantized value, within 1 / 65535 of the original.
            assert!(
                (*uv - Vec2::from_array(*original)).abs().max_element() <= 0.5 / 65535.0 + 1e-7
            );
        }
        let target = &prim.targets[0];
        let delta_error = worst(&target.positions.to_vec(), &g.deltas);
        assert!(
            delta_error <= 0.5 / 32767.0 + 1e-7,
            "{what}: deltas off by {delta_error}"
        );
        let normal_delta_error = worst(&target.normals.to_vec(), &g.delta_normals);
        assert!(
            normal_delta_error <= 0.5 / 127.0 + 1e-6,
            "{what}: {normal_delta_error}"
        );
    }
}

#[test]
fn a_fallback_buffer_need_not_exist() {
    // A fallback buffer naming a file: in memory it could not be read, so loading shows that
    // it is not read at all.
    let (bytes, _) = compressed_glb(
        &grid(),
        Encoding {
            normal_bits: 8,
            triangles: true,
        },
        Some("uncompressed-fallback.bin"),
    );
    let avatar = avatar::load_slice(&bytes, "fallback-uri.glb").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.meshes[0].primitives[0].positions.len(), 42);
}

#[test]
fn corrupt_meshopt_streams_are_errors_never_panics() {
    let g = grid();
    let (bytes, streams) = compressed_glb(
        &g,
        Encoding {
            normal_bits: 8,
            triangles: true,
        },
        None,
    );
    // The BIN chunk's data follows the JSON chunk and its own 8-byte header.
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let bin_start = 20 + json_len + 8;
    let load = |bytes: &[u8], what: &str| {
        let result = avatar::load_slice(bytes, what);
        if let Err(error @ AvatarError::DecoderPanic { .. }) = &result {
            panic!("{what}: {error}");
        }
        result
    };
    for (s, stream) in streams.iter().enumerate() {
        let at = bin_start + stream.offset;
        // A wrong header byte.
        let mut bad = bytes.clone();
        bad[at] ^= 0x50;
        let error = load(&bad, "header").unwrap_err();
        assert!(
            matches!(error, AvatarError::Compression { view, .. } if view == s),
            "stream {s}: {error}"
        );
        assert!(
            error.to_string().contains("corrupt or truncated"),
            "{error}"
        );
        // Zeroed payload: the stream's structure no longer adds up to its length.
        let mut zeroed = bytes.clone();
        zeroed[at + 1..at + stream.length].fill(0);
        let result = load(&zeroed, "zeroed");
        assert!(result.is_err(), "stream {s}: zeroed payload decoded");
    }
    // Flipped bits anywhere in the compressed data: whatever decodes must be checked like any
    // other data (indices in range, finite positions); nothing may panic.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    };
    let (mut loaded, mut rejected) = (0, 0);
    for round in 0..400 {
        let stream = &streams[(next() % streams.len() as u64) as usize];
        let mut bad = bytes.clone();
        for _ in 0..1 + next() % 3 {
            let at = bin_start + stream.offset + (next() % stream.length as u64) as usize;
            bad[at] ^= 1 << (next() % 8);
        }
        match load(&bad, &format!("flip round {round}")) {
            Ok(_) => loaded += 1,
            Err(_) => rejected += 1,
        }
    }
    eprintln!("bit flips: {loaded} loaded, {rejected} rejected");
    assert!(rejected > 0, "no flip was detected");
}

#[test]
fn malformed_compression_objects_are_errors_naming_the_view() {
    let g = grid();
    let (bytes, _) = compressed_glb(
        &g,
        Encoding {
            normal_bits: 8,
            triangles: true,
        },
        None,
    );
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let root: Value = serde_json::from_slice(&bytes[20..20 + json_len]).unwrap();
    let bin = &bytes[20 + json_len + 8..];
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "mode",
            Box::new(|r| {
                r["bufferViews"][0]["extensions"]["EXT_meshopt_compression"]["mode"] =
                    "WAVELETS".into()
            }),
            "malformed",
        ),
        (
            "count",
            Box::new(|r| {
                r["bufferViews"][0]["extensions"]["EXT_meshopt_compression"]["count"] = 41.into()
            }),
            "byteLength",
        ),
        (
            "stride",
            Box::new(|r| {
                r["bufferViews"][1]["extensions"]["EXT_meshopt_compression"]["byteStride"] =
                    6.into()
            }),
            "byteStride",
        ),
        (
            "source",
            Box::new(|r| {
                r["bufferViews"][2]["extensions"]["EXT_meshopt_compression"]["buffer"] = 7.into()
            }),
            "does not exist",
        ),
        (
            "range",
            Box::new(|r| {
                r["bufferViews"][3]["extensions"]["EXT_meshopt_compression"]["byteOffset"] =
                    100000.into()
            }),
            "run past",
        ),
        (
            "filter",
            Box::new(|r| {
                r["bufferViews"][5]["extensions"]["EXT_meshopt_compression"]["filter"] =
                    "OCTAHEDRAL".into()
            }),
            "filter",
        ),
        (
            "huge",
            Box::new(|r| {
                let ext = &mut r["bufferViews"][0]["extensions"]["EXT_meshopt_compression"];
                ext["count"] = (1u64 << 40).into();
                r["bufferViews"][0]["byteLength"] = (12u64 << 40).into();
            }),
            "limit",
        ),
    ];
    for (what, edit, needle) in cases {
        let mut root = root.clone();
        edit(&mut root);
        let error = avatar::load_slice(&glb(&root, bin), what).unwrap_err();
        assert!(
            matches!(error, AvatarError::Compression { .. }),
            "{what}: {error}"
        );
        let message = error.to_string();
        assert!(
            message.contains("buffer view") && message.contains(needle),
            "{what}: {message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Bounds over deformation.
// ---------------------------------------------------------------------------------------------

/// Head radius of the synthetic avatar.
const R: f32 = 0.1;

/// A closed UV sphere, triangles counter-clockwise from outside.
fn sphere(rows: u32, columns: u32) -> Primitive {
    let mut prim = Primitive::default();
    for i in 0..=rows {
        let theta = std::f32::consts::PI * i as f32 / rows as f32;
        for j in 0..=columns {
            let phi = std::f32::consts::TAU * j as f32 / columns as f32;
            let d = Vec3::new(
                theta.sin() * phi.sin(),
                theta.cos(),
                theta.sin() * phi.cos(),
            );
            prim.positions.push(d * R);
            prim.normals.push(d);
            prim.uvs.push(Vec2::ZERO);
        }
    }
    let at = |i: u32, j: u32| i * (columns + 1) + j;
    for i in 0..rows {
        for j in 0..columns {
            let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            prim.indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    prim
}

/// A head on a neck whose targets push vertices far outside the rest box: "stretch" pulls the
/// face 2.2 radii towards the camera and the back as far away, "jaw" drops the lower half by
/// 3 radii. Only the first `targets` targets are attached.
fn stretchy_head(targets: usize) -> Avatar {
    let mut head = sphere(24, 32);
    let stretch = MorphTarget {
        positions: head
            .positions
            .iter()
            .map(|p| Vec3::new(0.0, 0.0, 2.2 * p.z))
            .collect(),
        ..MorphTarget::default()
    };
    let jaw = MorphTarget {
        positions: head
            .positions
            .iter()
            .map(|p| {
                if p.y < -0.3 * R {
                    Vec3::new(0.0, -3.0 * R, 0.0)
                } else {
                    Vec3::ZERO
                }
            })
            .collect(),
        ..MorphTarget::default()
    };
    head.targets = [stretch, jaw].into_iter().take(targets).collect();
    let names = ["stretch", "jaw"]
        .iter()
        .take(targets)
        .map(|s| (*s).to_owned())
        .collect();
    let node = |name: &str, parent, children, translation, mesh| Node {
        name: Some(name.to_owned()),
        parent,
        children,
        translation,
        mesh,
        ..Node::default()
    };
    Avatar {
        source: "stretchy head".to_owned(),
        nodes: vec![
            node("neck", None, vec![1], Vec3::new(0.0, 1.5, 0.0), None),
            node("head", Some(0), vec![], Vec3::new(0.0, 0.1, 0.0), Some(0)),
        ],
        roots: vec![0],
        meshes: vec![Mesh {
            name: Some("head".to_owned()),
            target_names: names,
            default_weights: vec![0.0; targets],
            primitives: vec![head],
        }],
        materials: vec![facewire::avatar::Material::default()],
        ..Avatar::default()
    }
}

/// The head's vertices in world space under `weights`.
fn blended(avatar: &Avatar, weights: &[f32]) -> Vec<Vec3> {
    let world = avatar.world_transforms(&avatar.rest_pose())[1];
    let prim = &avatar.meshes[0].primitives[0];
    prim.positions
        .iter()
        .enumerate()
        .map(|(v, p)| {
            let moved = prim
                .targets
                .iter()
                .zip(weights)
                .fold(*p, |acc, (t, w)| acc + *w * t.positions[v]);
            world.transform_point3(moved)
        })
        .collect()
}

#[test]
fn deformation_bounds_hold_every_weight_combination_and_framing_ignores_them() {
    let avatar = stretchy_head(2);
    let rest = avatar.bounds().unwrap();
    let reach = avatar.deformation_bounds().unwrap();
    // Framing uses the rest head, whatever the targets do.
    assert_eq!(rest, stretchy_head(0).bounds().unwrap());
    assert_eq!(
        Camera::framing(rest, 1.0),
        Camera::framing(stretchy_head(0).bounds().unwrap(), 1.0)
    );
    assert_eq!(stretchy_head(0).deformation_bounds(), Some(rest));
    // The reach grows by exactly what the targets add at full weight.
    assert!(
        (reach.max.z - rest.max.z - 2.2 * R).abs() < 1e-5,
        "{reach:?}"
    );
    assert!(
        (rest.min.z - reach.min.z - 2.2 * R).abs() < 1e-5,
        "{reach:?}"
    );
    assert!(
        (rest.min.y - reach.min.y - 3.0 * R).abs() < 1e-5,
        "{reach:?}"
    );
    for weights in [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.25], [0.0, 0.0]] {
        let points = blended(&avatar, &weights);
        let outside = points.iter().filter(|p| !rest.contains(**p)).count();
        if weights[0] == 1.0 {
            assert!(
                outside > 0,
                "{weights:?}: the test needs vertices outside the rest box"
            );
        }
        for p in points {
            assert!(reach.contains(p), "{weights:?}: {p} outside {reach:?}");
        }
    }
}

#[test]
fn a_full_expression_is_not_clipped_by_the_clip_planes() {
    let avatar = stretchy_head(1);
    let size = 128;
    let ctx = HeadlessContext::new(size, size).expect("headless context");
    let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).expect("renderer");
    let framed = Camera::framing(avatar.bounds().unwrap(), 1.0);
    let camera = framed.reaching(avatar.deformation_bounds().unwrap());
    assert_eq!((camera.eye, camera.target), (framed.eye, framed.target));
    // Every vertex at full weight lies between the planes of the reaching camera, and some lie
    // beyond those of the rest framing.
    let depths = |c: &Camera| -> Vec<f32> {
        blended(&avatar, &[1.0])
            .into_iter()
            .map(|p| c.view_proj().project_point3(p).z)
            .collect()
    };
    assert!(depths(&camera).iter().all(|z| z.abs() < 1.0));
    assert!(depths(&framed).iter().any(|z| z.abs() > 1.0));

    let target = DrawTarget {
        width: size,
        height: size,
        clear_color: [0.0; 4],
        alpha: true,
    };
    let draw = |renderer: &mut Renderer, pose: &Pose, camera: &Camera| {
        ctx.bind();
        renderer.draw(pose, camera, &target);
        ctx.read_rgba()
    };
    let mut full = avatar.rest_pose();
    full.weights[0][0] = 1.0;
    let rest_image = draw(&mut renderer, &avatar.rest_pose(), &camera);
    let full_image = draw(&mut renderer, &full, &camera);
    let clipped_image = draw(&mut renderer, &full, &framed);
    let dir = crate::support::repo().join("target/render-tests");
    std::fs::create_dir_all(&dir).unwrap();
    for (image, name) in [
        (&rest_image, "rest"),
        (&full_image, "full"),
        (&clipped_image, "full_rest_planes"),
    ] {
        image
            .save_png(&dir.join(format!("conformance_reach_{name}.png")))
            .unwrap();
    }
    let covered = |image: &facewire::image::RgbaImage| {
        (0..size)
            .flat_map(|y| (0..size).map(move |x| (x, y)))
            .filter(|&(x, y)| image.pixel(x, y)[3] > 0)
            .count()
    };
    let centre = |image: &facewire::image::RgbaImage| image.pixel(size / 2, size / 2)[3];
    eprintln!(
        "covered pixels: rest {}, full {}, full with the rest planes {}",
        covered(&rest_image),
        covered(&full_image),
        covered(&clipped_image)
    );
    // The stretched face comes closer, so it covers at least the rest head's pixels, and its
    // middle is drawn; with the rest framing's planes the near plane cuts a hole there.
    assert_eq!(centre(&rest_image), 255);
    assert_eq!(centre(&full_image), 255);
    assert!(covered(&full_image) >= covered(&rest_image));
    assert_eq!(
        centre(&clipped_image),
        0,
        "the rest planes should clip the face"
    );
}

/// Every loaded fixture's deformation bounds contain its rest bounds.
#[test]
fn deformation_bounds_contain_the_rest_bounds_of_every_fixture() {
    let Some(dir) = crate::support::fixtures("glTF deformation bounds") else {
        return;
    };
    for expected in FIXTURES {
        let avatar = avatar::load(&dir.join(expected.path)).unwrap();
        let (rest, reach): (Aabb, Aabb) = (
            avatar.bounds().unwrap(),
            avatar.deformation_bounds().unwrap(),
        );
        assert!(
            reach.contains(rest.min) && reach.contains(rest.max),
            "{}: {rest:?} vs {reach:?}",
            expected.path
        );
    }
}
