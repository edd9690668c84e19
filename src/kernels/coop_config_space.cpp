// conv2d_coopmat's (and conv2d_coopmat_up2's) configuration space as templates (a template fixes the pixel tile, the
// output-channel tile rule, the subgroup grid, the coop N and where B is read from; the
// channel counts of a layer turn it into a CoopConvConfig), the whole space for exhaustive
// tuning, and the reduced sets bench/prune/prune_configs.py chose from H100 and H200 measurements.
#include <algorithm>

#include "kernels/implementations.hpp"

namespace denox::kernels {

namespace {

struct ConfigTemplate {
  int64_t tile_h, tile_w;
  int64_t nt;  // 0: every output channel (rounded up to 16, or 8 for <= 8 channels); else fixed
  int64_t sg_m, sg_n;
  int64_t cm_n;
  bool b_global;
  bool up2 = false;  // a conv2d_coopmat_up2 template (its own space and pruned list)
  bool one_phase = false;  // up2 with one output phase per workgroup (tile: low-resolution pixels)
  bool tap_sum = false;    // conv2d_coopmat_tapsum (nt 0 only: the taps x output channels, rounded up)
  int64_t ck = 16;
  int64_t epi_passes = 1;  // one-phase up2: the epilogue's channel passes (CoopConvConfig::epi_passes)
  bool a_direct = false;   // A fragments straight from the NHWC input (CoopConvConfig::a_direct; ck 32)
};

// "4x64/ntfull/sg8x1/n16/b0": the ids the pruning tool and the measurement store use.
std::string template_id(const ConfigTemplate& t) {
  return std::to_string(t.tile_h) + "x" + std::to_string(t.tile_w) + "/nt" + (t.nt == 0 ? std::string("full") : std::to_string(t.nt)) +
         "/sg" + std::to_string(t.sg_m) + "x" + std::to_string(t.sg_n) + "/n" + std::to_string(t.cm_n) + "/b" +
         (t.b_global ? "1" : "0") + (t.ck == 32 ? "/ck32" : "") + (t.one_phase ? "/p1" : "") +
         (t.epi_passes > 1 ? "/e" + std::to_string(t.epi_passes) : "") + (t.tap_sum ? "/ts" : "") + (t.a_direct ? "/ad" : "");
}

std::vector<ConfigTemplate> all_templates() {
  std::vector<ConfigTemplate> out;
  // Subgroup grids of 4 to 32 subgroups: on the H100 the register count (about 150 for the
  // big 8-subgroup configurations) leaves room for one 256-invocation workgroup per SM, so the
  // same pixel tile on 16 or 32 subgroups (fewer registers each) puts more warps in flight.
  // These templates have ck 16: ck 32 was measured too (2026-11-24, bench/RESULTS.md), won no
  // layer on the H100 and doubled exhaustive tuning (A_DIRECT and tap-sum, below, have ck 32).
  const std::pair<int64_t, int64_t> grids[] = {{8, 1}, {4, 2}, {4, 1}, {2, 2}, {16, 1}, {8, 2}, {32, 1}, {16, 2}};
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{16, 16}, {8, 16}, {8, 32}, {4, 64}, {4, 32}, {8, 64}, {2, 32}, {2, 64}})
    for (int64_t nt : {0, 32, 64})
      for (int64_t cm_n : {16, 8})
        for (auto [sg_m, sg_n] : grids)
          for (bool bg : {false, true}) out.push_back({th, tw, nt, sg_m, sg_n, cm_n, bg});
  // conv2d_coopmat_tapsum (few output channels): the patch's fragments are dealt to the
  // subgroups, so any tile on 2 to 16 subgroups; 32-channel chunks (one chunk for a 32-channel
  // input: one load round trip per workgroup) and 16.
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{8, 32}, {4, 64}, {16, 16}, {4, 32}, {8, 16}, {2, 64}})
    for (int64_t ck : {32, 16})
      for (int64_t cm_n : {16, 8})
        for (int64_t sg : {2, 4, 8, 16}) {
          ConfigTemplate t{th, tw, 0, sg, 1, cm_n, false};
          t.tap_sum = true, t.ck = ck;
          out.push_back(t);
        }
  // A_DIRECT (offered only where the device's fragment element order was checked: coop_config_fits):
  // with no patch in shared memory a 16x16 or 8x32 tile of 32 channels fits twice per SM. Its
  // geometry (CoopConvConfig::valid) keeps few subgroup grids per tile; 32-channel chunks only
  // (a lane loads 8 channels of two K steps), coop N 16, B from shared memory.
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{16, 16}, {8, 32}, {16, 32}, {8, 16}})
    for (int64_t nt : {0, 16, 32, 64})
      for (int64_t sg_m : {2, 4, 8, 16})
        for (int64_t sg_n : {1, 2}) {
          ConfigTemplate t{th, tw, nt, sg_m, sg_n, 16, false};
          t.a_direct = true, t.ck = 32;
          out.push_back(t);
        }
  return out;
}

// The template for one layer, or nullopt when it does not apply (a fixed channel tile at least
// as wide as the layer is the "full" template's job).
std::optional<CoopConvConfig> instantiate(const ConfigTemplate& t, const Conv2dShape& s, const CoopTarget& target) {
  if (t.tap_sum) {
    CoopConvConfig c;
    c.tile_h = t.tile_h, c.tile_w = t.tile_w, c.sg_m = t.sg_m, c.sg_n = 1, c.cm_n = t.cm_n, c.ck = t.ck, c.tap_sum = true;
    c.nt = (s.kh * s.kw * s.c_out + t.cm_n - 1) / t.cm_n * t.cm_n;
    c.acc_f16 = target.prefer_f16_accumulate;
    if (c.nt > 64) return std::nullopt;
    return c;
  }
  const int64_t full = s.c_out <= 8 ? 8 : (s.c_out + 15) / 16 * 16;
  if (t.nt != 0 && t.nt >= full) return std::nullopt;
  if (t.nt == 0 && full > 128) return std::nullopt;
  CoopConvConfig c;
  c.tile_h = t.tile_h, c.tile_w = t.tile_w;
  c.nt = t.nt == 0 ? full : t.nt;
  c.cm_n = t.cm_n;
  c.sg_n = t.sg_n;
  c.sg_m = t.sg_m;
  c.b_global = t.b_global;
  c.up2 = t.up2;
  c.one_phase = t.one_phase;
  c.epi_passes = t.epi_passes;
  c.a_direct = t.a_direct;
  if (t.a_direct) c.ck = t.ck;
  c.acc_f16 = target.prefer_f16_accumulate;
  if ((c.cm_n == 16 && c.nt == 8) || (c.cm_n == 8 && c.nt > 64)) return std::nullopt;
  return c;
}

// Written by bench/prune/prune_configs.py (see bench/prune/README.md): the template ids it chose.
const char* const kPrunedTemplates[] = {
#include "kernels/coop_configs_pruned.inc"
};
// Written by prune_configs.py --family conv2d_coopmat_tapsum (tap-sum templates of all_templates()).
const char* const kPrunedTapsumTemplates[] = {
#include "kernels/coop_tapsum_configs_pruned.inc"
};

std::vector<CoopConvConfig> from_templates(const std::vector<ConfigTemplate>& templates, const Conv2dShape& s,
                                           const CoopTarget& target, bool even_tile_h) {
  std::vector<CoopConvConfig> out;
  for (const ConfigTemplate& t : templates) {
    auto c = instantiate(t, s, target);
    if (!c || !coop_config_fits(*c, s, target, even_tile_h)) continue;
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
  }
  return out;
}

// conv2d_coopmat_up2's templates: output tiles with tile_w a multiple of 32 x channel tiles x
// subgroup grids (each subgroup's fragments must lie in one output phase; coop_config_fits
// drops the rest) x coop N. B always from shared memory.
std::vector<ConfigTemplate> up2_templates() {
  std::vector<ConfigTemplate> out;
  const std::pair<int64_t, int64_t> grids[] = {{4, 1}, {8, 1}, {4, 2}, {8, 2}, {16, 1}, {16, 2}, {32, 1}};
  // 16x32: the int8 phase conv's winning tile (fp16 dec_conv3a 0.132 -> 0.117 ms at 1920x1088 on
  // the H200, bench/RESULTS.md 2026-11-29 twentieth session).
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{4, 32}, {4, 64}, {8, 32}, {8, 64}, {4, 128}, {16, 32}})
    for (int64_t nt : {0, 32, 48, 64})
      for (int64_t cm_n : {16, 8})
        for (auto [sg_m, sg_n] : grids) out.push_back({th, tw, nt, sg_m, sg_n, cm_n, false, true});
  // One output phase per workgroup: tiles of the low-resolution grid (a 16x16 one is 256 output
  // pixels of one phase), the epilogue in one or two channel passes (coop_config_fits drops
  // the pairs that do not divide).
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{16, 16}, {8, 32}, {4, 64}, {8, 16}, {4, 32}, {16, 32}, {8, 64}})
    for (int64_t nt : {0, 32, 48, 64})
      for (int64_t cm_n : {16, 8})
        for (auto [sg_m, sg_n] : grids)
          for (int64_t ep : {1, 2}) {
            ConfigTemplate t{th, tw, nt, sg_m, sg_n, cm_n, false, true, true};
            t.epi_passes = ep;
            out.push_back(t);
          }
  // One phase on A_DIRECT (X0 chunks of 32 channels built by the lanes from the NHWC input, only
  // the phase's weights staged): tiles 16 columns wide, so a subgroup's fragments are rows.
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{16, 16}, {8, 16}, {32, 16}})
    for (int64_t nt : {0, 32, 64})
      for (auto [sg_m, sg_n] : grids)
        for (int64_t ep : {1, 2, 4}) {
          ConfigTemplate t{th, tw, nt, sg_m, sg_n, 16, false, true, true};
          t.epi_passes = ep, t.a_direct = true, t.ck = 32;
          out.push_back(t);
        }
  return out;
}

// Written by prune_configs.py --family conv2d_coopmat_up2.
const char* const kPrunedUp2Templates[] = {
#include "kernels/coop_up2_configs_pruned.inc"
};

// The templates of `all` whose ids a pruned list names, in `all`'s order.
template <size_t N>
std::vector<ConfigTemplate> named(const std::vector<ConfigTemplate>& all, const char* const (&ids)[N]) {
  std::vector<ConfigTemplate> chosen;
  for (const auto& t : all)
    for (const char* id : ids)
      if (template_id(t) == id) chosen.push_back(t);
  return chosen;
}

// The ids of `ids` that name no template of `all` (a typo, or a template the space lost).
template <size_t N>
void collect_unknown(const std::vector<ConfigTemplate>& all, const char* const (&ids)[N], std::vector<std::string>& out) {
  for (const char* id : ids)
    if (std::none_of(all.begin(), all.end(), [&](const ConfigTemplate& t) { return template_id(t) == id; })) out.push_back(id);
}

}  // namespace

std::vector<std::string> coop_pruned_ids_unknown() {
  std::vector<std::string> out;
  const std::vector<ConfigTemplate> all = all_templates(), up2 = up2_templates();
  collect_unknown(all, kPrunedTemplates, out);
  collect_unknown(all, kPrunedTapsumTemplates, out);
  collect_unknown(up2, kPrunedUp2Templates, out);
  return out;
}

std::vector<CoopConvConfig> coop_up2_config_space(const Conv2dShape& shape, const CoopTarget& target) {
  return from_templates(up2_templates(), shape, target, false);
}

std::vector<CoopConvConfig> coop_up2_configs_pruned(const Conv2dShape& shape, const CoopTarget& target) {
  return from_templates(named(up2_templates(), kPrunedUp2Templates), shape, target, false);
}

std::vector<CoopConvConfig> coop_config_space(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h) {
  return from_templates(all_templates(), shape, target, even_tile_h);
}

std::vector<CoopConvConfig> coop_configs_pruned(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h) {
  const std::vector<ConfigTemplate> all = all_templates();
  std::vector<ConfigTemplate> chosen = named(all, kPrunedTemplates);
  for (const ConfigTemplate& t : named(all, kPrunedTapsumTemplates)) chosen.push_back(t);
  return from_templates(chosen, shape, target, even_tile_h);
}

}  // namespace denox::kernels
