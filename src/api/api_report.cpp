#include "api/api_report.hpp"

#include <cmath>
#include <cstdio>

namespace denox::api {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string schedule_report_json(const autotune::ScheduleReport* r, const CompileTimes& t, const std::string& tuning, size_t dispatches) {
  std::string j = "{\"from_cache\": " + std::string(r ? "false" : "true") + ", \"tuning\": " + quoted(tuning) +
                  ", \"dispatches\": " + std::to_string(dispatches);
  auto field = [&](const char* name, const std::string& value) { j += std::string(", \"") + name + "\": " + value; };
  if (r) {
    field("space", quoted(r->space));
    field("tune_extent", quoted(std::to_string(r->width) + "x" + std::to_string(r->height)));
    field("implementations", std::to_string(r->implementations));
    field("structures", std::to_string(r->structures));
    field("structures_kept", std::to_string(r->structures_kept));
    field("edges", std::to_string(r->edges));
    field("measured_edges", std::to_string(r->measured_edges));
    field("cached_edges", std::to_string(r->cached_edges));
    field("failed_edges", std::to_string(r->failed_edges));
    field("select_states", std::to_string(r->select_states));
    field("total_ms", number(r->predicted_ms));
  } else {
    field("measured_edges", "0");
    field("cached_edges", "0");
  }
  j += ", \"time_ms\": {\"import\": " + number(t.import_ms);
  if (r) {
    j += ", \"enumerate\": " + number(r->enumerate_ms) + ", \"prune\": " + number(r->prune_ms) + ", \"measure\": " + number(r->measure_ms) +
         ", \"select\": " + number(r->select_ms);
  }
  j += ", \"lower\": " + number(t.lower_ms) + ", \"shaders\": " + number(t.shaders_ms) + ", \"total\": " + number(t.total_ms) + "}";
  if (r) {
    j += ", \"schedule\": [";
    for (size_t i = 0; i < r->steps.size(); ++i) {
      const auto& s = r->steps[i];
      j += i ? ", " : "";
      j += "{\"name\": " + quoted(s.name) + ", \"pattern\": " + quoted(s.pattern) + ", \"family\": " + quoted(s.family) +
           ", \"config\": " + quoted(s.config) + ", \"inputs\": [";
      for (size_t k = 0; k < s.inputs.size(); ++k) j += (k ? ", " : "") + quoted(s.inputs[k]);
      j += "], \"output\": " + quoted(s.output) + ", \"dispatches\": " + std::to_string(s.dispatches) + ", \"ms\": " + number(s.ms) +
           ", \"measured\": " + (s.measured ? "true" : "false") + "}";
    }
    j += "]";
  }
  return j + "}";
}

}  // namespace denox::api
