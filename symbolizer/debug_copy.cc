#include "symbolizer/debug_copy.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "symbolizer/build_id.h"
#include <random>
#include <vector>

namespace hybridprof::symbolizer {
namespace {

// The bytes of `fd` (read where they are: its offset stays as libdw left it) into a new file at `path`.
bool copy_bytes(int fd, const std::string& path) {
  const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) return false;
  std::vector<char> buffer(1 << 20);
  bool ok = true;
  for (off_t at = 0; ok;) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), at);
    if (n == 0) break;
    ok = n > 0;
    for (ssize_t put = 0; ok && put < n;) {
      const ssize_t w = ::write(out, buffer.data() + put, size_t(n - put));
      ok = w > 0;
      put += ok ? w : 0;
    }
    at += n;
  }
  return ::close(out) == 0 && ok;
}

// Whether the ELF file `fd` holds compressed sections, and its size with
// them decompressed (UINT64_MAX: unreadable).
bool compressed_size(int fd, uint64_t* decompressed) {
  *decompressed = 0;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  bool compressed = false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    if ((shdr.sh_flags & SHF_COMPRESSED) == 0) {
      *decompressed += shdr.sh_size;
      continue;
    }
    GElf_Chdr chdr;
    if (gelf_getchdr(scn, &chdr) == nullptr) {
      *decompressed = UINT64_MAX;
      break;
    }
    compressed = true;
    *decompressed += chdr.ch_size;
  }
  elf_end(elf);
  return compressed;
}

// Decompresses every compressed section of the ELF file at `path` in
// place (libelf lays the file out again).
bool decompress_in_place(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = false;
  if (Elf* elf = elf_begin(fd, ELF_C_RDWR, nullptr)) {
    ok = true;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); ok && scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) != nullptr && (shdr.sh_flags & SHF_COMPRESSED) != 0)
        ok = elf_compress(scn, 0, 0) >= 0;  // type 0: decompress
    }
    ok = ok && elf_update(elf, ELF_C_WRITE) >= 0;
    elf_end(elf);
  }
  return ::close(fd) == 0 && ok;
}

// Whether the file `fd` is a whole ELF file of the build `build_id`: its
// build id note says so, and every section lies inside the file (a copy
// cut short, by a full disk say, is not).
bool whole_copy(int fd, const std::string& build_id) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  const void* bits = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
  const std::string id = build_id_hex(bits, n);
  GElf_Ehdr ehdr;
  size_t sections = 0;
  bool whole = id == build_id && gelf_getehdr(elf, &ehdr) != nullptr && elf_getshdrnum(elf, &sections) == 0 &&
               sections > 0 && ehdr.e_shoff + uint64_t(sections) * ehdr.e_shentsize <= uint64_t(st.st_size);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); whole && scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    whole = gelf_getshdr(scn, &shdr) != nullptr &&
            (shdr.sh_type == SHT_NOBITS || shdr.sh_offset + shdr.sh_size <= uint64_t(st.st_size));
  }
  elf_end(elf);
  return whole;
}

}  // namespace

int open_debug_copy(const DebugCopies& copies) {
  if (copies.directory.empty() || copies.build_id.empty()) return -1;
  const std::string path = copies.path();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  elf_version(EV_CURRENT);
  if (!whole_copy(fd, copies.build_id)) {  // never trusted: made again from the original
    ::close(fd);
    ::unlink(path.c_str());
    return -1;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now: the last to go when trimming
  return fd;
}

int make_debug_copy(int debug_fd, const DebugCopies& copies) {
  if (copies.directory.empty() || copies.build_id.empty()) return -1;
  elf_version(EV_CURRENT);
  uint64_t decompressed = 0;
  if (!compressed_size(debug_fd, &decompressed) || decompressed > copies.max_bytes) return -1;
  std::error_code ec;
  std::filesystem::create_directories(copies.directory, ec);
  std::random_device random;
  const std::string tmp = copies.directory + "/." + copies.build_id + "." + std::to_string(getpid()) + "." +
                          std::to_string(random()) + ".debug.tmp";
  if (!copy_bytes(debug_fd, tmp) || !decompress_in_place(tmp) || ::rename(tmp.c_str(), copies.path().c_str()) != 0) {
    std::filesystem::remove(tmp, ec);
    return -1;
  }
  return open_debug_copy(copies);
}

}  // namespace hybridprof::symbolizer
