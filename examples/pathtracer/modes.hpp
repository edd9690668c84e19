// The two things the program does (main.cpp: render mode; dataset.cpp: dataset mode) and what
// they share.
#pragma once

#include <cstdint>

#include "options.hpp"
#include "renderer.hpp"

namespace pathtracer {

// Frames of one scene, denoised through denox in the frame's command buffer; files and PSNR.
int run_render(const Device& dev, const Options& o);
// Random scene variations at low spp plus references, as .npy for tools/train.
int run_dataset(const Device& dev, const Options& o);

// `spp` samples into `aovs` (restarting the means), in passes of a bounded number of paths, one
// submit each: one huge dispatch could trip a GPU watchdog and would stall lavapipe's threads.
void render_progressive(const Device& dev, const Renderer& renderer, const Aovs& aovs, uint32_t spp, uint32_t seed);

// Seeds for frames, references and data set entries: distinct streams from one user seed.
uint32_t mix_seed(uint32_t a, uint32_t b);

}  // namespace pathtracer
