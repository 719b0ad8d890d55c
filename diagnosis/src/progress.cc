#include "parastack/diagnosis/progress.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <set>

namespace parastack::diagnosis {
namespace {

using Op = WaitOperation;

std::string peer_words(int peer) {
  switch (peer) {
    case Op::kAnySource:
      return "any rank";
    case Op::kUnknownPeer:
      return "an unknown rank";
    case Op::kNullPeer:
      return "MPI_PROC_NULL";
    default:
      return "rank " + std::to_string(peer);
  }
}

std::string tag_words(int tag) { return tag == Op::kAnyTag ? "any tag" : "tag " + std::to_string(tag); }

std::string operation_words(const Op& op) {
  switch (op.kind) {
    case Op::Kind::Send:
      return "a send to " + peer_words(op.peer) + ", " + tag_words(op.tag);
    case Op::Kind::Receive:
      return "a receive from " + peer_words(op.peer) + ", " + tag_words(op.tag);
    case Op::Kind::Collective:
      return "collective #" + std::to_string(op.sequence) + " on comm " + comm_name(op.comm);
  }
  return "?";
}

struct Index {
  std::map<Rank, const RankProgress*> by_rank;
  // comm id -> (member, collectives entered on it)
  std::map<std::uint64_t, std::vector<std::pair<Rank, std::uint64_t>>> members;
};

Index index_of(std::span<const RankProgress> ranks) {
  Index index;
  for (const auto& r : ranks) {
    index.by_rank[r.rank] = &r;
    for (const auto& c : r.comms) {
      if (c.id != 0) index.members[c.id].push_back({r.rank, c.collectives});
    }
  }
  return index;
}

// The edges one operation of `from` adds ("waits on").
void add_operation_edges(const Index& index, const RankProgress& from, const Op& op, const std::string& call,
                         std::vector<WaitEdge>& edges) {
  auto add = [&](Rank to, bool collective, std::string why) {
    if (to != from.rank) edges.push_back({from.rank, to, collective, std::move(why)});
  };
  const std::string prefix = call.empty() ? "" : call + ": ";
  switch (op.kind) {
    case Op::Kind::Send:
    case Op::Kind::Receive: {
      if (op.peer >= 0) {
        add(static_cast<Rank>(op.peer), false, prefix + operation_words(op));
        break;
      }
      if (op.peer != Op::kAnySource) break;  // unknown or MPI_PROC_NULL: nobody to name
      // A wildcard receive waits on every other member of its communicator (all ranks when the
      // communicator is unknown: the conservative reading).
      auto m = index.members.find(op.comm);
      if (m != index.members.end()) {
        for (const auto& [member, entered] : m->second) add(member, false, prefix + operation_words(op));
      } else {
        for (const auto& [member, facts] : index.by_rank) add(member, false, prefix + operation_words(op));
      }
      break;
    }
    case Op::Kind::Collective: {
      auto m = index.members.find(op.comm);
      if (m == index.members.end()) break;
      for (const auto& [member, entered] : m->second) {
        if (entered < op.sequence) {
          add(member, true,
              prefix + operation_words(op) + "; rank " + std::to_string(member) + " has entered " +
                  std::to_string(entered));
        }
      }
      break;
    }
  }
}

std::vector<WaitEdge> edges_of(const Index& index) {
  std::vector<WaitEdge> edges;
  for (const auto& [rank, facts] : index.by_rank) {
    const auto& r = *facts;
    switch (r.activity) {
      case RankProgress::Activity::Outside:
      case RankProgress::Activity::Other:
        break;
      case RankProgress::Activity::Send:
      case RankProgress::Activity::Receive:
      case RankProgress::Activity::Collective:
        add_operation_edges(index, r, r.operation, r.call, edges);
        break;
      case RankProgress::Activity::SendReceive: {
        add_operation_edges(index, r, r.operation, r.call, edges);
        Op send{Op::Kind::Send, r.send_peer, Op::kAnyTag, r.operation.comm, 0};
        add_operation_edges(index, r, send, r.call, edges);
        break;
      }
      case RankProgress::Activity::Wait:
        for (const auto& op : r.waits) add_operation_edges(index, r, op, r.call, edges);
        break;
    }
  }
  std::sort(edges.begin(), edges.end(),
            [](const WaitEdge& a, const WaitEdge& b) { return std::tie(a.from, a.to) < std::tie(b.from, b.to); });
  // One edge per (from, to): the first reason is enough to read.
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [](const WaitEdge& a, const WaitEdge& b) { return a.from == b.from && a.to == b.to; }),
              edges.end());
  // Edges to ranks without facts stay: "waits on 7" is true even if 7's page could not be read.
  return edges;
}

// Tarjan's strongly connected components over the ranks with facts and the ranks edges point to.
std::vector<std::vector<Rank>> components(const std::vector<Rank>& nodes, const std::multimap<Rank, Rank>& out) {
  std::map<Rank, int> number, low;
  std::set<Rank> on_stack;
  std::vector<Rank> stack;
  std::vector<std::vector<Rank>> result;
  int counter = 0;
  // Iterative, so a million-rank chain cannot overflow the stack.
  for (Rank start : nodes) {
    if (number.count(start)) continue;
    std::vector<std::pair<Rank, std::multimap<Rank, Rank>::const_iterator>> work;
    auto enter = [&](Rank v) {
      number[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack.insert(v);
      work.push_back({v, out.lower_bound(v)});
    };
    enter(start);
    while (!work.empty()) {
      auto& [v, it] = work.back();
      if (it != out.end() && it->first == v) {
        const Rank w = it->second;
        ++it;
        if (!number.count(w)) {
          enter(w);
        } else if (on_stack.count(w)) {
          low[v] = std::min(low[v], number[w]);
        }
        continue;
      }
      if (low[v] == number[v]) {
        std::vector<Rank> component;
        Rank w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack.erase(w);
          component.push_back(w);
        } while (w != v);
        std::sort(component.begin(), component.end());
        result.push_back(std::move(component));
      }
      const Rank done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  return result;
}

std::string rank_list(const std::vector<Rank>& ranks) {
  RankSet set;
  for (Rank r : ranks) set.insert(r);
  return set.to_ranges();
}

}  // namespace

std::string comm_name(std::uint64_t id) {
  if (id == 1) return "world";
  if (id == 0) return "unknown";
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

std::string describe(const RankProgress& r) {
  switch (r.activity) {
    case RankProgress::Activity::Outside:
      return "outside MPI";
    case RankProgress::Activity::Other:
      return "in " + r.call;
    case RankProgress::Activity::Send:
    case RankProgress::Activity::Receive:
    case RankProgress::Activity::Collective:
      return r.call + ": " + operation_words(r.operation);
    case RankProgress::Activity::SendReceive:
      return r.call + ": " + operation_words(r.operation) + " and a send to " + peer_words(r.send_peer);
    case RankProgress::Activity::Wait: {
      std::string text = r.call + " on " + std::to_string(r.wait_total) + " request(s)";
      for (std::size_t i = 0; i < r.waits.size() && i < 3; ++i) text += (i ? "; " : ": ") + operation_words(r.waits[i]);
      if (r.waits.size() > 3) text += "; ...";
      return text;
    }
  }
  return "?";
}

ProgressAnalysis analyse_progress(std::span<const RankProgress> ranks, int world_size) {
  ProgressAnalysis analysis;
  const Index index = index_of(ranks);
  for (int r = 0; r < world_size; ++r) {
    if (!index.by_rank.count(static_cast<Rank>(r))) analysis.without_facts.push_back(static_cast<Rank>(r));
  }
  analysis.edges = edges_of(index);

  std::multimap<Rank, Rank> out;
  std::set<Rank> node_set;
  for (const auto& [rank, facts] : index.by_rank) node_set.insert(rank);
  for (const auto& e : analysis.edges) {
    out.insert({e.from, e.to});
    node_set.insert(e.to);
  }
  const std::vector<Rank> nodes(node_set.begin(), node_set.end());
  const auto sccs = components(nodes, out);
  std::map<Rank, std::size_t> component_of;
  for (std::size_t c = 0; c < sccs.size(); ++c) {
    for (Rank r : sccs[c]) component_of[r] = c;
  }
  std::set<std::size_t> waited_on, has_exit;
  for (const auto& e : analysis.edges) {
    const auto from = component_of[e.from], to = component_of[e.to];
    if (from != to) {
      has_exit.insert(from);
      waited_on.insert(to);
    }
  }

  std::set<Rank> lp;
  for (std::size_t c = 0; c < sccs.size(); ++c) {
    const auto& members = sccs[c];
    if (has_exit.count(c)) continue;  // it waits on somebody outside it: not where it started
    if (members.size() == 1) {
      // A single rank nobody waits on is not a suspect (a finished or idle rank); one with no
      // facts is never named: we do not know what it does. Nor is one in an MPI call whose wait the
      // library does not record (Other: a polling loop, a call it does not decode): it waits on
      // somebody, we cannot say whom.
      const auto facts = index.by_rank.find(members.front());
      if (waited_on.count(c) && facts != index.by_rank.end() &&
          facts->second->activity != RankProgress::Activity::Other) {
        lp.insert(members.front());
      }
      continue;
    }
    // A cycle. Collective edges inside it point at ranks that are behind the waiter.
    std::set<Rank> behind, waits_collectively;
    for (const auto& e : analysis.edges) {
      if (e.collective && component_of[e.from] == c && component_of[e.to] == c) {
        behind.insert(e.to);
        waits_collectively.insert(e.from);
      }
    }
    if (behind.empty()) {
      analysis.deadlocks.push_back(members);
      lp.insert(members.begin(), members.end());
      continue;
    }
    analysis.cycles.push_back(members);
    bool pruned = false;
    for (Rank r : behind) {
      if (!waits_collectively.count(r)) {
        lp.insert(r);
        pruned = true;
      }
    }
    // Every member waits in a collective on another: the counts cannot order them; name them all.
    if (!pruned) lp.insert(members.begin(), members.end());
  }
  analysis.least_progressed.assign(lp.begin(), lp.end());

  // The chain: from the lowest waiting rank that is not LP, breadth first to the nearest LP rank.
  std::map<Rank, std::vector<const WaitEdge*>> out_edges;
  for (const auto& e : analysis.edges) out_edges[e.from].push_back(&e);
  for (const auto& [start, edges] : out_edges) {
    if (lp.count(start)) continue;
    std::map<Rank, const WaitEdge*> came_by;
    std::deque<Rank> queue{start};
    std::set<Rank> seen{start};
    std::optional<Rank> goal;
    while (!queue.empty() && !goal) {
      const Rank v = queue.front();
      queue.pop_front();
      auto it = out_edges.find(v);
      if (it == out_edges.end()) continue;
      for (const WaitEdge* e : it->second) {
        if (!seen.insert(e->to).second) continue;
        came_by[e->to] = e;
        if (lp.count(e->to)) {
          goal = e->to;
          break;
        }
        queue.push_back(e->to);
      }
    }
    if (!goal) continue;
    for (Rank v = *goal; v != start; v = came_by[v]->from) analysis.chain.push_back(*came_by[v]);
    std::reverse(analysis.chain.begin(), analysis.chain.end());
    break;
  }

  // In words.
  std::string& s = analysis.summary;
  if (analysis.edges.empty()) {
    s = "no rank waits on another: ";
    const bool all_outside = std::all_of(ranks.begin(), ranks.end(), [](const RankProgress& r) {
      return r.activity == RankProgress::Activity::Outside;
    });
    s += all_outside ? "every rank is outside MPI."
                     : "the ranks in MPI wait for nothing another rank owes them "
                       "(a hang inside MPI, or collectives that do not match).";
  } else if (lp.empty()) {
    std::vector<Rank> unknown_waits;
    for (const auto& r : ranks) {
      if (r.activity == RankProgress::Activity::Other) unknown_waits.push_back(r.rank);
    }
    s = unknown_waits.empty()
            ? "every rank waits on another rank that waits in turn; no rank is behind the others."
            : "no rank found behind: rank(s) " + rank_list(unknown_waits) +
                  " wait in calls whose wait the library does not record (a polling loop around MPI_Test "
                  "or MPI_Iprobe, or a call it does not follow), so it cannot tell on whom they wait.";
  } else {
    s = "least-progressed rank(s): " + rank_list(analysis.least_progressed) + ".";
    for (const auto& d : analysis.deadlocks) s += " Ranks " + rank_list(d) + " wait on each other (a deadlock).";
    for (const auto& c : analysis.cycles) {
      s += " Ranks " + rank_list(c) + " wait on each other, but some have not reached a collective the others are in.";
    }
    for (Rank r : analysis.least_progressed) {
      auto it = index.by_rank.find(r);
      if (it != index.by_rank.end()) s += " Rank " + std::to_string(r) + ": " + describe(*it->second) + ".";
    }
  }
  if (!analysis.without_facts.empty()) {
    s += " No facts from rank(s) " + rank_list(analysis.without_facts) + " (no progress page read).";
  }
  return analysis;
}

}  // namespace parastack::diagnosis
