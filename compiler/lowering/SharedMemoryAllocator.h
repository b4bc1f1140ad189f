// The dynamic shared memory of one kernel: a bump allocator up to the
// block's opt-in limit on the target (Target::maxSharedBytesPerBlock), plus a
// scratch region (the stage buffers of the last pipelined dot loop, free for
// reuse after it), plus temporaries: buffers that one op writes and reads
// and releases when it is done (a reduction's partials, a scan's or a sort's
// copies, an atomic's broadcast slot). A released temporary is reused by the
// next op that asks; that op writes only after a block barrier, so the last
// readers of the old contents are done. One object per kernel, shared by the
// generic lowering and the dot-loop emitter.
//
// A released block may still hold a tile that a later op wants again (a
// staged loop's invariant operand, FlashAttention's Q, read by both of its
// forward loops): keep() records it, and every later hand-out of bytes that
// overlap it (allocate, temporaries, scratch) forgets it, as those bytes may
// then be written.
#ifndef TESSERA_LOWERING_SHAREDMEMORYALLOCATOR_H
#define TESSERA_LOWERING_SHAREDMEMORYALLOCATOR_H

#include <algorithm>
#include <optional>
#include <cstdint>
#include <utility>
#include <vector>

namespace tessera::lowering::detail {

class SharedMemoryAllocator {
public:
  explicit SharedMemoryAllocator(int64_t limit) : limit_(limit) {}
  /// The most a block of the target may use.
  int64_t limit() const { return limit_; }
  /// Bytes in use: the kernel's dynamic shared memory at launch.
  int64_t used() const { return used_; }
  /// Whether `bytes` more, at the current end, stay within the limit.
  bool fits(int64_t bytes) const { return used_ + bytes <= limit_; }
  /// Offset of `bytes` new bytes at the next `align`-aligned offset.
  int64_t allocate(int64_t bytes, int64_t align = 16) {
    int64_t off = roundUp(used_, align);
    used_ = off + bytes;
    return handOut(off, bytes);
  }
  /// `bytes` for one op's own use until releaseTemp: a released block that
  /// fits (first fit), else new bytes at the end. The op must write them only
  /// after a block barrier.
  int64_t allocateTemp(int64_t bytes, int64_t align = 16) {
    for (size_t i = 0; i < free_.size(); ++i) {
      int64_t off = roundUp(free_[i].first, align);
      if (off + bytes <= free_[i].first + free_[i].second) {
        int64_t end = free_[i].first + free_[i].second;
        free_.erase(free_.begin() + i);
        if (end > off + bytes) // the tail stays free
          free_.push_back({off + bytes, end - (off + bytes)});
        return handOut(off, bytes);
      }
    }
    // A free block at the end grows into new bytes: a causal attention's
    // small diagonal loop, then its larger main loop, take the larger's size
    // in all, not the sum.
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i].first + free_[i].second == used_) {
        int64_t off = roundUp(free_[i].first, align);
        free_.erase(free_.begin() + i);
        used_ = off + bytes;
        return handOut(off, bytes);
      }
    return allocate(bytes, align);
  }
  /// Whether allocateTemp(bytes, align) stays within the limit: a free block
  /// holds it, or the end has room.
  bool fitsTemp(int64_t bytes, int64_t align = 16) const {
    for (auto [o, n] : free_)
      if (roundUp(o, align) + bytes <= (o + n == used_ ? limit_ : o + n))
        return true;
    return roundUp(used_, align) + bytes <= limit_;
  }
  /// Gives back a temporary from allocateTemp, merged with free neighbours
  /// (a large loop's buffers, split by later small temporaries and given
  /// back, serve the next large loop again).
  void releaseTemp(int64_t off, int64_t bytes) {
    free_.push_back({off, bytes});
    std::sort(free_.begin(), free_.end());
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (auto [o, n] : free_) {
      if (!merged.empty() && merged.back().first + merged.back().second >= o)
        merged.back().second = std::max(merged.back().second, o + n - merged.back().first);
      else
        merged.push_back({o, n});
    }
    free_ = std::move(merged);
  }
  /// Moves the end to the next multiple of `align`.
  void alignEnd(int64_t align) { used_ = roundUp(used_, align); }

  /// [offset, offset + bytes) is free from here on (a finished loop's stages).
  void setScratch(int64_t offset, int64_t bytes) {
    scratchOff_ = offset;
    scratchBytes_ = bytes;
    scratchUsed_ = 0;
  }
  /// `bytes` of the scratch region, `align`-aligned, kept for the rest of the
  /// region (a staged tile); -1 when they do not fit there.
  int64_t takeScratch(int64_t bytes, int64_t align) {
    int64_t off = roundUp(scratchOff_ + scratchUsed_, align);
    if (off + bytes > scratchOff_ + scratchBytes_)
      return -1;
    scratchUsed_ = off + bytes - scratchOff_;
    return handOut(off, bytes);
  }
  /// `bytes` of the scratch region after what is kept, for transient use
  /// (not counted as taken); -1 when they do not fit there.
  int64_t transientScratch(int64_t bytes, int64_t align) {
    int64_t off = roundUp(scratchOff_ + scratchUsed_, align);
    return off + bytes > scratchOff_ + scratchBytes_ ? -1 : handOut(off, bytes);
  }

  /// What a kept tile is: the value, the block of ops it is kept for (the
  /// keeper's: an op in another block may run without the keeper having
  /// run), and the form it was stored in.
  struct KeptTile {
    const void *value = nullptr, *block = nullptr; // opaque Value, Block *
    int64_t form = 0; // anything else the stored bytes depend on
    int64_t offset = 0, bytes = 0;
  };
  /// Records that [t.offset, t.offset + t.bytes) holds `t` (see the top).
  void keep(const KeptTile &t) { kept_.push_back(t); }
  /// The kept tile of `value` in `form` for `block`, if it is still there
  /// untouched. Ask before handing out the bytes the caller means to find
  /// it in (that hand-out forgets it).
  std::optional<KeptTile> kept(const void *value, const void *block, int64_t form) const {
    for (const KeptTile &t : kept_)
      if (t.value == value && t.block == block && t.form == form)
        return t;
    return std::nullopt;
  }

private:
  /// Forgets the kept tiles that [off, off + bytes) overlaps; returns off.
  int64_t handOut(int64_t off, int64_t bytes) {
    kept_.erase(std::remove_if(kept_.begin(), kept_.end(),
                               [&](const KeptTile &t) {
                                 return t.offset < off + bytes && off < t.offset + t.bytes;
                               }),
                kept_.end());
    return off;
  }
  static int64_t roundUp(int64_t v, int64_t align) { return (v + align - 1) / align * align; }
  int64_t limit_;
  int64_t used_ = 0;
  int64_t scratchOff_ = 0, scratchBytes_ = 0, scratchUsed_ = 0;
  std::vector<std::pair<int64_t, int64_t>> free_; // released temporaries: offset, bytes
  std::vector<KeptTile> kept_;
};

} // namespace tessera::lowering::detail

#endif
