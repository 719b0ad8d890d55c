#include "node/stack_views.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "os/run_program.h"
#include "parastack/diagnosis/render.h"

namespace parastack::node {

using namespace std::chrono_literals;

std::string render_svg(const std::string& dot, std::string& problem) {
  if (!os::on_path("dot")) {
    problem = "Graphviz (dot) is not installed";
    return {};
  }
  std::string dir_template = (std::filesystem::temp_directory_path() / "parastack-svg-XXXXXX").string();
  if (!::mkdtemp(dir_template.data())) {
    problem = "cannot create a temporary directory";
    return {};
  }
  const std::filesystem::path dir = dir_template;
  std::string svg;
  std::ofstream(dir / "tree.dot") << dot;
  const int status =
      os::run_program({"dot", "-Tsvg", (dir / "tree.dot").string(), "-o", (dir / "tree.svg").string()}, 60s);
  if (status == 0) {
    std::ifstream in(dir / "tree.svg");
    svg.assign(std::istreambuf_iterator<char>(in), {});
  } else {
    problem = "dot failed (status " + std::to_string(status) + ")";
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return svg;
}

StackViews stack_views(const diagnosis::PrefixTree& tree, const std::string& title, bool with_svg,
                       const diagnosis::RankSet& highlight) {
  StackViews views;
  diagnosis::RenderOptions render;
  render.title = title;
  render.highlight = highlight;
  views.text = diagnosis::to_text(tree, render);
  views.dot = diagnosis::to_dot(tree, render);
  if (with_svg) views.svg = render_svg(views.dot, views.svg_problem);
  views.tree = nlohmann::json::parse(diagnosis::to_json(tree));
  return views;
}

diagnosis::StackTrace stack_trace_of(const sampler::RankSample& sample) {
  diagnosis::StackTrace trace;
  if (sample.failure) {
    trace.push_back({"[" + sample.describe() + "]", "", "", false});
    return trace;
  }
  for (auto f = sample.frames.rbegin(); f != sample.frames.rend(); ++f) {
    trace.push_back({f->function, f->module, "", f->mpi});
  }
  if (sample.state == stats::RankState::Unknown) trace.push_back({"[incomplete unwind]", "", "", false});
  return trace;
}

diagnosis::StackTrace working_trace_of(const sampler::RankSample& sample) {
  diagnosis::StackTrace trace;
  for (auto f = sample.working_frames.rbegin(); f != sample.working_frames.rend(); ++f) {
    trace.push_back({f->function, f->module, "", f->mpi});
  }
  return trace;
}

bool print_stack_view(const StackViews& views, const std::string& format, std::ostream& out, std::ostream& err,
                      const std::string& who) {
  if (format == "svg") {
    if (views.svg.empty()) {
      err << who << ": no SVG: " << views.svg_problem << " (ask for the dot format and render it elsewhere)\n";
      return false;
    }
    out << views.svg;
  } else if (format == "dot") {
    out << views.dot;
  } else if (format == "json") {
    out << views.tree.dump(2) << "\n";
  } else {
    out << views.text;
  }
  out.flush();
  return true;
}

}  // namespace parastack::node
