// Procedural scenes of the path tracer: a few layouts in a Cornell-like box, each varied by a
// seed (wall colors, object positions and materials, light size and power, camera).
#pragma once

#include <cstdint>
#include <string>

namespace pathtracer {

constexpr int kMaxSpheres = 8;
constexpr int kMaxBoxes = 2;
constexpr int kSceneCount = 4;  // scene ids 0 .. kSceneCount-1

enum Material : int { kDiffuse = 0, kPlastic = 1, kMetal = 2, kChecker = 3 };

// The uniform block of pathtrace.comp (std140 with vec4 members only: no hidden padding).
struct Vec4 {
  float x = 0, y = 0, z = 0, w = 0;
};
struct GpuSphere {
  Vec4 center_radius, albedo_material, spec_exponent;
};
struct GpuBox {
  Vec4 center_angle, half_size, albedo_material, spec_exponent;
};
struct GpuScene {
  Vec4 cam_pos, cam_fwd, cam_right, cam_up;
  Vec4 light_center, light_half, light_emission;
  Vec4 wall_left, wall_right, wall_white;
  Vec4 floor_a, floor_b;
  int32_t counts[4] = {0, 0, 0, 0};  // spheres, boxes, max path depth, unused
  GpuSphere spheres[kMaxSpheres];
  GpuBox boxes[kMaxBoxes];
};
static_assert(sizeof(GpuScene) == 13 * 16 + kMaxSpheres * 48 + kMaxBoxes * 64, "std140 layout of SceneBlock");

struct Scene {
  GpuScene gpu;
  std::string description;  // "cornell (seed 7): 2 spheres, light 0.31x0.22"
};

// The same (id, seed) gives the same scene on every machine (own float mapping of mt19937,
// whose output sequence the C++ standard fixes). Throws std::invalid_argument for a bad id.
Scene make_scene(int id, uint32_t seed, int max_depth);
const char* scene_name(int id);

}  // namespace pathtracer
