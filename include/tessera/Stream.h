// Streams (ordered queues of work) and events (timing and synchronization).
#ifndef TESSERA_STREAM_H
#define TESSERA_STREAM_H

#include "tessera/Backend.h"

#include <memory>

namespace tessera {

class Context;

/// A stream of a Context. Move-only; destroys the backend stream unless it
/// is the context's default stream, which it only names.
class Stream {
public:
  Stream() = default; // no stream; valid() is false
  /// A new stream on `ctx`.
  explicit Stream(const Context &ctx);
  /// Wraps `handle` (nullptr: the default stream); destroys it when `owned`.
  Stream(std::shared_ptr<Backend> backend, StreamHandle handle, bool owned);
  ~Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  bool valid() const { return backend_ != nullptr; }
  bool isDefault() const { return handle_ == nullptr; }
  StreamHandle handle() const { return handle_; }
  /// Throws tessera::Error when !valid().
  Backend &backend() const;
  /// Waits until all work queued on the stream has finished.
  void synchronize() const;

private:
  void reset() noexcept;
  std::shared_ptr<Backend> backend_;
  StreamHandle handle_ = nullptr;
  bool owned_ = false;
};

/// An event with timing enabled. Move-only.
class Event {
public:
  Event() = default;
  explicit Event(const Context &ctx);
  explicit Event(std::shared_ptr<Backend> backend);
  ~Event();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  bool valid() const { return handle_ != nullptr; }
  EventHandle handle() const { return handle_; }
  /// Records the event at the current end of `stream`.
  void record(const Stream &stream);
  /// Waits for the recorded work to finish.
  void synchronize() const;
  /// Milliseconds from `start` to `end`; both must have been recorded and
  /// have completed (synchronize `end` first).
  static float elapsedMs(const Event &start, const Event &end);

private:
  void reset() noexcept;
  std::shared_ptr<Backend> backend_;
  EventHandle handle_ = nullptr;
};

} // namespace tessera

#endif
