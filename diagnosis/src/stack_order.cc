#include "parastack/diagnosis/stack_order.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

namespace parastack::diagnosis {
namespace {

// The last three named frames, "..." where frames are left out: an unnamed frame (a stripped
// library's, libffi's under a Python ctypes call) says nothing in a one-line summary ("... > ?? >
// ?? > MPI_Allreduce"), and the tree in the report has every frame.
std::string where_of(const std::vector<std::string>& path) {
  std::vector<std::size_t> shown;
  for (std::size_t i = path.size(); i-- > 0 && shown.size() < 3;) {
    if (!path[i].empty()) shown.insert(shown.begin(), i);
  }
  if (shown.empty()) return path.empty() ? std::string() : "??";
  std::string text = shown.front() > 0 ? "... > " : "";
  for (std::size_t k = 0; k < shown.size(); ++k) {
    if (k > 0) text += shown[k] == shown[k - 1] + 1 ? " > " : " > ... > ";
    text += path[shown[k]];
  }
  if (shown.back() + 1 < path.size()) text += " > ...";
  return text;
}

// A Python frame is named "function (file:line)", its call site being its instruction's offset in
// its code: the place without the line, so that one function waiting at two lines is one function
// at two call sites, as a compiled one is.
std::string_view function_of(std::string_view name) {
  const auto colon = name.rfind(':');
  if (name.empty() || name.back() != ')' || colon == std::string_view::npos || colon + 2 >= name.size() ||
      name.find(" (") == std::string_view::npos) {
    return name;
  }
  const auto line = name.substr(colon + 1, name.size() - colon - 2);
  if (!std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; })) return name;
  return name.substr(0, colon);
}

std::string site_words(const StackGroup& g, std::size_t depth) {
  const std::string& name = g.path[depth];
  if (function_of(name).size() != name.size()) return name;  // a Python frame: its line says where
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(g.call_sites[depth]));
  return (g.path[depth].empty() ? "??" : g.path[depth]) + offset;
}

// Where two groups' paths part: the first frame whose function or call site differs. The order
// holds when both are the same function with two known call sites (the MPI frame, the last,
// carries no call site). Returns the depth and whether a comes first.
std::optional<std::pair<std::size_t, bool>> code_order(const StackGroup& a, const StackGroup& b) {
  const std::size_t n = std::min(a.path.size(), b.path.size());
  for (std::size_t d = 0; d < n; ++d) {
    if (function_of(a.path[d]) != function_of(b.path[d])) return std::nullopt;  // an indirect call: no order
    if (a.call_sites[d] == b.call_sites[d]) continue;
    if (a.call_sites[d] == 0 || b.call_sites[d] == 0 || a.path[d].empty()) return std::nullopt;
    return std::pair{d, a.call_sites[d] < b.call_sites[d]};
  }
  return std::nullopt;
}

}  // namespace

StackOrder order_by_stacks(std::span<const RankStack> ranks) {
  StackOrder order;
  std::map<std::tuple<bool, std::vector<std::string>, std::vector<std::uint64_t>>, std::size_t> index;
  for (const auto& r : ranks) {
    std::vector<std::uint64_t> sites = r.call_sites;
    sites.resize(r.path.size(), 0);
    if (r.in_mpi && !sites.empty()) sites.back() = 0;  // where inside MPI is how it waits, not where
    auto key = std::tuple{r.in_mpi, r.path, sites};
    auto [it, added] = index.try_emplace(key, order.groups.size());
    if (added) order.groups.push_back({{}, r.in_mpi, r.finished && r.in_mpi, r.path, sites, where_of(r.path)});
    order.groups[it->second].ranks.insert(r.rank);
  }
  std::sort(order.groups.begin(), order.groups.end(), [](const StackGroup& a, const StackGroup& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.to_vector().front() < b.ranks.to_vector().front();
  });
  const auto& groups = order.groups;
  if (groups.size() < 2) {
    order.why =
        groups.empty() ? "no stacks" : "every rank waits at the same place; the stacks cannot tell who is behind";
    return order;
  }

  // Outside MPI while the others wait in it: everyone waits on them.
  std::vector<std::size_t> outside;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!groups[g].in_mpi) outside.push_back(g);
  }
  if (!outside.empty() && outside.size() < groups.size()) {
    order.least_progressed = outside;
    RankSet out;
    for (auto g : outside) out |= groups[g].ranks;
    order.why = "rank(s) " + out.to_ranges() + " are outside MPI while the others wait in it";
    return order;
  }

  // Ranks in MPI_Finalize are done: the others are behind them, whatever the code order says (a
  // compiler may put the MPI_Finalize call below the receive nobody answers: a 4-rank job whose
  // rank 1 waited for rank 0's message was said to wait "before" the finished ranks, 2026-12-07).
  RankSet finished, waiting;
  for (const auto& g : groups) (g.finished ? finished : waiting) |= g.ranks;
  const bool some_finished = !finished.empty() && !waiting.empty();
  const std::string finished_words = some_finished ? "rank(s) " + waiting.to_ranges() + " wait in MPI while rank(s) " +
                                                         finished.to_ranges() + " have finished (MPI_Finalize)"
                                                   : "";

  // Code order between pairs of groups parting at two call sites of one function.
  std::vector<bool> after_another(groups.size(), false), ordered(groups.size(), false);
  std::string reasons;
  for (std::size_t a = 0; a < groups.size(); ++a) {
    if (some_finished && groups[a].finished) continue;
    for (std::size_t b = a + 1; b < groups.size(); ++b) {
      if (some_finished && groups[b].finished) continue;
      const auto o = code_order(groups[a], groups[b]);
      if (!o) continue;
      const auto [depth, a_first] = *o;
      const std::size_t first = a_first ? a : b, second = a_first ? b : a;
      after_another[second] = true;
      ordered[first] = ordered[second] = true;
      if (reasons.size() < 600) {
        reasons += (reasons.empty() ? "" : "; ") + std::string("rank(s) ") + groups[first].ranks.to_ranges() +
                   " wait at " + site_words(groups[first], depth) + ", before rank(s) " +
                   groups[second].ranks.to_ranges() + " at " + site_words(groups[second], depth);
      }
    }
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (ordered[g] && !after_another[g]) order.least_progressed.push_back(g);
  }
  if (order.least_progressed.empty() && some_finished) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (!groups[g].finished) order.least_progressed.push_back(g);
    }
    order.why = finished_words;
    return order;
  }
  if (order.least_progressed.empty()) {
    order.why = "the ranks wait at " + std::to_string(groups.size()) +
                " places the stacks cannot order (different functions, or an indirect call)";
    return order;
  }
  order.why = (some_finished ? finished_words + "; among them, " : std::string()) + "in code order " + reasons +
              " (unless a loop has taken the later ranks past the earlier call site again, which a stack "
              "cannot show)";
  return order;
}

}  // namespace parastack::diagnosis
