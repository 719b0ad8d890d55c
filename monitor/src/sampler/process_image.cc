#include "sampler/process_image.h"

#include <cxxabi.h>
#include <libunwind-ptrace.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "os/remote_memory.h"

namespace parastack::sampler {
namespace {

// What _UPT_find_proc_info builds for a file's code (and perf for the vdso): the table where it
// lies in the process (`bias` from file to process addresses), its entries relative to
// .eh_frame_hdr, for the instructions in `code`.
unw_dyn_info_t remote_unwind_table(const ElfSymbols::UnwindTable& table, std::uint64_t bias, CodeRange code) {
  unw_dyn_info_t info{};
  info.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  info.start_ip = code.start;
  info.end_ip = code.end;
  info.u.rti.segbase = bias + table.header_vaddr;
  info.u.rti.table_data = bias + table.entries_vaddr;
  info.u.rti.table_len = table.count * 2 * sizeof(std::int32_t) / sizeof(unw_word_t);
  return info;
}

}  // namespace

// libunwind accessors that unwind a stack copied while the thread was stopped (stack_sampler.cc).
extern unw_accessors_t copy_accessors;

std::shared_ptr<const ElfSymbols> symbols_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return nullptr;
  using FileVersion = std::tuple<dev_t, ino_t, std::int64_t, std::int64_t, off_t>;
  const FileVersion version{st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec, st.st_size};
  static std::mutex mutex;
  static std::map<std::string, std::map<FileVersion, std::shared_ptr<const ElfSymbols>>> cache;
  std::lock_guard lock(mutex);
  auto& versions = cache[path];
  auto [it, inserted] = versions.try_emplace(version);
  if (!inserted) return it->second;
  it->second = ElfSymbols::load(path);
  // A program rebuilt again and again in a long batch job: the old versions no process holds go.
  std::erase_if(versions, [&](const auto& old) { return old.first != version && old.second.use_count() == 1; });
  return it->second;
}

std::shared_ptr<const ElfSymbols> ProcessImage::symbols_for(const os::Mapping& mapping) {
  auto file = symbols_.find(mapping.path);
  if (file == symbols_.end()) file = symbols_.try_emplace(mapping.path).first;
  auto [it, inserted] = file->second.try_emplace(mapping.inode);
  if (inserted) it->second = symbols_of(mapping.path);
  return it->second;
}

std::unique_ptr<ProcessImage> ProcessImage::load(os::Pid pid, os::StopFailure& failure, std::string& problem) {
  // Right after the failed read, before anything else can change errno.
  const auto cannot_read = [&](const char* file) {
    const int error = errno;
    failure = os::failure_from_errno(error);
    problem = "cannot read /proc/" + std::to_string(pid.value) + "/" + file + ": " + std::strerror(error);
    return nullptr;
  };
  auto stat = os::read_stat(pid);
  if (!stat) return cannot_read("stat");
  std::unique_ptr<ProcessImage> image(new ProcessImage(pid));
  image->start_ticks_ = stat->start_ticks;
  if (!image->refresh_maps()) return cannot_read("maps");
  image->read_vdso();
  image->find_libraries();
  image->upt_ = _UPT_create(pid.value);
  image->copy_space_ = unw_create_addr_space(&copy_accessors, 0);
  image->ptrace_space_ = unw_create_addr_space(&_UPT_accessors, 0);
  if (!image->upt_ || !image->copy_space_ || !image->ptrace_space_) {
    failure = os::StopFailure::Failed;
    problem = "libunwind could not create an address space";
    return nullptr;
  }
  unw_set_caching_policy(image->copy_space_, UNW_CACHE_GLOBAL);
  unw_set_caching_policy(image->ptrace_space_, UNW_CACHE_GLOBAL);
  image->maps_changed_ = false;  // upt_ is new
  return image;
}

ProcessImage::~ProcessImage() {
  if (copy_space_) unw_destroy_addr_space(copy_space_);
  if (ptrace_space_) unw_destroy_addr_space(ptrace_space_);
  if (upt_) _UPT_destroy(upt_);
}

bool ProcessImage::refresh_maps() {
  auto maps = os::read_maps(pid_);
  if (!maps) return false;
  check_.maps_read();
  read_only_memory_.set_mappings(*maps);
  std::vector<os::Mapping> code;
  for (auto& m : *maps) {
    if (m.executable && m.path == "[vdso]") vdso_ = {m.start, m.end};
    if (m.executable && !m.path.empty() && m.path.front() == '/') code.push_back(std::move(m));
  }
  if (code == maps_) return true;
  maps_ = std::move(code);
  // A library loaded since (mpi4py dlopens libmpi when Python imports it, which may come after
  // the rank was found and first sampled) is looked for again, before the next sample: not now,
  // which may be while the rank is stopped (reading symbol tables takes milliseconds).
  libraries_stale_ = true;
  unwind_tables_.clear();
  // libunwind keeps the unwind rules it found by address (flushed lazily: safe in the middle of an
  // unwind), and _UPT the file it mapped last (made anew by begin_sample).
  if (copy_space_) unw_flush_cache(copy_space_, 0, 0);
  if (ptrace_space_) unw_flush_cache(ptrace_space_, 0, 0);
  maps_changed_ = true;
  return true;
}

void ProcessImage::begin_sample() {
  check_.begin_sample();
  if (libraries_stale_) find_libraries();
  if (!maps_changed_) return;
  maps_changed_ = false;
  if (void* fresh = _UPT_create(pid_.value)) {
    _UPT_destroy(upt_);
    upt_ = fresh;
  }
}

bool ProcessImage::read_memory(std::uint64_t address, void* buffer, std::size_t length) {
  const bool read = read_only_memory_.read(address, buffer, length);
  if (read_only_memory_.maps_changed()) refresh_maps();
  return read;
}

bool ProcessImage::thread_multiple() const {
  // Unreadable (the rank is exiting): the main thread alone is sampled, and the stop says why.
  if (!thread_multiple_address_) return false;
  unsigned char flag = 0;
  return os::read_remote(pid_, *thread_multiple_address_, &flag, 1).bytes == 1 && flag != 0;
}

void ProcessImage::read_vdso() {
  if (vdso_.end <= vdso_.start) return;
  std::vector<std::uint8_t> image(vdso_.end - vdso_.start);
  if (os::read_remote(pid_, vdso_.start, image.data(), image.size()).bytes != image.size()) return;
  auto symbols = ElfSymbols::parse(image);
  if (!symbols) return;
  vdso_image_ = std::move(image);
  vdso_symbols_ = std::move(symbols);
  const auto& table = vdso_symbols_->unwind_table();
  if (!table) return;
  vdso_unwind_table_ = remote_unwind_table(*table, vdso_symbols_->load_bias(vdso_.start, 0), vdso_);
}

const unw_dyn_info_t* ProcessImage::unwind_table_at(std::uint64_t ip) {
  const os::Mapping* m = mapping_at(ip);
  if (!m) return nullptr;
  auto [it, inserted] = unwind_tables_.try_emplace(m->start);
  if (inserted) {
    const auto symbols = symbols_for(*m);
    if (symbols && symbols->unwind_table()) {
      it->second =
          remote_unwind_table(*symbols->unwind_table(), symbols->load_bias(m->start, m->offset), {m->start, m->end});
    }
  }
  return it->second ? &*it->second : nullptr;
}

const os::Mapping* ProcessImage::known_mapping_at(std::uint64_t address) const {
  for (const auto& m : maps_) {
    if (m.contains(address)) return &m;
  }
  return nullptr;
}

const os::Mapping* ProcessImage::mapping_at(std::uint64_t address) {
  const os::Mapping* m = known_mapping_at(address);
  if (m && check_.still_mapped(m->start, m->end, m->path)) return m;
  if (check_.maps_read_this_sample() || !refresh_maps()) return nullptr;
  return known_mapping_at(address);
}

SampledFrame ProcessImage::describe(std::uint64_t address) {
  SampledFrame frame{address, {}, {}};
  if (vdso_.contains(address)) {
    frame.module = "[vdso]";
    if (vdso_symbols_) {
      const auto name = vdso_symbols_->function_at(vdso_symbols_->to_vaddr(address, vdso_.start, 0));
      if (name) frame.function = std::string(*name);
    }
    return frame;
  }
  const os::Mapping* m = mapping_at(address);
  if (!m) return frame;
  frame.module = m->path.substr(m->path.rfind('/') + 1);
  if (auto symbols = symbols_for(*m)) {
    if (auto name = symbols->function_at(symbols->to_vaddr(address, m->start, m->offset))) {
      int status = 0;
      char* demangled = abi::__cxa_demangle(std::string(*name).c_str(), nullptr, nullptr, &status);
      frame.function = status == 0 && demangled ? demangled : std::string(*name);
      std::free(demangled);
    }
  }
  return frame;
}

std::optional<std::uint64_t> ProcessImage::function_start(std::uint64_t address) {
  // Checked first: an address in the vdso would otherwise re-read the maps every time.
  if (vdso_.contains(address)) {
    if (!vdso_symbols_) return std::nullopt;
    const auto start = vdso_symbols_->function_start_at(vdso_symbols_->to_vaddr(address, vdso_.start, 0));
    if (!start) return std::nullopt;
    return *start + vdso_symbols_->load_bias(vdso_.start, 0);
  }
  const os::Mapping* m = mapping_at(address);
  if (!m) return std::nullopt;
  const auto symbols = symbols_for(*m);
  if (!symbols) return std::nullopt;
  const auto start = symbols->function_start_at(symbols->to_vaddr(address, m->start, m->offset));
  if (!start) return std::nullopt;
  return *start + symbols->load_bias(m->start, m->offset);
}

bool ProcessImage::in_mpi_wrapper(std::uint64_t address) {
  const os::Mapping* m = mapping_at(address);
  if (!m) return false;
  const auto symbols = symbols_for(*m);
  if (!symbols) return false;
  const auto name = symbols->function_at(symbols->to_vaddr(address, m->start, m->offset));
  return name && is_mpi_name(*name);
}

void ProcessImage::find_libraries() {
  // The MPI library is the file that defines PMPI_Init: a PMPI tool preloaded into the rank (the
  // progress library, mpiP, a fault injector) defines MPI_Init too, and may be mapped first; only
  // the library itself defines the profiling names. MPI_Init alone, for a library without them.
  // Its code is every executable mapping of it.
  libraries_stale_ = false;
  mpi_code_.clear();
  thread_multiple_address_.reset();
  std::optional<os::Mapping> mpi_library, defines_mpi_init;
  for (const auto& m : maps_) {
    auto symbols = symbols_for(m);
    if (!symbols) continue;
    if (symbols->defines("PMPI_Init")) {
      mpi_library = m;
      break;
    }
    if (!defines_mpi_init && symbols->defines("MPI_Init")) defines_mpi_init = m;
  }
  if (!mpi_library) mpi_library = defines_mpi_init;
  if (mpi_library) {
    auto symbols = symbols_for(*mpi_library);
    for (const auto& m : maps_) {
      if (m.path != mpi_library->path || m.inode != mpi_library->inode) continue;
      mpi_code_.push_back({m.start, m.end});
      if (auto flag = symbols->address_of("ompi_mpi_thread_multiple")) {
        thread_multiple_address_ = *flag + symbols->load_bias(m.start, m.offset);
      }
    }
  }
  find_python();
}

void ProcessImage::find_python() {
  python_.reset();
  // The interpreter is the file that defines _PyRuntime (python3.11, statically linked on Debian,
  // or a libpython3.x.so of an embedding, a pyenv or a conda build); Py_Version says which CPython
  // it is.
  for (const auto& m : maps_) {
    auto symbols = symbols_for(m);
    if (!symbols) continue;
    const auto runtime = symbols->address_of("_PyRuntime");
    const auto version_at = symbols->address_of("Py_Version");
    if (!runtime || !version_at) continue;
    const std::uint64_t bias = symbols->load_bias(m.start, m.offset);
    std::uint32_t version = 0;
    if (os::read_remote(pid_, *version_at + bias, &version, sizeof version).bytes != sizeof version) return;
    const auto layout = cpython_layout(version);
    if (layout && interpreter_agrees(remote_reader(), *runtime + bias, version, *layout)) {
      python_ = Python{*layout, *runtime + bias, m.path, m.inode};
    }
    return;
  }
}

bool ProcessImage::in_python_interpreter(std::uint64_t address) {
  if (!python_) return false;
  const os::Mapping* m = mapping_at(address);
  return m && m->inode == python_->inode && m->path == python_->path;
}

std::vector<PythonFrame> ProcessImage::python_stack(os::Tid tid) const {
  if (!python_) return {};
  return read_python_stack(remote_reader(), python_->layout, python_->runtime, tid.value);
}

std::string ProcessImage::describe_python(const PythonFrame& frame) const {
  if (!python_) return {};
  return describe_python_frame(remote_reader(), python_->layout, frame);
}

ReadMemory ProcessImage::remote_reader() const {
  return [pid = pid_](std::uint64_t address, void* buffer, std::size_t length) {
    return os::read_remote(pid, address, buffer, length).bytes == length;
  };
}

bool ProcessImage::in_openmp_runtime(std::uint64_t address) {
  const os::Mapping* m = mapping_at(address);
  if (!m) return false;
  const std::string_view path = m->path;
  const std::string_view name = path.substr(path.rfind('/') + 1);
  // Not "libomp" alone: Open MPI's libompitrace starts so too.
  return name.starts_with("libgomp") || name.starts_with("libomp.so") || name.starts_with("libiomp5");
}

bool ProcessImage::in_mpi_runtime(std::uint64_t address) {
  if (std::any_of(mpi_code_.begin(), mpi_code_.end(), [&](const CodeRange& code) { return code.contains(address); })) {
    return true;
  }
  const os::Mapping* m = mapping_at(address);
  if (!m) return false;
  const std::string_view path = m->path;
  const std::string_view name = path.substr(path.rfind('/') + 1);
  for (std::string_view runtime :
       {"libmpi", "libopen-pal", "libopen-rte", "libprrte", "libpmix", "mca_", "libevent", "libhwloc", "libucs",
        "libucp", "libuct", "libucm", "libfabric", "libpsm", "libibverbs", "librdmacm", "libmpich", "libmunge"}) {
    if (name.starts_with(runtime)) return true;
  }
  return false;
}

bool ProcessImage::in_c_runtime(std::uint64_t address) {
  if (vdso_.contains(address)) return true;  // the kernel's part of libc's clock_gettime and friends
  const os::Mapping* m = mapping_at(address);
  if (!m) return false;
  const std::string_view path = m->path;
  const std::string_view name = path.substr(path.rfind('/') + 1);
  for (std::string_view runtime :
       {"libc.so", "libc-", "libm.so", "libm-", "libpthread", "libdl", "librt", "libgcc_s", "ld-linux"}) {
    if (name.starts_with(runtime)) return true;
  }
  const auto symbols = symbols_for(*m);
  return symbols && symbols->in_plt(symbols->to_vaddr(address, m->start, m->offset));
}

}  // namespace parastack::sampler
