#include "node/progress_facts.h"

#include <algorithm>

#include "sampler/progress_reader.h"

namespace parastack::node {
namespace {

using diagnosis::WaitOperation;

WaitOperation operation_of(const parastack_progress_operation& op) {
  WaitOperation out;
  out.kind = op.kind == PARASTACK_SEND         ? WaitOperation::Kind::Send
             : op.kind == PARASTACK_COLLECTIVE ? WaitOperation::Kind::Collective
                                               : WaitOperation::Kind::Receive;
  out.peer = op.peer;  // the page's PARASTACK_PEER_ values are the diagnosis core's
  out.tag = op.tag;
  out.comm = op.comm;
  out.sequence = op.sequence;
  return out;
}

}  // namespace

static_assert(PARASTACK_PEER_ANY == WaitOperation::kAnySource &&
              PARASTACK_PEER_UNKNOWN == WaitOperation::kUnknownPeer &&
              PARASTACK_PEER_NULL == WaitOperation::kNullPeer && PARASTACK_TAG_ANY == WaitOperation::kAnyTag);

diagnosis::RankProgress progress_facts(const parastack_progress_page& page) {
  using Activity = diagnosis::RankProgress::Activity;
  diagnosis::RankProgress r;
  r.rank = static_cast<diagnosis::Rank>(std::max(0, page.world_rank));
  switch (page.kind) {
    case PARASTACK_OUTSIDE:
      r.activity = Activity::Outside;
      break;
    case PARASTACK_SEND:
      r.activity = Activity::Send;
      break;
    case PARASTACK_RECV:
      r.activity = Activity::Receive;
      break;
    case PARASTACK_SENDRECV:
      r.activity = Activity::SendReceive;
      break;
    case PARASTACK_WAIT:
      r.activity = Activity::Wait;
      break;
    case PARASTACK_COLLECTIVE:
      r.activity = Activity::Collective;
      break;
    default:
      r.activity = Activity::Other;
      break;
  }
  if (r.activity != Activity::Outside) r.call = sampler::progress_call_name(page.call);
  r.operation = operation_of(page.operation);
  r.send_peer = page.send_peer;
  r.wait_any = page.wait_any != 0;
  r.wait_total = page.wait_total;
  const auto waits = std::min<std::uint32_t>(page.wait_count, PARASTACK_PROGRESS_MAX_WAITS);
  for (std::uint32_t i = 0; i < waits; ++i) r.waits.push_back(operation_of(page.waits[i]));
  for (const auto& c : page.comms) {
    if (c.id != 0) r.comms.push_back({c.id, c.size, c.rank, c.collectives});
  }
  r.completed = page.completed;
  r.polls = page.polls;
  r.entries = page.entries;
  return r;
}

}  // namespace parastack::node
