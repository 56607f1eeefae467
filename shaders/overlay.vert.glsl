// Screen-space quad for 2D overlays (prompts, progress bars), generated from gl_VertexID so no
// vertex buffer is needed. u_rect is the quad in normalised device coordinates:
// (left, top, right, bottom).

uniform vec4 u_rect;

out vec2 v_uv;

void main() {
    // Triangle strip: (0,0) (1,0) (0,1) (1,1) in quad space, top-left first.
    vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
    v_uv = corner;
    gl_Position = vec4(mix(u_rect.x, u_rect.z, corner.x), mix(u_rect.y, u_rect.w, corner.y), 0.0, 1.0);
}
