// Draws an overlay image with straight alpha, writing premultiplied colour so the result stays
// correct over opaque and premultiplied (transparent-window) framebuffers alike. The image is
// already sRGB-encoded, like the framebuffer contents, so it is copied without conversion.

uniform sampler2D u_image;

in vec2 v_uv;
out vec4 o_color;

void main() {
    vec4 c = texture(u_image, v_uv);
    o_color = vec4(c.rgb * c.a, c.a);
}
