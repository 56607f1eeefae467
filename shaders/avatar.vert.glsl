// Avatar vertex shader: morph targets (GPU path), then skinning, then the node transform; the
// outline pass also pushes the surface out along its normal.
//
// Prepended at run time: `#version`, and the defines
//   MORPH_GPU      (present on the GPU morph path)
//   MAX_ACTIVE     (how many non-zero weights one draw can list; a multiple of 4)
// and, each present only when some primitive or material of the avatar needs it,
//   SKINNING       (skinned primitives)
//   VERTEX_COLORS  (vertex colours)
//   UV_TRANSFORM   (KHR_texture_transform)
//   OUTLINE        (MToon outlines)

layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in vec2 a_uv;
#ifdef SKINNING
// Skin joints (indices into this draw's joint matrices) and weights, summing to 1 or all zero.
layout(location = 3) in uvec4 a_joints;
layout(location = 4) in vec4 a_weights;
#endif
#ifdef VERTEX_COLORS
// Linear RGBA vertex colour; a constant (1, 1, 1, 1) when the primitive has none.
layout(location = 5) in vec4 a_color;
out vec4 v_color;
#endif

uniform mat4 u_model;
uniform mat3 u_normal_matrix;
uniform mat4 u_view_proj;

#ifdef UV_TRANSFORM
// KHR_texture_transform of the base colour texture, on (u, v, 1).
uniform mat3 u_uv_transform;
#endif

#ifdef SKINNING
// When u_skinned is non-zero, every joint matrix (world(joint) * inverseBind) sits in
// u_joint_matrices as four texels (its columns), this draw's first at u_joint_base. A vertex
// whose weights sum to zero follows u_model instead, as a glTF skinned mesh's node does not.
uniform int u_skinned;
uniform int u_joint_base;
uniform samplerBuffer u_joint_matrices;

mat4 joint_matrix(uint joint) {
    int texel = (u_joint_base + int(joint)) * 4;
    return mat4(texelFetch(u_joint_matrices, texel), texelFetch(u_joint_matrices, texel + 1),
                texelFetch(u_joint_matrices, texel + 2), texelFetch(u_joint_matrices, texel + 3));
}
#endif

#ifdef OUTLINE
// Outline pass: the width (0 outside that pass), its mode (1 world metres, 2 fraction of the
// viewport height), the viewport's width / height, and the camera position in world space
// (shared with the fragment shader).
uniform float u_outline_width;
uniform int u_outline_mode;
uniform float u_aspect;
uniform vec3 u_camera_pos;
#endif

#ifdef MORPH_GPU
// Deltas of every target, target-major: texel (t * u_vertex_count + vertex) * 2 holds the
// position delta, the next texel the normal delta (RGBA32F, w unused).
uniform samplerBuffer u_deltas;
uniform int u_vertex_count;
// The non-zero weights of this mesh, packed four to a vector: entry i is
// (u_active_index[i / 4][i % 4], u_active_weight[i / 4][i % 4]).
uniform int u_active_count;
uniform ivec4 u_active_index[MAX_ACTIVE / 4];
uniform vec4 u_active_weight[MAX_ACTIVE / 4];
#endif

out vec3 v_world_pos;
out vec3 v_normal;
out vec2 v_uv;

void main() {
    vec3 position = a_position;
    vec3 normal = a_normal;
#ifdef MORPH_GPU
    // Summed in the same order as the CPU path (increasing target index), so both paths
    // produce the same vertices to within rounding.
    for (int i = 0; i < u_active_count; ++i) {
        int t = u_active_index[i >> 2][i & 3];
        float w = u_active_weight[i >> 2][i & 3];
        int texel = (t * u_vertex_count + gl_VertexID) * 2;
        position += w * texelFetch(u_deltas, texel).xyz;
        normal += w * texelFetch(u_deltas, texel + 1).xyz;
    }
#endif
    // Targets can cancel a normal out; fall back to the base normal rather than produce NaN.
    if (dot(normal, normal) < 1e-12) {
        normal = a_normal;
    }

    mat4 model = u_model;
    mat3 normal_matrix = u_normal_matrix;
#ifdef SKINNING
    // Skinning follows morphing (glTF: targets are in bind space). Normals use the skin
    // matrix's upper 3x3, renormalised in the fragment shader.
    if (u_skinned != 0 && a_weights.x + a_weights.y + a_weights.z + a_weights.w > 0.0) {
        mat4 skin = mat4(0.0);
        for (int i = 0; i < 4; ++i) {
            if (a_weights[i] > 0.0) {
                skin += a_weights[i] * joint_matrix(a_joints[i]);
            }
        }
        model = skin;
        normal_matrix = mat3(skin);
    }
#endif
    vec4 world = model * vec4(position, 1.0);
    vec3 world_normal = normal_matrix * normal;
    gl_Position = u_view_proj * world;

#ifdef OUTLINE
    if (u_outline_width > 0.0) {
        vec3 n = normalize(world_normal);
        if (u_outline_mode == 1) {
            world.xyz += n * u_outline_width;
            gl_Position = u_view_proj * world;
        } else {
            // A constant width on screen, faded where the surface faces the camera, where
            // pushing it sideways would only poke through the surface.
            vec4 clip_normal = u_view_proj * vec4(n, 0.0);
            vec2 dir = clip_normal.xy * vec2(u_aspect, 1.0);
            float len = length(dir);
            if (len > 1e-6) {
                dir /= len;
                float facing = abs(dot(n, normalize(u_camera_pos - world.xyz)));
                float fade = clamp(1.0 - facing, 0.0, 1.0);
                gl_Position.xy += vec2(dir.x / u_aspect, dir.y) * (2.0 * u_outline_width * fade)
                    * gl_Position.w;
            }
        }
    }
#endif
    v_world_pos = world.xyz;
    v_normal = world_normal;
#ifdef UV_TRANSFORM
    v_uv = (u_uv_transform * vec3(a_uv, 1.0)).xy;
#else
    v_uv = a_uv;
#endif
#ifdef VERTEX_COLORS
    v_color = a_color;
#endif
}
