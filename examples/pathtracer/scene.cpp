#include "scene.hpp"

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace pathtracer {

namespace {

// Floats from mt19937's raw output: std::uniform_real_distribution differs between standard
// libraries, and the data set must be reproducible from its seed.
class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}
  float uniform(float a, float b) { return a + (b - a) * float(gen_() >> 8) * (1.0f / 16777216.0f); }
  float log_uniform(float a, float b) { return std::exp(uniform(std::log(a), std::log(b))); }
  int below(int n) { return static_cast<int>(gen_() % static_cast<uint32_t>(n)); }

 private:
  std::mt19937 gen_;
};

Vec4 v4(float x, float y, float z, float w = 0) { return {x, y, z, w}; }

Vec4 normalize(Vec4 v) {
  const float l = std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
  return v4(v.x / l, v.y / l, v.z / l);
}

Vec4 cross(Vec4 a, Vec4 b) { return v4(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x); }

// A random color of moderate saturation: hue, saturation, value to RGB.
Vec4 random_color(Rng& r, float s_lo, float s_hi, float v_lo, float v_hi) {
  const float h = r.uniform(0, 6), s = r.uniform(s_lo, s_hi), v = r.uniform(v_lo, v_hi);
  const float c = v * s, x = c * (1 - std::fabs(std::fmod(h, 2.0f) - 1)), m = v - c;
  float rgb[3][6] = {{c, x, 0, 0, x, c}, {x, c, c, x, 0, 0}, {0, 0, x, c, c, x}};
  const int i = static_cast<int>(h) % 6;
  return v4(rgb[0][i] + m, rgb[1][i] + m, rgb[2][i] + m);
}

struct Surface {
  Vec4 albedo_material, spec_exponent;
};

Surface random_material(Rng& r, int type) {
  Vec4 albedo = random_color(r, 0.2f, 0.85f, 0.35f, 0.85f);
  Vec4 spec = v4(0.04f, 0.04f, 0.04f, 1.0f);
  if (type == kPlastic) {
    const float s = r.uniform(0.7f, 0.95f);
    spec = v4(s, s, s, r.log_uniform(20, 2000));
  } else if (type == kMetal) {
    spec = random_color(r, 0.0f, 0.5f, 0.6f, 0.95f);
    spec.w = r.log_uniform(40, 5000);
    albedo = spec;
  }
  albedo.w = static_cast<float>(type);
  return {albedo, spec};
}

void add_sphere(GpuScene& s, float x, float radius, float z, const Surface& m) {
  GpuSphere& sp = s.spheres[s.counts[0]++];
  sp.center_radius = v4(x, -1.0f + radius, z, radius);  // resting on the floor
  sp.albedo_material = m.albedo_material;
  sp.spec_exponent = m.spec_exponent;
}

void add_box(GpuScene& s, Vec4 center, Vec4 half, float angle, const Surface& m) {
  GpuBox& b = s.boxes[s.counts[1]++];
  b.center_angle = v4(center.x, center.y, center.z, angle);
  b.half_size = half;
  b.albedo_material = m.albedo_material;
  b.spec_exponent = m.spec_exponent;
}

// Up to `count` spheres on the floor that do not overlap (rejection sampling, bounded tries).
void scatter_spheres(GpuScene& s, Rng& r, int count) {
  for (int tries = 0; tries < 200 && s.counts[0] < count; ++tries) {
    const float radius = r.uniform(0.12f, 0.3f);
    const float x = r.uniform(-0.95f + radius, 0.95f - radius), z = r.uniform(-0.95f + radius, 0.8f - radius);
    bool free = true;
    for (int i = 0; i < s.counts[0]; ++i) {
      const Vec4 o = s.spheres[i].center_radius;
      const float dx = o.x - x, dz = o.z - z;
      free = free && std::sqrt(dx * dx + dz * dz) > o.w + radius + 0.02f;
    }
    if (free) add_sphere(s, x, radius, z, random_material(r, r.below(4)));
  }
}

}  // namespace

const char* scene_name(int id) {
  static const char* names[kSceneCount] = {"cornell", "boxes", "spheres", "glossy"};
  return id >= 0 && id < kSceneCount ? names[id] : "?";
}

Scene make_scene(int id, uint32_t seed, int max_depth) {
  if (id < 0 || id >= kSceneCount)
    throw std::invalid_argument("scene " + std::to_string(id) + " does not exist (0.." + std::to_string(kSceneCount - 1) + ")");
  Rng r(seed * 4u + static_cast<uint32_t>(id));
  GpuScene s;
  s.counts[2] = max_depth;

  // Camera outside the open side of the box, looking in; the view spans the shorter image side
  // and about the height of the opening.
  const Vec4 pos = v4(r.uniform(-0.15f, 0.15f), r.uniform(-0.1f, 0.15f), r.uniform(3.3f, 3.7f));
  const Vec4 target = v4(r.uniform(-0.1f, 0.1f), r.uniform(-0.1f, 0.05f), 0);
  const Vec4 fwd = normalize(v4(target.x - pos.x, target.y - pos.y, target.z - pos.z));
  const Vec4 right = normalize(cross(fwd, v4(0, 1, 0)));
  s.cam_pos = pos;
  s.cam_pos.w = std::tan(r.uniform(18.0f, 21.0f) * 3.14159265f / 180.0f);
  s.cam_fwd = fwd;
  s.cam_right = right;
  s.cam_up = cross(right, fwd);

  // The light: its power (emission x area) varies less than its size, so small lights are
  // bright and noisy, large ones soft.
  const float hx = r.uniform(0.12f, 0.4f), hz = r.uniform(0.12f, 0.4f), area = 4 * hx * hz;
  const float power = r.uniform(4.0f, 10.0f) / area;
  s.light_center = v4(r.uniform(-0.25f, 0.25f), 0.999f, r.uniform(-0.25f, 0.25f));
  s.light_half = v4(hx, hz, 0, area);
  s.light_emission = v4(power, power * r.uniform(0.8f, 1.0f), power * r.uniform(0.6f, 0.95f));

  // Walls: colored sides (classic red/green by default hue), white back and ceiling, checker floor.
  s.wall_left = r.below(3) ? v4(0.63f, 0.065f, 0.05f) : random_color(r, 0.5f, 0.9f, 0.4f, 0.7f);
  s.wall_right = r.below(3) ? v4(0.14f, 0.45f, 0.091f) : random_color(r, 0.5f, 0.9f, 0.4f, 0.7f);
  const float white = r.uniform(0.6f, 0.8f);
  s.wall_white = v4(white, white, white * r.uniform(0.9f, 1.0f));
  s.floor_a = random_color(r, 0.0f, 0.2f, 0.6f, 0.85f);
  s.floor_b = random_color(r, 0.0f, 0.5f, 0.1f, 0.35f);
  s.floor_a.w = (id == 3 || r.below(4) == 0) ? kPlastic : kDiffuse;
  s.floor_b.w = r.uniform(2.0f, 6.0f);  // checker cells per unit

  switch (id) {
    case 0: {  // cornell: a diffuse or textured sphere and a metal one
      const float ra = r.uniform(0.28f, 0.4f), rb = r.uniform(0.28f, 0.4f);
      add_sphere(s, r.uniform(-0.55f, -0.3f), ra, r.uniform(-0.5f, -0.1f), random_material(r, r.below(2) ? kDiffuse : kChecker));
      add_sphere(s, r.uniform(0.3f, 0.55f), rb, r.uniform(0.0f, 0.4f), random_material(r, kMetal));
      break;
    }
    case 1: {  // boxes: the classic tall and short box, a small sphere on the short one
      const float tall = r.uniform(0.45f, 0.65f), low = r.uniform(0.22f, 0.32f);
      add_box(s, v4(-0.35f, -1 + tall, -0.3f), v4(0.27f, tall, 0.27f), r.uniform(0.2f, 0.5f),
              random_material(r, r.below(3) == 0 ? kPlastic : kDiffuse));
      add_box(s, v4(0.35f, -1 + low, 0.3f), v4(low, low, low), r.uniform(-0.5f, -0.2f),
              random_material(r, r.below(2) ? kChecker : kDiffuse));
      GpuSphere& sp = s.spheres[s.counts[0]++];
      const float radius = r.uniform(0.1f, 0.18f);
      const Surface m = random_material(r, r.below(2) ? kMetal : kPlastic);
      sp.center_radius = v4(0.35f, -1 + 2 * low + radius, 0.3f, radius);
      sp.albedo_material = m.albedo_material;
      sp.spec_exponent = m.spec_exponent;
      break;
    }
    case 2:  // spheres: 4 to 8 small spheres of random materials
      scatter_spheres(s, r, 4 + r.below(5));
      break;
    case 3: {  // glossy: a large metal sphere, plastic ones in front, a glossy floor
      add_sphere(s, r.uniform(-0.3f, 0.3f), r.uniform(0.4f, 0.5f), r.uniform(-0.5f, -0.35f), random_material(r, kMetal));
      add_sphere(s, r.uniform(-0.7f, -0.45f), r.uniform(0.15f, 0.25f), r.uniform(0.2f, 0.5f), random_material(r, kPlastic));
      add_sphere(s, r.uniform(0.45f, 0.7f), r.uniform(0.15f, 0.25f), r.uniform(0.2f, 0.5f), random_material(r, kPlastic));
      break;
    }
  }
  char text[200];
  std::snprintf(text, sizeof(text), "%s (seed %u): %d spheres, %d boxes, light %.2fx%.2f, emission %.1f", scene_name(id), seed,
                s.counts[0], s.counts[1], 2 * hx, 2 * hz, power);
  return {s, text};
}

}  // namespace pathtracer
