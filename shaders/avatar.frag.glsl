// Avatar fragment shader: base colour (texture x factor x vertex colour), alpha modes, then
// soft portrait lighting, unlit, or MToon toon shading (with its rim light and matcap) in linear
// space, emission added, sRGB encoding of the result; the outline pass colours the pushed-out
// back faces.
//
// Prepended at run time: `#version`, and the defines (each present only when some primitive or
// material of the avatar needs it, so an avatar pays for no feature it does not use)
//   VERTEX_COLORS  (vertex colours)
//   ALPHA_MODES    (MASK or BLEND materials)
//   EMISSION       (emissive materials, or expressions that make one emit)
//   OUTLINE        (MToon outlines; MToon programs only)
//   RIM            (MToon rim light or matcap; MToon programs only)
//   WRINKLES       (wrinkle normal maps the mapping file declares), with WRINKLE_TEXTURES (1-4)
//                  the number of textures they use
// and at most one of these, choosing the shading (the portrait lighting without either)
//   SHADING_UNLIT  (KHR_materials_unlit: the base colour as is)
//   SHADING_TOON   (MToon)

in vec3 v_world_pos;
in vec3 v_normal;
in vec2 v_uv;
#ifdef VERTEX_COLORS
in vec4 v_color;
#endif

// Linear RGBA base colour factor and the sRGB base colour texture (sampled as linear).
uniform vec4 u_base_color;
uniform sampler2D u_base_color_tex;

#ifdef ALPHA_MODES
// glTF alpha mode: 0 opaque (alpha ignored), 1 mask (discard below u_alpha_cutoff), 2 blend.
uniform int u_alpha_mode;
uniform float u_alpha_cutoff;
#endif

#ifdef SHADING_TOON
// MToon: the linear shade colour factor and where its texture comes from (0 none: the factor
// alone; 1 the base colour texture, already sampled; 2 u_shade_tex), and the ramp's shift and
// toony factors (VRMC_materials_mtoon meanings).
uniform vec3 u_shade_color;
uniform int u_shade_source;
uniform sampler2D u_shade_tex;
uniform float u_shading_shift;
uniform float u_shading_toony;
#endif

#ifdef OUTLINE
// Outline pass (u_outline non-zero): the linear outline colour and how much the surface's
// shading tints it.
uniform int u_outline;
uniform vec3 u_outline_color;
uniform float u_outline_mix;
#endif

#ifdef EMISSION
// The linear emissive colour, and whether it is multiplied by u_emissive_tex (1) or not (0).
uniform vec3 u_emissive;
uniform int u_emissive_source;
uniform sampler2D u_emissive_tex;
#endif

#ifdef RIM
// MToon's parametric rim: pow(saturate(1 - N.V + lift), power) * colour; the matcap: the
// factor times u_matcap_tex at the view-space normal (u_matcap_source 1; 0: none). Both are
// multiplied by u_rim_tex (u_rim_source 1) and dimmed by the light on the surface by
// u_rim_mix. u_view_rotation turns world directions into view space.
uniform vec3 u_rim_color;
uniform float u_rim_power;
uniform float u_rim_lift;
uniform float u_rim_mix;
uniform int u_rim_source;
uniform sampler2D u_rim_tex;
uniform vec3 u_matcap_color;
uniform int u_matcap_source;
uniform sampler2D u_matcap_tex;
uniform mat3 u_view_rotation;
#endif

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

// Linear to sRGB transfer function, per channel. The power segment, 1.055 c^(1/2.4) - 0.055,
// is fitted by square roots (within a quarter of an 8-bit level over 0.0031308..1): a software
// rasteriser computes pow() from a logarithm and an exponential, several times the work.
vec3 encode_srgb(vec3 c) {
    c = clamp(c, 0.0, 1.0);
    vec3 lo = c * 12.92;
    vec3 s1 = sqrt(c);
    vec3 s2 = sqrt(s1);
    vec3 s3 = sqrt(s2);
    vec3 hi = 0.662002687 * s1 + 0.684122060 * s2 - 0.323583601 * s3 - 0.0225411470 * c;
    return mix(lo, hi, step(vec3(0.0031308), c));
}

#ifdef SHADING_TOON
// MToon's share of the light that is direct (through the lit/shade ramp); the rest is an even
// ambient that lights with the lit colour, so the shade side keeps the skin's warmth instead of
// going grey, and the lit side shows the base colour exactly.
const float TOON_DIRECT = 0.85;

// MToon: mix the shade and lit colours by the ramp over N.L (see VRMC_materials_mtoon); `tex`
// is the base colour texture's sample. `light` receives how much light reaches the surface
// (1 on the lit side, the ambient's share in the shade).
vec3 toon(vec3 n, vec3 lit, vec3 tex, out float light) {
    float shading = dot(n, u_key_dir) + u_shading_shift;
    float lo = -1.0 + u_shading_toony;
    float hi = 1.0 - u_shading_toony;
    // linearstep; a toony of 1 makes a hard step.
    float s = hi > lo ? clamp((shading - lo) / (hi - lo), 0.0, 1.0) : step(lo, shading);
    vec3 shade = u_shade_color;
    if (u_shade_source == 1) {
        shade *= tex;
    } else if (u_shade_source == 2) {
        shade *= texture(u_shade_tex, v_uv).rgb;
    }
    light = s * TOON_DIRECT + (1.0 - TOON_DIRECT);
    return mix(shade, lit, s) * TOON_DIRECT + lit * (1.0 - TOON_DIRECT);
}
#endif

#ifdef RIM
// MToon's rim lighting (VRMC_materials_mtoon's pseudocode, three-vrm's matcap orientation:
// the top of the texture lights surfaces facing up).
vec3 rim_light(vec3 n, float light) {
    vec3 v = normalize(u_camera_pos - v_world_pos);
    vec3 rim = vec3(0.0);
    if (u_matcap_source == 1) {
        vec3 nv = u_view_rotation * n;
        vec3 vv = u_view_rotation * v;
        vec3 x = vec3(vv.z, 0.0, -vv.x);
        // Looking straight up or down the view's y axis leaves x undefined: any unit x will do.
        x = dot(x, x) > 1e-12 ? normalize(x) : vec3(1.0, 0.0, 0.0);
        vec3 y = cross(vv, x);
        vec2 uv = 0.5 + 0.495 * vec2(dot(x, nv), -dot(y, nv));
        rim += u_matcap_color * texture(u_matcap_tex, uv).rgb;
    }
    float fresnel = clamp(1.0 - dot(n, v) + u_rim_lift, 0.0, 1.0);
    rim += pow(fresnel, u_rim_power) * u_rim_color;
    if (u_rim_source == 1) {
        rim *= texture(u_rim_tex, v_uv).rgb;
    }
    return rim * mix(1.0, light, u_rim_mix);
}
#endif

#ifdef EMISSION
// The emitted light, added to the shaded colour.
vec3 emission() {
    vec3 e = u_emissive;
    if (u_emissive_source == 1) {
        e *= texture(u_emissive_tex, v_uv).rgb;
    }
    return e;
}
#endif

#ifdef WRINKLES
// Wrinkle normal maps, blended into the normal by this material's weights. Up to four textures,
// each holding two maps: one in red and green (weight u_wrinkle_rg), one in blue and alpha
// (u_wrinkle_ba), 0 for a map that does not apply to the material. A byte b reads as
// (b - 128) / 127, so a flat texel is exactly no tilt. Each map is flat outside its rectangle
// of texture coordinates (u0, v0, u1, v1): a fragment outside every rectangle samples nothing,
// which keeps the cost to the few pixels a wrinkle covers. Tangent space: x along increasing u,
// y along decreasing v (up in the image), z out of the surface.
uniform vec4 u_wrinkle_rg;
uniform vec4 u_wrinkle_ba;
uniform vec4 u_wrinkle_rect_rg[4];
uniform vec4 u_wrinkle_rect_ba[4];
uniform sampler2D u_wrinkle_tex0;
uniform sampler2D u_wrinkle_tex1;
uniform sampler2D u_wrinkle_tex2;
uniform sampler2D u_wrinkle_tex3;

bool inside(vec4 rect) {
    return all(greaterThanEqual(v_uv, rect.xy)) && all(lessThanEqual(v_uv, rect.zw));
}

// The weighted tilt of one texture's two maps at this fragment (explicit gradients: the
// branch on the rectangles is not uniform).
vec2 wrinkle_tilt(sampler2D tex, float w_rg, float w_ba, vec4 r_rg, vec4 r_ba, vec2 dx, vec2 dy) {
    float rg = (w_rg > 0.0 && inside(r_rg)) ? w_rg : 0.0;
    float ba = (w_ba > 0.0 && inside(r_ba)) ? w_ba : 0.0;
    if (rg + ba <= 0.0) {
        return vec2(0.0);
    }
    vec4 t = textureGrad(tex, v_uv, dx, dy) * (255.0 / 127.0) - (128.0 / 127.0);
    return rg * t.xy + ba * t.zw;
}

// The normal `n` tilted by the weighted wrinkle maps, in a tangent frame found from the screen
// derivatives of the position and the texture coordinates (no tangent attribute needed; a
// mirrored UV layout is handled). Where the maps are flat, `n` comes back untouched.
vec3 wrinkled(vec3 n) {
    // Only weights set for the whole draw: the branch is uniform, so derivatives are defined.
    vec4 any_weight = u_wrinkle_rg + u_wrinkle_ba;
    if (dot(any_weight, vec4(1.0)) <= 0.0) {
        return n;
    }
    vec3 dpx = dFdx(v_world_pos);
    vec3 dpy = dFdy(v_world_pos);
    vec2 dtx = dFdx(v_uv);
    vec2 dty = dFdy(v_uv);
    vec2 tilt = vec2(0.0);
    if (any_weight.x > 0.0) {
        tilt += wrinkle_tilt(u_wrinkle_tex0, u_wrinkle_rg.x, u_wrinkle_ba.x,
                             u_wrinkle_rect_rg[0], u_wrinkle_rect_ba[0], dtx, dty);
    }
    // Only the textures in use are sampled: a software rasteriser runs an untaken branch too.
#if WRINKLE_TEXTURES > 1
    if (any_weight.y > 0.0) {
        tilt += wrinkle_tilt(u_wrinkle_tex1, u_wrinkle_rg.y, u_wrinkle_ba.y,
                             u_wrinkle_rect_rg[1], u_wrinkle_rect_ba[1], dtx, dty);
    }
#endif
#if WRINKLE_TEXTURES > 2
    if (any_weight.z > 0.0) {
        tilt += wrinkle_tilt(u_wrinkle_tex2, u_wrinkle_rg.z, u_wrinkle_ba.z,
                             u_wrinkle_rect_rg[2], u_wrinkle_rect_ba[2], dtx, dty);
    }
#endif
#if WRINKLE_TEXTURES > 3
    if (any_weight.w > 0.0) {
        tilt += wrinkle_tilt(u_wrinkle_tex3, u_wrinkle_rg.w, u_wrinkle_ba.w,
                             u_wrinkle_rect_rg[3], u_wrinkle_rect_ba[3], dtx, dty);
    }
#endif
    float det = dtx.x * dty.y - dty.x * dtx.y;
    if (tilt == vec2(0.0) || abs(det) < 1e-12) {
        return n;
    }
    // dP/du and dP/dv, made perpendicular to the normal.
    vec3 t = (dty.y * dpx - dtx.y * dpy) / det;
    vec3 b = (dtx.x * dpy - dty.x * dpx) / det;
    t -= n * dot(n, t);
    b -= n * dot(n, b);
    if (dot(t, t) < 1e-20 || dot(b, b) < 1e-20) {
        return n;
    }
    t = normalize(t);
    b = normalize(b);
    float z = sqrt(max(1.0 - dot(tilt, tilt), 0.0));
    return normalize(tilt.x * t - tilt.y * b + z * n);
}
#endif

void main() {
    vec4 tex = texture(u_base_color_tex, v_uv);
    vec4 base = tex * u_base_color;
    // MToon ignores vertex colours.
#if defined(VERTEX_COLORS) && !defined(SHADING_TOON)
    base *= v_color;
#endif
    // Opaque and masked materials write alpha 1, blended ones premultiplied colour (the pass
    // blends with ONE, ONE_MINUS_SRC_ALPHA); with a premultiplied background this keeps the
    // whole frame premultiplied.
    float alpha = 1.0;
#ifdef ALPHA_MODES
    if (u_alpha_mode == 1 && base.a < u_alpha_cutoff) {
        discard;
    }
    if (u_alpha_mode == 2) {
        alpha = base.a;
    }
#endif
    vec3 albedo = base.rgb;

    vec3 n = normalize(v_normal);
    // Double-sided materials show their back faces lit like the front.
    if (!gl_FrontFacing) {
        n = -n;
    }
#ifdef WRINKLES
    n = wrinkled(n);
#endif
#ifdef OUTLINE
    // The outline's hull is seen from inside: light it as the surface it surrounds.
    if (u_outline != 0) {
        n = -n;
    }
#endif
#if defined(SHADING_UNLIT)
    vec3 color = albedo;
#ifdef EMISSION
    color += emission();
#endif
    o_color = vec4(encode_srgb(color) * alpha, alpha);
#elif defined(SHADING_TOON)
    float light;
    vec3 color = toon(n, albedo, tex.rgb, light);
#ifdef RIM
    color += rim_light(n, light);
#endif
#ifdef EMISSION
    color += emission();
#endif
#ifdef OUTLINE
    if (u_outline != 0) {
        color = u_outline_color * mix(vec3(1.0), color, u_outline_mix);
    }
#endif
    o_color = vec4(encode_srgb(color) * alpha, alpha);
#else
    vec3 v = normalize(u_camera_pos - v_world_pos);

    // Sky/ground ambient: a little cooler from above, warmer bounce from below.
    vec3 ambient = mix(vec3(0.11, 0.10, 0.10), vec3(0.16, 0.17, 0.20), 0.5 + 0.5 * n.y);
    // Soft warm key from the upper front, cool fill from the other side.
    vec3 key = vec3(1.00, 0.95, 0.88) * 0.90 * half_lambert(n, u_key_dir);
    vec3 fill = vec3(0.55, 0.62, 0.75) * 0.22 * half_lambert(n, u_fill_dir);
    // Rim: brightens silhouettes that face the rim light, separating the head from the
    // background.
    // dot(n, v) can round a hair above 1 where a normal faces the camera exactly: keep the base
    // at or above zero. Integer powers are multiplied out: pow() is a logarithm and an
    // exponential.
    float facing = max(1.0 - max(dot(n, v), 0.0), 0.0);
    float rim = facing * facing * facing * (0.35 + 0.65 * max(dot(n, u_rim_dir), 0.0));
    // A faint, broad highlight from the key light: 0.05 (n.h)^24.
    vec3 h = normalize(u_key_dir + v);
    float nh2 = max(dot(n, h), 0.0);
    nh2 *= nh2;
    float nh8 = nh2 * nh2 * nh2 * nh2;
    float spec = 0.05 * nh8 * nh8 * nh8;

    vec3 color = albedo * (ambient + key + fill) + vec3(0.30) * rim * albedo + vec3(spec);
#ifdef EMISSION
    color += emission();
#endif
    o_color = vec4(encode_srgb(color) * alpha, alpha);
#endif
}
