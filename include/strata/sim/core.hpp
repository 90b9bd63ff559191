#pragma once
/// @file sim/core.hpp
/// @brief strata's event core: tasks with dependencies on resources with service disciplines,
/// the overlap slowdown gamma, and memory tracked by tensor reference counts. Deterministic: the
/// same input gives bit-identical results.
///
/// Resources
/// - `fifo`: one task at a time in the order tasks became ready (a CUDA stream, a CPU thread);
///   work is in seconds.
/// - `fair_share`: a link of `capacity` bytes/s; every flow in service gets its max-min fair
///   share over all the links it crosses (processor sharing across a hierarchy: Proteus §VI-C,
///   Li et al. §3.1's 1/n sharing); work is in bytes.
/// - `round_robin`: a link that serves its flows in turn, `window` bytes each (HTTP/2 stream
///   multiplexing with window WIN, Li et al. §3.2.2); work is in bytes. A round-robin task may
///   list fair-share links after its own resource: each of its turns is then a flow over those
///   links, served at min(capacity, its max-min share), so one connection's streams take turns
///   while connections share the links (Li et al. Algorithm 3.1: a scheduler per worker and
///   resource, Share(r, active) across workers).
/// A task may first wait a fixed `latency` (a message's alpha) without holding its resource.
/// Gamma (Proteus §VI-C): a compute task runs 1 + gamma times slower while a communication task
/// of the same device is in service; a communication task may carry its own gamma (its class of
/// device pair), and the largest of those in service on the device applies.
/// The loop is an event queue (one entry per task or link, moved in place: a sorted run while a
/// few events are pending, a 4-ary heap beyond) with per-task and per-link state: an event costs
/// O(log n) plus the tasks it changes, whatever the number of streams (bench/sim.cpp:
/// event_core), and allocates nothing once its buffers have grown.
/// add_task stores a task compactly and prepares what a run reads of it: a 64-byte line of loop
/// state, a 32-byte record of what the loop seldom reads, flat resource and dependent lists, and
/// for `tasks()` a 32-byte record with the name, dependencies and tensors in shared pools (no
/// allocation per task), so a run starts from a copy; `repeat_tasks` adds a copy of tasks already
/// added (a repeated step) for a few stores per task. A fair-share link whose flows all cross it
/// alone keeps a virtual clock; flows crossing several links are re-rated by progressive filling
/// when the set of flows changes.
/// @code
/// strata::sim::simulator s;
/// const int gpu = s.add_resource({"gpu0", strata::sim::discipline::fifo});
/// const int a = s.add_task({.name = "fw", .resources = {gpu}, .work = 1e-3});
/// s.add_task({.name = "bw", .resources = {gpu}, .work = 2e-3, .deps = {a}});
/// const auto r = s.run();   // r.makespan == 3e-3
/// @endcode

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/error.hpp"

namespace strata::sim {

enum class discipline { fifo, fair_share, round_robin };
enum class task_class { compute, communication, other };

struct resource_spec {
  std::string name;
  discipline kind = discipline::fifo;
  double capacity = 1;       ///< bytes/s for links (fair_share, round_robin); unused for fifo
  double window = 0;         ///< round_robin: bytes a flow sends per turn
  int device = -1;           ///< the device (rank) it belongs to, for traces; -1: shared
  bool window_once = false;  ///< round_robin: only a flow's first turn stops at the window; its
                             ///< second runs to completion (HTTP/2 in gRPC, Li et al. §3.2.2)
};

struct task_spec {
  std::string name{};
  std::vector<int> resources{};  ///< fifo, round_robin: exactly one; fair_share: the links crossed
  double work = 0;               ///< seconds (fifo) or bytes (links)
  std::vector<int> deps{};       ///< tasks that must finish first
  task_class cls = task_class::compute;
  int device = -1;              ///< for gamma and memory; -1: none
  double latency = 0;           ///< seconds waited before service, resource not held
  std::vector<int> produces{};  ///< tensors allocated when the task starts
  std::vector<int> consumes{};  ///< tensors it reads; freed after their last reader ends
  /// communication: the overlap factor its service imposes on its device's compute (Proteus
  /// §VI-C, one per class of device pair); negative: the simulator's (`set_overlap_factor`)
  double gamma = -1;
};

/// A task as the simulator stores it (`simulator::tasks()`): task_spec's fields, viewed.
struct task_view {
  std::string_view name{};
  std::span<const int> resources{};
  double work = 0;
  std::span<const int> deps{};
  task_class cls = task_class::compute;
  int device = -1;
  double latency = 0;
  std::span<const int> produces{};
  std::span<const int> consumes{};
  double gamma = -1;
};

struct tensor_spec {
  std::string name;
  int device = 0;
  double bytes = 0;
};

struct task_record {
  double ready = 0;  ///< all dependencies done
  double start = 0;  ///< service began (after latency)
  double end = 0;
};

/// The first allocation that pushed a device past its memory limit.
struct out_of_memory {
  int device = 0;
  int task = 0;  ///< the task whose allocation crossed the limit
  double bytes = 0;
};

/// Memory of one device after an allocation or a release.
struct memory_sample {
  double time = 0;
  int device = 0;
  double bytes = 0;
};

struct result {
  std::vector<task_record> tasks;
  std::vector<memory_sample> memory;  ///< every change, in time order
  double makespan = 0;
  std::vector<double> peak_memory;  ///< per device
  std::vector<double> busy;         ///< per resource: time with at least one task in service
  std::optional<out_of_memory> oom;
  std::size_t events = 0;
};

namespace detail {
/// A priority queue on `E::before`, a strict total order: a sorted run while it holds a few
/// entries, a 4-ary min-heap beyond. An event core mostly has a handful of events pending (Li et
/// al.'s 10 workers: 7.5 on average), so a pop is then a step of the run's head and a push a
/// store after the few later entries moved up a slot (no comparisons of four children per
/// level); past `run_most` entries the run, being sorted, is already a heap, and a heap of
/// `run_least` or fewer is sorted back into a run.
/// The heap: a pop moves the hole at the top down to a leaf along the least children, then
/// lifts the last entry into it (Wegener's bottom-up heapsort: the comparison that decides where
/// the entry stops is left to the lift, which mostly stops at once). The least of four children
/// is found by two rounds of comparisons whose outcomes are used as numbers, not branches, and
/// the slots past the last entry hold `E::sentinel()` (never less than an entry), so every node
/// has four children to compare: the per-level branches that a binary heap mispredicts half the
/// time are gone. With `Indexed`, every entry's place is kept by its `id()` (below `ids`), so an
/// entry can be moved or removed.
template <class E, bool Indexed>
class quad_heap {
 public:
  quad_heap() = default;
  explicit quad_heap(std::size_t ids) : pos_(ids, -1) {}
  [[nodiscard]] bool empty() const { return m_ == 0; }
  [[nodiscard]] const E& top() const { return heap_[head_]; }
  /// A push onto a run with room is inlined (the common case); the rest is not.
  [[gnu::always_inline]] void push(const E& e) {
    if (!heaped_ && m_ < run_most) {
      if (head_ > 0 && (m_ == 0 || E::before(e, heap_[head_]))) {  // the least: in front
        ++m_;
        place(--head_, e);
        return;
      }
      if (head_ + m_ < heap_.size()) {
        run_front(head_ + m_++, e);
        return;
      }
    }
    push_slow(e);
  }
  E pop() {
    const E first = heap_[head_];
    if constexpr (Indexed) pos_[static_cast<std::size_t>(first.id())] = -1;
    if (!heaped_) {
      --m_;
      head_ = m_ > 0 ? head_ + 1 : 0;
      return first;
    }
    const E last = take_last();
    if (m_ > 0) up(to_leaf(0), last);
    if (m_ <= run_least) make_run();
    return first;
  }
  /// Indexed: inserts `e`, or moves the entry with its id to `e`'s key.
  [[gnu::always_inline]] void set(const E& e) {
    const int p = pos_[static_cast<std::size_t>(e.id())];
    if (p < 0)
      push(e);
    else
      move(static_cast<std::size_t>(p), e);
  }
  /// Indexed: removes the entry with this id, if any.
  void erase(int id) {
    const int p = pos_[static_cast<std::size_t>(id)];
    if (p < 0) return;
    pos_[static_cast<std::size_t>(id)] = -1;
    auto k = static_cast<std::size_t>(p);
    if (!heaped_) {  // the later entries move down a slot
      for (const std::size_t end = head_ + --m_; k < end; ++k) place(k, heap_[k + 1]);
      if (m_ == 0) head_ = 0;
      return;
    }
    const E last = take_last();
    if (k < m_) up(to_leaf(k), last);
    if (m_ <= run_least) make_run();
  }

 private:
  static constexpr std::size_t run_most = 16, run_least = 8;
  /// A push onto the heap, or onto a run that is full or has no slot after its last entry.
  void push_slow(const E& e) {
    if (heaped_) {
      up(m_++, e);
      while (heap_.size() < m_ + 4) heap_.push_back(E::sentinel());
    } else if (m_ < run_most) {
      make_room();
      run_front(head_ + m_++, e);
    } else {
      make_heap();
      push_slow(e);
    }
  }
  /// Indexed: the entry at k moves to `e`'s key.
  void move(std::size_t k, const E& e) {
    if (!heaped_)
      E::before(e, heap_[k]) ? run_front(k, e) : run_back(k, e);
    else if (E::before(e, heap_[k]))
      up(k, e);
    else
      down(k, e);  // a later time: mostly a level or two
  }
  /// The run: the hole at k (its last slot, or an entry's place) takes `e`, the entries after it
  /// that come before `e` moving down a slot.
  /// (`e` by value: a reference could alias the slots written.)
  void run_back(std::size_t k, const E e) {
    for (const std::size_t end = head_ + m_ - 1; k < end && E::before(heap_[k + 1], e); ++k)
      place(k, heap_[k + 1]);
    place(k, e);
  }
  /// The run: the hole at k takes `e`, the entries before it that come after `e` moving up.
  void run_front(std::size_t k, const E e) {
    E* const slots = heap_.data();
    for (; k > head_ && E::before(e, slots[k - 1]); --k) {
      slots[k] = slots[k - 1];
      if constexpr (Indexed) pos_[static_cast<std::size_t>(slots[k].id())] = static_cast<int>(k);
    }
    place(k, e);
  }
  /// The run has no slot after its last entry: it moves to the front, or the slots double.
  void make_room() {
    if (head_ == 0) {
      heap_.resize(std::max<std::size_t>(64, 2 * heap_.size()), E::sentinel());
      return;
    }
    for (std::size_t k = 0; k < m_; ++k) place(k, heap_[head_ + k]);
    head_ = 0;
  }
  /// The run becomes the heap (sorted, it is one), at the front with sentinels after it.
  void make_heap() {
    if (head_ > 0) make_room();
    if (heap_.size() < m_ + 4) heap_.resize(m_ + 4);
    std::fill(heap_.begin() + static_cast<std::ptrdiff_t>(m_), heap_.end(), E::sentinel());
    heaped_ = true;
  }
  /// The heap becomes the run: its entries sorted.
  void make_run() {
    const auto first = heap_.begin(), last = first + static_cast<std::ptrdiff_t>(m_);
    std::sort(first, last, [](const E& x, const E& y) { return E::before(x, y); });
    if constexpr (Indexed)
      for (std::size_t k = 0; k < m_; ++k) place(k, heap_[k]);
    heaped_ = false;
  }
  E take_last() {
    const E last = heap_[--m_];
    heap_[m_] = E::sentinel();
    return last;
  }
  void place(std::size_t k, const E& e) {
    heap_[k] = e;
    if constexpr (Indexed) pos_[static_cast<std::size_t>(e.id())] = static_cast<int>(k);
  }
  void up(std::size_t k, const E& e) {  // the hole at k moves up until e fits
    while (k > 0) {
      const std::size_t parent = (k - 1) / 4;
      if (!E::before(e, heap_[parent])) break;
      place(k, heap_[parent]);
      k = parent;
    }
    place(k, e);
  }
  std::size_t least(std::size_t c) const {  // the least of the four children from c
    const E* x = heap_.data() + c;          // sentinels past the last entry
    const std::size_t a = E::before(x[1], x[0]);
    const std::size_t b = 2 + static_cast<std::size_t>(E::before(x[3], x[2]));
    const std::size_t w = 0 - static_cast<std::size_t>(E::before(x[b], x[a]));  // 0 or all ones
    return c + (a ^ ((a ^ b) & w));  // a mask, not ?: (GCC turns that into a jump)
  }
  std::size_t to_leaf(std::size_t k) {  // the hole at k moves down to a leaf; returns where
    for (std::size_t c = 4 * k + 1; c < m_; c = 4 * k + 1) {
      k = least(c);
      place((k - 1) / 4, heap_[k]);
    }
    return k;
  }
  void down(std::size_t k, const E& e) {  // the hole at k moves down until e fits
    for (std::size_t c = 4 * k + 1; c < m_; c = 4 * k + 1) {
      const std::size_t j = least(c);
      if (!E::before(heap_[j], e)) break;
      place(k, heap_[j]);
      k = j;
    }
    place(k, e);
  }
  std::vector<E> heap_;   ///< the run from head_, or the heap's entries then sentinels
  std::size_t m_ = 0;     ///< entries
  std::size_t head_ = 0;  ///< where the run starts; 0 for the heap
  bool heaped_ = false;   ///< a heap, not a run
  std::vector<int> pos_;  ///< Indexed: per id, its place in heap_; -1: none
};
/// A list of task or resource ids that the loop fills and empties on every event. Its push_back
/// is small enough to be inlined into run() (GCC leaves std::vector's out of a function that
/// large), and `sort` orders the one or two ids an event usually has without a call: insertion
/// sort up to 16 ids, as std::sort does on so few, so the order of equal keys is the same too.
class id_list {
 public:
  id_list() = default;
  id_list(const id_list&) = delete;  // data_ points into buf_
  id_list& operator=(const id_list&) = delete;
  [[gnu::always_inline]] void push_back(int x) {
    if (size_ == cap_) grow();
    data_[size_++] = x;
  }
  void clear() { size_ = 0; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  int* begin() { return data_; }
  int* end() { return data_ + size_; }
  template <class Less>
  [[gnu::always_inline]] void sort(Less less) {
    if (size_ >= 2) sort_some(less);
  }
  void sort() {
    sort([](int a, int b) { return a < b; });
  }

 private:
  template <class Less>
  void sort_some(Less less) {
    if (size_ > 16) {
      std::sort(begin(), end(), less);
      return;
    }
    for (std::size_t k = 1; k < size_; ++k) {
      const int x = data_[k];
      std::size_t j = k;
      for (; j > 0 && less(x, data_[j - 1]); --j) data_[j] = data_[j - 1];
      data_[j] = x;
    }
  }
  void grow() {
    buf_.resize(std::max<std::size_t>(16, 2 * size_));
    data_ = buf_.data();
    cap_ = buf_.size();
  }
  std::vector<int> buf_;
  int* data_ = nullptr;  ///< buf_'s
  std::size_t size_ = 0, cap_ = 0;
};
#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 key128;
#endif
/// A time and an id, ordered by time, then id, as one unsigned number where the compiler has
/// 128-bit integers: the bits of a double >= 0 (infinity included) order as the double does, so
/// a comparison of (bits << 32 | id) is two instructions with no branch instead of two
/// floating-point comparisons. Times are never negative (they grow from +0).
struct timed_id {
#if defined(__SIZEOF_INT128__)
  key128 key;
  static timed_id make(double t, int id) {
    return {(static_cast<key128>(std::bit_cast<std::uint64_t>(t)) << 32) |
            static_cast<std::uint32_t>(id)};
  }
  [[nodiscard]] double time() const {
    return std::bit_cast<double>(static_cast<std::uint64_t>(key >> 32));
  }
  [[nodiscard]] int id() const { return static_cast<int>(static_cast<std::uint32_t>(key)); }
  static bool before(const timed_id& a, const timed_id& b) { return a.key < b.key; }
  static timed_id sentinel() { return {~static_cast<key128>(0)}; }
  /// The last key at time t >= 0: a key is not after it exactly when its time is not after t.
  static timed_id last_at(double t) { return make(t, -1); }
#else
  std::uint64_t bits;
  std::uint32_t ident;
  static timed_id make(double t, int id) {
    return {std::bit_cast<std::uint64_t>(t), static_cast<std::uint32_t>(id)};
  }
  [[nodiscard]] double time() const { return std::bit_cast<double>(bits); }
  [[nodiscard]] int id() const { return static_cast<int>(ident); }
  static bool before(const timed_id& a, const timed_id& b) {  // no branches: see quad_heap
    return (a.bits < b.bits) | ((a.bits == b.bits) & (a.ident < b.ident));
  }
  static timed_id sentinel() { return {~std::uint64_t{0}, ~std::uint32_t{0}}; }
  static timed_id last_at(double t) { return make(t, -1); }
#endif
};
/// A pending event of the core: a task's predicted completion (of its work, or of its
/// round-robin turn), the end of its latency, or (ids n + link) the next flow a fair-share link
/// completes; at most one per id. A flow that crosses one link is kept by its link as the link's
/// virtual time at which it completes, and its task.
using event = timed_id;
enum class task_state : unsigned char { blocked, delayed, queued, serving, done };
/// What the event loop reads and writes of one task, in one 64-byte cache line: an event
/// touches one line per task. `simulator::add_task` fills in its constant part, so that a run
/// starts from a copy; what an event seldom needs (latency, resources, device) is in
/// `task_static`.
struct alignas(64) task_hot {
  double left = 0;       ///< of the current turn or flow, at `last`
  double rate = 0;       ///< seconds or bytes per second; 0: not rated yet
  double last = 0;       ///< when `left` was last brought up to date
  double due = 0;        ///< predicted completion, or the end of the latency
  double remaining = 0;  ///< of the whole task
  double work = 0;
  int first = 0;  ///< its own resource
  /// blocked: dependencies not done yet; queued: the next task in its resource's waiting line
  /// (-1: none)
  int count = 0;
  int out = -1;             ///< its first dependent: an index into simulator::edges_; -1: none
  unsigned char kind_ = 0;  ///< the discipline of its own resource
  task_state st = task_state::blocked;
  bool turn_over : 1 = false;    ///< a round-robin turn over several links that just ended
  bool single_turn : 1 = false;  ///< round-robin turns that cross one link they cannot saturate
  bool memory : 1 = false;       ///< produces or consumes tensors
  bool links : 1 = false;        ///< crosses more resources than its own
  bool comm : 1 = false;         ///< communication on a device (it slows the device's compute)
  bool slowable : 1 = false;     ///< compute on a device (communication slows it)
  bool latent : 1 = false;       ///< waits a latency before service
  [[nodiscard]] discipline kind() const { return static_cast<discipline>(kind_); }
  [[nodiscard]] double tolerance() const { return 1e-12 * (work + 1e-30); }
};
static_assert(sizeof(task_hot) == 64);
/// What the event loop reads of a task only when it becomes ready, crosses links or has gamma.
struct task_static {
  double latency = 0;
  double gamma = -1;  ///< its own (read for communication only); negative: the simulator's
  int rbegin = 0;     ///< its resources in simulator::rlist_: [rbegin, rend)
  int rend = 0;
  int device = -1;
};
/// What only `simulator::tasks()` and `add_task` read of a task: its name in simulator::names_,
/// its dependencies, produced and consumed tensors in simulator::ilist_ ([dbegin, pbegin),
/// [pbegin, cbegin), [cbegin, cend)), the end of its list of dependents, its class.
struct task_cold {
  std::uint32_t name_begin = 0, name_size = 0;
  int dbegin = 0, pbegin = 0, cbegin = 0, cend = 0;
  int out_tail = -1;  ///< its last dependent's edge in simulator::edges_; -1: none
  task_class cls = task_class::compute;
};
/// Asks for the cache line at `p` ahead of a write (GCC, Clang); elsewhere nothing. Inlined
/// always: GCC drops calls to a function that only prefetches (it finds it has no effect).
[[gnu::always_inline]] inline void prefetch([[maybe_unused]] const void* p) {
#if defined(__GNUC__)
  __builtin_prefetch(p, 1);
#endif
}
/// A dependency seen from the task it waits for: the dependent, and the next edge of that task.
struct edge {
  int to;
  int next;
};
/// What the event loop keeps of one resource, in one place (an event reads and writes several
/// of these fields of each resource it touches): its spec's numbers, a fifo / round-robin
/// resource's waiting line and the task it serves, a fair-share link's flows and the virtual
/// clock of its single-link flows, and its busy time.
struct resource_state {
  double vclock = 0;  ///< bytes served to each single-link flow so far, at `vlast`
  double vlast = 0;
  double vshare = 0;  ///< a single-link flow's rate
  double busy_since = 0, busy = 0;
  double capacity = 1, window = 0;
  int qhead = -1, qtail = -1;  ///< the waiting line, linked through the tasks' `count`
  int in_service = -1;         ///< the task served; -1: none (always for a link)
  int users = 0;               ///< a link's flows (and turns crossing it)
  int multi = 0;               ///< ... of which cross other links too
  discipline kind = discipline::fifo;
  bool window_once = false;
  bool mark = false;   ///< in this event's touched list
  bool dirty = false;  ///< a link whose flows changed: its shares to be brought up to date
  bool was_busy = false;
};
}  // namespace detail

class simulator {
 public:
  int add_resource(resource_spec r) {
    if (r.kind != discipline::fifo && !(r.capacity > 0))
      throw plan_error("resource '" + r.name + "': a link needs a positive capacity");
    if (r.kind == discipline::round_robin && !(r.window > 0))
      throw plan_error("resource '" + r.name + "': round-robin needs a positive window");
    resources_.push_back(std::move(r));
    return static_cast<int>(resources_.size()) - 1;
  }
  int add_tensor(tensor_spec t) {
    if (t.bytes < 0) throw plan_error("tensor '" + t.name + "': negative size");
    if (t.device < 0) throw plan_error("tensor '" + t.name + "': needs a device");
    devices_ = std::max(devices_, t.device + 1);
    tensors_.push_back(std::move(t));
    return static_cast<int>(tensors_.size()) - 1;
  }
  int add_task(const task_spec& t) {
    auto fail = [&](const char* what) {  // the name is only put together for the message
      throw plan_error("task '" + t.name + "': " + what);
    };
    if (!(t.work >= 0)) fail("negative work");
    if (!(t.latency >= 0)) fail("negative latency");
    if (t.resources.empty()) fail("needs a resource");
    const auto nr = static_cast<int>(resources_.size());
    for (int r : t.resources)
      if (r < 0 || r >= nr) fail("unknown resource");
    const discipline k = resources_[static_cast<std::size_t>(t.resources[0])].kind;
    for (std::size_t x = 1; x < t.resources.size(); ++x)
      if (resources_[static_cast<std::size_t>(t.resources[x])].kind != discipline::fair_share ||
          k == discipline::fifo)
        fail("only fair-share flows and round-robin turns may cross fair-share links");
    const auto nt = static_cast<int>(hot_.size());
    for (int d : t.deps)
      if (d < 0 || d >= nt) fail("depends on a task that does not exist (yet)");
    const auto nx = static_cast<int>(tensors_.size());
    for (int x : t.produces)
      if (x < 0 || x >= nx) fail("produces an unknown tensor");
    for (int x : t.consumes)
      if (x < 0 || x >= nx) fail("consumes an unknown tensor");
    // the task's lists and records appended first (all or nothing), then filled in
    const std::size_t rsize = rlist_.size(), roots = roots_.size(), isize = ilist_.size(),
                      nsize = names_.size();
    if (edges_.size() + t.deps.size() > edges_.capacity())
      edges_.reserve(std::max(2 * edges_.capacity(), edges_.size() + t.deps.size()));
    try {  // all or nothing
      // element by element: the lists are a few ids long, and push_back's inlined fast path
      // costs less than insert's general one
      for (int r : t.resources) rlist_.push_back(r);
      for (int d : t.deps) ilist_.push_back(d);
      for (int x : t.produces) ilist_.push_back(x);
      for (int x : t.consumes) ilist_.push_back(x);
      if (!t.name.empty()) names_ += t.name;
      if (t.deps.empty()) roots_.push_back(nt);
      hot_.emplace_back();
      static_.emplace_back();
      cold_.emplace_back();
    } catch (...) {
      rlist_.resize(rsize);
      ilist_.resize(isize);
      names_.resize(nsize);
      roots_.resize(roots);
      hot_.resize(static_cast<std::size_t>(nt));
      static_.resize(static_cast<std::size_t>(nt));
      cold_.resize(static_cast<std::size_t>(nt));
      throw;
    }
    // what a run reads of the task, written in place (a copy of a half-written line stalls):
    // its loop state as a run starts, what it seldom reads, what only tasks() reads
    detail::task_hot& h = hot_.back();
    h.work = t.work;
    h.first = t.resources[0];
    h.kind_ = static_cast<unsigned char>(k);
    h.memory = !t.produces.empty() || !t.consumes.empty();
    h.links = t.resources.size() > 1;
    h.comm = t.cls == task_class::communication && t.device >= 0;
    h.slowable = t.cls == task_class::compute && t.device >= 0;
    h.single_turn = k == discipline::round_robin && t.resources.size() == 2 &&
                    resources_[static_cast<std::size_t>(t.resources[1])].capacity <=
                        resources_[static_cast<std::size_t>(h.first)].capacity;
    h.latent = t.latency > 0;
    h.count = static_cast<int>(t.deps.size());
    detail::task_static& c = static_.back();
    c.latency = t.latency;
    c.gamma = t.gamma;
    c.rbegin = static_cast<int>(rsize);
    c.rend = static_cast<int>(rlist_.size());
    c.device = t.device;
    detail::task_cold& cold = cold_.back();
    cold.name_begin = static_cast<std::uint32_t>(nsize);
    cold.name_size = static_cast<std::uint32_t>(t.name.size());
    cold.dbegin = static_cast<int>(isize);
    cold.pbegin = cold.dbegin + static_cast<int>(t.deps.size());
    cold.cbegin = cold.pbegin + static_cast<int>(t.produces.size());
    cold.cend = static_cast<int>(ilist_.size());
    cold.cls = t.cls;
    for (int d : t.deps) link_dependent(d, nt);  // reserved: no throw
    devices_ = std::max(devices_, t.device + 1);
    if (h.comm && t.gamma > 0) any_own_gamma_ = true;
    return nt;
  }
  /// Adds a copy of tasks [first, first + count) after the last task, as if each were added
  /// again in order (a repeated step or iteration): a dependency inside the range becomes the
  /// copy of that task, one outside it the task `remap` pairs it with (itself when none).
  /// Returns the first copy's id. A copy shares its original's name and resources in the
  /// simulator's pools and starts from its loop line, so a repeat costs a few stores per task
  /// instead of add_task's checks and records (sim::simulate_ps repeats a worker's steps).
  int repeat_tasks(int first, int count, std::span<const std::pair<int, int>> remap = {}) {
    const auto nt = static_cast<int>(hot_.size());
    if (first < 0 || count < 0 || first > nt - count)
      throw plan_error("repeat_tasks: tasks " + std::to_string(first) + " to " +
                       std::to_string(static_cast<long long>(first) + count - 1) +
                       " do not all exist");
    for (const auto& [from, to] : remap)
      if (to < 0 || to >= nt)
        throw plan_error("repeat_tasks: remaps to a task that does not exist");
    if (count == 0) return nt;
    const auto b = static_cast<std::size_t>(first), e = b + static_cast<std::size_t>(count);
    // room first, so that nothing below throws (all or nothing): the range's ids in ilist_ are
    // contiguous (tasks append theirs in order), so its copies' are too, `delta` later; its
    // dependencies, some of those ids, have an edge each
    const int ib = cold_[b].dbegin, ie = cold_[e - 1].cend;
    const auto ids_size = static_cast<std::size_t>(ie - ib);
    hot_.reserve(grown(hot_, e - b));
    static_.reserve(grown(static_, e - b));
    cold_.reserve(grown(cold_, e - b));
    roots_.reserve(grown(roots_, e - b));
    ilist_.reserve(grown(ilist_, ids_size));
    edges_.reserve(grown(edges_, ids_size));
    const int delta = static_cast<int>(ilist_.size()) - ib, shift = nt - first;
    // the range's records and ids copied in one go each, then the copies' links set
    append_copy(hot_, b, e);
    append_copy(static_, b, e);
    append_copy(cold_, b, e);
    append_copy(ilist_, static_cast<std::size_t>(ib), static_cast<std::size_t>(ie));
    int* const ids = ilist_.data();
    for (std::size_t i = b; i < e; ++i) {
      const int id = static_cast<int>(i) + shift;
      const auto ui = static_cast<std::size_t>(id);
      hot_[ui].out = -1;  // its loop line as add_task left it: no dependents yet
      detail::task_cold& c = cold_[ui];
      const int db = c.dbegin + delta, pb = c.pbegin + delta;  // locals: ids' stores alias c
      c.dbegin = db;
      c.pbegin = pb;
      c.cbegin += delta;
      c.cend += delta;
      c.out_tail = -1;
      if (pb == db) roots_.push_back(id);
      for (int k = db; k < pb; ++k) {
        int& d = ids[k];
        if (d >= first && d < first + count)
          d += shift;
        else
          for (const auto& [from, to] : remap)
            if (d == from) {
              d = to;
              break;
            }
        link_dependent(d, id);
      }
    }
    return nt;
  }
  /// Room for `tasks` tasks, so that a large graph is not moved as it grows.
  void reserve(std::size_t tasks) {
    hot_.reserve(tasks);
    static_.reserve(tasks);
    cold_.reserve(tasks);
    rlist_.reserve(2 * tasks);
    ilist_.reserve(2 * tasks);
    edges_.reserve(2 * tasks);
  }
  /// Proteus's overlap factor gamma, for communication tasks that carry none of their own.
  void set_overlap_factor(double gamma) {
    if (!(gamma >= 0) || !(gamma <= 1e6))  // NaN fails both
      throw plan_error("the overlap factor gamma must lie in [0, 1e6]");
    gamma_ = gamma;
  }
  void set_memory_capacity(int device, double bytes) {
    if (device < 0) throw plan_error("memory capacity needs a device");
    if (static_cast<std::size_t>(device) >= capacity_.size())
      capacity_.resize(static_cast<std::size_t>(device) + 1,
                       std::numeric_limits<double>::infinity());
    capacity_[static_cast<std::size_t>(device)] = bytes;
  }

  /// The memory limit of `device` in bytes (infinity when none was set).
  [[nodiscard]] double memory_capacity(int device) const {
    return device >= 0 && static_cast<std::size_t>(device) < capacity_.size()
               ? capacity_[static_cast<std::size_t>(device)]
               : std::numeric_limits<double>::infinity();
  }
  /// The tasks added so far, as views into the simulator (valid until the next add_task).
  class task_table {
   public:
    class iterator {
     public:
      using iterator_category = std::input_iterator_tag;
      using value_type = task_view;
      using difference_type = std::ptrdiff_t;
      iterator(const simulator* s, std::size_t i) : s_(s), i_(i) {}
      task_view operator*() const { return s_->task(i_); }
      iterator& operator++() {
        ++i_;
        return *this;
      }
      bool operator==(const iterator& o) const { return i_ == o.i_; }

     private:
      const simulator* s_;
      std::size_t i_;
    };
    explicit task_table(const simulator* s) : s_(s) {}
    [[nodiscard]] std::size_t size() const { return s_->hot_.size(); }
    [[nodiscard]] bool empty() const { return s_->hot_.empty(); }
    task_view operator[](std::size_t i) const { return s_->task(i); }
    [[nodiscard]] iterator begin() const { return {s_, 0}; }
    [[nodiscard]] iterator end() const { return {s_, size()}; }

   private:
    const simulator* s_;
  };
  [[nodiscard]] task_table tasks() const { return task_table{this}; }
  /// Task `i` as stored.
  [[nodiscard]] task_view task(std::size_t i) const {
    const detail::task_cold& c = cold_[i];
    const detail::task_static& st = static_[i];
    const int* l = ilist_.data();
    auto part = [&](int b, int e) {
      return std::span<const int>(l + b, static_cast<std::size_t>(e - b));
    };
    return {.name = std::string_view(names_).substr(c.name_begin, c.name_size),
            .resources = std::span<const int>(rlist_.data() + st.rbegin,
                                              static_cast<std::size_t>(st.rend - st.rbegin)),
            .work = hot_[i].work,
            .deps = part(c.dbegin, c.pbegin),
            .cls = c.cls,
            .device = st.device,
            .latency = st.latency,
            .produces = part(c.pbegin, c.cbegin),
            .consumes = part(c.cbegin, c.cend),
            .gamma = st.gamma};
  }
  [[nodiscard]] const std::vector<resource_spec>& resources() const { return resources_; }

  /// Runs to completion. A run starts from a copy of the tasks' loop state, so the simulator
  /// can run again; `std::move(s).run()` takes that state instead of copying it (a large graph
  /// run once), and leaves `s` empty (no tasks, resources or tensors).
  [[nodiscard]] result run() const& { return run_from(hot_); }
  [[nodiscard]] result run() && {
    result r = run_from(std::move(hot_));
    *this = simulator{};
    return r;
  }

 private:
  std::vector<resource_spec> resources_;
  std::vector<tensor_spec> tensors_;
  std::vector<double> capacity_;
  double gamma_ = 0;
  // built by add_task, read by every run
  std::vector<detail::task_hot> hot_;        ///< per task: its loop state as a run starts
  std::vector<detail::task_static> static_;  ///< per task: what the loop seldom reads
  std::vector<detail::task_cold> cold_;      ///< per task: what only tasks() reads
  std::vector<int> ilist_;                   ///< the tasks' deps, produces, consumes (task_cold)
  std::string names_;                        ///< the tasks' names, one after another
  std::vector<int> rlist_;                   ///< the tasks' resources, one after another
  std::vector<detail::edge> edges_;          ///< dependencies, listed from the tasks they wait for
  std::vector<int> roots_;                   ///< tasks without dependencies, in order
  int devices_ = 0;                          ///< 1 + the largest device of a task or tensor
  bool any_own_gamma_ = false;               ///< a communication task on a device carries gamma > 0

  /// Appends task `to` to task `d`'s dependents (so in task order); edges_ has room.
  [[gnu::always_inline]] void link_dependent(int d, int to) {
    const int e = static_cast<int>(edges_.size());
    edges_.push_back({to, -1});
    int& tail = cold_[static_cast<std::size_t>(d)].out_tail;
    if (tail < 0)
      hot_[static_cast<std::size_t>(d)].out = e;
    else
      edges_[static_cast<std::size_t>(tail)].next = e;
    tail = e;
  }
  /// Appends a copy of v's elements [b, e) in one go; v has room for them.
  template <class V>
  static void append_copy(V& v, std::size_t b, std::size_t e) {
    const std::size_t size = v.size();
    v.resize(size + (e - b));
    std::copy(v.begin() + static_cast<std::ptrdiff_t>(b),
              v.begin() + static_cast<std::ptrdiff_t>(e),
              v.begin() + static_cast<std::ptrdiff_t>(size));
  }
  /// The capacity `v` needs for `more` elements: doubled when it has no room for them.
  template <class V>
  static std::size_t grown(const V& v, std::size_t more) {
    return v.capacity() - v.size() >= more ? v.capacity()
                                           : std::max(2 * v.capacity(), v.size() + more);
  }
  /// Task `i`'s tensors (what a run reads of its specs; not its loop state).
  [[nodiscard]] std::span<const int> produces_of(std::size_t i) const {
    const detail::task_cold& c = cold_[i];
    return {ilist_.data() + c.pbegin, static_cast<std::size_t>(c.cbegin - c.pbegin)};
  }
  [[nodiscard]] std::span<const int> consumes_of(std::size_t i) const {
    const detail::task_cold& c = cold_[i];
    return {ilist_.data() + c.cbegin, static_cast<std::size_t>(c.cend - c.cbegin)};
  }
  /// One run of the event loop: its state and its steps.
  struct event_loop;
  /// The event loop on `T`, the tasks' loop state as `add_task` left it.
  [[nodiscard]] result run_from(std::vector<detail::task_hot> T) const;
};

/// One run of the event loop: its state, shared by the steps below, and the steps. Each
/// in-service fifo / round-robin task and each flow crossing several links keeps its progress
/// (`left` at time `last`, served at `rate`) and one predicted event on the event heap. The flows
/// that cross a single link share it equally (max-min fairness gives them one rate), so each such
/// link keeps a virtual clock (bytes served to each of its flows) and a heap of its flows by the
/// virtual time they complete: one event per link, whatever the number of flows. A round-robin
/// turn that crosses one fair-share link no faster than its own resource's capacity is such a
/// flow too (its own capacity never binds: a fair share is at most the link's capacity), as in
/// Li et al.'s single-server layout. Fair shares are recomputed only when the set of flows
/// changes (only on the links touched when no flow crosses several links), gamma's slowdown only
/// when the largest gamma of a device's communication in service changes. A task completes at
/// its predicted time, or within 1e-12 of its work of it, so tasks that end together (up to
/// rounding) end in one event, in index order. What an event changed is settled in one pass
/// over the fifo / round-robin resources it touched (each idle one takes its next task, its busy
/// time noted) and one over the links it touched (their shares, their busy time); a resource
/// keeps what the loop reads of it in one record. Nothing is allocated per event once the buffers
/// have grown.
struct simulator::event_loop {
  const simulator& sim;
  std::vector<detail::task_hot> T;  ///< the tasks' loop state
  std::size_t n, nr, nd;            ///< tasks, resources, devices
  result res;
  std::vector<int> readers;  ///< per tensor: tasks yet to read it
  std::vector<double> mem;   ///< per device: bytes allocated
  std::vector<char> unread;  ///< per tensor: no task reads it
  // the overlap factor each communication task imposes while in service: its own or gamma_
  bool any_gamma;
  std::vector<detail::resource_state> R;  ///< per resource
  std::vector<int> multi;                 // flows crossing several links, in start order
  // single-link flows: per link, its flows by the virtual time they complete
  std::vector<detail::quad_heap<detail::timed_id, false>> link_flows;
  // per device: communication tasks in service by their gamma, and the largest such gamma
  std::vector<std::vector<std::pair<double, int>>> comm_in;
  std::vector<double> slow;
  // per device: the fifo resources that serve its compute tasks (for gamma)
  std::vector<std::vector<int>> compute_streams;
  detail::quad_heap<detail::event, true> heap;
  double now = 0, max_slack = 0;
  std::size_t finished = 0;
  bool shares_changed = false;  // a flow crossing several links started or ended
  // touched_queues: fifo / round-robin resources changed by this event; touched_links: links
  detail::id_list touched_queues, touched_links, touched_devices, started, done_now, wakes;
  detail::id_list allocating;  // tasks with tensors started by `dispatch`
  std::vector<char> device_mark;
  std::vector<double> link_left, share_of;       // progressive-filling scratch
  std::vector<int> users, fair_links, fair_ids;  // fair_ids: every fair-share link
  std::vector<detail::event> not_due;            // events handled too early, put back
  // A task about to end: its first dependent's lines are fetched while the event is handled
  // (with many streams they have left the cache since that task was last touched), by
  // detail::prefetch: not a lambda, as GCC would drop its calls.
  const detail::edge* edge_list = nullptr;
  detail::task_hot* hot = nullptr;
  task_record* records = nullptr;
  static constexpr std::size_t ahead = 128;  // tasks; see `prefetch_ahead`
  std::size_t fetched = 0;

  /// Sizes the loop's state for `s`'s resources and devices, and takes the tasks' loop state.
  event_loop(const simulator& s, std::vector<detail::task_hot>&& tasks)
      : sim(s),
        T(std::move(tasks)),
        n(T.size()),
        nr(s.resources_.size()),
        nd(static_cast<std::size_t>(s.devices_)),
        any_gamma(s.gamma_ > 0 || s.any_own_gamma_),
        heap(n + nr) {
    res.tasks.assign(n, {});
    count_readers();
    R.resize(nr);
    for (std::size_t r = 0; r < nr; ++r) {
      const resource_spec& spec = sim.resources_[r];
      R[r].capacity = spec.capacity;
      R[r].window = spec.window;
      R[r].kind = spec.kind;
      R[r].window_once = spec.window_once;
    }
    link_flows.resize(nr);
    comm_in.resize(nd);
    slow.assign(nd, 0.0);
    find_compute_streams();
    device_mark.assign(nd, 0);
    link_left.resize(nr);
    users.resize(nr);
    for (std::size_t r = 0; r < nr; ++r)
      if (sim.resources_[r].kind == discipline::fair_share) fair_ids.push_back(static_cast<int>(r));
    edge_list = sim.edges_.data();
    hot = T.data();
    records = res.tasks.data();
  }
  /// Counts each tensor's readers and sizes the memory per device. The tasks' loop state starts
  /// as add_task left it, with their resources, dependents and roots; only tasks with tensors
  /// are read from their specs.
  void count_readers() {
    readers.assign(sim.tensors_.size(), 0);
    if (!sim.tensors_.empty())
      for (std::size_t i = 0; i < n; ++i)
        if (T[i].memory)
          for (int x : sim.consumes_of(i)) ++readers[static_cast<std::size_t>(x)];
    res.peak_memory.assign(nd, 0.0);
    mem.assign(nd, 0.0);
    unread.resize(sim.tensors_.size());
    for (std::size_t x = 0; x < sim.tensors_.size(); ++x) unread[x] = readers[x] == 0;
  }
  /// Lists, per device, the fifo resources that serve its compute tasks (gamma slows them).
  void find_compute_streams() {
    compute_streams.resize(nd);
    if (any_gamma)
      for (std::size_t i = 0; i < n; ++i)
        if (const detail::task_hot& h = T[i]; h.slowable && h.kind() == discipline::fifo) {
          auto& v = compute_streams[static_cast<std::size_t>(sim.static_[i].device)];
          if (std::find(v.begin(), v.end(), h.first) == v.end()) v.push_back(h.first);
        }
  }

  /// Task `i`'s loop state.
  [[gnu::always_inline]] detail::task_hot& at(int i) { return T[static_cast<std::size_t>(i)]; }
  /// Task `i`'s resources, [first, last).
  [[gnu::always_inline]] std::pair<const int*, const int*> res_of(int i) const {
    const detail::task_static& c = sim.static_[static_cast<std::size_t>(i)];
    return std::pair{sim.rlist_.data() + c.rbegin, sim.rlist_.data() + c.rend};
  }
  /// How far from its predicted completion task `i` may end.
  [[gnu::always_inline]] double tolerance(int i) const {
    return T[static_cast<std::size_t>(i)].tolerance();
  }
  /// Puts task `i` at the back of resource `r`'s waiting line.
  [[gnu::always_inline]] void queue_push(int r, int i) {
    detail::resource_state& q = R[static_cast<std::size_t>(r)];
    at(i).count = -1;
    if (q.qtail < 0)
      q.qhead = i;
    else
      at(q.qtail).count = i;
    q.qtail = i;
  }
  /// Takes the task at the front of waiting line `q`.
  [[gnu::always_inline]] int queue_pop(detail::resource_state& q) {
    const int i = q.qhead;
    q.qhead = at(i).count;
    if (q.qhead < 0) q.qtail = -1;
    return i;
  }
  /// Marks fifo / round-robin resource `r` as changed by this event, once.
  [[gnu::always_inline]] void touch_queue(int r) {
    detail::resource_state& q = R[static_cast<std::size_t>(r)];
    if (!q.mark) {
      q.mark = true;
      touched_queues.push_back(r);
    }
  }
  /// Fair-share link `r` gained or lost a flow in this event: marked as changed, once, and its
  /// shares to be brought up to date.
  [[gnu::always_inline]] void touch_link(int r) {
    detail::resource_state& l = R[static_cast<std::size_t>(r)];
    l.dirty = true;
    if (!l.mark) {
      l.mark = true;
      touched_links.push_back(r);
    }
  }
  /// Resource `q`'s busy time, as it turns busy or idle at the end of an event.
  [[gnu::always_inline]] void note_busy(detail::resource_state& q, bool busy) {
    if (busy != q.was_busy) {
      if (busy)
        q.busy_since = now;
      else
        q.busy += now - q.busy_since;
      q.was_busy = busy;
    }
  }
  /// Counts communication task `i` in (+1) or out of (-1) service on its device, by its gamma.
  [[gnu::always_inline]] void comm_change(int i, int delta) {
    // without gamma the largest gamma in service stays 0: nothing to count
    if (any_gamma && at(i).comm) count_comm(i, delta);
  }
  void count_comm(int i, int delta) {
    const detail::task_static& c = sim.static_[static_cast<std::size_t>(i)];
    const int dev = c.device;
    const auto d = static_cast<std::size_t>(dev);
    const double g = c.gamma >= 0 ? c.gamma : sim.gamma_;
    auto& v = comm_in[d];
    auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == g; });
    if (it == v.end())
      v.push_back({g, delta});
    else
      it->second += delta;
    if (!device_mark[d]) {
      device_mark[d] = 1;
      touched_devices.push_back(dev);
    }
  }
  /// (Re)schedules task i's next completion.
  [[gnu::always_inline]] void predict(int i) {
    detail::task_hot& h = at(i);
    h.due = now + h.left / h.rate;
    max_slack = std::max(max_slack, h.tolerance() / h.rate);
    heap.set(detail::event::make(h.due, i));
  }
  /// Task i's progress so far at the old rate, then the new rate `r`.
  void set_rate(int i, double r) {
    detail::task_hot& h = at(i);
    if (h.rate == r) return;
    if (h.rate > 0) {
      const double sent = h.rate * (now - h.last);
      h.left = std::max(0.0, h.left - sent);
      h.remaining -= sent;
    }
    h.last = now;
    h.rate = r;
    predict(i);
  }
  /// Brings link r's virtual clock up to now.
  [[gnu::always_inline]] void advance_link(detail::resource_state& l) {
    l.vclock += l.vshare * (now - l.vlast);
    l.vlast = now;
  }
  /// (Re)schedules the next completion among link r's single-link flows.
  void predict_link(std::size_t r) {
    const detail::resource_state& l = R[r];
    if (link_flows[r].empty() || !(l.vshare > 0)) {
      heap.erase(static_cast<int>(n + r));
      return;
    }
    const detail::timed_id& f = link_flows[r].top();
    const double t = now + std::max(0.0, f.time() - l.vclock) / l.vshare;
    max_slack = std::max(max_slack, tolerance(f.id()) / l.vshare);
    heap.set(detail::event::make(t, static_cast<int>(n + r)));
  }
  /// The rate at which fifo / round-robin resource r serves task i (gamma slows compute).
  double fifo_rate(int i, std::size_t r) const {
    if (R[r].kind == discipline::round_robin) return R[r].capacity;
    if (!any_gamma || !T[static_cast<std::size_t>(i)].slowable) return 1.0;  // 1 / (1 + 0)
    return 1.0 /
           (1.0 + slow[static_cast<std::size_t>(sim.static_[static_cast<std::size_t>(i)].device)]);
  }

  /// Allocates the tensors task i produces, noting peaks and the first out-of-memory.
  [[gnu::always_inline]] void allocate(int i) {
    if (at(i).memory) allocate_tensors(i);
  }
  void allocate_tensors(int i) {
    for (int x : sim.produces_of(static_cast<std::size_t>(i))) {
      const auto& t = sim.tensors_[static_cast<std::size_t>(x)];
      auto& m = mem[static_cast<std::size_t>(t.device)];
      m += t.bytes;
      res.memory.push_back({now, t.device, m});
      auto& peak = res.peak_memory[static_cast<std::size_t>(t.device)];
      peak = std::max(peak, m);
      const double cap = static_cast<std::size_t>(t.device) < sim.capacity_.size()
                             ? sim.capacity_[static_cast<std::size_t>(t.device)]
                             : std::numeric_limits<double>::infinity();
      if (!res.oom && m > cap) res.oom = out_of_memory{t.device, i, m};
    }
  }
  /// Frees the tensors whose last reader was task i, and those i produced that nobody reads.
  [[gnu::always_inline]] void release(int i) {
    if (at(i).memory) release_tensors(i);
  }
  void release_tensors(int i) {
    auto drop = [&](int x) {
      const auto& t = sim.tensors_[static_cast<std::size_t>(x)];
      mem[static_cast<std::size_t>(t.device)] -= t.bytes;
      res.memory.push_back({now, t.device, mem[static_cast<std::size_t>(t.device)]});
    };
    for (int x : sim.consumes_of(static_cast<std::size_t>(i)))
      if (--readers[static_cast<std::size_t>(x)] == 0) drop(x);
    for (int x : sim.produces_of(static_cast<std::size_t>(i)))
      if (unread[static_cast<std::size_t>(x)]) drop(x);  // nobody reads it: gone at once
  }
  /// Task i, ready and past its latency: a fair-share flow starts, other tasks wait in line.
  [[gnu::always_inline]] void enqueue(int i) {
    const auto ii = static_cast<std::size_t>(i);
    detail::task_hot& h = T[ii];
    h.st = detail::task_state::queued;
    h.remaining = h.work;
    const int r = h.first;
    if (h.kind() == discipline::fair_share) {
      start_flow(i, h);
    } else {
      queue_push(r, i);
      touch_queue(r);
    }
  }
  /// Starts fair-share flow i on its links: on its link's virtual clock, or rated by `fill`.
  [[gnu::always_inline]] void start_flow(int i, detail::task_hot& h) {
    const int r = h.first;
    h.st = detail::task_state::serving;
    res.tasks[static_cast<std::size_t>(i)].start = now;
    allocate(i);
    const auto [rb, re] = res_of(i);
    for (const int* x = rb; x != re; ++x) {
      ++R[static_cast<std::size_t>(*x)].users;
      touch_link(*x);
    }
    if (!h.links) {
      const auto ur = static_cast<std::size_t>(r);
      detail::resource_state& l = R[ur];
      advance_link(l);
      link_flows[ur].push(detail::timed_id::make(l.vclock + h.work, i));
    } else {
      multi.push_back(i);
      for (const int* x = rb; x != re; ++x) ++R[static_cast<std::size_t>(*x)].multi;
      h.left = h.work;
      h.rate = 0;
      h.last = now;
      shares_changed = true;
    }
    comm_change(i, +1);
  }
  /// Task i's dependencies are done: it waits its latency, or is enqueued at once.
  [[gnu::always_inline]] void make_ready(int i) {
    detail::task_hot& h = at(i);
    res.tasks[static_cast<std::size_t>(i)].ready = now;
    if (h.latent) {
      h.st = detail::task_state::delayed;
      h.due = now + sim.static_[static_cast<std::size_t>(i)].latency;
      heap.set(detail::event::make(h.due, i));
    } else {
      enqueue(i);
    }
  }
  /// Idle fifo / round-robin resources changed by this event take their next task; their busy
  /// time is noted (nothing later in the event changes whom they serve). Tasks with tensors
  /// allocate them afterwards, by resource.
  [[gnu::always_inline]] void dispatch() {
    for (int r : touched_queues) {
      detail::resource_state& q = R[static_cast<std::size_t>(r)];
      q.mark = false;
      if (q.in_service < 0 && q.qhead >= 0) serve_next(q);
      note_busy(q, q.in_service >= 0);
    }
    touched_queues.clear();
    if (!allocating.empty()) allocate_started();
  }
  /// Idle resource `q` starts the next task or turn in its line: rated at once unless gamma
  /// may change its rate before the event is over (`settle`), or it crosses links.
  [[gnu::always_inline]] void serve_next(detail::resource_state& q) {
    const int i = queue_pop(q);
    detail::task_hot& h = at(i);
    q.in_service = i;
    const bool first_turn = h.st == detail::task_state::queued;
    if (first_turn) {
      h.st = detail::task_state::serving;
      records[static_cast<std::size_t>(i)].start = now;
      if (h.memory) allocating.push_back(i);
    }
    const bool rr = q.kind == discipline::round_robin;
    h.left = rr && (first_turn || !q.window_once) ? std::min(q.window, h.remaining) : h.remaining;
    h.rate = 0;
    h.last = now;
    comm_change(i, +1);
    if (h.links) {
      join_links(i, h);
    } else if (rr || !any_gamma || !h.slowable) {
      h.rate = rr ? q.capacity : 1.0;  // fifo_rate: no gamma to wait for
      predict(i);
    } else {
      started.push_back(i);
    }
  }
  /// The tasks `dispatch` started that produce tensors allocate them, in the order of their
  /// resources (the order dispatch took resources in).
  void allocate_started() {
    allocating.sort([&](int a, int b) { return at(a).first < at(b).first; });
    for (int i : allocating) allocate_tensors(i);
    allocating.clear();
  }
  /// Round-robin turn i joins the fair-share links it crosses.
  void join_links(int i, detail::task_hot& h) {
    const auto [rb, re] = res_of(i);
    if (h.single_turn) {  // a flow of the link's virtual clock (the link's share binds)
      const int x = rb[1];
      const auto ux = static_cast<std::size_t>(x);
      detail::resource_state& l = R[ux];
      ++l.users;
      touch_link(x);
      advance_link(l);
      link_flows[ux].push(detail::timed_id::make(l.vclock + h.left, i));
    } else {  // a round-robin turn over fair-share links: rated by `fill`
      for (const int* x = rb + 1; x != re; ++x) {
        detail::resource_state& l = R[static_cast<std::size_t>(*x)];
        ++l.users;
        ++l.multi;
        touch_link(*x);
      }
      multi.push_back(i);
      shares_changed = true;
    }
  }
  /// Task i is done: its tensors are released and its dependents counted down.
  [[gnu::always_inline]] void finish(int i) {
    const auto ii = static_cast<std::size_t>(i);
    prefetch_ahead(ii);
    T[ii].st = detail::task_state::done;
    res.tasks[ii].end = now;
    release(i);
    ++finished;
    for (int e = T[ii].out; e >= 0;) {  // its dependents, in task order
      const detail::edge& x = sim.edges_[static_cast<std::size_t>(e)];
      if (--at(x.to).count == 0) make_ready(x.to);
      e = x.next;
    }
  }
  /// Tasks are added in a topological order, so a run reaches them roughly in index order: the
  /// lines of the tasks up to `ahead` indices past a finished one (`ii`) are asked for once,
  /// before a dependent's first touch has to wait for them; half as far ahead, when its loop
  /// line has arrived, a task's first edge too.
  [[gnu::always_inline]] void prefetch_ahead(std::size_t ii) {
    for (const std::size_t to = std::min(n, ii + ahead); fetched < to; ++fetched) {
      detail::prefetch(hot + fetched);
      detail::prefetch(sim.static_.data() + fetched);
      detail::prefetch(records + fetched);
      if (fetched >= ahead / 2)
        if (const int o = hot[fetched - ahead / 2].out; o >= 0) detail::prefetch(edge_list + o);
    }
  }
  /// Gives link r's single-link flows the rate `share`, and reschedules them if it changed.
  [[gnu::always_inline]] void set_link_share(std::size_t r, double share) {
    detail::resource_state& l = R[r];
    if (share != l.vshare) {
      advance_link(l);
      l.vshare = share;
      l.dirty = true;
    }
    if (l.dirty) predict_link(r);
    l.dirty = false;
  }
  /// Max-min fair rates by progressive filling over every link in use: the flows crossing
  /// several links one by one, each link's single-link flows together.
  void fill() {
    std::size_t unfixed = start_filling();
    while (unfixed > 0) {
      double share = std::numeric_limits<double>::infinity();
      int bottleneck = -1;
      for (int r : fair_links) {
        const auto ur = static_cast<std::size_t>(r);
        if (users[ur] > 0 && link_left[ur] / users[ur] < share) {
          share = link_left[ur] / users[ur];
          bottleneck = r;
        }
      }
      if (bottleneck < 0) break;
      fix_at(bottleneck, share, unfixed);
    }
    for (std::size_t q = 0; q < multi.size(); ++q)
      if (share_of[q] >= 0) {
        const int i = multi[q];
        const detail::task_hot& h = at(i);
        const auto own = static_cast<std::size_t>(h.first);
        set_rate(i, h.kind() == discipline::fair_share ? share_of[q]
                                                       : std::min(share_of[q], R[own].capacity));
      }
  }
  /// Progressive filling's start: the links in use with their capacity and flows, no flow's
  /// share fixed; returns the flows and links' single-link flow groups to fix.
  std::size_t start_filling() {
    fair_links.clear();
    for (int x : fair_ids) {
      const auto r = static_cast<std::size_t>(x);
      if (R[r].users > 0) {
        fair_links.push_back(x);
        link_left[r] = R[r].capacity;
        users[r] = R[r].users;
      }
    }
    share_of.assign(multi.size(), -1.0);
    std::size_t unfixed = multi.size();
    for (int r : fair_links)
      if (R[static_cast<std::size_t>(r)].users > R[static_cast<std::size_t>(r)].multi) ++unfixed;
    return unfixed;
  }
  /// Progressive filling's step: the unfixed flows crossing the `bottleneck` link, and its
  /// single-link flows, get `share`; the links they cross give it up.
  void fix_at(int bottleneck, double share, std::size_t& unfixed) {
    const auto ub = static_cast<std::size_t>(bottleneck);
    for (std::size_t q = 0; q < multi.size(); ++q) {
      if (share_of[q] >= 0) continue;
      const auto [rb, to] = res_of(multi[q]);
      const int* from = rb + (at(multi[q]).kind() == discipline::fair_share ? 0 : 1);
      if (std::find(from, to, bottleneck) == to) continue;
      share_of[q] = share;
      --unfixed;
      for (const int* x = from; x != to; ++x) {
        link_left[static_cast<std::size_t>(*x)] -= share;
        --users[static_cast<std::size_t>(*x)];
      }
    }
    const int singles = R[ub].users - R[ub].multi;
    if (singles > 0 && users[ub] > 0) {  // the link's own flows: all at the bottleneck share
      link_left[ub] -= share * singles;
      users[ub] -= singles;
      --unfixed;
      set_link_share(ub, share);
    }
  }
  /// After an event's changes: new rates (fair shares, gamma, tasks started waiting for gamma),
  /// the links' busy time.
  [[gnu::always_inline]] void settle() {
    if (!touched_devices.empty()) settle_gamma();
    if (!started.empty()) rate_started();
    const bool filling = shares_changed || !multi.empty();
    if (filling) {
      bool any_dirty = shares_changed;
      for (int r : touched_links) any_dirty = any_dirty || R[static_cast<std::size_t>(r)].dirty;
      if (any_dirty) fill();
    }
    shares_changed = false;
    settle_links(!filling);
  }
  /// The tasks `dispatch` started whose rate waited for gamma are rated.
  void rate_started() {
    for (int i : started) {
      detail::task_hot& h = at(i);
      h.rate = fifo_rate(i, static_cast<std::size_t>(h.first));
      predict(i);
    }
    started.clear();
  }
  /// The touched devices' largest gamma in service; where it changed, their compute in
  /// service is re-rated.
  void settle_gamma() {
    for (int d : touched_devices) {
      const auto ud = static_cast<std::size_t>(d);
      device_mark[ud] = 0;
      double g = 0;
      for (const auto& [gi, count] : comm_in[ud])
        if (count > 0) g = std::max(g, gi);
      if (g == slow[ud]) continue;
      slow[ud] = g;
      for (int r : compute_streams[ud]) {  // gamma > 0 only
        const int i = R[static_cast<std::size_t>(r)].in_service;
        if (i >= 0 && at(i).rate > 0) set_rate(i, fifo_rate(i, static_cast<std::size_t>(r)));
      }
    }
    touched_devices.clear();
  }
  /// The touched links' busy time, as they turn busy or idle; their marks cleared. With `even`
  /// (no flow crosses several links), first each touched link splits its capacity evenly.
  void settle_links(bool even) {
    for (int r : touched_links) {
      const auto ur = static_cast<std::size_t>(r);
      detail::resource_state& l = R[ur];
      if (even && l.dirty) set_link_share(ur, l.users > 0 ? l.capacity / l.users : 0.0);
      l.mark = false;
      l.dirty = false;
      note_busy(l, l.users > 0);
    }
    touched_links.clear();
  }
  /// Fair-share flow i leaves its links; it is done.
  void flow_leaves(int i) {
    detail::task_hot& h = at(i);
    const auto [rb, re] = res_of(i);
    for (const int* x = rb; x != re; ++x) {
      --R[static_cast<std::size_t>(*x)].users;
      touch_link(*x);
    }
    comm_change(i, -1);
    h.remaining = 0;
    done_now.push_back(i);
  }
  /// A single-link round-robin turn (task i, on link r) is over.
  [[gnu::always_inline]] void turn_leaves(int i, std::size_t r) {
    --R[r].users;
    touch_link(static_cast<int>(r));
    end_turn(i);
  }

  /// Moves to the next event's time and handles every event due then (within the completion
  /// tolerance of its task) as it is popped, in order; returns whether a flow or turn crossing
  /// several links ended. Handling an event adds none, so the events popped are those due when
  /// the first was; one found not due yet goes back after the last is popped.
  [[gnu::always_inline]] bool handle_due() {
    if (heap.empty())
      throw plan_error("the task graph has a cycle: " + std::to_string(n - finished) +
                       " tasks can never start");
    const double t = heap.top().time();
    if (!(t < std::numeric_limits<double>::infinity()))
      throw plan_error("a task can never finish: its resource serves it at rate 0");
    ++res.events;
    now = t;
    // every event at t + max_slack or before (compared as keys: no conversion back to times)
    const detail::event last = detail::event::last_at(t + max_slack);
    bool multi_ended = false;
    while (!heap.empty() && !detail::event::before(last, heap.top())) {
      const detail::event e = heap.pop();
      if (static_cast<std::size_t>(e.id()) >= n)
        link_event(e);
      else if (task_event(e))
        multi_ended = true;
    }
    if (!not_due.empty()) {
      for (const detail::event& e : not_due) heap.set(e);
      not_due.clear();
    }
    return multi_ended;
  }
  /// Event `e` of a link's single-link flows: those done by its virtual clock leave it (or it
  /// is put back, not yet due).
  [[gnu::always_inline]] void link_event(const detail::event& e) {
    const std::size_t r = static_cast<std::size_t>(e.id()) - n;
    auto& q = link_flows[r];
    detail::resource_state& l = R[r];
    if (!(e.time() <= now + tolerance(q.top().id()) / l.vshare)) {
      not_due.push_back(e);
      return;
    }
    advance_link(l);
    l.vclock = std::max(l.vclock, q.top().time());  // the first flow is done
    while (!q.empty() && q.top().time() <= l.vclock + tolerance(q.top().id())) {
      const int i = q.top().id();
      if (const int o = at(i).out; o >= 0) {  // see edge_list
        detail::prefetch(hot + edge_list[o].to);
        detail::prefetch(records + edge_list[o].to);
      }
      q.pop();
      if (at(i).kind() == discipline::fair_share)
        flow_leaves(i);
      else
        turn_leaves(i, r);
    }
  }
  /// Event `e` of a task: its latency is over, or its flow or turn ended (or it is put back,
  /// not yet due). Returns whether a flow or turn crossing several links ended.
  [[gnu::always_inline]] bool task_event(const detail::event& e) {
    const int i = e.id();
    detail::task_hot& h = at(i);
    if (h.out >= 0) {  // see edge_list
      detail::prefetch(hot + edge_list[h.out].to);
      detail::prefetch(records + edge_list[h.out].to);
    }
    if (h.st == detail::task_state::delayed) {
      if (h.due <= now) {
        wakes.push_back(i);
      } else {
        not_due.push_back(e);
      }
      return false;
    }
    if (!(h.due <= now + h.tolerance() / h.rate)) {
      not_due.push_back(e);
      return false;
    }
    if (h.kind() == discipline::fair_share) {
      const auto [rb, re] = res_of(i);
      for (const int* x = rb; x != re; ++x) --R[static_cast<std::size_t>(*x)].multi;
      h.st = detail::task_state::done;  // marks it for removal from `multi`
      flow_leaves(i);
      return true;
    }
    const bool multi_ended = h.links;
    if (h.links) turn_leaves_links(i, h);
    end_turn(i);
    return multi_ended;
  }
  /// A round-robin turn over several links (task i) leaves its links.
  void turn_leaves_links(int i, detail::task_hot& h) {
    const auto [rb, re] = res_of(i);
    h.turn_over = true;
    for (const int* x = rb + 1; x != re; ++x) {
      detail::resource_state& l = R[static_cast<std::size_t>(*x)];
      --l.multi;
      --l.users;
      touch_link(*x);
    }
  }
  /// Removes the flows and turns that ended from `multi`: fair shares change.
  void drop_ended() {
    multi.erase(std::remove_if(multi.begin(), multi.end(),
                               [&](int f) {
                                 detail::task_hot& h = at(f);
                                 const bool out = h.st == detail::task_state::done || h.turn_over;
                                 h.turn_over = false;
                                 return out;
                               }),
                multi.end());
    shares_changed = true;
  }
  /// Task i's turn on its fifo / round-robin resource ended: the task is done, or (round-robin)
  /// goes to the back of the line. Ended as its event is handled: what it changes (its own
  /// resource's line, its task) no other event of the same time reads.
  [[gnu::always_inline]] void end_turn(int i) {
    detail::task_hot& h = at(i);
    const int r = h.first;
    R[static_cast<std::size_t>(r)].in_service = -1;
    touch_queue(r);
    comm_change(i, -1);
    h.remaining -= h.left;
    h.left = 0;
    h.rate = 0;
    if (h.remaining <= h.tolerance()) {
      done_now.push_back(i);
    } else {
      queue_push(r, i);  // round-robin: back of the line
    }
  }
  /// The tasks whose latency ended in this event are enqueued, in index order.
  void enqueue_woken() {
    wakes.sort();
    for (int i : wakes) enqueue(i);
    wakes.clear();
  }
  /// Runs the loop until every task is done.
  result run() {
    for (int i : sim.roots_) make_ready(i);
    dispatch();
    settle();
    while (finished < n) {
      if (handle_due()) drop_ended();
      done_now.sort();
      for (int i : done_now) finish(i);
      done_now.clear();
      if (!wakes.empty()) enqueue_woken();
      dispatch();
      settle();
    }
    for (const auto& r : res.tasks) res.makespan = std::max(res.makespan, r.end);
    res.busy.resize(nr);
    for (std::size_t r = 0; r < nr; ++r) res.busy[r] = R[r].busy;
    return std::move(res);
  }
};

/// The event loop (`event_loop`) on `T`.
inline result simulator::run_from(std::vector<detail::task_hot> T) const {
  return event_loop(*this, std::move(T)).run();
}

}  // namespace strata::sim
