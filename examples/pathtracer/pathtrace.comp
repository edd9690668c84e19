#version 460
// The example's path tracer: one invocation per pixel traces `samples` paths through a
// procedural Cornell-like box (five walls with a procedural checker floor, a rectangular area
// light under the ceiling, spheres and y-rotated boxes with diffuse, glossy-plastic, metal or
// checker-textured materials) and folds them into running means in three storage images:
// radiance (HDR), first-hit albedo and first-hit normal. A progressive render calls it again with
// samples_before > 0. The scene comes from scene.cpp through a uniform buffer (same layout as
// GpuScene there: std140, vec4 members only, so both sides agree without padding rules).
//
// Direct light is sampled explicitly at diffuse vertices (next-event estimation); emission met by
// a path is counted only after a camera ray or a glossy bounce, so no light is counted twice.
// Caustics (diffuse, then glossy, then the light) are left out, as real-time path tracers do:
// they are fireflies that even the reference would not resolve in a sensible time.
layout(local_size_x = 8, local_size_y = 8) in;

const int MAX_SPHERES = 8;
const int MAX_BOXES = 2;
const int MAT_DIFFUSE = 0, MAT_PLASTIC = 1, MAT_METAL = 2, MAT_CHECKER = 3;

struct Sphere {
  vec4 center_radius;
  vec4 albedo_material;  // rgb albedo, w material
  vec4 spec_exponent;    // rgb specular color, w Phong exponent
};
struct Box {
  vec4 center_angle;  // xyz center, w rotation about y (radians)
  vec4 half_size;
  vec4 albedo_material;
  vec4 spec_exponent;
};

layout(std140, set = 0, binding = 0) uniform SceneBlock {
  vec4 cam_pos;  // w: tan(half field of view) along the image's shorter side
  vec4 cam_fwd, cam_right, cam_up;
  vec4 light_center;    // under the ceiling, facing down
  vec4 light_half;      // x, z half extents; w area
  vec4 light_emission;  // rgb radiance
  vec4 wall_left, wall_right, wall_white;
  vec4 floor_a;  // rgb, w material (MAT_DIFFUSE or MAT_PLASTIC)
  vec4 floor_b;  // rgb, w checker cells per unit
  ivec4 counts;  // x spheres, y boxes, z max path depth
  Sphere spheres[MAX_SPHERES];
  Box boxes[MAX_BOXES];
} S;

layout(set = 0, binding = 1, rgba32f) uniform image2D out_color;
layout(set = 0, binding = 2, rgba32f) uniform image2D out_albedo;
layout(set = 0, binding = 3, rgba32f) uniform image2D out_normal;

layout(push_constant) uniform Push {
  uint width, height;
  uint samples_before;  // samples already averaged into the images (0: overwrite)
  uint samples;         // samples to add now
  uint seed;            // differs between frames and between noisy and reference renders
} pc;

const float PI = 3.14159265358979;
const float EPS = 1e-4;
const float FAR = 1e30;

// PCG hash (Jarzynski and Olano, "Hash Functions for GPU Rendering", 2020).
uint rng_state;
uint pcg(uint v) {
  uint state = v * 747796405u + 2891336453u;
  uint word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}
float rnd() {
  rng_state = pcg(rng_state);
  return float(rng_state >> 8) * (1.0 / 16777216.0);
}

struct Hit {
  float t;
  vec3 n;       // facing the incoming ray
  vec3 albedo;
  vec3 spec;
  float exponent;
  int material;
  bool light;
};

// A solid checker in world space: the texture detail the denoiser must keep (albedo helps).
float checker(vec3 p, float cells) {
  ivec3 c = ivec3(floor(p * cells));
  return float((c.x + c.y + c.z) & 1);
}

void set_material(inout Hit h, vec4 albedo_material, vec4 spec_exponent) {
  h.albedo = albedo_material.rgb;
  h.material = int(albedo_material.w);
  h.spec = spec_exponent.rgb;
  h.exponent = spec_exponent.w;
}

void hit_sphere(vec3 o, vec3 d, int i, inout Hit h) {
  vec4 s = S.spheres[i].center_radius;
  vec3 oc = o - s.xyz;
  float b = dot(oc, d);
  float disc = b * b - (dot(oc, oc) - s.w * s.w);
  if (disc < 0.0) return;
  disc = sqrt(disc);
  float t = -b - disc;
  if (t < EPS) t = -b + disc;
  if (t < EPS || t >= h.t) return;
  h.t = t;
  h.n = (o + t * d - s.xyz) / s.w;
  h.light = false;
  set_material(h, S.spheres[i].albedo_material, S.spheres[i].spec_exponent);
}

vec3 rotate_y(vec3 v, float a) {
  float c = cos(a), s = sin(a);
  return vec3(c * v.x + s * v.z, v.y, -s * v.x + c * v.z);
}

void hit_box(vec3 o, vec3 d, int i, inout Hit h) {
  Box b = S.boxes[i];
  // Slab test in the box's frame.
  vec3 lo = rotate_y(o - b.center_angle.xyz, -b.center_angle.w);
  vec3 ld = rotate_y(d, -b.center_angle.w);
  vec3 inv = 1.0 / ld;
  vec3 t0 = (-b.half_size.xyz - lo) * inv, t1 = (b.half_size.xyz - lo) * inv;
  vec3 tmin = min(t0, t1), tmax = max(t0, t1);
  float tn = max(max(tmin.x, tmin.y), tmin.z), tf = min(min(tmax.x, tmax.y), tmax.z);
  if (tn > tf) return;
  float t = tn > EPS ? tn : tf;
  if (t < EPS || t >= h.t) return;
  vec3 p = (lo + t * ld) / b.half_size.xyz;
  vec3 a = abs(p);
  vec3 n = a.x > a.y && a.x > a.z ? vec3(sign(p.x), 0, 0) : (a.y > a.z ? vec3(0, sign(p.y), 0) : vec3(0, 0, sign(p.z)));
  h.t = t;
  h.n = rotate_y(n, b.center_angle.w);
  h.light = false;
  set_material(h, b.albedo_material, b.spec_exponent);
}

// The room: walls at x = +-1, y = +-1, z = -1; the side toward the camera (z = +1) is open.
void hit_walls(vec3 o, vec3 d, inout Hit h) {
  for (int axis = 0; axis < 3; ++axis) {
    for (int side = -1; side <= 1; side += 2) {
      if (axis == 2 && side == 1) continue;
      float t = (float(side) - o[axis]) / d[axis];
      if (!(t > EPS && t < h.t)) continue;
      vec3 p = o + t * d;
      vec3 q = abs(p);
      q[axis] = 0.0;
      if (q.x > 1.0 || q.y > 1.0 || q.z > 1.0) continue;
      h.t = t;
      h.n = vec3(0);
      h.n[axis] = -float(side);
      h.light = false;
      h.material = MAT_DIFFUSE;
      h.spec = vec3(0.04);
      h.exponent = 200.0;
      if (axis == 0) h.albedo = side < 0 ? S.wall_left.rgb : S.wall_right.rgb;
      else if (axis == 1 && side < 0) {
        h.albedo = mix(S.floor_a.rgb, S.floor_b.rgb, checker(p, S.floor_b.w));
        h.material = int(S.floor_a.w);
      } else h.albedo = S.wall_white.rgb;
    }
  }
}

void hit_light(vec3 o, vec3 d, inout Hit h) {
  float t = (S.light_center.y - o.y) / d.y;
  if (!(t > EPS && t < h.t)) return;
  vec3 p = o + t * d - S.light_center.xyz;
  if (abs(p.x) > S.light_half.x || abs(p.z) > S.light_half.y) return;
  h.t = t;
  h.n = vec3(0, -1, 0);
  h.light = true;
  h.albedo = vec3(1);
}

Hit intersect(vec3 o, vec3 d, float tmax) {
  Hit h;
  h.t = tmax;
  h.light = false;
  h.material = -1;
  hit_walls(o, d, h);
  hit_light(o, d, h);
  for (int i = 0; i < S.counts.x; ++i) hit_sphere(o, d, i, h);
  for (int i = 0; i < S.counts.y; ++i) hit_box(o, d, i, h);
  if (h.material == MAT_CHECKER) h.albedo *= mix(1.0, 0.25, checker(o + h.t * d, 6.0));
  return h;
}

bool occluded(vec3 o, vec3 d, float dist) {
  Hit h = intersect(o, d, dist);
  return h.t < dist && !h.light;
}

mat3 basis(vec3 n) {
  vec3 t = abs(n.x) > 0.5 ? vec3(0, 1, 0) : vec3(1, 0, 0);
  vec3 b = normalize(cross(n, t));
  return mat3(cross(b, n), b, n);
}

vec3 cosine_dir(vec3 n) {
  float u = rnd(), phi = 2.0 * PI * rnd();
  float r = sqrt(u);
  return basis(n) * vec3(r * cos(phi), r * sin(phi), sqrt(1.0 - u));
}

// A Phong lobe around `axis`, sampled exactly (pdf proportional to cos^exponent).
vec3 phong_dir(vec3 axis, float exponent) {
  float c = pow(rnd(), 1.0 / (exponent + 1.0)), phi = 2.0 * PI * rnd();
  float s = sqrt(max(0.0, 1.0 - c * c));
  return basis(axis) * vec3(s * cos(phi), s * sin(phi), c);
}

// Probability of taking the glossy lobe: the material is the mixture (1-p) diffuse + p glossy,
// so picking a lobe with its weight and multiplying by that lobe's color is unbiased.
float glossy_probability(int material) {
  return material == MAT_METAL ? 1.0 : (material == MAT_PLASTIC ? 0.35 : 0.0);
}

vec3 trace(vec3 o, vec3 d, out vec3 albedo, out vec3 normal) {
  vec3 radiance = vec3(0), throughput = vec3(1);
  albedo = vec3(0);
  normal = vec3(0);
  bool count_emission = true, diffuse_seen = false;
  for (int depth = 0; depth < S.counts.z; ++depth) {
    Hit h = intersect(o, d, FAR);
    if (h.t >= FAR) break;  // out through the open side: a black world
    if (dot(h.n, d) > 0.0) h.n = -h.n;
    float p_glossy = glossy_probability(h.material);
    if (depth == 0) {
      albedo = h.light ? vec3(1) : mix(h.albedo, h.spec, p_glossy);
      normal = h.n;
    }
    if (h.light) {
      if (count_emission) radiance += throughput * S.light_emission.rgb;
      break;
    }
    vec3 x = o + h.t * d + h.n * EPS;
    if (rnd() < p_glossy) {
      d = phong_dir(reflect(d, h.n), h.exponent);
      if (dot(d, h.n) <= 0.0) break;
      throughput *= h.spec;
      count_emission = !diffuse_seen;
    } else {
      // Next-event estimation: one point on the light, then a cosine-distributed bounce.
      vec3 lp = S.light_center.xyz + vec3((2.0 * rnd() - 1.0) * S.light_half.x, 0.0, (2.0 * rnd() - 1.0) * S.light_half.y);
      vec3 to = lp - x;
      float d2 = dot(to, to);
      vec3 wl = to * inversesqrt(d2);
      float cos_s = dot(h.n, wl), cos_l = wl.y;
      if (cos_s > 0.0 && cos_l > 0.0 && !occluded(x, wl, sqrt(d2) * (1.0 - 1e-3)))
        radiance += throughput * h.albedo / PI * S.light_emission.rgb * (cos_s * cos_l * S.light_half.w / d2);
      d = cosine_dir(h.n);
      throughput *= h.albedo;
      count_emission = false;
      diffuse_seen = true;
    }
    o = x;
    if (depth >= 2) {  // Russian roulette keeps long paths unbiased and cheap
      float q = clamp(max(throughput.r, max(throughput.g, throughput.b)), 0.05, 0.95);
      if (rnd() > q) break;
      throughput /= q;
    }
  }
  return radiance;
}

void main() {
  uvec2 p = gl_GlobalInvocationID.xy;
  if (p.x >= pc.width || p.y >= pc.height) return;
  const float shorter = float(min(pc.width, pc.height));
  vec3 sum_c = vec3(0), sum_a = vec3(0), sum_n = vec3(0);
  for (uint s = 0; s < pc.samples; ++s) {
    rng_state = pcg(pcg(p.y * pc.width + p.x) ^ pcg((pc.samples_before + s) * 0x9E3779B9u + pc.seed));
    // Jittered pinhole camera; the field of view spans the shorter image side (a wide image
    // shows more of the black outside, never less of the box).
    vec2 xy = (2.0 * (vec2(p) + vec2(rnd(), rnd())) - vec2(pc.width, pc.height)) / shorter * S.cam_pos.w;
    vec3 d = normalize(S.cam_fwd.xyz + xy.x * S.cam_right.xyz - xy.y * S.cam_up.xyz);
    vec3 a, n;
    vec3 c = trace(S.cam_pos.xyz, d, a, n);
    if (any(isnan(c)) || any(isinf(c))) c = vec3(0);  // one bad sample must not poison the mean
    sum_c += c;
    sum_a += a;
    sum_n += n;
  }
  float before = float(pc.samples_before), total = before + float(pc.samples);
  vec4 pc_ = vec4(0), pa = vec4(0), pn = vec4(0);
  if (pc.samples_before > 0) {
    pc_ = imageLoad(out_color, ivec2(p));
    pa = imageLoad(out_albedo, ivec2(p));
    pn = imageLoad(out_normal, ivec2(p));
  }
  imageStore(out_color, ivec2(p), vec4((pc_.rgb * before + sum_c) / total, 1));
  imageStore(out_albedo, ivec2(p), vec4((pa.rgb * before + sum_a) / total, 1));
  imageStore(out_normal, ivec2(p), vec4((pn.rgb * before + sum_n) / total, 1));
}
