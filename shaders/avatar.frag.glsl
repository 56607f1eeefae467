// Avatar fragment shader: base colour (texture x factor), soft portrait lighting in linear
// space, sRGB encoding of the result.
//
// Prepended at run time: `#version` (no defines are used here).

in vec3 v_world_pos;
in vec3 v_normal;
in vec2 v_uv;

// Linear RGBA base colour factor and the sRGB base colour texture (sampled as linear).
uniform vec4 u_base_color;
uniform sampler2D u_base_color_tex;

// Directions towards the lights and the camera position, all in world space. The lights are
// fixed relative to the camera, so the face stays lit the same way from wherever it is seen.
uniform vec3 u_key_dir;
uniform vec3 u_fill_dir;
uniform vec3 u_rim_dir;
uniform vec3 u_camera_pos;

out vec4 o_color;

// Half-Lambert: wraps the light around the terminator, so nothing facing away goes black.
float half_lambert(vec3 n, vec3 l) {
    float h = 0.5 * dot(n, l) + 0.5;
    return h * h;
}

// Linear to sRGB transfer function, per channel.
vec3 encode_srgb(vec3 c) {
    c = clamp(c, 0.0, 1.0);
    vec3 lo = c * 12.92;
    vec3 hi = 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055;
    return mix(lo, hi, step(vec3(0.0031308), c));
}

void main() {
    vec3 n = normalize(v_normal);
    // Double-sided materials show their back faces lit like the front.
    if (!gl_FrontFacing) {
        n = -n;
    }
    vec3 v = normalize(u_camera_pos - v_world_pos);
    vec3 albedo = texture(u_base_color_tex, v_uv).rgb * u_base_color.rgb;

    // Sky/ground ambient: a little cooler from above, warmer bounce from below.
    vec3 ambient = mix(vec3(0.11, 0.10, 0.10), vec3(0.16, 0.17, 0.20), 0.5 + 0.5 * n.y);
    // Soft warm key from the upper front, cool fill from the other side.
    vec3 key = vec3(1.00, 0.95, 0.88) * 0.90 * half_lambert(n, u_key_dir);
    vec3 fill = vec3(0.55, 0.62, 0.75) * 0.22 * half_lambert(n, u_fill_dir);
    // Rim: brightens silhouettes that face the rim light, separating the head from the
    // background.
    // dot(n, v) can round a hair above 1 where a normal faces the camera exactly; pow() of the
    // then slightly negative base is undefined (NaN on llvmpipe, a black pixel).
    float facing = 1.0 - max(dot(n, v), 0.0);
    float rim = pow(max(facing, 0.0), 3.0) * (0.35 + 0.65 * max(dot(n, u_rim_dir), 0.0));
    // A faint, broad highlight from the key light.
    vec3 h = normalize(u_key_dir + v);
    float spec = 0.05 * pow(max(dot(n, h), 0.0), 24.0);

    vec3 color = albedo * (ambient + key + fill) + vec3(0.30) * rim * albedo + vec3(spec);
    // Opaque materials write alpha 1; with a premultiplied background this keeps the whole
    // frame premultiplied.
    o_color = vec4(encode_srgb(color), 1.0);
}
