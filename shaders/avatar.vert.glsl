// Avatar vertex shader: morph targets (GPU path), then the node transform.
//
// Prepended at run time: `#version`, and the defines
//   MORPH_GPU   (present on the GPU morph path)
//   MAX_ACTIVE  (how many non-zero weights one draw can list; a multiple of 4)

layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in vec2 a_uv;

uniform mat4 u_model;
uniform mat3 u_normal_matrix;
uniform mat4 u_view_proj;

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
    vec4 world = u_model * vec4(position, 1.0);
    v_world_pos = world.xyz;
    v_normal = u_normal_matrix * normal;
    v_uv = a_uv;
    gl_Position = u_view_proj * world;
}
