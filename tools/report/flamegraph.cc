#include "flamegraph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

namespace hybridprof::report {
namespace {

constexpr double kWidth = 1200, kFrameHeight = 16, kTop = 56, kBottom = 24, kSide = 10;
constexpr double kCharWidth = 7;  // at the frames' 12px monospace

struct Node {
  std::string name;
  otf2::Paradigm paradigm = otf2::Paradigm::kSampling;
  bool kernel = false;
  uint64_t samples = 0;
  std::map<std::string, size_t> children;  // by name: frames of one name under one parent merge
};

std::string xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

uint32_t hash(const std::string& s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

// What a frame is, as a colour: hue by kind, a little variation by name so
// neighbours stand apart.
std::string colour(const Node& n) {
  const uint32_t h = hash(n.name);
  const int v = static_cast<int>(h % 55);
  char text[32];
  if (n.name == kProfilerFrame) return "rgb(160,160,160)";
  if (n.kernel) std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 200 + v / 3, 120 + v, 40);  // kernel: orange
  else switch (n.paradigm) {
    case otf2::Paradigm::kPython: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 60 + v, 180 + v / 2, 70); break;
    case otf2::Paradigm::kMpi: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 70, 110 + v, 210); break;
    case otf2::Paradigm::kOpenMp: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 40, 170 + v / 2, 170 + v / 2); break;
    case otf2::Paradigm::kCuda: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 150 + v, 90, 210); break;
    case otf2::Paradigm::kUser: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 230, 110 + v, 180); break;
    case otf2::Paradigm::kOsRuntime: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 120 + v, 120 + v, 130 + v); break;
    default: std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", 225, 70 + v * 2, 40 + v / 2); break;  // native: warm
  }
  return text;
}

// The frame's name fitted to `pixels`, as the script does after a zoom.
std::string fitted(const std::string& name, double pixels) {
  const auto chars = static_cast<size_t>((pixels - 6) / kCharWidth);
  if (chars < 3) return "";
  return name.size() <= chars ? name : name.substr(0, chars - 2) + "..";
}

constexpr const char* kScript = R"JS(
var svg = document.documentElement, frames = [], W = %WIDTH%, SIDE = %SIDE%, CHAR = %CHAR%;
var details = document.getElementById("details"), matched = document.getElementById("matched");
var reset = document.getElementById("reset"), zoomed = null, searching = null;
function fit(t, name, w) {
  var n = Math.floor((w - 6) / CHAR);
  t.textContent = n < 3 ? "" : (name.length <= n ? name : name.substring(0, n - 2) + "..");
}
function place(f, x, w) {
  f.rect.setAttribute("x", x); f.rect.setAttribute("width", Math.max(w - 0.5, 0));
  f.text.setAttribute("x", x + 3); fit(f.text, f.name, w);
  f.g.style.display = w > 0.1 ? "" : "none";
}
function zoom(f) {
  zoomed = f;
  var scale = (W - 2 * SIDE) / f.w;
  frames.forEach(function (g) {
    if (g.depth < f.depth && g.x <= f.x && g.x + g.w >= f.x + f.w) place(g, SIDE, W - 2 * SIDE);
    else if (g.depth >= f.depth && g.x >= f.x && g.x + g.w <= f.x + f.w + 1e-6) place(g, SIDE + (g.x - f.x) * scale, g.w * scale);
    else place(g, 0, 0);
  });
  reset.style.opacity = 1;
}
function unzoom() {
  zoomed = null;
  frames.forEach(function (g) { place(g, SIDE + g.x, g.w); });
  reset.style.opacity = 0;
}
function search() {
  var term = prompt("Search frames by name (a regular expression)", searching || "");
  if (term === null) return;
  searching = term || null;
  var re = term ? new RegExp(term) : null, total = 0, covered = [];
  frames.forEach(function (g) {
    var hit = re && re.test(g.name);
    g.rect.setAttribute("fill", hit ? "rgb(230,0,230)" : g.fill);
    if (hit && !covered.some(function (c) { return g.x >= c.x && g.x + g.w <= c.x + c.w; })) { covered.push(g); total += g.w; }
  });
  matched.textContent = re ? "Matched: " + (100 * total / (W - 2 * SIDE)).toFixed(1) + "%" : "";
}
Array.prototype.forEach.call(document.querySelectorAll("g.frame"), function (g) {
  var f = { g: g, rect: g.querySelector("rect"), text: g.querySelector("text"), name: g.querySelector("title").textContent.replace(/ \([^()]*samples[^()]*\)$/, ""),
            x: +g.getAttribute("data-x"), w: +g.getAttribute("data-w"), depth: +g.getAttribute("data-depth") };
  f.fill = f.rect.getAttribute("fill");
  frames.push(f);
  g.addEventListener("click", function () { zoom(f); });
  g.addEventListener("mouseover", function () { details.textContent = g.querySelector("title").textContent; });
  g.addEventListener("mouseout", function () { details.textContent = " "; });
});
reset.addEventListener("click", unzoom);
document.getElementById("search").addEventListener("click", search);
)JS";

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

}  // namespace

void write_flamegraph(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts, FrameView view,
                      const FlameGraphOptions& options) {
  // The tree of frames, merged by name along the path from the root.
  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  for (const auto& [context, samples] : counts.by_context) {
    const std::vector<uint32_t> path = view_path(archive, context, view);
    const std::vector<std::string> names = function_chain(archive, context, view);
    nodes[0].samples += samples;
    size_t at = 0;
    for (size_t i = 0; i < names.size() && i < path.size(); ++i) {
      auto [child, fresh] = nodes[at].children.try_emplace(names[i], nodes.size());
      if (fresh) {
        Node n;
        n.name = names[i];
        const auto c = archive.contexts.find(path[i]);
        const auto r = c == archive.contexts.end() ? archive.regions.end() : archive.regions.find(c->second.region);
        if (r != archive.regions.end()) {
          n.paradigm = r->second.paradigm;
          n.kernel = r->second.module == "[kernel]" || r->second.name == "[kernel]";
        }
        nodes.push_back(std::move(n));
      }
      at = child->second;
      nodes[at].samples += samples;
    }
  }
  // Depth of the tree, for the height.
  size_t depth = 0;
  std::vector<std::pair<size_t, size_t>> stack{{0, 0}};
  while (!stack.empty()) {
    const auto [n, d] = stack.back();
    stack.pop_back();
    depth = std::max(depth, d);
    for (const auto& [name, child] : nodes[n].children) stack.push_back({child, d + 1});
  }
  const double height = kTop + double(depth + 1) * kFrameHeight + kBottom;
  const double span = kWidth - 2 * kSide;
  const double total = double(std::max<uint64_t>(nodes[0].samples, 1));
  char number[64];
  out << "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      << "<svg version=\"1.1\" width=\"" << kWidth << "\" height=\"" << height << "\" viewBox=\"0 0 " << kWidth << " "
      << height << "\" xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
      << "<style>text { font-family: monospace; font-size: 12px; fill: rgb(0,0,0); } g.frame { cursor: pointer; }"
         " g.frame:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; } .button { cursor: pointer; fill: rgb(0,0,160); }"
         "</style>\n"
      << "<title>" << xml(options.title) << "</title>\n"
      << "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(248,248,240)\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"20\" text-anchor=\"middle\" style=\"font-size:16px\">" << xml(options.title)
      << "</text>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"38\" text-anchor=\"middle\">" << xml(options.subtitle) << "</text>\n"
      << "<text id=\"reset\" class=\"button\" x=\"" << kSide << "\" y=\"20\" style=\"opacity:0\">Reset zoom</text>\n"
      << "<text id=\"search\" class=\"button\" x=\"" << kWidth - kSide - 60 << "\" y=\"20\">Search</text>\n"
      << "<text id=\"matched\" x=\"" << kWidth - kSide - 160 << "\" y=\"" << height - 8 << "\"></text>\n"
      << "<text id=\"details\" x=\"" << kSide << "\" y=\"" << height - 8 << "\"> </text>\n";
  // Frames, parents before children; a frame's place is the samples left
  // of it. Its edges, in pixels from the left margin, are rounded to a
  // thousandth where they are, and its width is the difference: children
  // then never cover more than their parent (widths rounded one by one
  // could add up to a hair more).
  struct Place {
    size_t node, depth;
    uint64_t before;
  };
  auto edge = [&](uint64_t samples) { return std::round(double(samples) / total * span * 1000.0) / 1000.0; };
  char x_text[32], w_text[32];
  std::vector<Place> todo{{0, 0, 0}};
  while (!todo.empty()) {
    const Place p = todo.back();
    todo.pop_back();
    const Node& n = nodes[p.node];
    const double x = edge(p.before);
    const double w = edge(p.before + n.samples) - x;
    std::snprintf(x_text, sizeof x_text, "%.3f", x);
    std::snprintf(w_text, sizeof w_text, "%.3f", w);
    const double y = options.icicle ? kTop + double(p.depth) * kFrameHeight
                                    : kTop + double(depth - p.depth) * kFrameHeight;
    std::snprintf(number, sizeof number, "%.2f", 100.0 * double(n.samples) / total);
    out << "<g class=\"frame\" data-x=\"" << x_text << "\" data-w=\"" << w_text << "\" data-depth=\"" << p.depth << "\">"
        << "<title>" << xml(n.name) << " (" << n.samples << " samples, " << number << "%)</title>"
        << "<rect x=\"" << kSide + x << "\" y=\"" << y << "\" width=\"" << std::max(w - 0.5, 0.0)
        << "\" height=\"" << kFrameHeight - 1 << "\" rx=\"2\" fill=\"" << colour(n) << "\"/>"
        << "<text x=\"" << kSide + x + 3 << "\" y=\"" << y + kFrameHeight - 4 << "\">" << xml(fitted(n.name, w))
        << "</text></g>\n";
    // Children left to right by name, as flamegraph.pl orders them.
    uint64_t before = p.before;
    std::vector<Place> children;
    for (const auto& [name, child] : n.children) {
      children.push_back({child, p.depth + 1, before});
      before += nodes[child].samples;
    }
    todo.insert(todo.end(), children.rbegin(), children.rend());
  }
  std::string script = kScript;
  script = replace_all(script, "%WIDTH%", std::to_string(kWidth));
  script = replace_all(script, "%SIDE%", std::to_string(kSide));
  script = replace_all(script, "%CHAR%", std::to_string(kCharWidth));
  out << "<script type=\"text/ecmascript\"><![CDATA[" << script << "]]></script>\n</svg>\n";
}

}  // namespace hybridprof::report
