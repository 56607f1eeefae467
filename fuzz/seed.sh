#!/bin/sh
# Fills fuzz/corpus/<target>/ with the seeds of each fuzz target: the avatar files of the
# third-party fixtures (${FACEWIRE_FIXTURES:-../shared/fixtures}, beside the checkout) and of
# this repository, the JSON chunks of the GLB and VRM files, small glTF documents written here,
# the configuration, mappings, looks and expressions of config/, the TOML examples of the
# documentation, and a profile. The corpus is generated, never committed. Run from anywhere.
set -eu

fuzz=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$fuzz")
corpus="$fuzz/corpus"
fixtures=${FACEWIRE_FIXTURES:-$repo/../shared/fixtures}

for target in avatar gltf_json mapping config look expressions profile recording; do
    mkdir -p "$corpus/$target"
done

# The JSON chunk of a GLB file (the first chunk, whose length is at byte 12).
glb_json() {
    length=$(od -An -tu4 -j12 -N4 "$1" | tr -d ' ')
    tail -c +21 "$1" | head -c "$length"
}

# Whether a .gltf file is self-contained: every buffer and image URI a data URI.
self_contained() {
    ! grep -o '"uri"[[:space:]]*:[[:space:]]*"[^"]*' "$1" | grep -qv '"data:'
}

# A file name for a seed: its path with slashes made underscores.
seed_name() {
    echo "$1" | sed 's|^\./||; s|/|_|g'
}

add_avatar() {
    name=$(seed_name "$2")
    cp "$1" "$corpus/avatar/$name"
    case "$1" in
        *.gltf) cp "$1" "$corpus/gltf_json/$name" ;;
        *) glb_json "$1" > "$corpus/gltf_json/$name.json" ;;
    esac
}

if [ -d "$fixtures" ]; then
    count=0
    for file in $(cd "$fixtures" && find gltf vrm -type f \( -name '*.glb' -o -name '*.vrm' -o -name '*.gltf' \) | sort); do
        case "$file" in
            *.gltf)
                if ! self_contained "$fixtures/$file"; then
                    # Its first buffer's file is replaced by the target's BIN chunk.
                    cp "$fixtures/$file" "$corpus/gltf_json/$(seed_name "$file")"
                    continue
                fi
                ;;
        esac
        add_avatar "$fixtures/$file" "$file"
        count=$((count + 1))
    done
    echo "seed.sh: $count avatar files from $fixtures"
else
    echo "seed.sh: no fixtures at $fixtures (set FACEWIRE_FIXTURES); seeding from this repository only"
fi

# The default head is 4 MB, beyond libFuzzer's default input length (1 MiB): its JSON chunk
# seeds gltf_json, where the BIN chunk is made up.
glb_json "$repo/models/default_head.glb" > "$corpus/gltf_json/default_head.json"

# Small documents that reach what the fixtures may not: a skinned, morphed triangle; VRM 0.x
# and 1.0 with expressions, look-at, springs and colliders; MSFT_lod; sparse accessors. Their
# buffer is the gltf_json target's fixed BIN chunk (positions at 0, normals at 36, deltas at
# 72, uvs at 108, u16 indices at 144, u8 joints at 152, weights at 164).
triangle='"asset":{"version":"2.0"},"scene":0,
"buffers":[{"byteLength":4096}],
"bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":144},{"buffer":0,"byteOffset":144,"byteLength":6},
 {"buffer":0,"byteOffset":152,"byteLength":12},{"buffer":0,"byteOffset":164,"byteLength":48}],
"accessors":[
 {"bufferView":0,"byteOffset":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
 {"bufferView":0,"byteOffset":36,"componentType":5126,"count":3,"type":"VEC3"},
 {"bufferView":0,"byteOffset":72,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[0.1,0.1,0.1]},
 {"bufferView":0,"byteOffset":108,"componentType":5126,"count":3,"type":"VEC2"},
 {"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"},
 {"bufferView":2,"componentType":5121,"count":3,"type":"VEC4"},
 {"bufferView":3,"componentType":5126,"count":3,"type":"VEC4"}],
"materials":[{"name":"skin","pbrMetallicRoughness":{"baseColorFactor":[1,0.8,0.7,1]}}],
"meshes":[{"name":"face","primitives":[{"attributes":{"POSITION":0,"NORMAL":1,"TEXCOORD_0":3,"JOINTS_0":5,"WEIGHTS_0":6},
 "indices":4,"material":0,"targets":[{"POSITION":2},{"POSITION":2}]}],"weights":[0,0],
 "extras":{"targetNames":["jawOpen","jawOpen*mouthClose"]}}],
"skins":[{"joints":[1,2]}]'
nodes='"nodes":[{"name":"Face","mesh":0,"skin":0},{"name":"Hips","children":[2]},{"name":"Head","translation":[0,1,0],"children":[3,4]},
 {"name":"LeftEye","translation":[0.03,0.05,0.05]},{"name":"Hair","translation":[0,0.1,0],"children":[5]},{"name":"HairTip","translation":[0,-0.1,0]}],
"scenes":[{"nodes":[0,1]}]'
vrm0='"extensionsUsed":["VRM"],"extensions":{"VRM":{"specVersion":"0.0","meta":{"title":"t","author":"a"},
 "humanoid":{"humanBones":[{"bone":"hips","node":1},{"bone":"head","node":2},{"bone":"leftEye","node":3}]},
 "firstPerson":{"lookAtTypeName":"BlendShape","lookAtHorizontalOuter":{"curve":[0,0,0,1,1,1,1,0],"xRange":90,"yRange":1}},
 "blendShapeMaster":{"blendShapeGroups":[{"name":"Joy","presetName":"joy","binds":[{"mesh":0,"index":0,"weight":100}],
  "materialValues":[{"materialName":"skin","propertyName":"_Color","targetValue":[1,0,0,1]}]},
  {"name":"Blink","presetName":"blink","isBinary":true,"binds":[{"mesh":0,"index":1,"weight":50}]}]},
 "secondaryAnimation":{"boneGroups":[{"comment":"hair","stiffiness":1,"gravityPower":0.5,"gravityDir":{"x":0,"y":-1,"z":0},
  "dragForce":0.4,"center":-1,"hitRadius":0.02,"bones":[4],"colliderGroups":[0]}],
  "colliderGroups":[{"node":2,"colliders":[{"offset":{"x":0,"y":0,"z":0},"radius":0.1}]}]}}}'
vrm1='"extensionsUsed":["VRMC_vrm","VRMC_springBone"],"extensions":{"VRMC_vrm":{"specVersion":"1.0","meta":{"name":"t","authors":["a"]},
 "humanoid":{"humanBones":{"hips":{"node":1},"head":{"node":2},"leftEye":{"node":3}}},
 "lookAt":{"type":"bone","offsetFromHeadBone":[0,0.06,0],"rangeMapHorizontalOuter":{"inputMaxValue":90,"outputScale":10}},
 "expressions":{"preset":{"happy":{"morphTargetBinds":[{"node":0,"index":0,"weight":1}],"overrideBlink":"block",
  "materialColorBinds":[{"material":0,"type":"color","targetValue":[1,0,0,1]}],
  "textureTransformBinds":[{"material":0,"scale":[1,1],"offset":[0.5,0]}]}},
  "custom":{"wink":{"isBinary":true,"morphTargetBinds":[{"node":0,"index":1,"weight":0.5}]}}}},
 "VRMC_springBone":{"specVersion":"1.0","colliders":[{"node":2,"shape":{"sphere":{"offset":[0,0,0],"radius":0.1}}},
  {"node":2,"shape":{"capsule":{"offset":[0,0,0],"tail":[0,0.1,0],"radius":0.05}}}],
  "colliderGroups":[{"colliders":[0,1]}],
  "springs":[{"name":"hair","center":2,"joints":[{"node":4,"hitRadius":0.02,"stiffness":1,"dragForce":0.5,"gravityPower":1,"gravityDir":[0,-1,0]},{"node":5}],"colliderGroups":[0]}]}}'
lod='"extensionsUsed":["MSFT_lod"],"nodes":[{"name":"Face","mesh":0,"extensions":{"MSFT_lod":{"ids":[1,2]}},"extras":{"MSFT_screencoverage":[0.5,0.2,0.01]}},
 {"name":"FaceLod1","mesh":0},{"name":"FaceLod2","mesh":0}],"scenes":[{"nodes":[0]}]'
sparse='"accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
 {"componentType":5126,"count":3,"type":"VEC3","sparse":{"count":1,"indices":{"bufferView":1,"componentType":5123},"values":{"bufferView":0,"byteOffset":72}}}],
"asset":{"version":"2.0"},"buffers":[{"byteLength":4096}],
"bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":144},{"buffer":0,"byteOffset":144,"byteLength":2}],
"meshes":[{"primitives":[{"attributes":{"POSITION":0},"targets":[{"POSITION":1}]}]}],
"nodes":[{"mesh":0}],"scenes":[{"nodes":[0]}],"scene":0'
lod_triangle=$(echo "$triangle" | sed 's/"skins":\[{"joints":\[1,2\]}\]/"skins":[]/')
written=0
for doc in \
    "small_triangle:{$triangle,$nodes}" \
    "small_vrm0:{$triangle,$nodes,$vrm0}" \
    "small_vrm1:{$triangle,$nodes,$vrm1}" \
    "small_lod:{$lod_triangle,$lod}" \
    "small_sparse:{$sparse}"; do
    name=${doc%%:*}
    printf '%s' "${doc#*:}" | tr -d '\n' > "$corpus/gltf_json/$name.json"
    written=$((written + 1))
done
echo "seed.sh: $written small glTF documents"

# The text targets: the repository's own files and the TOML blocks of its documentation.
cp "$repo/config/facewire.toml" "$corpus/config/facewire.toml"
cp "$repo/config/expressions.toml" "$corpus/expressions/expressions.toml"
cp "$repo/config/expressions.toml" "$corpus/config/expressions_inline.toml"
for file in "$repo"/config/mappings/*.toml; do
    cp "$file" "$corpus/mapping/$(basename "$file")"
done
for file in "$repo"/config/looks/*.toml; do
    cp "$file" "$corpus/look/$(basename "$file")"
done
block=0
for doc in "$repo/README.md" "$repo"/docs/*.md; do
    awk -v out="$corpus/doc_$(basename "$doc" .md)_" '
        /^```toml/ { n++; writing = 1; next }
        /^```/ { writing = 0; next }
        writing { print > (out n ".toml") }
    ' "$doc"
done
for file in "$corpus"/doc_*.toml; do
    [ -f "$file" ] || continue
    for target in config mapping look expressions profile; do
        cp "$file" "$corpus/$target/$(basename "$file")"
    done
    rm "$file"
    block=$((block + 1))
done
echo "seed.sh: $block TOML blocks of the documentation"

cat > "$corpus/profile/performer.toml" <<'PROFILE'
version = 1
performer = "performer"
created = "2026-12-04T12:00:00Z"

[channels.jawOpen]
neutral = 0.02
min = 0.01
max = 0.8

[channels.eyeBlinkLeft]
neutral = 0.1
min = 0.05
max = 0.9

[smoothing.weights]
filter = "ema"
tau = 0.05

[vowels]
floor_db = -50.0
ceiling_db = -30.0
aa = [1.0, 0.5, 0.2, 0.1, 0.0, -0.1, -0.2, 0.1, 0.0, 0.0, 0.1, 0.2]
ih = [0.9, 0.4, 0.2, 0.1, 0.0, -0.1, -0.2, 0.1, 0.0, 0.0, 0.1, 0.2]
ou = [0.8, 0.3, 0.2, 0.1, 0.0, -0.1, -0.2, 0.1, 0.0, 0.0, 0.1, 0.2]
ee = [0.7, 0.2, 0.2, 0.1, 0.0, -0.1, -0.2, 0.1, 0.0, 0.0, 0.1, 0.2]
oh = [0.6, 0.1, 0.2, 0.1, 0.0, -0.1, -0.2, 0.1, 0.0, 0.0, 0.1, 0.2]
PROFILE

# Recordings: the phone-app CSV takes of the fixtures.
for f in "$fixtures"/protocols/*.csv; do
    if [ -f "$f" ]; then cp "$f" "$corpus/recording/$(seed_name "$f")"; fi
done

for target in avatar gltf_json mapping config look expressions profile recording; do
    echo "seed.sh: corpus/$target: $(ls "$corpus/$target" | wc -l) files"
done
