// What the sampler knows about one traced process: its executable mappings, the code of its MPI
// library, where Open MPI keeps its thread level, its libunwind address spaces (one per process,
// with libunwind's global cache, never shared between processes), and its symbols.
#pragma once

#include <libunwind.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "os/ids.h"
#include "os/proc.h"
#include "os/stopped_thread.h"
#include "sampler/classify.h"
#include "sampler/elf_symbols.h"
#include "sampler/mapping_check.h"
#include "sampler/python_stack.h"
#include "sampler/read_only_memory.h"
#include "sampler/sampled_frame.h"

namespace parastack::sampler {

class ProcessImage {
 public:
  // nullptr if the process cannot be read: `failure` says whether it is gone (Exited), not ours
  // (Denied) or something else (Failed), `problem` which file and the errno's text.
  static std::unique_ptr<ProcessImage> load(os::Pid pid, os::StopFailure& failure, std::string& problem);
  ~ProcessImage();
  ProcessImage(const ProcessImage&) = delete;
  ProcessImage& operator=(const ProcessImage&) = delete;

  os::Pid pid() const { return pid_; }
  std::uint64_t start_ticks() const { return start_ticks_; }
  os::ProcessIdentity identity() const { return {pid_, start_ticks_}; }
  bool has_mpi() const { return !mpi_code_.empty(); }
  const std::vector<CodeRange>& mpi_code() const { return mpi_code_; }
  // Open MPI's ompi_mpi_thread_multiple flag, read from the running process (no stop needed).
  bool thread_multiple() const;

  // Function name (demangled) and module of a code address; refreshes the mappings once if the
  // address is in none of them (a library loaded since, as Open MPI loads its components).
  SampledFrame describe(std::uint64_t address);
  // Where the function containing a code address starts, in this process: a function's identity
  // for the call-path signature, at the cost of a binary search (no name copied, nothing
  // demangled). In a stripped file, the start of the unwind table entry (.eh_frame_hdr) holding
  // it. nullopt when neither knows the address (the vdso).
  std::optional<std::uint64_t> function_start(std::uint64_t address);
  // Whether a code address lies in the C runtime (libc, libm, libpthread, libdl, librt, libgcc_s,
  // the dynamic loader) or in a PLT stub on the way into a library: code an application calls
  // from its loops (fmax, memcpy, nanosleep), not a place of its own. (A loop calling fmax is
  // found in fmax's PLT stub in ~6% of samples: without this, a place of its own every time.)
  bool in_c_runtime(std::uint64_t address);
  // Whether a code address lies in an OpenMP runtime (GCC's libgomp, LLVM's libomp, Intel's
  // libiomp5): the team's barriers, locks and task scheduler around a parallel region's body.
  bool in_openmp_runtime(std::uint64_t address);
  // Whether a code address lies in the MPI library or the runtime it brings (Open MPI's
  // libopen-pal, libopen-rte and components, PMIx, libevent, hwloc, UCX, libfabric, PSM): where
  // the MPI runtime's own threads (progress, PMIx, UCX's async thread) spend their lives.
  bool in_mpi_runtime(std::uint64_t address);
  // Whether the process runs CPython of a version whose frames we read (python_stack.h).
  bool runs_python() const { return python_.has_value(); }
  // Whether a code address lies in that interpreter (the python binary, or libpython).
  bool in_python_interpreter(std::uint64_t address);
  // The Python frames of thread `tid`, innermost first; empty when it runs none or they could
  // not be read. Read while the process runs (python_stack.h says why that is enough).
  std::vector<PythonFrame> python_stack(os::Tid tid) const;
  // "qualname (file:line)" of a Python frame; empty when unreadable.
  std::string describe_python(const PythonFrame& frame) const;
  // Whether a code address outside the MPI library lies in a function named like an MPI call: a
  // PMPI wrapper (a profiler, a fault injector) between the application and MPI.
  bool in_mpi_wrapper(std::uint64_t address);
  // The kernel's [vdso]: code in no file, so libunwind's ptrace accessors find no unwind table for
  // it. Its image is copied from the process once (a few KiB, the same in every process of a
  // kernel) and its table handed to libunwind by the sampler; nullptr if it could not be read.
  const CodeRange& vdso() const { return vdso_; }
  std::span<const std::uint8_t> vdso_image() const { return vdso_image_; }
  const unw_dyn_info_t* vdso_unwind_table() const { return vdso_unwind_table_ ? &*vdso_unwind_table_ : nullptr; }

  // A new sample of the process: each mapping is checked (MappingCheck) before what was read of it
  // is used again, and libunwind's handle of the process is made anew if the maps changed.
  void begin_sample();
  // Memory of the process for the unwinder (its unwind tables: ReadOnlyMemory); false if nothing is
  // mapped there.
  bool read_memory(std::uint64_t address, void* buffer, std::size_t length);

  // The unwind table (.eh_frame_hdr) of the file whose code holds `ip`, as libunwind searches it in
  // this process: what _UPT_find_proc_info builds for a frame after reading /proc/PID/maps and
  // mapping the file again, whenever the frame's file is not the previous frame's (with a dozen
  // libraries on the stack, most of what was left of the monitor's CPU once ReadOnlyMemory kept
  // the tables). nullptr when no known mapping holds `ip` or its file has no such table.
  const unw_dyn_info_t* unwind_table_at(std::uint64_t ip);

  unw_addr_space_t copy_address_space() const { return copy_space_; }
  unw_addr_space_t ptrace_address_space() const { return ptrace_space_; }
  void* upt() const { return upt_; }

 private:
  explicit ProcessImage(os::Pid pid) : pid_(pid), check_(pid), read_only_memory_(pid, check_) {}
  bool refresh_maps();
  void read_vdso();
  // The mapping that holds `address`, checked to be still what the maps said; when it is not, or
  // none holds it (a library loaded since), the maps are read again, at most once per sample.
  const os::Mapping* mapping_at(std::uint64_t address);
  const os::Mapping* known_mapping_at(std::uint64_t address) const;
  // symbols_of, looked up once per file for this process (a stat per frame would cost).
  std::shared_ptr<const ElfSymbols> symbols_for(const os::Mapping& mapping);

  os::Pid pid_;
  std::uint64_t start_ticks_ = 0;
  std::vector<os::Mapping> maps_;                                         // file-backed executable mappings
  std::map<std::uint64_t, std::optional<unw_dyn_info_t>> unwind_tables_;  // by mapping start, for maps_
  MappingCheck check_;
  ReadOnlyMemory read_only_memory_;
  bool maps_changed_ = false;  // since the last begin_sample
  // By path, then inode: a lookup copies no path (it runs for every frame of every sample).
  std::map<std::string, std::map<std::uint64_t, std::shared_ptr<const ElfSymbols>>> symbols_;
  CodeRange vdso_;
  std::vector<std::uint8_t> vdso_image_;
  std::shared_ptr<const ElfSymbols> vdso_symbols_;
  std::optional<unw_dyn_info_t> vdso_unwind_table_;
  std::vector<CodeRange> mpi_code_;
  std::optional<std::uint64_t> thread_multiple_address_;
  struct Python {
    CPythonLayout layout;
    std::uint64_t runtime = 0;  // _PyRuntime
    std::string path;           // the file that defines it
    std::uint64_t inode = 0;
  };
  std::optional<Python> python_;
  bool libraries_stale_ = false;  // maps_ changed since find_libraries()
  void find_libraries();          // the MPI library and the Python interpreter, from maps_
  void find_python();
  ReadMemory remote_reader() const;
  unw_addr_space_t copy_space_ = nullptr;
  unw_addr_space_t ptrace_space_ = nullptr;
  void* upt_ = nullptr;
};

// ELF symbol tables, shared between processes that map the same file: one known by its path and by
// what stat(2) says of it now (device, inode, change time, size). A monitor that watches a whole
// batch job may see a program rebuilt at the same path between two steps, even under the same
// inode number (ext4 reuses a freed one): by path alone, the second step's ranks would be named
// from the first program. (A process whose file was replaced while it ran maps a path ending
// " (deleted)", which names no file: no symbols, rather than wrong ones.) nullptr when the file
// cannot be read or is not ELF.
std::shared_ptr<const ElfSymbols> symbols_of(const std::string& path);

}  // namespace parastack::sampler
